"""The special cases of the Python array API standard's elementwise functions, as a reference.

The "Special Cases" sections of the standard's elementwise functions, for real floating-point
inputs and, where the standard lists them, complex inputs (which follow C99 Annex G), and the
special values that the definition of a few functions beyond the standard fixes, are reviewed
data: ``xamt/catalog/data/special_cases.toml`` (:data:`SPECIAL_CASES_PATH`). Its header
explains the row syntax and the precedence of rows, and says what is not encoded. Where a rule
fixes the result, a library that returns something else departs from the standard:
:func:`departs` finds those positions, and the fuzzer blames such a library with confidence
"reference".

The file is read and checked once, on import (:func:`load_tables`): every operation is rows
``<conditions> -> <result>`` (:data:`REAL`, :data:`COMPLEX`, :data:`DEFINED`) or a :class:`Via`
record over another operation's rows (:data:`REAL_VIA`, :data:`COMPLEX_VIA`), parsed once into
:data:`RULES`; :data:`SOURCES` gives the page each operation's entry cites. One function
evaluates them all. This module holds only the words the rows are written in
(:data:`PREDICATES`, :data:`RELATION`, :data:`CONSTANTS`, :data:`DERIVED`, :data:`ARGS`,
:data:`RESULTS`) and names no operation.

Note:
    Tolerance: a finite non-zero required value (pi/2, 1, an input) is met within
    ``4 * eps(output dtype) * |expected|``, which also covers "an implementation-dependent
    approximation to +π/2". Zeros, infinities and NaN are exact, with the signs of zeros and
    infinities, unless marked ``±``.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np

from xamt.errors import XamtError

Kind = Literal["real", "complex"]
Variables = Mapping[str, np.ndarray]

# --- vocabulary -----------------------------------------------------------------------------


def _integral(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (np.floor(x) == x)


def _odd(x: np.ndarray) -> np.ndarray:
    return _integral(x) & (np.fmod(x, 2.0) != 0)


def _half(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x - np.floor(x) == 0.5)


def _nearest_even(x: np.ndarray) -> np.ndarray:
    low = np.floor(x)
    return np.where(np.fmod(low, 2.0) == 0, low, low + 1.0)


# Predicates on one role's values (float64, NaN compares false unless said otherwise).
PREDICATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "any": lambda x: np.ones(x.shape, dtype=bool),
    "nan": np.isnan,
    "!nan": lambda x: ~np.isnan(x),
    "+nan": lambda x: np.isnan(x) & ~np.signbit(x),  # NaN with sign bit 0
    "-nan": lambda x: np.isnan(x) & np.signbit(x),
    "+0": lambda x: (x == 0) & ~np.signbit(x),
    "-0": lambda x: (x == 0) & np.signbit(x),
    "±0": lambda x: x == 0,
    "!0": lambda x: x != 0,  # "not equal to 0": NaN included
    "nz": lambda x: (x != 0) & ~np.isnan(x),  # "a nonzero number": infinities included
    "+inf": lambda x: x == np.inf,
    "-inf": lambda x: x == -np.inf,
    "±inf": np.isinf,
    "!inf": lambda x: ~np.isinf(x),  # "a finite number or NaN"
    "fin": np.isfinite,
    "nzfin": lambda x: np.isfinite(x) & (x != 0),
    "+fin": lambda x: np.isfinite(x) & (x > 0),
    "-fin": lambda x: np.isfinite(x) & (x < 0),
    ">0": lambda x: x > 0,
    "<0": lambda x: x < 0,
    ">1": lambda x: x > 1,
    "<1": lambda x: x < 1,
    "<-1": lambda x: x < -1,
    "=1": lambda x: x == 1,
    "=-1": lambda x: x == -1,
    "!=1": lambda x: x != 1,  # NaN included
    "abs>1": lambda x: np.abs(x) > 1,
    "abs<1": lambda x: np.abs(x) < 1,
    "abs=1": lambda x: np.abs(x) == 1,
    "int": _integral,  # "integer-valued" / "an integer value": finite
    "!int": lambda x: ~_integral(x),
    "odd": _odd,  # "an odd integer value"
    "!odd": lambda x: ~_odd(x),
    "half": _half,  # two integers are equally close
}
# A condition comparing a role with another one: "x2 =-x1", "a !=c".
RELATION = re.compile(r"(=|!=)(-?)([a-z]\w*)$")

CONSTANTS: dict[str, float] = {
    "0": 0.0,
    "1": 1.0,
    "inf": math.inf,
    "nan": math.nan,
    "pi": math.pi,
    "pi/2": math.pi / 2,
    "pi/4": math.pi / 4,
    "3pi/4": 3 * math.pi / 4,
    "False": 0.0,
    "True": 1.0,
}


def _xor_sign(v: Variables, magnitude: float) -> np.ndarray:
    return np.where(np.signbit(v["x1"]) ^ np.signbit(v["x2"]), -magnitude, magnitude)


# Results computed from the inputs: signs of products, cis(b) = cos(b) + sin(b) j scaled.
DERIVED: dict[str, Callable[[Variables], np.ndarray]] = {
    "sgn*inf": lambda v: _xor_sign(v, math.inf),
    "sgn*0": lambda v: _xor_sign(v, 0.0),
    "inf*cos(b)": lambda v: math.inf * np.cos(v["b"]),
    "inf*sin(b)": lambda v: math.inf * np.sin(v["b"]),
    "0*cos(b)": lambda v: 0.0 * np.cos(v["b"]),
    "0*sin(b)": lambda v: 0.0 * np.sin(v["b"]),
    "even(x)": lambda v: _nearest_even(v["x"]),
}

# --- the tables -----------------------------------------------------------------------------

SPECIAL_CASES_PATH = Path(__file__).resolve().parents[1] / "catalog" / "data" / "special_cases.toml"


class SpecialCasesError(XamtError):
    """The special-case tables cannot be read or an entry is malformed; the message names the
    file and the entry. Exit code 8, as for the catalog's other data files."""

    exit_code = 8


