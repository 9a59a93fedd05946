"""Name and parameter-role normalization, driven by the reviewed tables in ``data/``.

Names: lower case; camelCase to snake_case; the prefixes ``reduce_`` (tensorflow), ``linalg_``
(mxnet.nd) and ``batch_`` (tensorflow's raw batch ops) and the suffixes ``_v2``, ``_ext``, ``_op``
and ``_impl`` (mindspore's internal spellings) dropped; then the explicit alias table, matched with
and without underscores (``bitwise_invert`` and ``bitwiseinvert`` meet).

Parameters: array parameters become positional roles ``x`` / ``x1, x2`` / ``x1, x2, x3`` in
order; ``axis``, ``keepdims``, ``dtype`` and scalar roles are found by name (a second parameter
of a role moves on to the role's successor: ``dim0, dim1`` -> ``axis1, axis2``); control
parameters (``name``, ``out``, ``device``...) are dropped. A name whose meaning depends on the
operation (``end``: an array in ``lerp``, a bound in ``arange``) is read from the operation's own
table first (``[ops.<op>]`` in ``data/roles.toml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from xamt.catalog.model import Group
from xamt.catalog.vocabulary import DATA, CatalogError, scalar_specs
from xamt.catalog.vocabulary import read_table as _table
from xamt.catalog.vocabulary import role_vocabulary as role_vocabulary  # (kept importable here)
from xamt.workers.protocol import DType

CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
VERSION_SUFFIX = re.compile(r"(?:_(?:v\d+|ext|op|impl))+$")
PREFIXES = ("reduce_", "linalg_", "batch_")


@cache
def alias_map() -> dict[str, str]:
    """alias -> canonical operation name."""
    table = _table("aliases.toml").get("aliases", {})
    out: dict[str, str] = {}
    for canonical, names in table.items():
        if not isinstance(names, list):
            raise CatalogError(f"{DATA / 'aliases.toml'}: {canonical} must list names")
        for n in names:
            if n in out and out[n] != canonical:
                raise CatalogError(
                    f"{DATA / 'aliases.toml'}: {n!r} is an alias of both {out[n]!r} and "
                    f"{canonical!r}"
                )
            out[n] = canonical
    return out


@cache
def sequence_names() -> frozenset[str]:
    return frozenset(_table("roles.toml").get("sequence", {}).get("names", ()))


@cache
def role_tables() -> tuple[frozenset[str], dict[str, str], frozenset[str]]:
    """(array parameter names, parameter name -> non-array role, control parameter names)."""
    data = _table("roles.toml")
    arrays = frozenset(data["array"]["names"])
    roles = {name: role for role, names in data["roles"].items() for name in names}
    for role, spec in data.get("scalars", {}).items():
        for name in spec["names"]:
            roles.setdefault(name, role)
    control = frozenset(data["control"]["names"])
    return arrays, roles, control


@cache
def op_roles() -> dict[str, dict[str, str]]:
    """Operation key -> parameter name -> role (``"array"``: an input array), read before the
    general tables: names whose meaning depends on the operation."""
    table = _table("roles.toml").get("ops", {})
    for op, names in table.items():
        if not isinstance(names, dict) or not all(isinstance(r, str) for r in names.values()):
            raise CatalogError(f"{DATA / 'roles.toml'}: ops.{op} must map names to roles")
    return {op: dict(names) for op, names in table.items()}


@cache
def successors() -> dict[str, str]:
    """Role -> the role a second parameter of the same role takes (``axis1`` -> ``axis2``)."""
    scalars = _table("roles.toml").get("scalars", {})
    return {role: spec["successor"] for role, spec in scalars.items() if "successor" in spec}


@cache
def size_roles() -> frozenset[str]:
    """The scalar roles that count elements (``size = true`` in ``data/roles.toml``)."""
    scalars = _table("roles.toml").get("scalars", {})
    return frozenset(role for role, spec in scalars.items() if spec.get("size") is True)


def scalar_value(role: str, with_arrays: bool) -> Any:
    """The canonical value of a scalar role: a number, a tuple, an integer numpy array
    (``{ array = [...], dtype = ... }``) or a dtype given by name (``{ dtype = "float64" }``)."""
    spec = scalar_specs()[role]
    if isinstance(spec, dict) and "with_arrays" in spec:
        spec = spec["with_arrays" if with_arrays else "alone"]
    if isinstance(spec, dict) and "array" not in spec:
        return DType(spec["dtype"])
    if isinstance(spec, dict):
        return np.array(spec["array"], dtype=spec["dtype"])
    return tuple(spec) if isinstance(spec, list) else spec


def canonical_param(group: Group, role: str, with_arrays: bool = True) -> Any:
    """A group's canonical value of scalar ``role``: the group's own (``Group.params``, the
    deep-learning core), else the role's (``data/roles.toml``)."""
    if role in group.params:
        return group.params[role]
    return scalar_value(role, with_arrays)


@cache
def exclusions() -> tuple[tuple[re.Pattern[str], str], ...]:
    entries = _table("exclusions.toml").get("exclude", [])
    try:
        return tuple((re.compile(e["pattern"]), str(e["reason"])) for e in entries)
    except (KeyError, re.error) as exc:
        raise CatalogError(f"{DATA / 'exclusions.toml'}: bad entry: {exc}") from None


