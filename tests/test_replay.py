"""The replay service's judging of one case (xamt/replay.py): what a case may be judged on,
the outcomes it reads before the verdict, how its blames are signed and classified, and how
neutralizing removes one input class (no library needed: outcomes are given)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from test_dlcore import _group

from xamt import formulas
from xamt.catalog import dlcore, model
from xamt.catalog.model import Group
from xamt.inputs.tags import input_classes
from xamt.known import load_known
from xamt.oracle.verdict import Blame
from xamt.replay import (
    beyond_memory_cap,
    classify_blame,
    judge_case,
    neutralized,
    sign,
    triggers_in,
)
from xamt.types import Case, ErrorInfo, Outcome


def binary_group(gid: str, op: str, dtype: str, apis: dict[str, str]) -> model.Group:
    """An elementwise group of two array roles, one member per library."""
    members = tuple(
        model.Member(library=lib, api=api, args=("x1", "x2")) for lib, api in apis.items()
    )
    return model.Group(
        id=gid, op=op, family="elementwise", roles=("x1", "x2"), dtype=dtype, members=members
    )


GROUP = binary_group("add", "add", "float32", {"numpy": "numpy.add", "torch": "torch.add"})


def case(x1: np.ndarray, x2: np.ndarray, **extra: object) -> Case:
    return Case(
        group="add",
        dtype=str(x1.dtype),
        value_class="non-finite",
        values={"x1": x1, "x2": x2, **extra},
        apis={"numpy": "numpy.add", "torch": "torch.add"},
    )


def ok(lib: str, value: np.ndarray) -> Outcome:
    return Outcome(library=lib, api=f"{lib}.f", status="ok", value=value)


def case_with(
    group: Group,
    values: dict[str, Any],
    libs: tuple[str, ...],
    *,
    dtype: str = "float32",
    value_class: str = "boundary",
) -> Case:
    """A case of ``group`` on ``values``, called on one member of each of ``libs``."""
    apis = {m.library: m.api for m in group.members}
    return Case(
        group=group.id,
        dtype=dtype,
        value_class=value_class,
        values=values,
        apis={lib: apis[lib] for lib in libs},
        seed=0,
    )


def case_of(group: Group, x: np.ndarray, libs: tuple[str, ...]) -> Case:
    """A case of a one-input group on ``x``, called on one member of each of ``libs``."""
    return case_with(group, {"x": x}, libs, dtype=x.dtype.name)


def test_a_hang_on_a_size_beyond_the_memory_cap_is_the_request_not_a_bug() -> None:
    """eye(2**31 - 1) asks for 2**62 elements: tensorflow missing its deadline while it
    allocates is no hang to blame, and the others' refusals leave no case; the same hang on
    eye(3) is blamed."""
    group = model.load().group("eye")
    apis = {m.library: m.api for m in group.members if m.library in ("numpy", "tensorflow", "jax")}

    def run(n: int) -> set[tuple[str, str]]:
        case = Case(group=group.id, dtype="-", value_class="boundary", values={"n": n}, apis=apis)
        assert beyond_memory_cap(case, group) == (n > 2**29)
        too_big = ErrorInfo(type="ValueError", message="Maximum allowed dimension exceeded")
        outs = {
            "numpy": Outcome(library="numpy", api=apis["numpy"], status="error", error=too_big),
            "jax": Outcome(library="jax", api=apis["jax"], status="error", error=too_big),
            "tensorflow": Outcome(library="tensorflow", api=apis["tensorflow"], status="hang"),
        }
        if n <= 2**29:
            eye = np.eye(n)
            outs["numpy"] = Outcome(library="numpy", api=apis["numpy"], status="ok", value=eye)
            outs["jax"] = Outcome(library="jax", api=apis["jax"], status="ok", value=eye)
        replayed = judge_case(case, group, outs, None, known=[])
        return {(s.blame.kind, s.blame.library) for s in replayed.decided}

    assert run(2**31 - 1) == set()
    assert run(3) == {("hang", "tensorflow")}


def test_only_a_size_parameter_implies_an_allocation() -> None:
    """around(x, decimals=2**31 - 1) asks for no memory: a hang there is still a hang."""
    group = next(g for g in model.load().groups if "decimals" in g.roles)
    case = Case(
        group=group.id,
        dtype="float32",
        value_class="boundary",
        values={"x": np.ones(2, np.float32), "decimals": 2**31 - 1},
        apis={m.library: m.api for m in group.members},
    )
    assert not beyond_memory_cap(case, group)


def test_neutralized_removes_exactly_one_class() -> None:
    x1 = np.array([np.nan, -0.0, np.inf], np.float32)
    x2 = np.array([0.0, 1.0, 2.0], np.float32)
    c = case(x1, x2)
    no_nan = neutralized(c, GROUP, "nan")
    assert no_nan is not None
    assert not np.isnan(no_nan.values["x1"]).any() and np.isinf(no_nan.values["x1"]).any()
    no_div = neutralized(c, GROUP, "zero-divisor")
    assert no_div is not None and not (no_div.values["x2"] == 0).any()
    assert np.isnan(no_div.values["x1"]).any()
    scalar = neutralized(
        case(np.array(1.0, np.float32), np.array(2.0, np.float32)), GROUP, "scalar"
    )
    assert scalar is not None and scalar.values["x1"].shape == (1,)
    assert neutralized(c, GROUP, "subnormal") is None  # nothing to remove
    big = np.finfo(np.float32).max
    z = np.array([complex(0.5, 0.7), complex(-big, 1.0), complex(2.0, big)], np.complex64)
    tame = neutralized(case(z, z), GROUP, "dtype-limit")
    assert tame is not None  # complex limits are removable (they were left untested)
    assert np.array_equal(tame.values["x1"], np.array([0.5 + 0.7j, 1, 1], np.complex64))


def test_clip_with_crossed_bounds_is_no_case() -> None:
    """clip(x, min=0.3, max=-0.0): the standard leaves it unspecified, so tensorflow's 0.3
    against numpy's -0.0 blames nobody; with min <= max the same departure is a finding."""
    group = model.Group(
        id="clip(x,max,min)",
        op="clip",
        family="activation",
        roles=("x", "max", "min"),
        dtype="float32",
        members=(
            model.Member(library="numpy", api="numpy.clip", args=("x",)),
            model.Member(library="torch", api="torch.clamp", args=("x",)),
            model.Member(library="tensorflow", api="tensorflow.clip", args=("x",)),
        ),
    )
    x = np.array([1.0, 2.0], np.float32)

    def outcomes(tf_value: float, right: float) -> dict[str, Outcome]:
        out = {
            lib: Outcome(library=lib, api=api, status="ok", value=np.full(2, right, np.float32))
            for lib, api in (("numpy", "numpy.clip"), ("torch", "torch.clamp"))
        }
        tf = np.full(2, tf_value, np.float32)
        out["tensorflow"] = Outcome(
            library="tensorflow", api="tensorflow.clip", status="ok", value=tf
        )
        return out

    apis = {m.library: m.api for m in group.members}
    crossed = Case(
        group=group.id,
        dtype="float32",
        value_class="boundary",
        values={"x": x, "min": 0.3, "max": -0.0},
        apis=apis,
    )
    assert not judge_case(crossed, group, outcomes(0.3, -0.0), None).signed
    fine = dataclasses.replace(crossed, values={"x": x, "min": 0.0, "max": 0.5})
    assert judge_case(fine, group, outcomes(0.3, 0.5), None).signed
    # integer input with a floating bound: also unspecified (mxnet keeps int32, numpy floats)
    ints = np.array([1, 2], np.int32)
    mixed = dataclasses.replace(
        crossed, dtype="int32", values={"x": ints, "min": 0.3}, value_class="ordinary"
    )
    assert not judge_case(mixed, group, outcomes(0.3, 1.0), None).signed