@dataclass(frozen=True, kw_only=True)
class Via:
    """An operation whose special cases are another one's, "as if implemented as" it.

    ``args`` names an :data:`ARGS` map from this operation's inputs to the base's, ``result``
    a :data:`RESULTS` map back. ``componentwise``: the base's *real* rows apply to the real
    and to the imaginary parts independently (complex add, round); both parts must be fixed.
    """

    base: str
    args: str = ""
    result: str = ""
    componentwise: bool = False


@dataclass(frozen=True, kw_only=True)
class Part:
    """One component of a row's result: ``name`` negated or not, its sign checked or not."""

    name: str  # a constant, a role, "|role|", a DERIVED name
    negate: bool = False
    signless: bool = False  # "±": only the magnitude is fixed
    nan_sign: bool = False  # "+nan"/"-nan": the NaN's sign bit is fixed


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One row: positions where every ``(role, predicate)`` holds get ``result``.

    ``result`` is None for ``?``: the standard leaves the result open there.
    """

    text: str
    when: tuple[tuple[str, str], ...]
    result: tuple[Part, ...] | None


_ROLES: dict[tuple[Kind, int], tuple[str, ...]] = {
    ("real", 1): ("x",),
    ("real", 2): ("x1", "x2"),
    ("complex", 1): ("a", "b"),
    ("complex", 2): ("a", "b", "c", "d"),
}


def _part(token: str, roles: tuple[str, ...], text: str) -> Part:
    signless = token.startswith("±")
    body = token.removeprefix("±")
    negate = body.startswith("-")
    name = body.removeprefix("-").removeprefix("+")
    absolute = name[:1] == name[-1:] == "|" and name[1:-1] in roles
    if not (name in CONSTANTS or name in DERIVED or name in roles or absolute):
        raise ValueError(f"special-case row {text!r}: unknown value {token!r}")
    return Part(
        name=name, negate=negate, signless=signless, nan_sign=name == "nan" and body != name
    )


def parse_row(text: str, roles: tuple[str, ...], width: int) -> Rule:
    conditions, _, result = text.partition(" -> ")
    when: list[tuple[str, str]] = []
    for condition in conditions.split(" & "):
        role, _, predicate = condition.partition(" ")
        relation = RELATION.match(predicate)
        if role not in roles or not (
            predicate in PREDICATES or (relation is not None and relation[3] in roles)
        ):
            raise ValueError(f"special-case row {text!r}: bad condition {condition!r}")
        when.append((role, predicate))
    if result == "?":
        return Rule(text=text, when=tuple(when), result=None)
    parts = tuple(_part(token, roles, text) for token in result.split(", "))
    if len(parts) != width:
        raise ValueError(f"special-case row {text!r}: expected {width} result part(s)")
    try:  # a derived value must find its roles: evaluate it on empty inputs
        for part in parts:
            _value(part, dict.fromkeys(roles, np.zeros(0)), (0,))
    except KeyError as missing:
        raise ValueError(f"special-case row {text!r}: no role {missing} here") from None
    return Rule(text=text, when=tuple(when), result=parts)


def rows_of(table: str) -> list[str]:
    """The rows of one table entry: split at ";" and new lines, "#" comments dropped."""
    lines = (line.partition("#")[0] for line in table.splitlines())
    return [row.strip() for line in lines for row in line.split(";") if row.strip()]


# --- the data file --------------------------------------------------------------------------
# The keys an entry of each table takes: (required, optional), the types of their values. The
# order of the tables is the order in which SOURCES takes an operation's link.
_ENTRY_KEYS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "real": (frozenset({"rows", "link"}), frozenset()),
    "defined": (frozenset({"rows", "link", "reason"}), frozenset()),
    "real_via": (frozenset({"base", "link"}), frozenset({"args", "result", "componentwise"})),
    "complex": (frozenset({"rows", "link"}), frozenset({"real_result"})),
    "complex_via": (frozenset({"base", "link"}), frozenset({"args", "result", "componentwise"})),
}
_TOP_KEYS = frozenset({"binary", "shared", *_ENTRY_KEYS})
_FLAGS = frozenset({"real_result", "componentwise"})  # booleans; every other value is a string
_OPTIONAL_TEXT = frozenset({"args", "result"})  # strings that may be empty
# The tables of rows, with the kind of input they are for.
_ROW_TABLES: tuple[tuple[str, Kind], ...] = (
    ("real", "real"),
    ("defined", "real"),
    ("complex", "complex"),
)
_VIA_TABLES: tuple[tuple[str, Kind], ...] = (("real_via", "real"), ("complex_via", "complex"))
_SHARED_MARK = "@"  # a row "@NAME" stands for the rows of shared.NAME


@dataclass(frozen=True, kw_only=True)
class Tables:
    """The checked contents of a special-cases file (:func:`load_tables`), keyed by operation.

    ``real``, ``complex``, ``defined``: an operation's rows, one a line, shared rows written
    out; ``real_via``, ``complex_via``: its :class:`Via` records; ``binary``: the operations
    taking ``x1``, ``x2``; ``real_result``: complex operations whose result is real (or bool);
    ``rules``: the rows parsed, per kind (``defined`` among the real ones); ``sources``: the
    page an operation's entry cites (its first entry's, in the order real, defined, real_via,
    complex, complex_via); ``reasons``: why a beyond-standard operation's rows hold.
    """

    real: dict[str, str]
    complex: dict[str, str]
    defined: dict[str, str]
    real_via: dict[str, Via]
    complex_via: dict[str, Via]
    binary: frozenset[str]
    real_result: frozenset[str]
    rules: dict[Kind, dict[str, tuple[Rule, ...]]]
    sources: dict[str, str]
    reasons: dict[str, str]


def load_tables(path: Path = SPECIAL_CASES_PATH) -> Tables:
    """Read and check a special-cases file (the shipped one unless ``path`` names another).

    Raises:
        SpecialCasesError: the file cannot be read, or an entry is malformed: an unknown or
            missing key, a value of the wrong type, a link that is not https, a row that does
            not parse, an unknown shared row set or ARGS/RESULTS map, an operation given twice
            for one kind, or a via whose base has no rows of the kind it needs. The message
            names the file and the entry.
    """
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecialCasesError(f"{path}: cannot read the special cases: {exc}") from None
    _check_keys(path, "the top level", data, frozenset(), _TOP_KEYS)
    shared = _shared_rows(path, data.get("shared", {}))
    binary = _binary(path, data.get("binary", []))
    entries = {table: _entries(path, table, data.get(table, {})) for table in _ENTRY_KEYS}

    rules: dict[Kind, dict[str, tuple[Rule, ...]]] = {"real": {}, "complex": {}}
    texts: dict[str, dict[str, str]] = {}
    for table, kind in _ROW_TABLES:
        texts[table] = {}
        for op, entry in entries[table].items():
            where = f"[{table}.{op}]"
            if op in rules[kind]:
                raise _error(path, where, f"{op!r} has {kind} rows already: keep one table")
            rows = _expand(path, where, entry["rows"], shared)
            roles = _ROLES[kind, 2 if op in binary else 1]
            width = 1 if kind == "real" or entry.get("real_result", False) else 2
            try:
                rules[kind][op] = tuple(parse_row(row, roles, width) for row in rows)
            except ValueError as exc:
                raise _error(
                    path, where, f"{exc} (the header of the file has the syntax)"
                ) from None
            texts[table][op] = "\n".join(rows)

    vias: dict[Kind, dict[str, Via]] = {"real": {}, "complex": {}}
    for table, kind in _VIA_TABLES:
        for op, entry in entries[table].items():
            where = f"[{table}.{op}]"
            via = Via(
                base=entry["base"],
                args=entry.get("args", ""),
                result=entry.get("result", ""),
                componentwise=entry.get("componentwise", False),
            )
            _check_maps(path, where, via)
            if op in rules[kind]:
                raise _error(path, where, f"{op!r} has {kind} rows too: keep the rows or the via")
            vias[kind][op] = via
    for table, kind in _VIA_TABLES:
        for op in vias[kind]:
            _check_base(path, f"[{table}.{op}]", op, kind, rules, vias)

    known = {*rules["real"], *rules["complex"], *vias["real"], *vias["complex"]}
    if unknown := sorted(binary - known):
        raise _error(path, "binary", f"no entry for {', '.join(unknown)}: remove it or add one")
    sources: dict[str, str] = {}
    for table in _ENTRY_KEYS:
        for op, entry in entries[table].items():
            sources.setdefault(op, entry["link"])
    return Tables(
        real=texts["real"],
        complex=texts["complex"],
        defined=texts["defined"],
        real_via=vias["real"],
        complex_via=vias["complex"],
        binary=binary,
        real_result=frozenset(
            op for op, entry in entries["complex"].items() if entry.get("real_result", False)
        ),
        rules=rules,
        sources=sources,
        reasons={op: entry["reason"] for op, entry in entries["defined"].items()},
    )


def _error(path: Path, where: str, what: str) -> SpecialCasesError:
    return SpecialCasesError(f"{path}: {where}: {what}")


def _check_keys(
    path: Path,
    where: str,
    table: Mapping[str, Any],
    required: frozenset[str],
    allowed: frozenset[str],
) -> None:
    if unknown := sorted(set(table) - allowed):
        expected = ", ".join(sorted(allowed))
        raise _error(path, where, f"unknown key(s) {', '.join(unknown)} (expected: {expected})")
    if missing := sorted(required - set(table)):
        raise _error(path, where, f"missing {', '.join(missing)}")


def _shared_rows(path: Path, raw: object) -> dict[str, list[str]]:
    if not isinstance(raw, dict):
        raise _error(path, "[shared]", "not a table of named rows")
    shared: dict[str, list[str]] = {}
    for name, text in raw.items():
        where = f"[shared] {name}"
        if not isinstance(text, str) or not rows_of(text):
            raise _error(path, where, "not a string of rows")
        rows = rows_of(text)
        if any(row.startswith(_SHARED_MARK) for row in rows):
            raise _error(path, where, "shared rows cannot refer to other shared rows")
        shared[name] = rows
    return shared


def _binary(path: Path, raw: object) -> frozenset[str]:
    if not isinstance(raw, list) or not all(isinstance(op, str) for op in raw):
        raise _error(path, "binary", "not a list of operation names")
    return frozenset(raw)


def _entries(path: Path, table: str, raw: object) -> dict[str, dict[str, Any]]:
    """The entries of one table, their keys and the types of their values checked."""
    if not isinstance(raw, dict):
        raise _error(path, f"[{table}]", f"not a table: write one [{table}.NAME] per operation")
    required, optional = _ENTRY_KEYS[table]
    for op, entry in raw.items():
        where = f"[{table}.{op}]"
        if not isinstance(entry, dict):
            raise _error(path, where, f"not a table: write [{table}.{op}] with its keys")
        _check_keys(path, where, entry, required, required | optional)
        for key, value in entry.items():
            if key in _FLAGS and not isinstance(value, bool):
                raise _error(path, where, f"{key} must be true or false")
            if key not in _FLAGS and not (
                isinstance(value, str) and (value or key in _OPTIONAL_TEXT)
            ):
                raise _error(path, where, f"{key} must be a non-empty string")
        if not entry["link"].startswith("https://"):
            raise _error(path, where, f"link {entry['link']!r} is not an https address: cite one")
    return raw


def _expand(path: Path, where: str, text: str, shared: Mapping[str, list[str]]) -> list[str]:
    """An entry's rows, each "@NAME" replaced by the shared rows it names."""
    rows: list[str] = []
    for row in rows_of(text):
        name = row.removeprefix(_SHARED_MARK)
        if name == row:
            rows.append(row)
        elif name in shared:
            rows.extend(shared[name])
        else:
            raise _error(path, where, f"no shared rows {name!r}: add them to [shared]")
    if not rows:
        raise _error(path, where, "no rows: write them or remove the entry")
    return rows


