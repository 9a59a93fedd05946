"""JSON Schemas of every file xamt reads, and the one check that applies them.

The schemas ship inside the package (``xamt/schemas/*.schema.json``), so users can validate
their own files against the same ones (``check-jsonschema --schemafile
xamt/schemas/findings.schema.json findings.json``):

- ``findings.schema.json``: findings.json, schema 2 (also a stored finding or candidate:
  ``#/$defs/finding``);
- ``campaign-state.schema.json``: the scheduler state a store keeps for a resumable campaign;
- ``catalog.schema.json``: ``xamt/catalog/data/catalog.json`` and any ``--catalog`` file;
- ``known-differences.schema.json``: a known-differences TOML file, as parsed;
- ``config.schema.json``: ``$XAMT_HOME/config.toml``, as parsed.

:func:`validate` checks a parsed document and raises the caller's error class (each with its
documented exit code) with one line naming the file, the entry and what was expected, never a
traceback. The schemas check shape and types; the loaders keep their checks of meaning (known
libraries, roles, regular expressions that compile, unique ids).

Note:
    ``jsonschema`` is imported on first use, so importing xamt stays cheap and a worker (which
    never reads these files) never imports it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import Any

from xamt.errors import XamtError

NAMES = ("findings", "campaign-state", "catalog", "known-differences", "config")
# Longest rendering of an offending value in a message.
SHOWN = 60
_JSON_TYPES = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "object": "an object",
    "array": "a list",
    "null": "null",
}


def schema_text(name: str) -> str:
    """The text of ``xamt/schemas/<name>.schema.json``."""
    if name not in NAMES:
        raise KeyError(f"no schema {name!r}; known: {', '.join(NAMES)}")
    return (resources.files(__package__) / f"{name}.schema.json").read_text(encoding="utf-8")


@cache
def schema(name: str) -> dict[str, Any]:
    """The parsed schema ``name`` (one of :data:`NAMES`), self-contained: a reference to
    another file's definition (``findings.schema.json#/$defs/case``) points to a copy of it
    among this schema's definitions (``#/$defs/findings.case``)."""
    data: dict[str, Any] = json.loads(schema_text(name))
    defs = dict(data.get("$defs", {}))
    for other in sorted(_files_referred(data) - {name}):
        for key, body in schema(other).get("$defs", {}).items():
            defs.setdefault(f"{other}.{key}", _rebase(body, other))
    if defs:
        data = {**_rebase(data, None), "$defs": {k: _rebase(v, None) for k, v in defs.items()}}
    return data


