"""Drawing cases for groups of each shape kind (no library needed)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np
import pytest

from xamt.catalog.model import Group, Member
from xamt.inputs.draw import draw_case
from xamt.inputs.tags import input_classes
from xamt.inputs.values import BF16_EPS, BF16_MAX, BF16_SUBNORMAL, BF16_TINY
from xamt.types import Case
from xamt.workers.protocol import BFloat16, DType


def make_group(roles: tuple[str, ...], shapes: str = "any") -> Group:
    members = tuple(
        Member(library=lib, api=f"{lib}.op", args=tuple(r for r in roles if r.startswith("x")))
        for lib in ("numpy", "torch")
    )
    return Group(
        id="op",
        op="op",
        family="linalg",
        roles=roles,
        dtype="float32",
        members=members,
        shapes=shapes,
    )


def drawn_shapes(group: Group, n: int = 300) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(7)
    shapes = []
    for _ in range(n):
        case = draw_case(group, rng, "float32", "ordinary", {"numpy": "numpy.op"})
        shapes += [v.shape for k, v in case.values.items() if k.startswith("x")]
    return shapes


@pytest.mark.parametrize("kind", ["square", "batched"])
def test_square_groups_draw_square_matrices(kind: str) -> None:
    shapes = drawn_shapes(make_group(("x1", "x2"), kind))
    matrices = [s for s in shapes if len(s) >= 2]
    assert len(matrices) > len(shapes) / 2  # mostly in the domain
    assert all(s[-1] == s[-2] for s in matrices)
    if kind == "batched":
        assert any(len(s) >= 3 for s in matrices)


def test_any_groups_draw_rectangular_and_vector_groups_vectors() -> None:
    assert any(len(s) == 2 and s[0] != s[1] for s in drawn_shapes(make_group(("x",))))
    vectors = drawn_shapes(make_group(("x",), "vector"))
    assert sum(len(s) == 1 for s in vectors) > len(vectors) / 2


def test_dtype_and_name_roles_keep_their_canonical_value() -> None:
    """A dtype (``cast``'s ``target_dtype``) or a name (``mirror_pad``'s mode) has no boundary
    values: the fuzzer never replaces it by a number."""
    group = make_group(("x", "target_dtype", "mirror_mode"))
    rng = np.random.default_rng(5)
    cases = [draw_case(group, rng, "float32", "ordinary", {}) for _ in range(40)]
    assert {c.values["target_dtype"] for c in cases} == {DType("float64")}
    assert {c.values["mirror_mode"] for c in cases} == {"REFLECT"}


def test_keepdims_role_is_a_bool() -> None:
    group = make_group(("x", "keepdims", "axis"))
    rng = np.random.default_rng(1)
    cases = [draw_case(group, rng, "float32", "ordinary", {}) for _ in range(50)]
    assert {c.values["keepdims"] for c in cases} == {True, False}
    tagged = [c for c in cases if "keepdims" in input_classes(c, group)]
    assert tagged and all(c.values["keepdims"] is True for c in tagged)


# -- value classes: what the arrays of each class actually hold ------------------------------


def drawn_values(dtype: str, value_class: str, n: int = 200) -> tuple[np.ndarray, list[Any]]:
    """Every element drawn in ``n`` cases of a one-array group, and the cases' arrays."""
    group = make_group(("x",))
    rng = np.random.default_rng(11)
    arrays = []
    for _ in range(n):
        case = draw_case(group, rng, dtype, value_class, {"numpy": "numpy.op"})
        assert case.value_class == value_class and case.dtype == dtype
        arrays.append(case.values["x"])
    flat = [a.values if isinstance(a, BFloat16) else a for a in arrays]
    for a, arr in zip(arrays, flat, strict=True):
        assert arr.dtype == np.dtype("float32" if dtype == "bfloat16" else dtype), (a, dtype)
        assert isinstance(a, BFloat16) == (dtype == "bfloat16")
    return np.concatenate([a.reshape(-1) for a in flat]), arrays