def _check_maps(path: Path, where: str, via: Via) -> None:
    if via.args and via.args not in ARGS:
        raise _error(path, where, f"unknown args {via.args!r} (expected: {', '.join(ARGS)})")
    if via.result and via.result not in RESULTS:
        known = ", ".join(RESULTS)
        raise _error(path, where, f"unknown result {via.result!r} (expected: {known})")
    if via.componentwise and (via.args or via.result):
        raise _error(path, where, "a componentwise via maps no args or result")


def _check_base(
    path: Path,
    where: str,
    op: str,
    kind: Kind,
    rules: Mapping[Kind, Mapping[str, object]],
    vias: Mapping[Kind, Mapping[str, Via]],
) -> None:
    """A via must end in rows: its base's (of the real kind for a componentwise via), or those
    its base's own via ends in."""
    seen = {(op, kind)}
    via = vias[kind][op]
    while True:
        kind = "real" if via.componentwise else kind
        if via.base in rules[kind]:
            return
        if via.base not in vias[kind]:
            raise _error(
                path, where, f"base {via.base!r} has no {kind} rows: add [{kind}.{via.base}]"
            )
        if (via.base, kind) in seen:
            raise _error(path, where, f"base {via.base!r} leads back here: a via must end in rows")
        seen.add((via.base, kind))
        via = vias[kind][via.base]


