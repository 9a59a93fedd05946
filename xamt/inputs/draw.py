"""Draw and mutate cases for a group: shapes, values and parameters by role, all seeded.

Shapes (by how many arrays a group takes): 0-d, empty, size-1, vectors, matrices, high rank
(up to 6), and broadcast pairs for two or more arrays; a group of an operation-specific shape
kind (``data/shapes.toml``: a matrix and a vector, an axis of size 3) gets the kind's own
arrangements, one shape per array. Parameters by role: ``axis`` (omitted
where optional, negative, tuple, out of range), ``keepdims`` both ways where every member takes
it, scalar roles at their canonical value or at boundaries, defaults omitted as well as given.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np

from xamt.catalog.dlcore import is_dl
from xamt.catalog.model import (
    ARRAY_ROLES,
    DL_ARRAY_ROLES,
    SEQUENCE_ROLE,
    Group,
    OpShapes,
    Shape,
    op_shape_kinds,
)
from xamt.catalog.normalize import scalar_value
from xamt.inputs.dlcore import dl_dtypes, draw_dl_case, mutate_param
from xamt.inputs.values import draw_array, float_specials
from xamt.types import Case
from xamt.workers.protocol import BFloat16, DType

SHAPE_KINDS = ("scalar", "empty", "size-one", "vector", "matrix", "high-rank")
SHAPE_WEIGHTS = (0.12, 0.08, 0.08, 0.27, 0.3, 0.15)
FLOAT_GROUP_DTYPES = (
    "float32",
    "float64",
    "float16",
    "bfloat16",
    "int32",
    "int64",
    "bool",
    "complex64",
)
INT_GROUP_DTYPES = ("int32", "int64", "int8", "uint8", "int16", "bool", "float32")
BOOL_GROUP_DTYPES = ("bool", "int32", "float32")


def fuzz_dtypes(group: Group) -> tuple[str, ...]:
    """The dtypes a group is fuzzed with, its validation dtype first."""
    if is_dl(group.shapes):
        return dl_dtypes(group)
    return {"float32": FLOAT_GROUP_DTYPES, "int32": INT_GROUP_DTYPES}.get(
        group.dtype, BOOL_GROUP_DTYPES
    )


def array_roles(group: Group) -> list[str]:
    return [r for r in group.roles if r in ARRAY_ROLES or r in DL_ARRAY_ROLES or r == SEQUENCE_ROLE]


# A small menu of shapes per kind: libraries that compile per shape (jax, tensorflow's
# functions) hit their caches instead of recompiling for every case.
SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    "scalar": ((),),
    "empty": ((0,), (0, 3), (2, 0)),
    "size-one": ((1,), (1, 1), (1, 1, 1)),
    "vector": ((3,), (5,), (8,)),
    "matrix": ((2, 3), (4, 4), (3, 5)),
    "high-rank": ((2, 1, 3, 2), (1, 2, 1, 2, 2), (2, 1, 2, 1, 2, 1)),
}


# Groups of square-matrix operations (``Group.shapes``): the same kinds, square where it matters;
# vectors and 0-d arrays stay, as inputs outside the domain.
SQUARE_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    **SHAPES,
    "empty": ((0, 0), (2, 0, 0)),
    "size-one": ((1, 1), (1, 1, 1)),
    "matrix": ((2, 2), (3, 3), (4, 4)),
    "high-rank": ((2, 3, 3), (2, 1, 2, 2)),
}
BATCHED_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    **SQUARE_SHAPES,
    "empty": ((0, 2, 2), (2, 0, 0)),
    "size-one": ((1, 1, 1),),
    "matrix": ((1, 2, 2), (2, 3, 3), (3, 4, 4)),
}
VECTOR_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {
    **SHAPES,
    "matrix": ((4,), (7,), (2, 3)),
    "high-rank": ((16,), (2, 1, 3)),
}
SHAPE_MENUS = {
    "any": SHAPES,
    "square": SQUARE_SHAPES,
    "batched": BATCHED_SHAPES,
    "vector": VECTOR_SHAPES,
}
BROADCAST_PAIRS: dict[str, tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]] = {
    "any": (((3, 1), (1, 4)), ((3, 4), (4,)), ((3, 4), ()), ((1, 4), (3, 1, 4))),
    "square": (((3, 3), (2, 3, 3)), ((1, 3, 3), (2, 3, 3))),
    "batched": (((1, 3, 3), (2, 3, 3)), ((2, 1, 2, 2), (3, 2, 2))),
    "vector": (((3,), (5,)), ((1,), (4,))),
}


# How often a group of an operation-specific kind (data/shapes.toml) gets one of the kind's
# canonical arrangements rather than one of its fuzz arrangements (edges, mismatches).
OP_KIND_CANONICAL_WEIGHT = 0.6


def draw_op_shapes(
    rng: np.random.Generator,
    kind: OpShapes,
    n_arrays: int,
    pick: Callable[[str], np.random.Generator] | None = None,
) -> list[Shape]:
    """One shape per array for a group of an operation-specific kind: an arrangement from the
    kind's canonical ones (:data:`OP_KIND_CANONICAL_WEIGHT`) or its fuzz ones (``pick`` gives
    the generator that chooses within the menu: see :func:`vocabulary`)."""
    canonical, fuzz = kind.canonical[n_arrays], kind.fuzz.get(n_arrays, ())
    use_canonical = not fuzz or rng.random() < OP_KIND_CANONICAL_WEIGHT
    menu = canonical if use_canonical else fuzz
    chooser = pick("canonical" if use_canonical else "fuzz") if pick else rng
    return list(menu[int(chooser.integers(0, len(menu)))])


# The shape vocabulary. Most cases take their shapes, within the rank class (shape kind, op
# arrangement, broadcast pair) their own generator chose, from VOCABULARY_SIZE choices fixed
# per group and dtype: the same in every campaign and seed, so that libraries that trace or
# compile per input signature (jax, tensorflow's functions, mindspore's graph ops) meet
# signatures they have already seen, in their worker or in jax's persistent compilation
# cache, while the values change. VOCABULARY_FRESH of the cases choose fresh, as every case
# did before, so that every shape of the menus stays reachable; the boundary classes (0-d,
# empty, size-one, high rank, broadcasting) are rank classes and stay in every vocabulary.
# bench/vocabulary.py measures root causes per minute and participation against fresh shapes.
VOCABULARY_SIZE = 1
VOCABULARY_FRESH = 0.25


def vocabulary(
    rng: np.random.Generator, group: Group, dtype: str
) -> Callable[[str], np.random.Generator]:
    """The generator that chooses a shape within a rank class for one case: ``rng`` itself for
    a fresh case (:data:`VOCABULARY_FRESH`), else one seeded by the group, the dtype, the rank
    class and one of :data:`VOCABULARY_SIZE` slots (independent of the campaign's seed)."""
    fresh = rng.random() < VOCABULARY_FRESH
    slot = int(rng.integers(0, VOCABULARY_SIZE))

    def pick(rank_class: str) -> np.random.Generator:
        if fresh:
            return rng
        key = f"{group.id}\0{dtype}\0{rank_class}\0{slot}".encode()
        return np.random.default_rng(int.from_bytes(hashlib.sha256(key).digest()[:8], "little"))

    return pick


def draw_shape(rng: np.random.Generator, kind: str, shapes: str = "any") -> tuple[int, ...]:
    menu = SHAPE_MENUS[shapes][kind]
    return menu[int(rng.integers(0, len(menu)))]


def _broadcast_pair(
    rng: np.random.Generator, shapes: str = "any"
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    pairs = BROADCAST_PAIRS[shapes]
    return pairs[int(rng.integers(0, len(pairs)))]


def _axis_values(rng: np.random.Generator, ndim: int, required: bool) -> Any:
    """An axis parameter: in range, negative, tuple, out of range (or omitted if optional)."""
    choices: list[Any] = [0, -1, max(ndim - 1, 0)] * 3 + [ndim, -ndim - 1]
    if ndim >= 2:
        choices += [(0, 1), (-1, 0)]
    if not required:
        choices += [None, None]
    return choices[int(rng.integers(0, len(choices)))]


def _scalar_param(rng: np.random.Generator, role: str, with_arrays: bool) -> Any:
    """A scalar role's value: mostly its canonical value, sometimes a boundary."""
    canonical = scalar_value(role, with_arrays)
    if rng.random() < 0.6 or isinstance(canonical, tuple | str | DType):
        return canonical  # (a name, a mode or a dtype has no boundary)
    if isinstance(canonical, np.ndarray):  # index arrays: out of range or negative
        return [
            canonical,
            np.array([0, 10**6], canonical.dtype),
            np.array([-1, 0], canonical.dtype),
        ][int(rng.integers(0, 3))]
    if isinstance(canonical, bool):
        return canonical
    if isinstance(canonical, int):
        return [0, -1, canonical + 1, 2**31 - 1][int(rng.integers(0, 4))]
    return [0.0, -0.0, -1.0, 1e30, float("nan")][int(rng.integers(0, 5))]


def common_optional(group: Group) -> set[str]:
    """Optional roles every member of the group takes (so a value means the same to all)."""
    sets = [set(m.optional) for m in group.members]
    return set.intersection(*sets) if sets else set()


def draw_case(
    group: Group,
    rng: np.random.Generator,
    dtype: str,
    value_class: str,
    apis: dict[str, str],
    seed: int = 0,
) -> Case:
    """A fresh case for ``group``: arrays of ``dtype`` and ``value_class``, parameters by role."""
    if is_dl(group.shapes):
        return draw_dl_case(group, rng, dtype, value_class, apis, seed)
    roles = array_roles(group)
    values: dict[str, Any] = {}
    n_arrays = 2 if roles == [SEQUENCE_ROLE] else len(roles)
    op_kind = op_shape_kinds().get(group.shapes)
    pick = vocabulary(rng, group, dtype)
    if op_kind is not None and n_arrays in op_kind.canonical:
        shapes = draw_op_shapes(rng, op_kind, n_arrays, pick)
    elif n_arrays >= 2 and rng.random() < 0.25:
        s1, s2 = _broadcast_pair(pick("broadcast"), group.shapes)
        shapes = [s1, s2] + [s1] * (n_arrays - 2)
    else:
        kind = SHAPE_KINDS[int(rng.choice(len(SHAPE_KINDS), p=SHAPE_WEIGHTS))]
        shape = draw_shape(pick(kind), kind, group.shapes)
        shapes = [shape] * n_arrays
    arrays = [draw_array(rng, s, dtype, value_class) for s in shapes]
    if roles == [SEQUENCE_ROLE]:
        values[SEQUENCE_ROLE] = arrays
    else:
        values.update(zip(roles, arrays, strict=True))
    ndim = len(shapes[0]) if shapes else 0
    with_arrays = n_arrays > 0
    for role in group.roles:
        if role == "axis":
            values["axis"] = _axis_values(rng, ndim, required=True)
        elif role == "keepdims":
            values["keepdims"] = bool(rng.random() < 0.7)  # a [keepdims] group: mostly True
        elif role not in roles:
            values[role] = _scalar_param(rng, role, with_arrays)
    optional = common_optional(group)
    if "axis" in optional and "axis" not in values and rng.random() < 0.3:
        values["axis"] = _axis_values(rng, ndim, required=False)
    if "keepdims" in optional and rng.random() < 0.4:
        values["keepdims"] = bool(rng.integers(0, 2))
    if values.get("axis", 0) is None:
        del values["axis"]
    return Case(
        group=group.id, dtype=dtype, value_class=value_class, values=values, apis=apis, seed=seed
    )


def mutate(case: Case, group: Group, rng: np.random.Generator) -> Case:
    """A neighbour of ``case``: one value replaced by a special one, or a parameter changed."""
    values = dict(case.values)
    arrays = [
        r
        for r in values
        if isinstance(values[r], np.ndarray | BFloat16) and r in array_roles(group)
    ]
    choice = rng.random()
    moved = mutate_param(values, group, rng) if is_dl(group.shapes) else None
    if arrays and choice < 0.7:
        role = arrays[int(rng.integers(0, len(arrays)))]
        values[role] = _poke(values[role], case.dtype, rng)
    elif moved is not None:
        values = moved
    elif "axis" in values or "axis" in group.roles:
        ndim = _ndim(values, group)
        values["axis"] = _axis_values(rng, ndim, required="axis" in group.roles)
        if values["axis"] is None:
            del values["axis"]
    elif "keepdims" in common_optional(group):
        values["keepdims"] = not values.get("keepdims", False)
    return Case(
        group=case.group,
        dtype=case.dtype,
        value_class=case.value_class,
        values=values,
        apis=case.apis,
        seed=case.seed,
    )


def revalue(
    case: Case, group: Group, rng: np.random.Generator, value_class: str, seed: int
) -> Case | None:
    """``case`` with fresh values of ``value_class`` in its arrays, everything else kept
    (shapes, dtypes, parameters, members): the same input signature, so that a library that
    traced or compiled it calls it warm. None for a group whose arrays are drawn under
    constraints (a deep-learning layer's weights, probabilities and labels) or a gradient case
    (its cotangent goes with its values)."""
    if is_dl(group.shapes) or case.grad:
        return None

    def fresh(value: Any) -> Any:
        if isinstance(value, BFloat16):
            return draw_array(rng, tuple(value.values.shape), "bfloat16", value_class)
        if isinstance(value, np.ndarray):
            return draw_array(rng, tuple(value.shape), value.dtype.name, value_class)
        return value

    values = dict(case.values)
    for role in array_roles(group):
        if role not in values:
            continue
        v = values[role]
        values[role] = [fresh(a) for a in v] if isinstance(v, list | tuple) else fresh(v)
    return Case(
        group=case.group,
        dtype=case.dtype,
        value_class=value_class,
        values=values,
        apis=dict(case.apis),
        seed=seed,
    )


def _ndim(values: dict[str, Any], group: Group) -> int:
    for role in array_roles(group):
        v = values.get(role)
        if isinstance(v, np.ndarray | BFloat16):
            return len(v.shape)
    return 1


def _poke(
    arr: np.ndarray | BFloat16, dtype: str, rng: np.random.Generator
) -> np.ndarray | BFloat16:
    """Replace one element by a special value of the dtype."""
    base = arr.values if isinstance(arr, BFloat16) else arr
    if base.size == 0:
        return arr
    out = base.copy()
    flat = out.reshape(-1)
    i = int(rng.integers(0, flat.size))
    kind = base.dtype.kind
    if kind == "b":
        flat[i] = not flat[i]
    elif kind in "iu":
        info = np.iinfo(base.dtype)
        flat[i] = [info.max, info.min, 0, -1 if info.min < 0 else 1][int(rng.integers(0, 4))]
    else:
        specials = np.concatenate([float_specials(dtype), [np.nan, np.inf, -np.inf]])
        with np.errstate(over="ignore", invalid="ignore"):
            flat[i] = specials[int(rng.integers(0, len(specials)))]
    return BFloat16(out) if isinstance(arr, BFloat16) else out


# Namespaces whose functions accept only what they were validated on: no promotion of their
# inputs, no broadcasting, no negative axes (jax.lax primitives, tensorflow's raw ops), or
# legacy operators that keep the input dtype (mxnet.nd computes log of an int32 in int32).
STRICT_NAMESPACES = ("jax.lax.", "tensorflow.raw_ops.", "mxnet.nd.", "mxnet.ndarray.")
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})