def limits(dtype: str) -> dict[str, float]:
    """The largest finite value, eps, smallest normal and smallest subnormal of a float dtype."""
    if dtype == "bfloat16":
        return {"max": BF16_MAX, "eps": BF16_EPS, "tiny": BF16_TINY, "sub": BF16_SUBNORMAL}
    fi = np.finfo(np.dtype(dtype))
    return {
        "max": float(fi.max),
        "eps": float(fi.eps),
        "tiny": float(fi.tiny),
        "sub": float(fi.smallest_subnormal),
    }


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_boundary_floats_hold_zeros_ones_limits_and_subnormals(dtype: str) -> None:
    values, _ = drawn_values(dtype, "boundary")
    as64 = values.astype(np.float64)
    assert np.isfinite(as64).all(), "boundary values are finite (non-finite is its own class)"
    lim = limits(dtype)
    present = set(as64.tolist())
    for name, want in [
        ("one", 1.0),
        ("minus one", -1.0),
        ("max", lim["max"]),
        ("lowest", -lim["max"]),
        ("eps", lim["eps"]),
        ("smallest normal", lim["tiny"]),
        ("smallest subnormal", lim["sub"]),
        ("negative subnormal", -lim["sub"]),
        ("one plus eps", 1.0 + lim["eps"]),
        ("minus one minus eps", -1.0 - lim["eps"]),
    ]:
        assert want in present, f"{dtype} boundary values never hold {name} ({want!r})"
    zeros = as64[as64 == 0]
    assert np.signbit(zeros).any() and (~np.signbit(zeros)).any(), "both signed zeros"
    subnormal = (as64 != 0) & (np.abs(as64) < lim["tiny"])
    assert subnormal.any()


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "complex64"])
def test_non_finite_arrays_each_hold_nan_or_inf_and_all_three_occur(dtype: str) -> None:
    values, arrays = drawn_values(dtype, "non-finite")
    for a in arrays:
        arr = a.values if isinstance(a, BFloat16) else a
        parts = [arr.real, arr.imag] if arr.dtype.kind == "c" else [arr]
        if arr.size:  # every non-empty array holds at least one non-finite value
            assert any((~np.isfinite(p)).any() for p in parts), arr
    parts = [values.real, values.imag] if values.dtype.kind == "c" else [values]
    real = values.real if values.dtype.kind == "c" else values
    assert np.isnan(real).any() and np.isposinf(real).any() and np.isneginf(real).any()
    assert all(np.isfinite(p).any() for p in parts), "ordinary values are mixed in"
    group = make_group(("x",))
    tags = {t for a in arrays for t in input_classes(case_of(a, dtype), group)}
    assert {"nan", "inf", "neg-inf"} <= tags


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64"])
@pytest.mark.parametrize("value_class", ["boundary", "non-finite"])
def test_integer_boundaries_hold_the_dtype_limits(dtype: str, value_class: str) -> None:
    """Integers have no NaN or inf: both classes draw the dtype's limits and their
    neighbours, 0 and ±1."""
    values, arrays = drawn_values(dtype, value_class)
    info = np.iinfo(np.dtype(dtype))
    present = set(values.tolist())
    want = {0, 1, int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1}
    if info.min < 0:
        want |= {-1}
    assert want <= present, sorted(want - present)
    group = make_group(("x",))
    tags = {t for a in arrays for t in input_classes(case_of(a, dtype), group)}
    # an unsigned dtype's minimum is 0: tagged zero, not dtype-min
    assert {"dtype-max", "zero", "int-overflow"} <= tags
    assert ("dtype-min" in tags) == (info.min < 0)


@pytest.mark.parametrize("dtype", ["float16", "float32", "bfloat16", "int32", "uint8", "bool"])
def test_ordinary_values_are_small_and_finite(dtype: str) -> None:
    values, _ = drawn_values(dtype, "ordinary")
    if dtype == "bool":
        assert set(values.tolist()) == {True, False}
        return
    as64 = values.astype(np.float64)
    assert np.isfinite(as64).all()
    bound = 10 if np.dtype("float32" if dtype == "bfloat16" else dtype).kind in "iu" else 100
    assert np.abs(as64).max() <= bound
    if dtype in ("float16", "float32", "bfloat16"):
        assert not ((as64 != 0) & (np.abs(as64) < limits(dtype)["tiny"])).any(), "no subnormals"


def test_bool_has_no_boundary_or_non_finite_values() -> None:
    for value_class in ("boundary", "non-finite"):
        values, _ = drawn_values("bool", value_class)
        assert values.dtype == np.bool_ and set(values.tolist()) == {True, False}


def case_of(array: Any, dtype: str) -> Case:
    return Case(group="op", dtype=dtype, value_class="", values={"x": array}, apis={}, seed=0)


def test_a_zero_d_input_has_no_default_last_axis() -> None:
    """argsort of a 0-d array: its default axis -1 does not exist (numpy.sort raises
    AxisError), so the case is tagged out-of-range-axis, an invalid call for everyone; other
    operations of 0-d input are not."""
    x = np.array(1.5, np.float32)
    sort = dataclasses.replace(make_group(("x",)), id="argsort", op="argsort")
    apis = {"numpy": "numpy.op"}
    case = Case(
        group="argsort", dtype="float32", value_class="ordinary", values={"x": x}, apis=apis
    )
    assert "out-of-range-axis" in input_classes(case, sort)
    assert "out-of-range-axis" not in input_classes(case, make_group(("x",)))
    one_d = dataclasses.replace(case, values={"x": x[None]})
    assert "out-of-range-axis" not in input_classes(one_d, sort)


