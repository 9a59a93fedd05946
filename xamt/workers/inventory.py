"""List the public callables of a module with their parameters (runs inside a worker)."""

from __future__ import annotations

import inspect
import math
import re
from typing import Any

# "name(a, b, /, c=1, *args, **kwargs) -> ..." at the start of a builtin's docstring.
DOC_SIGNATURE = re.compile(r"^\s*[\w.]+\(")


def _split_top_level(text: str) -> list[str]:
    """Split at commas that are not inside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _doc_params_texts(doc: str, name: str) -> list[str]:
    """The text between the parentheses of each ``name(...)`` signature in a docstring.

    The first one must open the docstring; overloads listed further down (torch documents
    ``sum(input, dim, keepdim=False)`` after ``sum(input, *, dtype=None)``) are found too.
    """
    if not DOC_SIGNATURE.match(doc or ""):
        return []
    texts = []
    for match in re.finditer(rf"(?:^|\n|\n\.\. function:: ){re.escape(name)}\(", doc):
        depth, start = 1, match.end()
        for i in range(start, min(len(doc), start + 2000)):
            if doc[i] == "(":
                depth += 1
            elif doc[i] == ")":
                depth -= 1
                if depth == 0:
                    texts.append(doc[start:i])
                    break
    return texts


def _params_from_signature(sig: inspect.Signature) -> list[dict[str, Any]]:
    params = []
    for p in sig.parameters.values():
        entry: dict[str, Any] = {"name": p.name, "kind": p.kind.name.lower()}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = _plain(p.default)
        params.append(entry)
    return params


def _parse_params(text: str) -> list[dict[str, Any]]:
    params: list[dict[str, Any]] = []
    kind = "positional_or_keyword"
    for raw in _split_top_level(text):
        raw = raw.strip("[] ")
        if raw == "/":
            for earlier in params:
                earlier["kind"] = "positional_only"
            continue
        if raw == "*":
            kind = "keyword_only"
            continue
        name, _, default = raw.partition("=")
        name = name.split(":", 1)[0].strip()
        if name.startswith("**"):
            params.append({"name": name[2:], "kind": "var_keyword"})
        elif name.startswith("*"):
            params.append({"name": name[1:], "kind": "var_positional"})
            kind = "keyword_only"
        elif name.isidentifier():
            entry: dict[str, Any] = {"name": name, "kind": kind}
            if default.strip():
                entry["default"] = default.strip()
            params.append(entry)
    return params


def _params_from_doc(doc: str, name: str) -> list[dict[str, Any]] | None:
    """Parameters from the docstring's signatures, overloads merged.

    A parameter required in every overload stays required; one missing from some overload
    becomes optional (its default is ``"<overload>"``).
    """
    overloads = [_parse_params(t) for t in _doc_params_texts(doc, name)]
    if not overloads:
        return None
    merged: dict[str, dict[str, Any]] = {}
    for params in overloads:
        for entry in params:
            merged.setdefault(entry["name"], dict(entry))
    for pname, entry in merged.items():
        in_all = all(any(p["name"] == pname and "default" not in p for p in ps) for ps in overloads)
        if (
            not in_all
            and "default" not in entry
            and entry["kind"]
            not in (
                "var_positional",
                "var_keyword",
            )
        ):
            entry["default"] = "<overload>"
    return list(merged.values())


def _plain(value: Any) -> Any:
    """A default value as plain data: JSON scalars stay, anything else becomes its repr."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, str)) for v in value):
        return list(value)
    return {"repr": repr(value)[:80]}


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "class"
    if inspect.isfunction(obj):
        return "function"
    if inspect.isbuiltin(obj):
        return "builtin"
    return type(obj).__name__


def list_namespace(namespace: str, module: Any, seen: dict[int, str]) -> list[dict[str, Any]]:
    """Public callables of ``module`` (not submodules), sorted by name.

    ``seen`` maps ``id(callable)`` to the first path it was listed under, across namespaces, so
    that one function reached through two namespaces is recognisably one callable.
    """
    entries = []
    for name in sorted(dir(module)):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(module, name)
        except Exception:  # noqa: BLE001 - lazy attributes may fail to load; skip them
            continue
        if inspect.ismodule(obj) or not callable(obj):
            continue
        doc = inspect.getdoc(obj) or ""
        params: list[dict[str, Any]] | None
        source = "signature"
        try:
            params = _params_from_signature(inspect.signature(obj))
        except (TypeError, ValueError):
            params = _params_from_doc(doc, name)
            source = "docstring" if params is not None else "none"
        path = f"{namespace}.{name}"
        entries.append(
            {
                "path": path,
                "same_as": seen.setdefault(id(obj), path),
                "kind": _kind(obj),
                "params": params,
                "params_from": source,
                "doc": doc.split("\n\n", 1)[0][:500],
            }
        )
    return entries