def test_a_group_formula_decides_unless_a_parameter_is_nan() -> None:
    """celu in a group without numpy: the formula is the reference (tensorflow's NaN for
    celu(1.0) is wrong against torch, paddle and the formula), except with alpha = NaN, where
    the definition's min(0, NaN) has no one answer: no reference, and no NaN mask judged."""
    libs = ("torch", "tensorflow", "paddle", "mindspore")
    group = model.Group(
        id="celu[alpha]",
        op="celu",
        family="activation",
        roles=("x", "alpha"),
        dtype="float32",
        members=tuple(model.Member(library=lib, api=f"{lib}.celu", args=("x",)) for lib in libs),
        reference="celu",
    )
    x = np.array([1.0, -1.0], np.float32)
    right = np.array([1.0, np.expm1(-1.0)], np.float32)
    wrong = np.array([np.nan, np.expm1(-1.0)], np.float32)

    def outcomes(tf: np.ndarray, mindspore: np.ndarray) -> dict[str, Outcome]:
        values = {"torch": right, "tensorflow": tf, "paddle": right, "mindspore": mindspore}
        return {
            lib: Outcome(library=lib, api=f"{lib}.celu", status="ok", value=v)
            for lib, v in values.items()
        }

    case = Case(
        group=group.id,
        dtype="float32",
        value_class="ordinary",
        values={"x": x, "alpha": 1.0},
        apis={lib: f"{lib}.celu" for lib in libs},
    )
    blamed = judge_case(case, group, outcomes(wrong, wrong), None).judgement.blames
    assert {(b.library, b.confidence) for b in blamed} == {
        ("tensorflow", "reference"),
        ("mindspore", "reference"),
    }
    nan = dataclasses.replace(case, values={"x": x, "alpha": float("nan")})
    assert not judge_case(nan, group, outcomes(wrong, wrong), None).judgement.blames


def test_a_deliberate_refusal_a_known_difference_names_is_a_documented_finding() -> None:
    """torch raises ZeroDivisionError for an integer remainder by zero where numpy returns 0:
    a support gap, no bug, but the documented integer-division-by-zero policy, so it is
    signed and classified documented-difference; a refusal no entry names is not signed."""
    apis = {"numpy": "numpy.remainder", "torch": "torch.remainder", "jax": "jax.numpy.remainder"}
    group = binary_group("remainder@int32", "remainder", "int32", apis)
    case = Case(
        group=group.id,
        dtype="int32",
        value_class="boundary",
        values={"x1": np.array([5, 7], np.int32), "x2": np.array([0, 2], np.int32)},
        apis={m.library: m.api for m in group.members},
    )
    zeros = np.array([0, 1], np.int32)

    def outcomes(message: str) -> dict[str, Outcome]:
        error = ErrorInfo(type="ZeroDivisionError", message=message)
        return {
            "numpy": Outcome(library="numpy", api="numpy.remainder", status="ok", value=zeros),
            "jax": Outcome(library="jax", api="jax.numpy.remainder", status="ok", value=zeros),
            "torch": Outcome(library="torch", api="torch.remainder", status="error", error=error),
        }

    replayed = judge_case(case, group, outcomes("ZeroDivisionError"), None)
    assert replayed.judgement.support["torch"] == "refused" and not replayed.judgement.blames
    (signed,) = replayed.signed
    assert signed.blame.library == "torch" and signed.blame.kind == "status"
    classification, entry = classify_blame(load_known(), signed, case, group)
    assert classification == "documented-difference" and entry is not None
    assert entry.id == "integer-division-by-zero-raises"
    # the same refusal with no entry naming it (another operation): support matrix only
    other = dataclasses.replace(group, op="gcd", id="gcd@int32")
    assert not judge_case(
        dataclasses.replace(case, group="gcd@int32"), other, outcomes("ZeroDivisionError"), None
    ).signed


