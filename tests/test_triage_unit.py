"""Minimization logic and triggers by necessity (no library needed: predicates are plain
functions of the case)."""

from __future__ import annotations

import dataclasses

import numpy as np

from xamt.catalog import model
from xamt.replay import neutralized, trigger_of
from xamt.triage.minimize import element_count, minimize
from xamt.triage.pipeline import needed_trigger
from xamt.types import Case


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


def nan_in_x1(cases: list[Case]) -> list[set[str]]:
    """The 'bug': shows signature S whenever x1 holds a NaN."""
    return [{"S"} if np.isnan(c.values["x1"]).any() else set() for c in cases]


def test_minimize_keeps_the_signature_and_shrinks() -> None:
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((4, 5)).astype(np.float32)
    x1[2, 3] = np.nan
    x2 = rng.standard_normal((4, 5)).astype(np.float32)
    original = case(x1, x2, keepdims=True)
    result = minimize(original, "S", GROUP, nan_in_x1)
    small = result.case
    assert nan_in_x1([small]) == [{"S"}]  # the same signature
    assert element_count(small, GROUP) <= 2 < element_count(original, GROUP)
    assert "keepdims" not in small.values  # back to defaults
    assert np.isnan(small.values["x1"]).any()  # the special value that matters survives
    assert set(np.asarray(small.values["x2"]).reshape(-1).tolist()) <= {0.0, 1.0, -1.0}
    assert result.stop == "fixpoint" and result.calls <= 160
    again = minimize(original, "S", GROUP, nan_in_x1)
    assert again.case.values["x1"].tobytes() == small.values["x1"].tobytes()  # deterministic


def test_minimize_simplifies_whole_number_parameters_the_signature_does_not_need() -> None:
    x1 = np.array([np.nan, 2.0], np.float32)
    # "offset" does not matter to the bug; "k" does, where it is negative

    def predicate(cases: list[Case]) -> list[set[str]]:
        return [{"S"} if nan_in_x1([c])[0] and c.values["k"] < 0 else set() for c in cases]

    small = minimize(case(x1, x1.copy(), offset=-1, k=-3), "S", GROUP, predicate).case
    assert small.values["offset"] == 0  # simplified
    assert small.values["k"] == -3  # kept: replacing it loses the signature


def test_minimize_respects_its_caps() -> None:
    x1 = np.full((6, 6), np.nan, np.float32)
    result = minimize(case(x1, x1.copy()), "S", GROUP, nan_in_x1, max_calls=5)
    assert result.calls <= 5 and result.stop == "max-calls"


def test_minimize_never_returns_a_case_without_the_signature() -> None:
    x1 = np.array([1.0, np.nan], np.float32)
    result = minimize(case(x1, x1.copy()), "OTHER", GROUP, nan_in_x1)
    assert result.case.values["x1"].tobytes() == x1.tobytes() and result.accepted == 0


def test_the_trigger_is_the_class_the_case_needs() -> None:
    """A case holding NaN, inf and a zero divisor, whose 'bug' needs only the NaN: NaN is the
    trigger; a bug that needs nothing special is 'ordinary'."""
    x1 = np.array([np.nan, np.inf, 2.0], np.float32)
    x2 = np.array([0.0, 1.0, 1.0], np.float32)
    c = case(x1, x2)
    tags = ["nan", "inf", "zero", "zero-divisor"]
    assert trigger_of(tags) == "nan"  # the first guess, before any run
    assert needed_trigger(c, GROUP, "S", nan_in_x1, tags) == "nan"

    def inf_in_x1(cases: list[Case]) -> list[set[str]]:
        return [{"S"} if np.isinf(k.values["x1"]).any() else set() for k in cases]

    assert needed_trigger(c, GROUP, "S", inf_in_x1, tags) == "inf"

    def always(cases: list[Case]) -> list[set[str]]:
        return [{"S"} for _ in cases]

    assert needed_trigger(c, GROUP, "S", always, tags) == "ordinary"

    def any_special(cases: list[Case]) -> list[set[str]]:
        return [{"S"} if not np.isfinite(k.values["x1"]).all() else set() for k in cases]

    # NaN and inf each show it, so no one removal loses it; removing both does: the trigger
    # is the first of them, not "ordinary"
    assert needed_trigger(c, GROUP, "S", any_special, tags) == "nan"


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