# --- evaluation -----------------------------------------------------------------------------


class Fixed(NamedTuple):
    """What the rules fix, per position, for one operation on broadcast inputs.

    ``values``, ``signless`` and ``nan_sign`` hold one array per component of the result (one
    for a real result, real and imaginary part for a complex one); ``rule`` is the index of
    the row that claimed the position in the table evaluated (the base's for a :class:`Via`,
    the real part's for a componentwise one; -1: none).
    """

    mask: np.ndarray
    values: tuple[np.ndarray, ...]
    signless: tuple[np.ndarray, ...]
    nan_sign: tuple[np.ndarray, ...]
    rule: np.ndarray


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    """``real + imag j`` without arithmetic (``1j * inf`` would make a NaN real part)."""
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), dtype=np.complex128)
    out.real = real
    out.imag = imag
    return out


def _times_i(args: list[np.ndarray]) -> list[np.ndarray]:
    return [_complex(-args[0].imag, args[0].real)]


def _times_minus_i(fixed: Fixed) -> Fixed:
    (real, imag), (s_real, s_imag), (n_real, n_imag) = fixed.values, fixed.signless, fixed.nan_sign
    return fixed._replace(
        values=(imag, -real), signless=(s_imag, s_real), nan_sign=(n_imag, n_real)
    )