def test_a_special_function_reference_outvotes_two_libraries_sharing_one_mistake() -> None:
    """digamma has no numpy member: tensorflow and mindspore (one Eigen kernel) outvoted
    torch. scipy's value decides now; a pole decides nothing."""
    (group,) = [g for g in model.load().groups if g.id == "digamma"]
    assert group.reference == "digamma"
    libs = ("torch", "tensorflow", "mindspore")
    x = np.array([1.5, -2.0], np.float32)
    right = np.array([0.03649, math.nan], np.float32)
    wrong = np.array([math.nan, math.inf], np.float32)
    outs = {
        "torch": ok("torch", right),
        "tensorflow": ok("tensorflow", wrong),
        "mindspore": ok("mindspore", wrong),
    }
    got = judge_case(case_of(group, x, libs), group, outs, None)
    assert {(b.library, b.kind, b.confidence) for b in got.judgement.blames} == {
        ("tensorflow", "nan", "reference"),
        ("mindspore", "nan", "reference"),
    }


def test_limits_and_overflow_orders_no_reference_decides_are_not_judged() -> None:
    """sinc(inf) is 0 as a limit and NaN as numpy evaluates it: both stand (a 0 there is read
    as the NaN), while any other value (paddle's 1.0) is judged; hardswish(DBL_MAX) is DBL_MAX
    by definition and inf where x * 6 comes first. Neither position blames anyone; a wrong
    value beside them still does."""
    groups = {g.id: g for g in model.load().groups}
    sinc = groups["sinc"]
    x = np.array([math.inf, 0.5], np.float32)
    case = case_of(sinc, x, ("numpy", "torch", "paddle"))
    right = np.float32(np.sinc(0.5))
    with np.errstate(invalid="ignore"):
        reference = ok("numpy", np.sinc(x.astype(np.float64)))
    for paddle_inf, paddle_half, blamed in (
        (0.0, right, set()),
        (0.0, np.float32(0.1), {"paddle"}),
        (1.0, right, {"paddle"}),
    ):
        outs = {
            "numpy": ok("numpy", np.array([math.nan, right], np.float32)),
            "torch": ok("torch", np.array([math.nan, right], np.float32)),
            "paddle": ok("paddle", np.array([paddle_inf, paddle_half], np.float32)),
        }
        run_ = judge_case(case, sinc, outs, reference, known=[])
        assert {s.blame.library for s in run_.decided} == blamed
    hardswish = groups["hardswish"]
    big = np.finfo(np.float64).max
    case = case_of(hardswish, np.array([big, -math.inf, 1.0]), ("torch", "paddle", "mindspore"))
    torch_like = np.array([math.inf, math.nan, 2.0 / 3.0])
    outs = {
        "torch": ok("torch", torch_like),
        "paddle": ok("paddle", torch_like),
        "mindspore": ok("mindspore", np.array([big, 0.0, 2.0 / 3.0])),
    }
    assert judge_case(case, hardswish, outs, None, known=[]).decided == ()
    outs["mindspore"] = ok("mindspore", np.array([big, 0.0, 0.5]))
    assert {s.blame.library for s in judge_case(case, hardswish, outs, None, known=[]).decided} == {
        "mindspore"
    }


def test_interpolated_order_statistics_of_infinities_are_not_judged() -> None:
    """quantile(q=0) of [inf, -inf, 0.16]: numpy interpolates -inf + (-inf - -inf) * 0 = NaN
    where the minimum is -inf (mxnet's answer): the float64 reference cannot decide between
    them. The same groups still judge finite input."""
    group = {g.id: g for g in model.load().groups}["quantile[axis]"]
    x = np.array([[math.inf, -math.inf, 0.16]], np.float32)

    def judged(x: np.ndarray, mxnet: float, numpy: float) -> set[str]:
        case = case_with(
            group,
            {"x": x, "q": 0.0, "axis": -1},
            ("numpy", "torch", "mxnet"),
            dtype="float32",
            value_class="non-finite",
        )
        outs = {
            "numpy": ok("numpy", np.array([numpy], np.float32)),
            "torch": ok("torch", np.array([numpy], np.float32)),
            "mxnet": ok("mxnet", np.array([mxnet], np.float32)),
        }
        ref = ok("numpy", np.array([numpy]))
        return {s.blame.library for s in judge_case(case, group, outs, ref, known=[]).decided}

    assert judged(x, -math.inf, math.nan) == set()
    finite = np.array([[1.0, -2.0, 0.16]], np.float32)
    assert judged(finite, -1.0, -2.0) == {"mxnet"}


def test_a_negative_probability_target_is_no_case() -> None:
    """kl_div's target is a probability (torch documents it): with a negative one, torch's
    NaN from log(target) and paddle's finite answer are both artefacts, nobody is blamed;
    with a proper target a wrong answer still is."""
    group = {g.id: g for g in model.load().groups}["kl_div"]
    x1 = np.array([-0.5, -1.2], np.float32)

    def judged(target: np.ndarray, paddle: float) -> set[str]:
        case = case_with(
            group,
            {"x1": x1, "x2": target},
            ("torch", "paddle", "mindspore"),
            dtype="float32",
            value_class="ordinary",
        )
        outs = {
            "torch": ok("torch", np.array(math.nan, np.float32)),
            "mindspore": ok("mindspore", np.array(math.nan, np.float32)),
            "paddle": ok("paddle", np.array(paddle, np.float32)),
        }
        return {s.blame.library for s in judge_case(case, group, outs, None, known=[]).decided}

    assert judged(np.array([-0.3, 0.5], np.float32), 0.52) == set()
    assert judged(np.array([0.3, 0.5], np.float32), 0.52) == {"paddle"}