def test_dtypes_are_simplified_to_the_validation_dtype_then_the_kind_canonical() -> None:
    from xamt.triage.minimize import in_canonical_dtypes

    c = case(np.array([1, 2], np.int64), np.array([3, 4], np.int64))
    moved = in_canonical_dtypes(c, GROUP)
    assert [m.dtype for m in moved] == ["float32", "int32"]
    assert moved[1].values["x1"].dtype == np.int32
    assert in_canonical_dtypes(case(np.ones(2, np.float32), np.ones(2, np.float32)), GROUP) == []


def test_the_root_of_a_suspected_bug_ignores_dtype_error_type_and_input_class() -> None:
    from test_findings import finding

    from xamt.triage.pipeline import same_root

    f = finding()
    assert same_root(f) == same_root(f.replace(dtype="float64", error="TypeError: x"))
    assert same_root(f) == same_root(f.replace(trigger="inf"))  # one callable's wrong result
    assert same_root(f) != same_root(f.replace(kind="status"))  # another family
    assert same_root(f) != same_root(f.replace(callable="torch.other"))
    # a hung or dead process on NaN and on infinity: one missing check for non-finite input
    hang = f.replace(kind="hang", trigger="nan")
    assert same_root(hang) == same_root(hang.replace(trigger="inf", dtype="complex64"))
    assert same_root(hang) != same_root(hang.replace(trigger="empty"))
    # a process that dies on one input class across a family's operations: one shared check
    crash = f.replace(kind="crash", trigger="scalar", error="SIGSEGV")
    fftn, ifftn = crash.replace(callable="paddle.fftn"), crash.replace(callable="paddle.ifftn")
    assert same_root(fftn, "fft") == same_root(ifftn, "fft")
    assert same_root(fftn) != same_root(ifftn)  # without the family: the callable
    assert same_root(fftn, "fft") != same_root(ifftn.replace(error="SIGABRT"), "fft")
    assert same_root(fftn, "fft") != same_root(ifftn.replace(trigger="empty"), "fft")


def test_a_missing_attribute_inside_a_library_is_one_root_whatever_reached_it() -> None:
    """tf.experimental.numpy's log, tanh and fix raise "EagerTensor object has no attribute
    'astype'" on integer input: one defect, one finding; another missing attribute is
    another root, and other errors keep their callable and trigger."""
    from test_findings import finding

    from xamt.triage.pipeline import same_root

    missing = "AttributeError: EagerTensor object has no attribute 'astype'."
    f = finding().replace(kind="status", error=missing)
    other = f.replace(callable="tensorflow.tanh", trigger="inf", dtype="bfloat16")
    assert same_root(f) == same_root(other)
    assert same_root(f) != same_root(f.replace(error=missing.replace("astype", "numpy")))
    plain = f.replace(error="TypeError: x")
    assert same_root(plain) != same_root(plain.replace(callable="tensorflow.tanh"))
    # one internal check failing with one message, met through sum and mean: one root
    check = "MXNetError: Check failed: this->shape_.Size() == shape.Size() (0 vs. 2) : Shape"
    total = f.replace(library="mxnet", callable="mxnet.sum", error=check)
    mean = total.replace(callable="mxnet.mean", error=check.replace("(0 vs. 2)", "(0 vs. 1)"))
    assert same_root(total) == same_root(mean)
    assert same_root(total) != same_root(mean.replace(error=check.replace("Shape", "Other")))


def test_clip_with_crossed_bounds_is_no_case() -> None:
    """clip(x, min=0.3, max=-0.0): the standard leaves it unspecified, so tensorflow's 0.3
    against numpy's -0.0 blames nobody; with min <= max the same departure is a finding."""
    from xamt.replay import judge_case
    from xamt.types import Outcome

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
    from xamt.replay import judge_case
    from xamt.types import Outcome

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
    from xamt.known import load_known
    from xamt.replay import classify_blame, judge_case
    from xamt.types import ErrorInfo, Outcome

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
