"""List the public callables of a module with their parameters (runs inside a worker)."""

from __future__ import annotations

import inspect
import re
from typing import Any

# "name(a, b, /, c=1, *args, **kwargs)" at the start of a builtin's docstring.
DOC_SIGNATURE = re.compile(r"^\s*[\w.]+\((?P<params>[^)]*)\)")


def _params_from_signature(sig: inspect.Signature) -> list[dict[str, Any]]:
    params = []
    for p in sig.parameters.values():
        entry: dict[str, Any] = {"name": p.name, "kind": p.kind.name.lower()}
        if p.default is not inspect.Parameter.empty:
            entry["default"] = _plain(p.default)
        params.append(entry)
    return params


def _params_from_doc(doc: str) -> list[dict[str, Any]] | None:
    match = DOC_SIGNATURE.match(doc or "")
    if not match:
        return None
    params: list[dict[str, Any]] = []
    kind = "positional_or_keyword"
    for raw in (t.strip() for t in match.group("params").split(",")):
        if not raw or raw in ("[", "]"):
            continue
        if raw == "/":
            for entry in params:
                entry["kind"] = "positional_only"
            continue
        if raw == "*":
            kind = "keyword_only"
            continue
        name, _, default = raw.strip("[] ").partition("=")
        if name.startswith("**"):
            params.append({"name": name[2:], "kind": "var_keyword"})
        elif name.startswith("*"):
            params.append({"name": name[1:], "kind": "var_positional"})
            kind = "keyword_only"
        elif name.isidentifier():
            entry = {"name": name, "kind": kind}
            if default:
                entry["default"] = default.strip()
            params.append(entry)
    return params


def _plain(value: Any) -> Any:
    """A default value as plain data: JSON scalars stay, anything else becomes its repr."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple) and all(isinstance(v, (bool, int, float, str)) for v in value):
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


def list_namespace(namespace: str, module: Any) -> list[dict[str, Any]]:
    """Public callables of ``module`` (not submodules), sorted by name."""
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
            params = _params_from_doc(doc)
            source = "docstring" if params is not None else "none"
        entries.append(
            {
                "path": f"{namespace}.{name}",
                "kind": _kind(obj),
                "params": params,
                "params_from": source,
                "doc": doc.split("\n\n", 1)[0][:500],
            }
        )
    return entries