def inplace(api: str) -> bool:
    """An in-place variant (``torch.Tensor.exp_``): the result is written into the input."""
    name = api.rsplit(".", 1)[-1]
    return name.endswith("_") and not name.startswith("_")


def strict(api: str) -> bool:
    """Whether an API accepts only what it was validated on: in-place variants (the result's
    dtype cannot change) and strictly typed namespaces (:data:`STRICT_NAMESPACES`)."""
    return inplace(api) or api.startswith(STRICT_NAMESPACES)


def accepts(group: Group, api: str, dtype: str | None, tags: Collection[str] = ()) -> bool:
    """Whether member ``api`` may be drawn for (or judged on) a case of ``dtype`` with input
    classes ``tags``: a strict member only for the group's validation dtype, or another float
    dtype when that is a float, never with inputs to broadcast, and a strictly typed namespace
    never with a negative axis."""
    if not strict(api):
        return True
    if "broadcast" in tags or (inplace(api) and len(array_roles(group)) > 1):
        return False
    if "negative-axis" in tags and api.startswith(STRICT_NAMESPACES):
        return False
    if dtype is None or dtype == group.dtype:
        return True
    return dtype in FLOAT_DTYPES and group.dtype in FLOAT_DTYPES


def pick_apis(
    group: Group, libraries: Sequence[str], rng: np.random.Generator, dtype: str | None = None
) -> dict[str, str]:
    """One member API per library (rotating among a library's aliases), among the members
    that accept ``dtype`` (:func:`accepts`) where a library has any."""
    by_lib: dict[str, list[str]] = {}
    for m in group.members:
        if m.library in libraries:
            by_lib.setdefault(m.library, []).append(m.api)
    chosen = {}
    for lib, apis in by_lib.items():
        fit = [a for a in apis if accepts(group, a, dtype)] or apis
        chosen[lib] = fit[int(rng.integers(0, len(fit)))]
    return chosen