def _scaled(factor: float) -> Callable[[Fixed], Fixed]:
    def scale(fixed: Fixed) -> Fixed:
        return fixed._replace(values=tuple(v * factor for v in fixed.values))

    return scale


ARGS: dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]] = {
    "1,x": lambda a: [np.ones_like(a[0]), a[0]],
    "x,x": lambda a: [a[0], a[0]],
    "x1,-x2": lambda a: [a[0], -a[1]],
    "1j*x": _times_i,
}
RESULTS: dict[str, Callable[[Fixed], Fixed]] = {
    "-1j*w": _times_minus_i,
    "w/ln2": _scaled(1 / math.log(2)),
    "w/ln10": _scaled(1 / math.log(10)),
}


def _variables(kind: Kind, args: list[np.ndarray]) -> dict[str, np.ndarray]:
    if kind == "real":
        return dict(zip(_ROLES[kind, len(args)], args, strict=True))
    parts = [part for z in args for part in (z.real, z.imag)]
    return dict(zip(_ROLES[kind, len(args)], parts, strict=True))


def _holds(role: str, predicate: str, v: Variables) -> np.ndarray:
    relation = RELATION.match(predicate)
    if relation is None:
        return PREDICATES[predicate](v[role])
    other = -v[relation[3]] if relation[2] else v[relation[3]]
    return v[role] == other if relation[1] == "=" else v[role] != other