def test_zero_signs_of_running_sums_and_sample_counts_below_one_are_not_judged() -> None:
    """cumsum of [-0.0, 1.0]: numpy copies the first element (-0.0), paddle adds it to +0
    (+0.0); IEEE 754 fixes no sum of one term. rfftfreq(n=-1): numpy returns an empty array
    without checking, torch one element; n must be positive. Neither blames anyone, while a
    wrong number still does."""
    groups = {g.id: g for g in model.load().groups}
    cumsum = groups["cumsum"]
    x = np.array([-0.0, 1.0], np.float32)
    case = case_with(cumsum, {"x": x}, ("numpy", "paddle", "mxnet"))
    numpy_says = np.array([-0.0, 1.0], np.float32)
    for paddle_says, blamed in (([0.0, 1.0], set()), ([0.0, 2.0], {"paddle"})):
        outs = {
            "numpy": ok("numpy", numpy_says),
            "mxnet": ok("mxnet", numpy_says),
            "paddle": ok("paddle", np.array(paddle_says, np.float32)),
        }
        ref = ok("numpy", numpy_says.astype(np.float64))
        got = judge_case(case, cumsum, outs, ref, known=[])
        assert {s.blame.library for s in got.decided} == blamed
    freq = groups["rfftfreq"]
    for n, blamed in ((-1, set()), (4, {"torch"})):
        case = case_with(freq, {"n": n}, ("numpy", "torch", "paddle"))
        right = np.fft.rfftfreq(n).astype(np.float32) if n > 0 else np.zeros(0, np.float32)
        outs = {
            "numpy": ok("numpy", right),
            "paddle": ok("paddle", right),
            "torch": ok("torch", np.zeros(right.size + 1, np.float32)),
        }
        got = judge_case(case, freq, outs, ok("numpy", right.astype(np.float64)), known=[])
        assert {s.blame.library for s in got.decided} == blamed


def test_the_sign_of_a_zero_a_masking_operation_fills_in_is_not_judged() -> None:
    """tril "zeroes" the elements above the diagonal (the array API standard, numpy) without
    a sign: mindspore's -0.0 where it multiplies -2.5 by its mask is no departure; the inf it
    turns into NaN the same way still is."""
    tril = {g.id: g for g in model.load().groups}["tril"]
    x = np.array([[1.0, -2.5], [3.0, 4.0]], np.float32)
    right = np.tril(x)
    libs = ("numpy", "mxnet", "mindspore")

    def blamed(mindspore_says: np.ndarray, x: np.ndarray = x) -> set[str]:
        case = case_with(tril, {"x": x}, libs, value_class="ordinary")
        outs = {"numpy": ok("numpy", np.tril(x)), "mxnet": ok("mxnet", np.tril(x))}
        outs["mindspore"] = ok("mindspore", mindspore_says)
        ref = ok("numpy", np.tril(x.astype(np.float64)))
        return {s.blame.library for s in judge_case(case, tril, outs, ref, known=[]).decided}

    assert blamed(np.where(right == 0, x * 0, right)) == set()
    infinite = np.array([[1.0, np.inf], [3.0, 4.0]], np.float32)
    with np.errstate(invalid="ignore"):
        masked = infinite * np.tril(np.ones_like(infinite))
    assert blamed(masked, infinite) == {"mindspore"}


def test_no_real_geometric_sequence_and_no_frexp_exponent_of_infinity() -> None:
    """geomspace(1, -1) has no real terms (numpy fills NaN without checking): no case; and
    the exponent frexp stores for inf is unspecified (C99 7.12.6.4): not judged, while a
    wrong exponent of a finite number still is."""
    groups = {g.id: g for g in model.load().groups}
    geo = groups["geomspace"]
    case = case_with(
        geo,
        {"start": 1, "stop": -1},
        ("numpy", "mindspore"),
        dtype="float32",
        value_class="boundary",
    )
    outs = {
        "numpy": ok("numpy", np.array([1.0, math.nan, -1.0])),
        "mindspore": ok("mindspore", np.array([1.0, math.nan, math.nan], np.float32)),
    }
    assert judge_case(case, geo, outs, outs["numpy"], known=[]).decided == ()
    frexp = groups["frexp"]

    def blamed_for(x: float, paddle_exponent: float) -> set[str]:
        xs = np.array([x, 2.0], np.float32)
        mant, expo = np.frexp(xs)
        case = case_with(frexp, {"x": xs}, ("numpy", "torch", "paddle"))
        wrong = np.array([paddle_exponent, 2], expo.dtype)
        outs = {
            "numpy": ok("numpy", (mant, expo)),  # type: ignore[arg-type]
            "torch": ok("torch", (mant, expo)),  # type: ignore[arg-type]
            "paddle": ok("paddle", (mant, wrong)),  # type: ignore[arg-type]
        }
        ref = ok("numpy", (mant.astype(np.float64), expo))  # type: ignore[arg-type]
        return {s.blame.library for s in judge_case(case, frexp, outs, ref, known=[]).decided}

    assert blamed_for(math.inf, 1.0) == set()
    assert "paddle" in blamed_for(3.0, 7.0)


