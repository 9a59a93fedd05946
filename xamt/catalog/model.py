"""The catalog's records and its committed file: groups of equivalent APIs.

Records are frozen, keyword-only dataclasses of plain data. A :class:`Member` says how the
roles of its group bind to one library call: which roles go positionally (``args``), which by
keyword (``kwargs``: parameter name -> role), and which optional roles the API also takes
(``optional``: role -> parameter name) for the fuzzer to vary. Loading the catalog imports no
deep-learning library.
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, get_args

from xamt import formulas
from xamt.catalog.layouts import ENCODERS, LAYOUTS, VALUE_ENCODERS

# The role vocabulary and the catalog's error live in the lowest layer (xamt.catalog.vocabulary),
# and are read from here too.
from xamt.catalog.vocabulary import ARRAY_ROLES as ARRAY_ROLES
from xamt.catalog.vocabulary import DL_ARRAY_ROLES as DL_ARRAY_ROLES
from xamt.catalog.vocabulary import ROLES as ROLES
from xamt.catalog.vocabulary import SEQUENCE_ROLE as SEQUENCE_ROLE
from xamt.catalog.vocabulary import CatalogError, role_vocabulary
from xamt.libraries import adapter_class, library_names
from xamt.workers.api_paths import FOREIGN_MODULES, foreign_component

SCHEMA = 1
CATALOG_PATH = Path(__file__).resolve().parent / "data" / "catalog.json"
# What shapes a group's arrays must have: any shape, square matrices (linear algebra), plain or
# batched, or vectors. The build validates and the fuzzer draws each kind from its own menu.
# The deep-learning core adds kinds of one spatial rank (1, 2 or 3) each: an input
# (N, C, *spatial) alone, or with convolution weights, transposed-convolution weights or
# per-channel arrays (xamt.catalog.dlcore.ARRANGEMENTS).
BASE_KINDS = ("any", "square", "batched", "vector")
DL_KINDS = tuple(
    f"{a}{d}d"
    for a in ("spatial", "conv", "convt", "channel", "last", "pair", "attention")
    for d in (1, 2, 3)
)
Shape = tuple[int, ...]
# how an operation-specific kind fills an array (data/shapes.toml)
FILLS = ("uniform", "spd")


@dataclass(frozen=True, kw_only=True)
class OpShapes:
    """An operation-specific shape kind (``data/shapes.toml``): for the operations it names,
    per number of arrays, the shapes of each canonical input tuple (one shape per array, in
    role order), further arrangements for the fuzzer, and how each array is filled.

    Note: a kind is tried only on its own operations' buckets, after the general kinds.
    """

    name: str
    ops: tuple[str, ...]
    family: str
    canonical: dict[int, tuple[tuple[Shape, ...], ...]]
    fuzz: dict[int, tuple[tuple[Shape, ...], ...]]
    values: dict[int, tuple[str, ...]]


def op_shape_kinds(path: Path | None = None) -> Mapping[str, OpShapes]:
    """The operation-specific shape kinds, by name (the shipped file is read once per process
    and shared read-only: draw_case asks for every case); a malformed kind names the file and
    the kind."""
    if path is None:
        return _OP_SHAPES_VIEW
    return _read_op_shapes(path)


def _read_op_shapes(path: Path) -> dict[str, OpShapes]:
    try:
        table = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    kinds = {}
    for name, raw in sorted(table.get("kinds", {}).items()):
        where = f"{path}: kind {name!r}"
        try:
            kind = _op_shapes(name, raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{where}: malformed ({exc!r})") from None
        if name in BASE_KINDS or name in DL_KINDS:
            raise CatalogError(f"{where}: the name of a general shape kind")
        if kind.family not in FAMILIES:
            raise CatalogError(f"{where}: unknown family {kind.family!r}")
        for n, tuples in [*kind.canonical.items(), *kind.fuzz.items()]:
            if any(len(shapes) != n for shapes in tuples):
                raise CatalogError(f"{where}: arrays.{n} has a tuple of another length")
        for n, fills in kind.values.items():
            if len(fills) != n or not set(fills) <= set(FILLS):
                raise CatalogError(
                    f"{where}: arrays.{n}.values must name {n} fills among {', '.join(FILLS)}"
                )
            for shapes in kind.canonical[n]:
                for fill, shape in zip(fills, shapes, strict=True):
                    size = math.prod(shape)
                    if fill == "spd" and math.isqrt(size) ** 2 != size:
                        raise CatalogError(f"{where}: spd shape {shape} has no square size")
        if len({len(c) for c in kind.canonical.values()} | {3}) != 1:
            raise CatalogError(f"{where}: every arrays.N needs 3 canonical tuples")
        kinds[name] = kind
    return kinds


def _op_shapes(name: str, raw: dict[str, Any]) -> OpShapes:
    def tuples(rows: list[list[list[int]]]) -> tuple[tuple[Shape, ...], ...]:
        return tuple(tuple(tuple(int(d) for d in shape) for shape in row) for row in rows)

    arrays = {int(n): spec for n, spec in raw["arrays"].items()}
    return OpShapes(
        name=name,
        ops=tuple(str(op) for op in raw["ops"]),
        family=str(raw["family"]),
        canonical={n: tuples(spec["canonical"]) for n, spec in arrays.items()},
        fuzz={n: tuples(spec.get("fuzz", [])) for n, spec in arrays.items()},
        values={
            n: tuple(str(v) for v in spec.get("values", ["uniform"] * n))
            for n, spec in arrays.items()
        },
    )


OP_SHAPES_PATH = Path(__file__).resolve().parent / "data" / "shapes.toml"
Family = Literal[
    "elementwise",
    "reduction",
    "shape",
    "creation",
    "linalg",
    "fft",
    "activation",
    "other",
    "convolution",
    "pooling",
    "normalization",
    "padding",
    "resizing",
    "loss",
    "embedding",
    "attention",
]
FAMILIES: tuple[str, ...] = get_args(Family)


class UnknownGroup(CatalogError):
    """A group id the catalog does not have (the catalog itself is fine)."""

    exit_code = 19


_OP_SHAPES = _read_op_shapes(OP_SHAPES_PATH)
_OP_SHAPES_VIEW: Mapping[str, OpShapes] = MappingProxyType(_OP_SHAPES)
OP_KINDS = tuple(_OP_SHAPES)
SHAPE_KINDS = (*BASE_KINDS, *DL_KINDS, *OP_KINDS)


@dataclass(frozen=True, kw_only=True)
class Member:
    """One library's API in a group, and how the group's roles bind to its call."""

    library: str
    api: str
    args: tuple[str, ...] = ()
    kwargs: dict[str, str] = field(default_factory=dict)
    optional: dict[str, str] = field(default_factory=dict)
    callable: str = ""  # the first path of the same callable object (namespaces alias functions)
    # The deep-learning core (xamt.catalog.dlcore): the layout the member computes in, per array
    # role and for the result ("return"), as a layout name (``channels_last``, ``hwio``...);
    # how a role's value is spelled for a parameter (``encode``: parameter name or argument
    # position -> encoder name, e.g. ``tuple`` for an int stride given as one per spatial
    # dimension); and parameters the member is always called with (``fixed``).
    layout: dict[str, str] = field(default_factory=dict)
    encode: dict[str, str] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    callables: dict[str, str] = field(default_factory=dict)  # parameter -> the library's API


@dataclass(frozen=True, kw_only=True)
class Group:
    """APIs of different libraries that agreed on every canonical input."""

    id: str
    op: str
    family: str
    roles: tuple[str, ...]
    dtype: str
    members: tuple[Member, ...]
    shapes: str = "any"
    # a float64 formula (xamt.formulas) that agreed with the members on the canonical
    # inputs: the reference of a group without numpy; "" for none
    reference: str = ""
    # canonical values of the group's scalar roles where they are the group's own (the
    # deep-learning core: a kernel size, ``groups=2`` for a grouped convolution); other roles
    # take theirs from roles.toml
    params: dict[str, Any] = field(default_factory=dict)

    @property
    def libraries(self) -> tuple[str, ...]:
        return tuple(sorted({m.library for m in self.members}))


@dataclass(frozen=True, kw_only=True)
class Catalog:
    libraries: dict[str, str]
    groups: tuple[Group, ...]

    def group(self, gid: str) -> Group:
        for g in self.groups:
            if g.id == gid:
                return g
        raise UnknownGroup(f"no group {gid!r} in the catalog; see `xamt catalog list`")

    def stats(self) -> dict[str, Any]:
        """Totals: groups, matched API names, distinct callables, groups per library."""
        apis = {(m.library, m.api) for g in self.groups for m in g.members}
        callables = {(m.library, m.callable or m.api) for g in self.groups for m in g.members}
        per_lib = Counter(lib for g in self.groups for lib in g.libraries)
        return {
            "groups": len(self.groups),
            "operations": len({g.op for g in self.groups}),
            "matched_apis": len(apis),
            "distinct_callables": len(callables),
            "groups_per_library": {lib: per_lib.get(lib, 0) for lib in library_names()},
            "apis_per_library": {
                lib: len({a for (lb, a) in apis if lb == lib}) for lib in library_names()
            },
            "families": dict(sorted(Counter(g.family for g in self.groups).items())),
            "libraries_per_group": dict(
                sorted(Counter(len(g.libraries) for g in self.groups).items())
            ),
            "library_versions": self.libraries,
            "per_family": _per_family(self.groups),
            "deep_learning_core": _summary([g for g in self.groups if g.shapes in DL_KINDS]),
        }


def _summary(groups: list[Group]) -> dict[str, Any]:
    per_lib = Counter(lib for g in groups for lib in g.libraries)
    return {
        "groups": len(groups),
        "operations": len({g.op for g in groups}),
        "groups_per_library": {lib: per_lib.get(lib, 0) for lib in library_names()},
    }


def _per_family(groups: tuple[Group, ...]) -> dict[str, dict[str, Any]]:
    """Family -> groups, distinct operations and groups per library."""
    by: dict[str, list[Group]] = {}
    for g in groups:
        by.setdefault(g.family, []).append(g)
    return {family: _summary(gs) for family, gs in sorted(by.items())}


def to_json(catalog: Catalog) -> str:
    """Serialize with one group per line: small, stable diffs when the catalog is rebuilt."""
    lines = [
        "{",
        f'"schema": {SCHEMA},',
        f'"libraries": {json.dumps(catalog.libraries, sort_keys=True)},',
        '"groups": [',
    ]
    body = [
        json.dumps(_compact(asdict(g)), sort_keys=True, separators=(",", ":"))
        for g in catalog.groups
    ]
    lines.append(",\n".join(body))
    lines += ["]", "}"]
    return "\n".join(lines) + "\n"


def _compact(group: dict[str, Any]) -> dict[str, Any]:
    if group["shapes"] == "any":
        del group["shapes"]
    if not group["reference"]:
        del group["reference"]
    if not group["params"]:
        del group["params"]
    for m in group["members"]:
        for key in ("kwargs", "optional", "args", "layout", "encode", "fixed", "callables"):
            if not m[key]:
                del m[key]
        if m.get("callable") == m["api"]:
            del m["callable"]
    return group


def save(catalog: Catalog, path: Path = CATALOG_PATH) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(to_json(catalog))
    tmp.replace(path)


def load(path: Path = CATALOG_PATH) -> Catalog:
    """Load and check a catalog file; every problem names the file and the entry."""
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise CatalogError(
            f"{path}: no catalog file; build one with `xamt catalog build`"
        ) from None
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{path}: not a readable JSON catalog: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CatalogError(f"{path}: expected a catalog with schema {SCHEMA}")
    _check_schema(path, text, data)
    known = set(library_names())
    vocabulary = role_vocabulary()
    groups = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("groups", [])):
        where = f"{path}: group #{i} ({_label(raw)})"
        try:
            group = _group(raw)
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{where}: malformed entry ({exc!r})") from None
        if group.id in seen:
            raise CatalogError(f"{where}: duplicate group id {group.id!r}")
        seen.add(group.id)
        for role in group.roles:
            if role not in vocabulary:
                raise CatalogError(
                    f"{where}: unknown role {role!r}; roles are {', '.join(vocabulary)}"
                )
        for m in group.members:
            if m.library not in known:
                raise CatalogError(
                    f"{where}: unknown library {m.library!r} in member {m.api}; "
                    f"known: {', '.join(sorted(known))}"
                )
            used = [*m.args, *m.kwargs.values(), *m.optional]
            for role in used:
                if role not in vocabulary:
                    raise CatalogError(
                        f"{where}: member {m.api} uses unknown role {role!r}; "
                        f"roles are {', '.join(vocabulary)}"
                    )
            _check_paths(where, m)
            _check_dl(where, m)
        if group.reference and group.reference not in formulas.BY_NAME:
            raise CatalogError(
                f"{where}: unknown reference formula {group.reference!r}; "
                f"known: {', '.join(sorted(formulas.BY_NAME))}"
            )
        if group.shapes not in SHAPE_KINDS:
            raise CatalogError(
                f"{where}: unknown shapes {group.shapes!r}; known: {', '.join(SHAPE_KINDS)}"
            )
        if len(group.libraries) < 2:
            raise CatalogError(f"{where}: a group must span at least two libraries")
        groups.append(group)
    libraries = data.get("libraries", {})
    return Catalog(libraries=dict(libraries), groups=tuple(groups))


def _check_paths(where: str, m: Member) -> None:
    """Every path of a member (``api``, ``callable``, ``callables``) starts at its library's
    root and names none of :data:`~xamt.workers.api_paths.FOREIGN_MODULES` on the way
    (``torch.os.kill``): the worker refuses such a path too, but a catalog says it here, before
    any worker starts.

    Note:
        This check imports no library, so it cannot see every way out (a library attribute
        that is another package's module under its own name); the worker's walk, which checks
        the module of every object it reaches, is the guard.
    """
    roots = adapter_class(m.library).roots
    for path in (m.api, m.callable, *m.callables.values()):
        if not path:
            continue
        if path.split(".", 1)[0] not in roots:
            raise CatalogError(
                f"{where}: member {m.api}: path {path!r} is not in {m.library} "
                f"(its paths start with {' or '.join(roots)})"
            )
        foreign = foreign_component(path)
        if foreign is not None:
            raise CatalogError(
                f"{where}: member {m.api}: path {path!r} reaches module {foreign!r} "
                f"({FOREIGN_MODULES[foreign]}), outside {m.library}; API paths stay inside "
                "their library"
            )


def _check_dl(where: str, m: Member) -> None:
    """A member's layouts and encoders must be ones xamt knows (xamt.catalog.layouts)."""
    if not (m.layout or m.encode):
        return
    for name in m.layout.values():
        if name not in LAYOUTS:
            raise CatalogError(
                f"{where}: member {m.api} has unknown layout {name!r}; known: {', '.join(LAYOUTS)}"
            )
    for name in m.encode.values():
        if name not in ENCODERS and name not in VALUE_ENCODERS:
            raise CatalogError(
                f"{where}: member {m.api} has unknown encoder {name!r}; "
                f"known: {', '.join(ENCODERS)}"
            )


# Catalog texts (by digest) that passed the schema in this process: the committed catalog is
# checked once, not at every load.
_CHECKED: set[str] = set()


def _label(raw: Any) -> str:
    ident = raw.get("id", "?") if isinstance(raw, dict) else "?"
    text = str(ident)
    return text if len(text) <= 60 else text[:57] + "..."


def _check_schema(path: Path, text: str, data: dict[str, Any]) -> None:
    """Check ``data`` against ``xamt/schemas/catalog.schema.json``: a problem inside a group is
    that group's (``group #3 (sum): malformed entry: field 'members[0].api' ...``)."""
    from xamt import schemas

    digest = hashlib.sha256(text.encode()).hexdigest()
    if digest in _CHECKED:
        return
    if schemas.problems("catalog", data):
        raw_groups = data.get("groups")
        for i, raw in enumerate(raw_groups if isinstance(raw_groups, list) else []):
            where = f"{path}: group #{i} ({_label(raw)}): malformed entry"
            schemas.validate("catalog", raw, where, CatalogError, definition="group")
        schemas.validate("catalog", data, str(path), CatalogError)
    _CHECKED.add(digest)


def _group(raw: dict[str, Any]) -> Group:
    members = tuple(
        Member(
            library=str(m["library"]),
            api=str(m["api"]),
            args=tuple(m.get("args", ())),
            kwargs=dict(m.get("kwargs", {})),
            optional=dict(m.get("optional", {})),
            callable=str(m.get("callable", m["api"])),
            layout=dict(m.get("layout", {})),
            encode=dict(m.get("encode", {})),
            fixed=_frozen(m.get("fixed", {})),
            callables=dict(m.get("callables", {})),
        )
        for m in raw["members"]
    )
    return Group(
        id=str(raw["id"]),
        op=str(raw["op"]),
        family=str(raw["family"]),
        roles=tuple(raw["roles"]),
        dtype=str(raw["dtype"]),
        members=members,
        shapes=str(raw.get("shapes", "any")),
        reference=str(raw.get("reference", "")),
        params=_frozen(raw.get("params", {})),
    )


def _frozen(values: dict[str, Any]) -> dict[str, Any]:
    """JSON lists as tuples: the values calls are made with (a stride of ``(2, 1)``)."""

    def tup(v: Any) -> Any:
        return tuple(tup(x) for x in v) if isinstance(v, list) else v

    return {str(k): tup(v) for k, v in dict(values).items()}