def test_op_kind_groups_draw_the_kinds_arrangements() -> None:
    """A group of an operation-specific kind (data/shapes.toml) draws one declared arrangement
    per case, mostly a canonical one (a matrix and a vector whose sizes fit)."""
    from xamt.catalog.model import op_shape_kinds

    kind = op_shape_kinds()["matvec"]
    group = make_group(("x1", "x2"), "matvec")
    rng = np.random.default_rng(3)
    drawn = []
    for _ in range(200):
        case = draw_case(group, rng, "float32", "ordinary", {"numpy": "numpy.op"})
        drawn.append((case.values["x1"].shape, case.values["x2"].shape))
    assert set(drawn) <= set(kind.canonical[2]) | set(kind.fuzz[2])
    fitting = [(m, v) for m, v in drawn if m[-1] == v[0]]
    assert len(fitting) > len(drawn) / 2 and set(drawn) - set(kind.canonical[2])


def test_the_shape_vocabulary_is_fixed_per_group_dtype_and_rank_class() -> None:
    """Most cases of a group and dtype meet the same shape in each rank class, whatever the
    campaign's seed (a compiling library traces it once); the fresh share reaches the rest of
    the menu, and every rank class, the boundary ones included, is still drawn."""
    from xamt.inputs.draw import SHAPES, VOCABULARY_FRESH

    group = make_group(("x",))

    def by_kind(
        seed: int, g: Group = group, dtype: str = "float32", n: int = 600
    ) -> dict[int, Counter[tuple[int, ...]]]:
        rng = np.random.default_rng(seed)
        seen: dict[int, Counter[tuple[int, ...]]] = {}
        for _ in range(n):
            case = draw_case(g, rng, dtype, "ordinary", {"numpy": "numpy.op"})
            shape = case.values["x"].shape
            kind = next(i for i, menu in enumerate(SHAPES.values()) if shape in menu)
            seen.setdefault(kind, Counter())[shape] += 1
        return seen

    one, two = by_kind(1), by_kind(2)
    assert len(one) == len(SHAPES)  # every rank class: 0-d, empty, size-one, ..., high rank
    for kind, counts in one.items():
        top, n = counts.most_common(1)[0]
        assert top == two[kind].most_common(1)[0][0]  # the same vocabulary in both seeds
        menu = len(list(SHAPES.values())[kind])
        # the vocabulary's shape, and the fresh share spread over the whole menu
        assert n / sum(counts.values()) > 1 - VOCABULARY_FRESH
        if menu > 1 and sum(counts.values()) > 60:
            assert len(counts) == menu
    other = by_kind(1, dataclasses.replace(group, id="another"), "float64")
    tops = [{k: c.most_common(1)[0][0] for k, c in x.items()} for x in (one, other)]
    assert tops[0] != tops[1]  # another group and dtype: a vocabulary of its own


def test_revalue_keeps_the_input_signature_and_draws_fresh_values() -> None:
    """A saturated library's warm case with fresh values: every array keeps its shape and
    dtype (a bfloat16 one and each array of a sequence too), every parameter stays, the values
    are of the new value class; a gradient case or a deep-learning layer has none."""
    from xamt.inputs.draw import revalue
    from xamt.workers.protocol import input_signature

    group = make_group(("x1", "x2", "axis"))
    base = Case(
        group="op",
        dtype="float32",
        value_class="ordinary",
        values={"x1": np.ones((2, 3), np.float32), "x2": np.ones((3,), np.float32), "axis": 1},
        apis={"numpy": "numpy.op", "torch": "torch.op"},
        seed=1,
    )
    fresh = revalue(base, group, np.random.default_rng(0), "non-finite", seed=9)
    assert fresh is not None and fresh.value_class == "non-finite" and fresh.seed == 9
    assert input_signature(fresh.values) == input_signature(base.values)
    assert fresh.apis == base.apis and fresh.values["axis"] == 1
    assert not np.isfinite(fresh.values["x1"]).all() or not np.isfinite(fresh.values["x2"]).all()
    seq = make_group(("xs",))
    listed = dataclasses.replace(
        base,
        values={"xs": [np.ones((2,), np.float32), np.ones((4,), np.float32)]},
        dtype="float32",
    )
    got = revalue(listed, seq, np.random.default_rng(1), "ordinary", seed=2)
    assert got is not None and [a.shape for a in got.values["xs"]] == [(2,), (4,)]
    assert not np.array_equal(got.values["xs"][1], np.ones(4))
    bf16 = dataclasses.replace(
        base, dtype="bfloat16", values={"x1": BFloat16(np.ones((2, 2), np.float32))}
    )
    got = revalue(bf16, group, np.random.default_rng(2), "ordinary", seed=2)
    assert got is not None and isinstance(got.values["x1"], BFloat16)
    assert got.values["x1"].values.shape == (2, 2)
    assert (
        revalue(
            dataclasses.replace(base, grad=True),
            group,
            np.random.default_rng(0),
            "ordinary",
            seed=1,
        )
        is None
    )
    layer = dataclasses.replace(make_group(("x", "weight")), shapes="conv2d")
    assert revalue(base, layer, np.random.default_rng(0), "ordinary", seed=1) is None