def _files_referred(node: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ".schema.json#" in ref:
            found.add(ref.split(".schema.json#", 1)[0])
        for value in node.values():
            found |= _files_referred(value)
    elif isinstance(node, list):
        for value in node:
            found |= _files_referred(value)
    return found


def _rebase(node: Any, other: str | None) -> Any:
    """``node`` with references to another file made local: ``X.schema.json#/$defs/k`` becomes
    ``#/$defs/X.k``, and (inside a definition copied from file ``other``) ``#/$defs/k``
    becomes ``#/$defs/<other>.k``."""
    if isinstance(node, list):
        return [_rebase(v, other) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _rebase(v, other) for k, v in node.items()}
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ".schema.json#/$defs/" in ref:
            file, key = ref.split(".schema.json#/$defs/", 1)
            out["$ref"] = f"#/$defs/{file}.{key}"
        elif other is not None and ref.startswith("#/$defs/"):
            out["$ref"] = f"#/$defs/{other}.{ref.removeprefix('#/$defs/')}"
    return out


@cache
def _validator(name: str, definition: str | None) -> Any:
    import jsonschema

    root = schema(name)
    cls = jsonschema.validators.validator_for(root)
    cls.check_schema(root)
    defs = root.get("$defs", {})
    target = root if definition is None else {"$ref": f"#/$defs/{definition}"}
    inlined = _inline(target, defs, ())
    if isinstance(inlined, dict):
        inlined = {**inlined, "$schema": root["$schema"], "$defs": defs}
    return cls(inlined)


def _inline(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> Any:
    """``node`` with every reference to a definition replaced by the definition itself, except
    for recursive ones (an encoded value holds values): the same schema, validated several
    times faster (resolving a reference is the costliest step of ``jsonschema``)."""
    if isinstance(node, list):
        return [_inline(x, defs, stack) for x in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = ref.removeprefix("#/$defs/")
        if target in defs and target not in stack:
            rest = {k: _inline(v, defs, stack) for k, v in node.items() if k != "$ref"}
            body = _inline(defs[target], defs, (*stack, target))
            if isinstance(body, dict) and not set(rest) & set(body):
                return {**body, **rest}
            return {**rest, "allOf": [body]}
    return {k: (v if k == "$defs" else _inline(v, defs, stack)) for k, v in node.items()}


def problems(name: str, data: Any, *, definition: str | None = None) -> list[str]:
    """Every problem of ``data`` against schema ``name`` (or its ``$defs/<definition>``), each
    as ``'<where in the data>': <what is wrong>``; empty when it is valid."""
    validator = _validator(name, definition)
    return list(dict.fromkeys(_describe(e) for e in _leaves(validator.iter_errors(data))))


def validate(
    name: str,
    data: Any,
    where: str,
    error: type[XamtError],
    *,
    definition: str | None = None,
    prefix: str = "",
) -> None:
    """Check ``data`` against schema ``name`` (or its ``$defs/<definition>``); if it does not
    conform, raise ``error`` with ``where`` (the file, and the entry when the caller knows it)
    and the first problem found (its place in the data, what is expected).

    ``prefix`` is the place of ``data`` in its file, for the message (``findings[3]``).
    """
    import jsonschema

    validator = _validator(name, definition)
    best = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if best is None:
        return
    (leaf,) = _leaves([best])
    problem = _describe(leaf, prefix)
    raise error(f"{where}: {problem}")


def _leaves(errors: Iterable[Any]) -> list[Any]:
    """For an ``anyOf``/``oneOf`` failure, the most relevant error inside it (the message
    then says what is wrong in the branch that came closest), else the error itself."""
    import jsonschema

    out = []
    for e in errors:
        while e.context:
            e = jsonschema.exceptions.best_match(e.context) or e
            if not e.context:
                break
        out.append(e)
    return out


def _place(path: Iterable[Any], prefix: str = "") -> str:
    text = prefix
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif text:
            text += f".{part}" if _plain(part) else f"[{part!r}]"
        else:
            text = str(part) if _plain(part) else f"[{part!r}]"
    return text


def _plain(part: Any) -> bool:
    return isinstance(part, str) and part.replace("_", "a").replace("-", "a").isalnum()


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _type_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    for json_type, python in (("string", str), ("integer", int), ("number", float)):
        if isinstance(value, python):
            return _JSON_TYPES[json_type]
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


def _describe(e: Any, prefix: str = "") -> str:
    """One line for a validation error: where in the data, and what was expected."""
    place = _place(e.absolute_path, prefix)
    subject = f"field {place!r}" if place else "it"
    kind, value, rule = e.validator, e.instance, e.validator_value
    described = e.schema.get("description") if isinstance(e.schema, dict) else None
    if kind == "type":
        wanted = [rule] if isinstance(rule, str) else list(rule)
        return (
            f"{subject} must be {' or '.join(_JSON_TYPES.get(t, t) for t in wanted)}, "
            f"not {_type_of(value)}"
        )
    if kind in ("enum", "const"):
        choices = rule if kind == "enum" else [rule]
        shown = ", ".join(str(c) for c in choices[:12]) + (", ..." if len(choices) > 12 else "")
        return f"{subject} is {_shown(value)}; expected one of {shown}"
    if kind in ("required", "dependentRequired"):
        wanted = rule if kind == "required" else [k for keys in rule.values() for k in keys]
        missing = [k for k in wanted if isinstance(value, dict) and k not in value]
        names = ", ".join(repr(k) for k in missing)
        verb = "is" if len(missing) == 1 else "are"
        return f"{subject}: {names} {verb} required" if place else f"{names} {verb} required"
    if kind == "additionalProperties":
        allowed = sorted(e.schema.get("properties", {}))
        extra = sorted(k for k in value if k not in allowed) if isinstance(value, dict) else []
        return (
            f"{subject} has unknown field(s) {', '.join(repr(k) for k in extra[:5])}; "
            f"fields are {', '.join(allowed)}"
        )
    if kind == "pattern":
        return f"{subject}: {_shown(value)} is malformed ({described or 'expected ' + rule})"
    if kind in _BOUNDS:
        return f"{subject} is {_shown(value)}; it must be {_BOUNDS[kind]} {rule}"
    if kind == "minLength" and rule == 1:
        return f"{subject} must not be empty"
    if kind in ("minItems", "maxItems", "minLength", "maxLength"):
        size = len(value) if isinstance(value, list | str) else "?"
        unit = "items" if kind.endswith("Items") else "characters"
        return f"{subject} has {size} {unit}; {_SIZES[kind]} {rule} expected"
    return f"{subject}: {_shown(e.message)}"


_SIZES = {
    "minItems": "at least",
    "maxItems": "at most",
    "minLength": "at least",
    "maxLength": "at most",
}
_BOUNDS = {
    "minimum": "at least",
    "exclusiveMinimum": "more than",
    "maximum": "at most",
    "exclusiveMaximum": "less than",
}