def test_rounding_to_decimals_in_a_16_bit_float_is_not_judged_by_its_last_digit() -> None:
    """round(x, 1) of a float16 (or bfloat16) scales x by 10 in the input dtype first: one
    library's 3.4 against another's 3.3 is that dtype's precision, no defect; in float32,
    or with decimals=0, a wrong digit is still blamed."""
    group = {g.id: g for g in model.load().groups}["round[decimals]"]
    apis = {m.library: m.api for m in group.members}
    libs = [lib for lib in ("numpy", "torch", "tensorflow", "paddle") if lib in apis]

    def blamed_for(dtype: type, decimals: int) -> set[str]:
        x = np.array([3.34375, 1.0], dtype)
        case = case_with(
            group,
            {"x": x, "decimals": decimals},
            libs,
            dtype=np.dtype(dtype).name,
            value_class="ordinary",
        )
        right = np.round(x.astype(np.float64), decimals).astype(dtype)
        wrong = right.copy()
        wrong[0] += dtype(0.1) if decimals else dtype(1)
        outs = {lib: ok(lib, right) for lib in libs[:-1]}
        outs[libs[-1]] = ok(libs[-1], wrong)
        ref = ok("numpy", np.round(x.astype(np.float64), decimals))
        return {s.blame.library for s in judge_case(case, group, outs, ref, known=[]).decided}

    assert blamed_for(np.float16, 1) == set()
    assert blamed_for(np.float32, 1) == {libs[-1]}
    assert blamed_for(np.float16, 0) == {libs[-1]}


def test_the_order_inside_partitions_and_convolutions_of_infinities_are_not_judged() -> None:
    """numpy.partition leaves the order inside each partition undefined: mxnet's
    [0.5, 0.5, -1, -0.57, 2] for kth=-1 is as right as numpy's; a wrong shape is still
    blamed. A convolution of infinite input spreads NaN by its algorithm (direct or FFT)."""
    groups = {g.id: g for g in model.load().groups}
    part = groups["partition@bool"]
    x = np.array([0.5, 0.5, 2.0, -0.574, -1.0], np.float32)
    case = case_with(part, {"x": x, "kth": -1}, ("numpy", "mxnet"), value_class="ordinary")
    numpy_says = np.partition(x, -1)
    for mxnet_says, blamed in (
        (np.array([0.5, 0.5, -1.0, -0.574, 2.0], np.float32), set()),
        (np.zeros(4, np.float32), {"mxnet"}),
    ):
        outs = {"numpy": ok("numpy", numpy_says), "mxnet": ok("mxnet", mxnet_says)}
        ref = ok("numpy", numpy_says.astype(np.float64))
        got = judge_case(case, part, outs, ref, known=[])
        assert {s.blame.library for s in got.decided} == blamed
    conv = groups["convolve@vector"]
    a = np.array([0.1, -math.inf, 1.0], np.float32)
    case = case_with(conv, {"x1": a, "x2": a}, ("numpy", "jax"), value_class="non-finite")
    with np.errstate(invalid="ignore"):
        direct = np.convolve(a, a)
    outs = {"numpy": ok("numpy", direct), "jax": ok("jax", np.full(5, math.nan, np.float32))}
    got = judge_case(case, conv, outs, ok("numpy", direct.astype(np.float64)), known=[])
    assert got.decided == ()


def test_complex_infinities_outside_the_standards_tables_are_not_judged_by_value() -> None:
    """exp2 of complex inf: numpy and torch say inf+nanj-free, tensorflow and mindspore NaN.
    C99 Annex G fixes no exp2, and complex multiplication by an infinity is naive in numpy
    and std::complex: no answer is a bug. exp's table (the standard's) still blames, and a
    finite complex input is still judged."""
    groups = {g.id: g for g in model.load().groups}
    libs = ("numpy", "torch", "tensorflow", "mindspore")

    def blamed(op: str, z: complex) -> set[str]:
        group = groups[op]
        x = np.array([z, 1 + 1j], np.complex64)
        case = case_with(group, {"x": x}, libs, dtype="complex64", value_class="non-finite")
        with np.errstate(all="ignore"):
            right = getattr(np, op)(x)
        wrong = right.copy()
        wrong[0] = complex(math.nan, math.nan)
        outs = {lib: ok(lib, right if lib in libs[:2] else wrong) for lib in libs}
        ref = ok("numpy", right.astype(np.complex128))
        return {s.blame.library for s in judge_case(case, group, outs, ref, known=[]).decided}

    by_standard = blamed("exp", complex(math.inf, 0.0))
    assert "mindspore" in by_standard
    assert blamed("exp2", complex(math.inf, 0.0)) == set()
    assert blamed("exp2", complex(0.5, 0.25)) >= by_standard


def test_gcd_and_lcm_beyond_the_integer_range_are_not_judged_the_rest_exactly() -> None:
    """lcm(-10, 2147483646) = 10737418230 does not fit int32: numpy's wrapped 2147483638 and
    paddle's 10 are both artefacts. lcm(32766, 32767) = 1073643522 fits: mindspore's
    1073643520 (a float32 product) is still blamed."""
    group = {g.id: g for g in model.load().groups}["lcm@int32"]
    libs = ("numpy", "torch", "paddle", "mindspore")
    x1 = np.array([-10, 32766], np.int32)
    x2 = np.array([2147483646, 32767], np.int32)
    case = case_with(group, {"x1": x1, "x2": x2}, libs, dtype="int32", value_class="ordinary")
    plain = {m.library: m.api for m in group.members if not m.api.endswith("_")}
    case = dataclasses.replace(case, apis={lib: plain[lib] for lib in libs})
    majority = np.array([2147483638, 1073643522], np.int32)
    outs = {lib: ok(lib, majority) for lib in libs}
    outs["paddle"] = ok("paddle", np.array([10, 1073643522], np.int32))
    assert judge_case(case, group, outs, None, known=[]).decided == ()
    outs["mindspore"] = ok("mindspore", np.array([2147483638, 1073643520], np.int32))
    got = judge_case(case, group, outs, None, known=[])
    assert {s.blame.library for s in got.decided} == {"mindspore"}