def _value(part: Part, v: Variables, shape: tuple[int, ...]) -> np.ndarray:
    name = part.name
    if name in CONSTANTS:
        value = np.full(shape, CONSTANTS[name])
    elif name in DERIVED:
        value = np.broadcast_to(DERIVED[name](v), shape)
    else:
        value = v[name.strip("|")]
        value = np.abs(value) if name.startswith("|") else value
    return -value if part.negate else value


def _apply(rules: tuple[Rule, ...], v: Variables, shape: tuple[int, ...]) -> Fixed:
    width = next((len(r.result) for r in rules if r.result is not None), 1)
    rule = np.full(shape, -1)
    mask = np.zeros(shape, dtype=bool)
    values = [np.zeros(shape) for _ in range(width)]
    signless = [np.zeros(shape, dtype=bool) for _ in range(width)]
    nan_sign = [np.zeros(shape, dtype=bool) for _ in range(width)]
    for index, row in enumerate(rules):
        hit = rule < 0
        for role, predicate in row.when:
            hit &= _holds(role, predicate, v)
        if not hit.any():
            continue
        rule[hit] = index
        if row.result is None:
            continue
        mask |= hit
        for k, part in enumerate(row.result):
            np.copyto(values[k], _value(part, v, shape), where=hit)
            signless[k] |= hit & part.signless
            nan_sign[k] |= hit & part.nan_sign
    return Fixed(mask, tuple(values), tuple(signless), tuple(nan_sign), rule)


# --- the tables, loaded ---------------------------------------------------------------------