@cache
def excluded_apis() -> dict[str, str]:
    """Single APIs excluded by full path (``[[exclude_api]]``), with the reason."""
    entries = _table("exclusions.toml").get("exclude_api", [])
    try:
        return {str(e["api"]): str(e["reason"]) for e in entries}
    except KeyError as exc:
        raise CatalogError(f"{DATA / 'exclusions.toml'}: bad entry: missing {exc}") from None


def leaf(path: str) -> str:
    return path.rsplit(".", 1)[-1]


def exclusion_reason(path: str) -> str | None:
    name = leaf(path)
    lowered = name.lower()
    if name.startswith("_"):
        return "private"
    if path in excluded_apis():
        return excluded_apis()[path]
    for pattern, reason in exclusions():
        if pattern.search(lowered):
            return reason
    return None


def snake_name(path: str) -> str:
    """An API's leaf name in snake_case, without ``reduce_`` or a ``_v2`` suffix."""
    name = VERSION_SUFFIX.sub("", CAMEL.sub("_", leaf(path)).lower())
    for prefix in PREFIXES:
        if name not in alias_map() and name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix) :]
    return name


def canonical_op(path: str) -> str:
    """The key an API is matched by: its alias, else its snake name without underscores
    (``arg_max``, ``ArgMax`` and ``argmax`` meet)."""
    name = snake_name(path)
    aliases = alias_map()
    if name in aliases:
        return aliases[name]
    key = name.replace("_", "")
    return _squashed_aliases().get(key, key)


@cache
def _squashed_aliases() -> dict[str, str]:
    """The alias table keyed without underscores (a name's own underscores vary by library)."""
    return {alias.replace("_", ""): op for alias, op in alias_map().items()}


@dataclass(frozen=True, kw_only=True)
class Param:
    """A non-array parameter that a role fills."""

    role: str
    name: str
    required: bool
    positional_only: bool


@dataclass(frozen=True, kw_only=True)
class Binding:
    """How an API's parameters map to roles.

    ``arrays``: the required array parameters in order, each ``(name, keyword_only)``.
    ``params``: non-array roles the API takes (``axis``, ``keepdims``, scalars...).
    ``blocked``: required parameters that no role fills (the API cannot be called plainly).
    ``known``: whether parameters were known at all (from a signature or docstring).
    ``positional``: the names of the parameters a position reaches, in the signature's order
    (control parameters included: they take a slot too).
    """

    arrays: tuple[tuple[str, bool], ...]
    params: tuple[Param, ...]
    blocked: tuple[str, ...]
    known: bool
    sequence: tuple[str, bool] | None = None
    positional: tuple[str, ...] = ()

    def role(self, role: str) -> Param | None:
        return next((p for p in self.params if p.role == role), None)

    @property
    def required_roles(self) -> frozenset[str]:
        return frozenset(p.role for p in self.params if p.required)


UNKNOWN = Binding(arrays=(), params=(), blocked=(), known=False)


def binding_of(params: list[dict[str, Any]] | None, op: str = "") -> Binding:
    """How an API's parameters (an inventory entry's ``params``) map to roles, for the
    operation key ``op`` (whose own names, ``[ops.<op>]``, come first)."""
    if params is None:
        return UNKNOWN
    array_names, role_names, control = role_tables()
    own = op_roles().get(op, {})
    positional = tuple(
        p["name"] for p in params if p["kind"] in ("positional_only", "positional_or_keyword")
    )
    arrays: list[tuple[str, bool]] = []
    found: list[Param] = []
    blocked: list[str] = []
    sequence: tuple[str, bool] | None = None
    for p in params:
        name, kind = p["name"], p["kind"]
        if kind in ("var_positional", "var_keyword") or name in control:
            continue
        required = "default" not in p
        role = own.get(name, role_names.get(name))
        is_array = role == "array" if name in own else name in array_names
        if required and name in sequence_names() and sequence is None:
            sequence = (name, kind == "keyword_only")
        elif required and is_array:
            arrays.append((name, kind == "keyword_only"))
        elif role is not None and role != "array":
            while any(f.role == role for f in found) and role in successors():
                role = successors()[role]
            if all(f.role != role for f in found):
                found.append(
                    Param(
                        role=role,
                        name=name,
                        required=required,
                        positional_only=kind == "positional_only",
                    )
                )
            elif required:
                blocked.append(name)
        elif required:
            blocked.append(name)
    if sequence is not None:
        if arrays:  # a list of arrays and single arrays: not a shape the plans cover
            blocked.extend(a[0] for a in arrays)
        return Binding(
            arrays=(),
            params=tuple(found),
            blocked=tuple(blocked),
            known=True,
            sequence=sequence,
            positional=positional,
        )
    if not arrays:  # mxnet.nd: every parameter defaults to None; the array ones are still inputs
        arrays = [
            (p["name"], p["kind"] == "keyword_only")
            for p in params
            if (own.get(p["name"]) == "array" if p["name"] in own else p["name"] in array_names)
            and p.get("default", "None") in (None, "None", "<overload>")
        ]
    if not arrays and not found and not blocked:  # only *args/**kwargs: parameters unknown
        return UNKNOWN
    if len(arrays) > 3:  # at most x1, x2, x3
        blocked.extend(a[0] for a in arrays[3:])
        arrays = arrays[:3]
    return Binding(
        arrays=tuple(arrays),
        params=tuple(found),
        blocked=tuple(blocked),
        known=True,
        positional=positional,
    )