def test_integer_sums_that_may_wrap_and_transforms_of_dtype_limits_are_not_judged() -> None:
    """[2**63 - 2, 6, 2**63 - 2] has no int64 sum: numpy wraps to -2**63 + 4, mindspore
    saturates; neither is wrong, though no input sits at the dtype's limit. Small integers
    are still summed exactly. irfft of -DBL_MAX: numpy's inf is its own overflow (torch's
    finite -4.5e307 is right); the dtype limit's transform is not judged by value."""
    groups = {g.id: g for g in model.load().groups}
    total = groups["sum[axis]"]
    libs = ("numpy", "torch", "mindspore")
    plain = {m.library: m.api for m in total.members if not m.api.endswith("_")}

    def blamed_sum(x: np.ndarray, mindspore_says: np.ndarray) -> set[str]:
        case = case_with(total, {"x": x, "axis": 0}, libs, dtype="int64", value_class="ordinary")
        case = dataclasses.replace(case, apis={lib: plain[lib] for lib in libs})
        with np.errstate(over="ignore"):
            wrapped = x.sum(axis=0)
        outs = {lib: ok(lib, wrapped) for lib in libs[:2]}
        outs["mindspore"] = ok("mindspore", mindspore_says)
        return {s.blame.library for s in judge_case(case, total, outs, None, known=[]).decided}

    big = np.array([[2**63 - 2], [6], [2**63 - 2]], np.int64)
    assert blamed_sum(big, np.array([-(2**63)], np.int64)) == set()
    small = np.array([[2], [6], [9]], np.int64)
    assert blamed_sum(small, np.array([16], np.int64)) == {"mindspore"}
    transform = groups["irfft"]
    x = np.array([-1.47, -np.finfo(np.float64).max, 1.0, -0.5, -0.78])
    case = case_with(transform, {"x": x}, ("numpy", "torch"), dtype="float64")
    with np.errstate(all="ignore"):
        overflowed = np.fft.irfft(x)
    finite = np.where(np.isinf(overflowed), np.sign(overflowed) * 4.49e307, overflowed)
    outs = {"numpy": ok("numpy", overflowed), "torch": ok("torch", finite)}
    assert judge_case(case, transform, outs, ok("numpy", overflowed), known=[]).decided == ()


def test_integer_differences_past_the_dtypes_range_are_not_judged_by_value() -> None:
    """numpy.unwrap of int32 [INT_MIN, 1, 5] takes the differences in int32 (numpy.diff
    documents the dtype is kept) and gives +2.1e9 where the float64 reference gives -2.1e9;
    mxnet.np.unwrap delegates to numpy; jax computes in float64. None is a defect; small
    integers still are judged."""
    unwrap = {g.id: g for g in model.load().groups}["unwrap"]
    libs = ("numpy", "jax", "mxnet")

    def blamed(x: np.ndarray, mxnet_says: np.ndarray) -> set[str]:
        case = case_with(unwrap, {"x": x}, libs, dtype="int32", value_class="boundary")
        exact = np.unwrap(x.astype(np.float64))
        outs = {
            "numpy": ok("numpy", np.unwrap(x)),
            "jax": ok("jax", exact),
            "mxnet": ok("mxnet", mxnet_says),
        }
        reference = ok("numpy", exact)
        return {s.blame.library for s in judge_case(case, unwrap, outs, reference).decided}

    wide = np.array([-(2**31), 1, 5], np.int32)
    assert not np.array_equal(np.unwrap(wide), np.unwrap(wide.astype(np.float64)))
    assert blamed(wide, np.unwrap(wide)) == set()
    small = np.array([-5, 1, 40], np.int32)
    assert blamed(small, np.unwrap(small) + 1.0) == {"mxnet"}


def test_cosine_similarity_is_taken_along_the_broadcast_shape() -> None:
    """torch documents ``dim`` as a dimension of the shape x1 and x2 broadcast to; paddle and
    mindspore normalize each input along its own axis 1 first, which for (3, 3) against
    (2, 3, 3) is another axis: two libraries agreeing outvoted torch, the definition does not."""
    group = {g.id: g for g in model.load().groups}["cosine_similarity@square"]
    assert group.reference == "cosine_similarity"
    rng = np.random.default_rng(5)
    x1 = rng.standard_normal((3, 3)).astype(np.float32)
    x2 = rng.standard_normal((2, 3, 3)).astype(np.float32)
    a, b = np.broadcast_arrays(x1.astype(np.float64), x2.astype(np.float64))
    right = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    own_axis = (a * b).sum(1) / np.linalg.norm(x1, axis=1) / np.linalg.norm(x2, axis=1)
    assert not np.allclose(right, own_axis)
    libs = ("torch", "paddle", "mindspore")
    case = case_with(group, {"x1": x1, "x2": x2}, libs, value_class="ordinary")
    outs = {
        "torch": ok("torch", right.astype(np.float32)),
        "paddle": ok("paddle", own_axis.astype(np.float32)),
        "mindspore": ok("mindspore", own_axis.astype(np.float32)),
    }
    judged = judge_case(case, group, outs, None, known=[]).decided
    assert {s.blame.library for s in judged} == {"paddle", "mindspore"}
    zero = formulas.evaluate("cosine_similarity", {"x1": x1, "x2": np.zeros_like(x2)})
    assert (
        zero is not None and zero[1].all()
    )  # a zero vector: where eps goes is each library's choice