TABLES = load_tables()
REAL: dict[str, str] = TABLES.real
COMPLEX: dict[str, str] = TABLES.complex
REAL_VIA: dict[str, Via] = TABLES.real_via
COMPLEX_VIA: dict[str, Via] = TABLES.complex_via
BINARY: frozenset[str] = TABLES.binary
# Beyond the standard: special values that a function's mathematical definition fixes where the
# standard has no such function (the reasons: TABLES.reasons).
DEFINED: dict[str, str] = TABLES.defined
BEYOND_STANDARD = frozenset(DEFINED)
SOURCES: dict[str, str] = TABLES.sources
SPECIAL_OPS: frozenset[str] = frozenset().union(REAL, REAL_VIA, COMPLEX, COMPLEX_VIA, DEFINED)
RULES: dict[Kind, dict[str, tuple[Rule, ...]]] = TABLES.rules
VIA: dict[Kind, dict[str, Via]] = {"real": REAL_VIA, "complex": COMPLEX_VIA}


def _evaluate(op: str, kind: Kind, args: list[np.ndarray]) -> Fixed | None:
    via = VIA[kind].get(op)
    if via is None:
        rules = RULES[kind].get(op)
        return None if rules is None else _apply(rules, _variables(kind, args), args[0].shape)
    if via.componentwise:
        real = _evaluate(via.base, "real", [z.real for z in args])
        imag = _evaluate(via.base, "real", [z.imag for z in args])
        if real is None or imag is None:
            return None
        return Fixed(
            real.mask & imag.mask,
            real.values + imag.values,
            real.signless + imag.signless,
            real.nan_sign + imag.nan_sign,
            real.rule,
        )
    fixed = _evaluate(via.base, kind, ARGS[via.args](args) if via.args else args)
    return RESULTS[via.result](fixed) if fixed is not None and via.result else fixed


def _kind(dtype: np.dtype) -> Kind | None:
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return "real"
    return "complex" if dtype.kind == "c" else None


def special_cases(op: str, inputs: Sequence[np.ndarray]) -> Fixed | None:
    """The full :class:`Fixed` record behind :func:`expected_special` and :func:`departs`.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    arrays = [np.asarray(x) for x in inputs]
    if op not in SPECIAL_OPS or len(arrays) != (2 if op in BINARY else 1):
        return None
    kinds = {_kind(a.dtype) for a in arrays}
    if len(kinds) != 1 or None in kinds:
        return None  # not float/complex, or real mixed with complex
    kind: Kind = "real" if kinds == {"real"} else "complex"
    wide = np.float64 if kind == "real" else np.complex128
    args = list(np.broadcast_arrays(*(a.astype(wide) for a in arrays)))
    with np.errstate(all="ignore"):
        return _evaluate(op, kind, args)


def expected_special(op: str, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(mask, expected) for an elementwise operation on these inputs.

    op: canonical operation name (:data:`SPECIAL_OPS`). inputs: the array arguments in order
    (x for unary; x1, x2 for binary), any real float dtype (float16/float32/float64) or
    complex dtype, numpy arrays possibly 0-d, broadcastable. Returns None if op has no table
    (for this kind of input), the arity is wrong, or any input is not float/complex (or real
    inputs are mixed with complex ones). Otherwise mask (bool, broadcast shape) marks
    positions where a special-case rule fixes the result, and expected (float64, or complex128
    for a complex result; same broadcast shape) holds the required value there (NaN where NaN
    is required, with the sign of zeros and infinities exact; bool results as 0/1). Positions
    not covered by a rule are False in mask, and 0 in expected.

    Note:
        Where the standard leaves a sign unspecified, expected holds the positive value; judge
        outputs with :func:`departs`, which knows which signs are fixed. abs of a complex
        input is real: expected is float64 there.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    fixed = special_cases(op, inputs)
    if fixed is None:
        return None
    return fixed.mask, expected_of(fixed)


def expected_of(fixed: Fixed) -> np.ndarray:
    """The values a :class:`Fixed` requires (0 where no rule fixes the result)."""
    values = fixed.values
    expected = values[0] if len(values) == 1 else _complex(values[0], values[1])
    return np.where(fixed.mask, expected, 0)


def unspecified(op: str, inputs: Sequence[np.ndarray]) -> np.ndarray | None:
    """Positions a rule claims without fixing the result (the standard leaves it to the
    implementation, e.g. ``floor_divide`` by an infinity): no library can be wrong there.
    None if ``op`` has no table for these inputs.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    fixed = special_cases(op, inputs)
    return None if fixed is None else open_positions(fixed)


