"""Minimization logic and triggers by necessity (no library needed: predicates are plain
functions of the case)."""

from __future__ import annotations

import numpy as np
from test_replay import GROUP, case

from xamt.replay import trigger_of
from xamt.triage.minimize import element_count, minimize
from xamt.triage.pipeline import needed_trigger
from xamt.types import Case


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


def test_dtypes_are_simplified_to_the_validation_dtype_then_the_kind_canonical() -> None:
    from xamt.triage.minimize import in_canonical_dtypes

    c = case(np.array([1, 2], np.int64), np.array([3, 4], np.int64))
    moved = in_canonical_dtypes(c, GROUP)
    assert [m.dtype for m in moved] == ["float32", "int32"]
    assert moved[1].values["x1"].dtype == np.int32
    assert in_canonical_dtypes(case(np.ones(2, np.float32), np.ones(2, np.float32)), GROUP) == []


def test_a_dtype_move_that_changes_values_is_not_offered() -> None:
    from xamt.triage.minimize import in_canonical_dtypes

    big = np.finfo(np.float64).max
    kept = case(np.array([np.nan, -np.inf, 0.1, -0.0]), np.array([1e10, 2.0, 3.0, 4.0]))
    assert [m.dtype for m in in_canonical_dtypes(kept, GROUP)] == ["float32"]
    # overflow to inf, flush of a subnormal to zero, an integer that wraps or loses digits
    for x1 in (
        np.array([big, 1.0]),
        np.array([5e-324, 1.0]),
        np.array([2**40 + 1, 1], np.int64),
    ):
        assert in_canonical_dtypes(case(x1, np.ones(2, x1.dtype)), GROUP) == [], x1


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


def test_a_hang_is_told_by_its_parameter_at_a_boundary_where_the_case_holds_one() -> None:
    """A hang's trigger is not tried (each try waits a deadline): mindspore.numpy.around with
    decimals = 2**31 - 1 hangs on int64 extremes as on ordinary values, so the parameter, not
    the first value class, tells it; without such a parameter the first class does."""
    from xamt.replay import hang_trigger, trigger_of

    tags = ("dtype-max", "dtype-min", "param-boundary")
    assert trigger_of(tags) == "dtype-limit"
    assert hang_trigger(tags) == "param-boundary"
    assert hang_trigger(("nan", "inf")) == "nan"
    assert hang_trigger(()) == "ordinary"


def test_element_minimization_cuts_a_16_element_case_to_the_one_element_that_matters() -> None:
    """The 'bug' needs one ordinary value above 5 anywhere in x1 (position 9 of 16): neither
    a prefix, a first half nor a special-value cut keeps it, removing chunks does; its value
    then moves to the roundest number that still shows it."""
    x1 = np.linspace(-1.0, 1.0, 16).astype(np.float32)
    x1[9] = 7.3125
    x2 = np.linspace(0.1, 0.9, 16).astype(np.float32)

    def above_5(cases: list[Case]) -> list[set[str]]:
        return [{"S"} if (np.asarray(c.values["x1"]) > 5).any() else set() for c in cases]

    original = case(x1, x2)
    result = minimize(original, "S", GROUP, above_5)
    small = result.case
    assert above_5([small]) == [{"S"}]
    assert element_count(small, GROUP) == 2  # one element in each of x1, x2 (kept aligned)
    assert np.asarray(small.values["x1"]).reshape(-1).tolist() == [7.0]  # 7.3125, simplified
    assert np.asarray(small.values["x2"]).reshape(-1).tolist() == [0.0]
    assert result.stop == "fixpoint" and result.calls <= 160
    again = minimize(original, "S", GROUP, above_5).case  # deterministic
    assert again.values["x1"].tobytes() == small.values["x1"].tobytes()


def test_simpler_values_are_round_numbers_then_fewer_digits_then_smaller() -> None:
    from xamt.triage.minimize import simpler_values, simplicity

    f32 = np.dtype(np.float32)
    found = simpler_values(np.float32(0.7456596), f32)
    assert found[:7] == [0, 1, -1, 2, -2, 0.5, -0.5]
    assert np.float32(0.7) in found and np.float32(0.75) in found
    assert all(simplicity(v) < simplicity(np.float32(0.7456596)) for v in found)
    assert simpler_values(np.float32(0.0), f32) == []  # already the simplest
    assert simpler_values(np.float32(np.nan), f32) == []  # special values stay
    ints = simpler_values(np.int32(12345), np.dtype(np.int32))
    assert ints[:5] == [0, 1, -1, 2, -2] and 10000 in ints and ints[-1] == 6172
    assert all(v >= 0 for v in simpler_values(np.uint8(200), np.dtype(np.uint8)))


def test_key_dtype_and_trigger_describe_the_minimized_case() -> None:
    """A finding met in float16 on a case holding NaN and inf, whose 'bug' needs the NaN:
    minimized to float32 and a lone NaN, its key, dtype, trigger and input classes are the
    minimized case's, also where it was not re-run and its first trigger (inf) is stale."""
    from test_findings import finding

    from xamt.oracle.signature import signature_of
    from xamt.triage.pipeline import _final, as_minimized

    x1 = np.array([np.inf, 3.0, np.nan, 0.5], np.float16)
    original = case(x1, np.ones(4, np.float16))
    small = minimize(original, "S", GROUP, nan_in_x1).case
    assert small.dtype == "float32" and element_count(small, GROUP) == 2
    sig, key = signature_of(
        family="value", library="paddle", callable="paddle.add", dtype="float16", trigger="inf"
    )
    f = finding(
        signature=sig,
        key=key,
        callable="paddle.add",
        group="add",
        dtype="float16",
        trigger="inf",
        input_classes=("inf", "nan"),
    )
    for described in (
        _final(f, small, GROUP, "root", "inf", None, []),  # not re-run: keeps its first trigger
        as_minimized(f, small, GROUP, needed_trigger(small, GROUP, "S", nan_in_x1, ["nan"])),
    ):
        assert described.dtype == "float32"
        assert described.trigger == "nan" and "inf" not in described.input_classes
        assert described.key == "value/paddle/paddle.add/float32/nan"
        assert described.signature != f.signature
        assert described.case["dtype"] == "float32"


def test_minimization_never_offers_a_case_a_member_cannot_be_called_with() -> None:
    """A pass may drop a value the group treats as optional (``axis`` here) that one member's
    signature requires; such a candidate is never run (binding it raised KeyError inside the
    predicate and stopped a whole `xamt minimize`)."""

    from xamt.catalog.model import Group, Member

    group = Group(
        id="needs-axis",
        op="sum",
        family="reduction",
        roles=("x",),
        dtype="float32",
        members=(
            Member(library="numpy", api="numpy.sum", args=("x",)),
            Member(library="torch", api="torch.sum", args=("x",), kwargs={"dim": "axis"}),
        ),
    )
    start = Case(
        group=group.id,
        dtype="float32",
        value_class="ordinary",
        values={"x": np.array([1.0, 2.0], np.float32), "axis": 0},
        apis={"numpy": "numpy.sum", "torch": "torch.sum"},
    )
    offered: list[Case] = []

    def predicate(cases: list[Case]) -> list[set[str]]:
        offered.extend(cases)
        return [{"sig"} for _ in cases]

    minimize(start, "sig", group, predicate)
    assert offered and all("axis" in c.values for c in offered)