def test_a_transform_of_a_0d_array_blames_only_a_dead_process() -> None:
    """A 0-d array has no axis to transform: numpy returns it as it is (real), torch a
    complex copy, mindspore refuses; none of that is a bug, a crash still is."""
    transform = {g.id: g for g in model.load().groups}["ifftn"]
    x = np.array(np.nan, np.float32)
    case = case_with(transform, {"x": x}, ("numpy", "torch", "paddle"))
    crash = Outcome(library="paddle", api="paddle.fft.ifftn", status="crash", error="SIGSEGV")
    outs = {
        "numpy": ok("numpy", x),
        "torch": ok("torch", np.array(np.nan, np.complex64)),
        "paddle": crash,
    }
    got = judge_case(case, transform, outs, ok("numpy", x.astype(np.float64)), known=[])
    assert {(s.blame.library, s.blame.kind) for s in got.decided} == {("paddle", "crash")}
    vector = case_with(transform, {"x": np.array([np.nan, 1.0], np.float32)}, ("numpy", "torch"))
    outs = {
        "numpy": ok("numpy", np.array([np.nan, np.nan], np.complex64)),
        "torch": ok("torch", np.array([np.nan, np.nan], np.float32)),
    }
    reference = ok("numpy", np.array([np.nan, np.nan], np.complex128))
    judged = judge_case(vector, transform, outs, reference).decided
    assert {s.blame.library for s in judged} == {"torch"}  # a vector's transform is complex


def test_an_ill_conditioned_position_judges_nan_and_inf_but_not_digits() -> None:
    """erfinv(1 - 2**-24) is 3.83: tensorflow's and paddle's inf is wrong, though the digits
    of a finite answer follow each library's evaluation there (the condition number is
    5e5): mindspore's 2.44 is not judged."""
    (group,) = [g for g in model.load().groups if g.id == "erfinv"]
    libs = ("torch", "tensorflow", "paddle", "mindspore")
    x = np.array([np.nextafter(np.float32(1), np.float32(0)), 0.5], np.float32)
    values = {
        "torch": [3.832507, 0.47693628],
        "tensorflow": [math.inf, 0.4769363],
        "paddle": [math.inf, 0.4769363],
        "mindspore": [2.4361897, 0.47693628],
    }
    outs = {lib: ok(lib, np.array(v, np.float32)) for lib, v in values.items()}
    got = judge_case(case_of(group, x, libs), group, outs, None)
    assert {(b.library, b.kind) for b in got.judgement.blames} == {
        ("tensorflow", "inf"),
        ("paddle", "inf"),
    }
    assert "inf vs 3.83" in got.judgement.blames[0].detail
    assert got.outcomes["mindspore"].value[0] == np.float32(2.4361897)  # recorded as given


def test_conventions_and_domains_the_call_leaves_open_are_no_case() -> None:
    """A correction that leaves no degrees of freedom (std with correction 2**31 - 1 over 4
    values) has no answer; average pooling with ceil_mode and a stride past the input (8
    values, kernel 2, stride 100) has one output window by torch's documented rule and two
    by the "full" convention; trapz of [-inf, 1] is -inf by the float64 trapezoidal rule."""
    groups = {g.id: g for g in model.load().groups}
    std = groups["std[axis][correction]"]
    x = np.array([[0.5, 1.0, 2.0, 4.0]], np.float32)
    libs = ("numpy", "torch", "mindspore")

    def blamed(group: Group, values: dict[str, Any], outs: dict[str, Any], **kw: Any) -> set:
        case = case_with(group, values, tuple(outs), **kw)
        given = {lib: ok(lib, v) for lib, v in outs.items()}
        return {s.blame.library for s in judge_case(case, group, given, None, known=[]).decided}

    nan_inf = {"numpy": np.array([np.inf], np.float32), "torch": np.array([np.inf], np.float32)}
    outs = {**nan_inf, "mindspore": np.array([np.nan], np.float32)}
    assert blamed(std, {"x": x, "correction": 2**31 - 1, "axis": -1}, outs) == set()
    assert set(libs) == set(outs)
    assert blamed(std, {"x": x, "correction": 3, "axis": -1}, outs) == {"mindspore"}
    pool = groups["avg_pool3d[ceil_mode]"]
    cube = np.ones((1, 4, 8, 8, 8), np.float32)
    one, two = np.ones((1, 4, 1, 1, 1), np.float32), np.ones((1, 4, 2, 2, 2), np.float32)
    outs = {"paddle": two, "mxnet": two, "mindspore": one}
    assert blamed(pool, {"x": cube, "kernel_size": 2, "stride": 100}, outs) == set()
    four = np.ones((1, 4, 4, 4, 4), np.float32)
    outs = {"paddle": four, "mxnet": four, "mindspore": one}
    assert blamed(pool, {"x": cube, "kernel_size": 2, "stride": 2}, outs) == {"mindspore"}
    trapz = groups["trapz[axis]"]
    assert trapz.reference == "trapezoid"
    y = np.array([[-np.inf, 1.0], [1.0, 2.0]], np.float32)
    outs = {
        "mxnet": np.array([-np.inf, 1.5], np.float32),
        "torch": np.array([np.nan, 1.5], np.float32),
        "mindspore": np.array([np.nan, 1.5], np.float32),
    }
    assert blamed(trapz, {"x": y, "axis": 1}, outs, value_class="non-finite") == {
        "torch",
        "mindspore",
    }


def test_one_function_at_every_rank_is_one_callable_in_a_finding() -> None:
    blame = Blame(kind="crash", library="mxnet", confidence="reference", error="SIGFPE")
    signed = []
    for gid in ("pad_reflect1d", "pad_reflect3d"):
        group = _group(gid)
        x = np.zeros((1, 4, 0) + (3,) * (dlcore.spatial_rank(group.shapes) - 1), np.float32)
        case = Case(
            group=gid,
            dtype="float32",
            value_class="ordinary",
            values={"x": x, "pad": group.params["pad"]},
            apis={"mxnet": "mxnet.np.pad"},
        )
        signed.append(sign(case, group, blame, "empty"))
    assert signed[0].callable == signed[1].callable == "mxnet.pad_reflect"
    assert signed[0].signature == signed[1].signature
    assert dlcore.callable_op("resize_lanczos3_2d") == "resize_lanczos3"