def open_positions(fixed: Fixed) -> np.ndarray:
    """Positions a rule of :class:`Fixed` claims without fixing the result."""
    return (fixed.rule >= 0) & ~fixed.mask


_EPS_BY_NAME = {"bfloat16": 2.0**-7}


def epsilon(dtype: np.dtype | str) -> float:
    """Machine epsilon of a float dtype (of its parts if complex); 0 for bool and integers."""
    name = dtype if isinstance(dtype, str) else dtype.name
    if name in _EPS_BY_NAME:
        return _EPS_BY_NAME[name]
    resolved = np.dtype(dtype)
    return float(np.finfo(resolved).eps) if resolved.kind in "fc" else 0.0


def _misses(
    got: np.ndarray, want: np.ndarray, signless: np.ndarray, nan_sign: np.ndarray, eps: float
) -> np.ndarray:
    """Positions where ``got`` does not meet ``want`` (one real component)."""
    want_nan, got_nan = np.isnan(want), np.isnan(got)
    bad = want_nan != got_nan
    bad |= want_nan & got_nan & nan_sign & (np.signbit(got) != np.signbit(want))
    g = np.where(signless, np.abs(got), got)
    w = np.where(signless, np.abs(want), want)
    both = ~want_nan & ~got_nan
    exact = np.isinf(w) | (w == 0)
    bad |= both & exact & ((g != w) | (np.signbit(g) != np.signbit(w)))
    bad |= both & ~exact & ~(np.abs(g - w) <= 4 * eps * np.abs(w))
    return bad


def departs(
    op: str,
    inputs: Sequence[np.ndarray],
    output: np.ndarray,
    *,
    output_dtype: str | None = None,
    fixed: Fixed | None = None,
) -> np.ndarray | None:
    """Bool mask of the positions where ``output`` violates a special-case rule.

    A violation: NaN required but not NaN (or with the wrong sign bit, where the rule fixes
    it), non-NaN required but NaN, a wrong infinity or sign of infinity, a wrong sign of zero
    where the rule says +0 or -0, a non-zero where a zero is required, or a finite required
    value missed by more than ``4 * eps * |expected|`` with the eps of the output's dtype
    (``output_dtype`` names it when the array carries another one, e.g. "bfloat16" carried
    as float32; bool and integer outputs are exact). ``fixed``: the rules' result for these
    inputs when the caller has it already (:func:`special_cases`).

    Returns None where :func:`expected_special` does, and when ``output`` cannot be judged:
    not of the broadcast shape, not numeric, or complex where the result is real (or the other
    way round).
    """
    if fixed is None:
        fixed = special_cases(op, inputs)
    if fixed is None:
        return None
    got = np.asarray(output)
    complex_result = len(fixed.values) == 2
    numeric = got.dtype.kind in "biufc" or got.dtype.name in _EPS_BY_NAME
    if got.shape != fixed.mask.shape or not numeric or (got.dtype.kind == "c") != complex_result:
        return None
    eps = epsilon(output_dtype or got.dtype)
    parts = (got.real, got.imag) if complex_result else (got,)
    bad = np.zeros(fixed.mask.shape, dtype=bool)
    with np.errstate(all="ignore"):
        for part, want, signless, nan_sign in zip(
            parts, fixed.values, fixed.signless, fixed.nan_sign, strict=True
        ):
            bad |= _misses(part.astype(np.float64), want, signless, nan_sign, eps)
    return bad & fixed.mask