def test_a_kernel_beyond_the_input_is_a_trigger_and_neutralizing_cuts_it() -> None:
    group = _group("conv2d[valid]")
    x = np.ones((1, 4, 1, 6), np.float32)
    big = np.ones((6, 4, 9, 8), np.float32)
    case = Case(
        group=group.id,
        dtype="float32",
        value_class="ordinary",
        values={"x": x, "kernel": big, "stride": 1},
        apis={m.library: m.api for m in group.members},
    )
    tags = input_classes(case, group)
    # x and kernel differ in shape by design: not a broadcast, and a kernel is no divisor
    assert "kernel-beyond-input" in tags and "broadcast" not in tags
    assert triggers_in(tags)[0] == "kernel-beyond-input"
    fixed = neutralized(case, group, "kernel-beyond-input")
    assert fixed is not None and fixed.values["kernel"].shape == (6, 4, 1, 6)
    assert "kernel-beyond-input" not in input_classes(fixed, group)
    pool = _group("max_pool2d")
    case = dataclasses.replace(case, group=pool.id, values={"x": x, "kernel_size": 5, "stride": 1})
    assert "kernel-beyond-input" in input_classes(case, pool)
    assert neutralized(case, pool, "kernel-beyond-input").values["kernel_size"] == 1


def test_numpy_s_integer_answer_is_the_reference_for_integers_beyond_2_to_the_53() -> None:
    """around of int64 is the identity: mindspore and mxnet rounding INT64_MAX through double
    (INT64_MIN) are blamed, not numpy outvoted 2-1; below 2**53 the float64 reference judges,
    and a floating numpy answer is no exact reference."""
    group = model.load().group("around")
    big = np.array([2**63 - 1, 5], np.int64)
    libs = ("numpy", "mindspore", "mxnet")
    wrapped = np.array([-(2**63), 5], np.int64)
    outcomes = {"numpy": ok("numpy", big), "mindspore": ok("mindspore", wrapped)}
    outcomes["mxnet"] = ok("mxnet", wrapped)
    judged = judge_case(case_of(group, big, libs), group, outcomes, None)
    assert judged.reference is outcomes["numpy"]
    assert {s.blame.library for s in judged.signed} == {"mindspore", "mxnet"}
    small = np.array([7, 5], np.int64)
    plain = {lib: ok(lib, small) for lib in libs}
    assert judge_case(case_of(group, small, libs), group, plain, None).reference is None
    floating = dict(outcomes, numpy=ok("numpy", big.astype(np.float64)))
    assert judge_case(case_of(group, big, libs), group, floating, None).reference is None


def test_eigenvalues_in_another_order_are_the_same_answer() -> None:
    """numpy and paddle document eigvals as unordered: paddle's [-0.77, 0.08] is numpy's
    [0.08, -0.77]; a wrong eigenvalue is still blamed."""
    (group,) = [g for g in model.load().groups if g.id == "eigvals@square"]
    x = np.array([[0.5, 1.0], [0.3, -1.2]], np.float32)
    numpy_says = np.array([0.0791548, -0.7656548], np.complex64)
    libs = ("numpy", "torch", "paddle")
    c = case_of(group, x, libs)
    reference = ok("numpy", numpy_says.astype(np.complex128))

    def blamed(paddle_says: np.ndarray) -> set[str]:
        outs = {
            "numpy": ok("numpy", numpy_says),
            "torch": ok("torch", numpy_says),
            "paddle": ok("paddle", paddle_says),
        }
        return {b.library for b in judge_case(c, group, outs, reference).judgement.blames}

    assert blamed(numpy_says[::-1].copy()) == set()
    assert blamed(np.array([0.0791548, -0.5], np.complex64)) == {"paddle"}


class _Recording:
    """What Replay.submit hands the pool, recorded (no worker is started)."""

    def __init__(self) -> None:
        self.workers = {"numpy": None, "torch": None, "jax": None}
        self.calls: dict[str, list[Any]] = {}

    def submit(self, calls: dict[str, list[Any]]) -> int:
        self.calls = calls
        return 1


def test_a_gradient_cases_probes_share_one_time_budget_per_case() -> None:
    """numpy's finite-difference probes (four float64 calls per input element, each of which
    may be slow under the hang deadline) share PROBE_SECONDS per case; nothing else has one."""
    from xamt.oracle.gradient import gradient_case
    from xamt.replay import PROBE_SECONDS, Replay

    group = {g.id: g for g in model.load().groups}["tanh"]
    apis = {m.library: m.api for m in group.members if m.library in ("numpy", "torch", "jax")}
    rng = np.random.default_rng(0)
    cases = [
        gradient_case(
            Case(
                group="tanh",
                dtype="float32",
                value_class="ordinary",
                values={group.roles[0]: np.linspace(-1, 1, n, dtype=np.float32)},
                apis=apis,
                seed=1,
            ),
            group,
            rng,
        )
        for n in (2, 3)
    ]
    pool = _Recording()
    Replay(pool, [group], known=[]).submit(cases)  # type: ignore[arg-type]
    numpy_calls = pool.calls["numpy"]
    budgets = [c.budget for c in numpy_calls]
    # per case: its own call, the float64 reference, then 4 probes per element
    assert budgets[:2] == [None, None] and budgets[10:12] == [None, None]
    assert set(budgets[2:10]) == {("probes-0", PROBE_SECONDS)}
    assert set(budgets[12:]) == {("probes-1", PROBE_SECONDS)} and len(budgets) == 24
    assert all(c.budget is None for lib in ("torch", "jax") for c in pool.calls[lib])
