"""The oracles: crafted outcomes for every discrepancy kind, and properties of compare,
divergence and tolerance."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xamt.oracle import TOLERANCE, compare, divergence, tolerance
from xamt.types import DISCREPANCY_KINDS, Discrepancy, ErrorInfo, Outcome
from xamt.workers.protocol import BFloat16, Opaque


def ok(library: str, value: Any) -> Outcome:
    return Outcome(library=library, api=f"{library}.f", status="ok", value=value)


def raised(library: str, type_: str = "ValueError", message: str = "bad input") -> Outcome:
    error = ErrorInfo(type=type_, message=message)
    return Outcome(library=library, api=f"{library}.f", status="error", error=error)


def status(library: str, name: str, **fields: Any) -> Outcome:
    return Outcome(library=library, api=f"{library}.f", status=name, **fields)


def outcomes(*items: Outcome) -> dict[str, Outcome]:
    return {o.library: o for o in items}


def values(**by_library: Any) -> dict[str, Outcome]:
    return {lib: ok(lib, v) for lib, v in by_library.items()}


def f32(*v: float) -> np.ndarray:
    return np.array(v, dtype=np.float32)


def kinds(found: Sequence[Discrepancy]) -> list[str]:
    return [d.kind for d in found]


def only(found: Sequence[Discrepancy], kind: str) -> Discrepancy:
    assert kinds(found) == [kind], found
    return found[0]


# --- values and tolerance -------------------------------------------------------------------


def test_identical_outputs_agree() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert compare(values(numpy=x, torch=x.copy(), jax=x.copy())) == []
    assert divergence(values(numpy=x, torch=x.copy(), jax=x.copy())) == 0.0


def test_near_zero_is_guarded_by_atol() -> None:
    assert compare(values(numpy=f32(1e-30, -1e-7), torch=f32(0.0, 0.0))) == []


def test_float32_within_tolerance_agrees() -> None:
    assert compare(values(numpy=f32(1.0, 100.0), torch=f32(1.0001, 100.005))) == []


def test_float32_beyond_tolerance_is_a_value_mismatch() -> None:
    found = compare(values(numpy=f32(1.0, 2.0), torch=f32(1.0, 2.01), jax=f32(1.0, 2.0)))
    d = only(found, "value")
    assert d.odd == ("torch",)
    assert d.detail.startswith("value: torch differs from numpy, jax at 1 position")


def test_float16_is_looser_than_float32() -> None:
    a, b = [1.0, 1.005], [1.005, 1.0]
    assert compare(values(numpy=np.array(a, np.float16), torch=np.array(b, np.float16))) == []
    assert kinds(compare(values(numpy=f32(*a), torch=f32(*b)))) == ["value"]


def test_bfloat16_uses_its_own_tolerance() -> None:
    one_ulp = BFloat16(f32(1.0078125))  # 1 + 2**-7: the next bfloat16 after 1.0
    assert compare(values(torch=BFloat16(f32(1.0)), jax=one_ulp)) == []
    found = compare(values(torch=BFloat16(f32(1.0)), jax=BFloat16(f32(1.0625))))
    assert kinds(found) == ["value"]
    assert kinds(compare(values(torch=BFloat16(f32(1.0)), jax=f32(1.0)))) == ["dtype"]


def test_integers_are_exact() -> None:
    found = compare(values(numpy=np.array([7], np.int64), torch=np.array([8], np.int64)))
    assert kinds(found) == ["value"]
    big = 2**62
    found = compare(values(numpy=np.array([big], np.int64), torch=np.array([big + 1], np.int64)))
    assert kinds(found) == ["value"]  # not rounded together through float64


def test_integer_overflow_is_dtype_and_value() -> None:
    wide = np.array([2**31, 5], dtype=np.int64)
    found = compare(values(numpy=wide, torch=wide.astype(np.int32), jax=wide.copy()))
    assert kinds(found) == ["dtype", "value"]
    assert all(d.odd == ("torch",) for d in found)
    assert "int32" in found[0].detail and "int64" in found[0].detail
    assert "torch gives -2147483648 where numpy, jax give 2147483648" in found[1].detail


def test_promotion_with_same_values_is_only_dtype() -> None:
    x = np.array([0.5, -0.0, np.nan, np.inf], dtype=np.float32)
    found = compare(values(numpy=x.astype(np.float64), torch=x, jax=x.astype(np.float64)))
    d = only(found, "dtype")
    assert d.odd == ("torch",)
    assert d.detail == "dtype: torch returned float32 where numpy, jax returned float64"


def test_bool_against_int_of_same_values_is_dtype() -> None:
    found = compare(values(numpy=np.array([True, False]), torch=np.array([1, 0], np.int64)))
    assert kinds(found) == ["dtype"]


def test_python_scalars_compare_as_zero_d_arrays() -> None:
    assert compare(values(numpy=np.array(2.5), mxnet=2.5)) == []
    assert compare(values(numpy=np.array(3, np.int64), mxnet=3)) == []
    assert kinds(compare(values(numpy=np.array(True), mxnet=1))) == ["dtype"]
    assert kinds(compare(values(numpy=np.array(2.5), mxnet=2.75))) == ["value"]


def test_complex_values_use_the_modulus() -> None:
    a = np.array([1 + 1j], np.complex64)
    assert compare(values(numpy=a, torch=a + np.complex64(1e-6j))) == []
    assert kinds(compare(values(numpy=a, torch=a + np.complex64(0.1j)))) == ["value"]


def test_a_complex_nan_against_a_real_nan_is_one_nan() -> None:
    # a documented complex norm (nan+nanj) against real ones (nan): same NaN, only the dtype
    # differs; a complex NaN against a real number still differs
    real = np.array(np.nan, np.float32)
    assert kinds(compare(values(numpy=real, mindspore=np.array(complex(np.nan, np.nan))))) == [
        "dtype"
    ]
    assert "nan" in kinds(
        compare(values(numpy=np.array(1.0), mindspore=np.array(complex(1.0, np.nan))))
    )
    assert "nan" in kinds(
        compare(values(numpy=np.array(np.inf), mindspore=np.array(complex(np.inf, np.nan))))
    )


def test_opaque_leaves_compare_by_type_and_repr() -> None:
    same = Opaque("builtins.function", "<function f>")
    assert compare(values(numpy=same, torch=Opaque("builtins.function", "<function f>"))) == []
    found = compare(values(numpy=same, torch=Opaque("builtins.function", "<function g>")))
    assert kinds(found) == ["value"]
    assert kinds(compare(values(numpy=same, torch=Opaque("builtins.str", "<function f>")))) == [
        "dtype",
        "value",
    ]


def test_tuple_outputs_compare_leaf_by_leaf() -> None:
    found = compare(
        values(
            numpy=(f32(1.0), np.array([0], np.int64)),
            torch=[f32(1.0), np.array([1], np.int64)],  # a list is a sequence like a tuple
            jax=(f32(1.0), np.array([0], np.int64)),
        )
    )
    assert only(found, "value").odd == ("torch",)


# --- masks ----------------------------------------------------------------------------------


def test_nan_masks() -> None:
    found = compare(values(numpy=f32(1, 2, 3), torch=f32(np.nan, np.nan, 3), jax=f32(1, 2, 3)))
    d = only(found, "nan")
    assert d.odd == ("torch",)
    assert d.detail == "nan mask: torch has NaN at 2 positions where numpy, jax have none"


def test_nan_where_all_agree_is_fine() -> None:
    assert compare(values(numpy=f32(np.nan, 1), torch=f32(np.nan, 1))) == []


def test_inf_masks_include_the_sign() -> None:
    found = compare(values(numpy=f32(np.inf), torch=f32(-np.inf), jax=f32(np.inf)))
    d = only(found, "inf")
    assert d.odd == ("torch",)
    assert "-inf vs inf" in d.detail


def test_inf_against_finite_is_an_inf_mismatch_not_a_value_one() -> None:
    found = compare(values(numpy=f32(np.inf, 1), torch=f32(3e38, 1), jax=f32(np.inf, 1)))
    assert kinds(found) == ["inf"]


def test_signed_zero() -> None:
    found = compare(values(numpy=f32(0.0, 1.0), torch=f32(-0.0, 1.0), jax=f32(0.0, 1.0)))
    d = only(found, "signed-zero")
    assert d.odd == ("torch",)
    assert d.detail == "signed zero: torch has -0.0 where numpy, jax have 0.0 at 1 position"


def test_signed_zero_is_for_floats_only() -> None:
    found = compare(values(numpy=f32(-0.0), torch=np.array([0], np.int64)))
    assert kinds(found) == ["dtype"]


# --- shape and structure --------------------------------------------------------------------


def test_shape_mismatch() -> None:
    found = compare(values(numpy=f32(1, 2), torch=f32(1, 2, 3), jax=f32(1, 2)))
    d = only(found, "shape")
    assert d.odd == ("torch",)
    assert d.detail == "shape: torch returned [3] where numpy, jax returned [2]"


def test_structure_mismatch_is_shape() -> None:
    found = compare(values(numpy=(f32(1), f32(2)), torch=f32(1, 2), jax=(f32(1), f32(2))))
    assert only(found, "shape").odd == ("torch",)


def test_after_a_shape_mismatch_the_majority_is_still_compared() -> None:
    found = compare(
        values(numpy=f32(1, 2), torch=f32(1, 2, 3), jax=f32(1, 2), paddle=f32(1, np.nan))
    )
    assert kinds(found) == ["shape", "nan"]
    assert found[1].odd == ("paddle",)


# --- fatal outcomes and status --------------------------------------------------------------


def test_crash_hang_resource() -> None:
    found = compare(
        outcomes(
            ok("numpy", f32(1)),
            status("torch", "crash", signal="SIGSEGV"),
            status("paddle", "crash", signal="SIGABRT"),
            status("jax", "hang"),
            status("mxnet", "resource"),
        )
    )
    assert kinds(found) == ["crash", "hang", "resource"]
    crash, hang, resource = found
    assert crash.odd == ("paddle", "torch") and crash.error == "SIGABRT"
    assert hang.odd == ("jax",) and hang.error == ""
    assert resource.odd == ("mxnet",) and resource.error == ""


def test_crash_without_a_signal_names_the_exit_code() -> None:
    found = compare(outcomes(ok("numpy", f32(1)), status("torch", "crash", exit_code=134)))
    assert found[0].error == "exit 134"


def test_status_minority_raised() -> None:
    found = compare(
        outcomes(
            ok("numpy", f32(1)),
            raised("torch", "RuntimeError", "boom at 0x7f00\nsecond line"),
            ok("jax", f32(1)),
        )
    )
    d = only(found, "status")
    assert d.odd == ("torch",)
    assert d.error == "RuntimeError: boom at 0x7f00"


def test_status_minority_returned() -> None:
    found = compare(outcomes(ok("numpy", f32(1)), raised("torch"), raised("jax")))
    d = only(found, "status")
    assert d.odd == ("numpy",)
    assert d.error == ""


def test_status_tie_makes_the_raising_side_odd() -> None:
    found = compare(
        outcomes(ok("numpy", f32(1)), raised("torch", "TypeError", "no"), ok("jax", f32(1)))
        | outcomes(raised("paddle", "ValueError", "nope"))
    )
    d = only(found, "status")
    assert d.odd == ("paddle", "torch")
    assert d.error == "ValueError: nope"  # the first odd library (sorted) that raised


def test_status_then_the_returned_ones_are_compared() -> None:
    found = compare(
        outcomes(ok("numpy", f32(1)), raised("torch"), ok("jax", f32(2)), ok("paddle", f32(1)))
    )
    assert kinds(found) == ["status", "value"]
    assert found[1].odd == ("jax",)


def test_error_text_skips_traceback_boilerplate() -> None:
    message = 'Traceback (most recent call last):\n  File "x.h", line 4\nCheck failed: a < b'
    found = compare(outcomes(ok("numpy", f32(1)), raised("mxnet", "MXNetError", message)))
    assert found[0].error == "MXNetError: Check failed: a < b"


def test_not_comparable_outcomes_are_ignored() -> None:
    found = compare(
        outcomes(
            ok("numpy", f32(1)),
            status("torch", "unsupported"),
            status("jax", "unknown-api"),
            status("paddle", "bad-request"),
            ok("mxnet", f32(1)),
        )
    )
    assert found == []
    assert compare(outcomes(ok("numpy", f32(1)), status("torch", "unsupported"))) == []


def test_all_raise_is_no_discrepancy() -> None:
    assert compare(outcomes(raised("numpy"), raised("torch", "TypeError"))) == []


# --- naming the odd libraries ---------------------------------------------------------------


def test_two_against_two_without_reference_keeps_the_first_class() -> None:
    found = compare(values(numpy=f32(1), torch=f32(1), jax=f32(2), paddle=f32(2)))
    d = only(found, "value")
    assert d.odd == ("jax", "paddle")
    assert "tie" in d.detail


def test_two_against_two_with_a_reference_breaking_the_tie() -> None:
    cases = values(numpy=f32(1), torch=f32(1), jax=f32(2), paddle=f32(2))
    reference = ok("numpy", np.array([2.0], dtype=np.float64))
    d = only(compare(cases, reference=reference), "value")
    assert d.odd == ("numpy", "torch")
    assert "reference" in d.detail


def test_reference_within_the_case_dtype_tolerance_breaks_the_tie() -> None:
    cases = values(numpy=f32(1), torch=f32(1), jax=f32(2), paddle=f32(2))
    reference = ok("numpy", np.array([2.00001], dtype=np.float64))  # float32-close to 2
    assert compare(cases, reference=reference)[0].odd == ("numpy", "torch")


def test_reference_breaks_nan_and_shape_ties() -> None:
    cases = values(numpy=f32(np.nan), torch=f32(np.nan), jax=f32(0), paddle=f32(0))
    reference = ok("numpy", np.array([0.0]))
    assert compare(cases, reference=reference)[0].odd == ("numpy", "torch")
    cases = values(numpy=f32(1), torch=f32(1), jax=f32(1, 1), paddle=f32(1, 1))
    reference = ok("numpy", np.array([1.0, 1.0]))
    assert compare(cases, reference=reference)[0].odd == ("numpy", "torch")


def test_a_failed_or_misshapen_reference_cannot_break_ties() -> None:
    cases = values(numpy=f32(1), torch=f32(1), jax=f32(2), paddle=f32(2))
    for reference in (raised("numpy"), ok("numpy", np.array([2.0, 2.0]))):
        assert compare(cases, reference=reference)[0].odd == ("jax", "paddle")


def test_several_odd_classes() -> None:
    found = compare(values(numpy=f32(1), torch=f32(1), jax=f32(1), paddle=f32(2), mxnet=f32(3)))
    d = only(found, "value")
    assert d.odd == ("mxnet", "paddle")
    assert "also odd: mxnet" in d.detail


def test_non_transitive_agreement_names_one_odd_library() -> None:
    # b and c are each within tolerance of a, not of each other.
    found = compare(values(a=f32(1.0), b=f32(1.0 + 9e-5), c=f32(1.0 - 9e-5)))
    d = only(found, "value")
    assert d.odd == ("c",)
    assert "c differs from a, b" in d.detail


def test_details_are_one_line() -> None:
    found = compare(values(numpy=Opaque("t", "a\nb"), torch=Opaque("t", "c\nd")))
    assert all("\n" not in d.detail for d in found)


# --- divergence -----------------------------------------------------------------------------


def test_divergence_levels() -> None:
    x = f32(1, 2)
    assert divergence(outcomes(ok("numpy", x), status("torch", "crash", signal="SIGSEGV"))) == 1
    assert divergence(outcomes(ok("numpy", x), status("torch", "hang"))) == 1
    assert divergence(outcomes(ok("numpy", x), raised("torch"))) == pytest.approx(0.8)
    assert divergence(values(numpy=x, torch=f32(1, 2, 3))) == pytest.approx(0.7)
    assert divergence(values(numpy=x, torch=x.astype(np.float64))) == pytest.approx(0.4)
    assert divergence(values(numpy=x, torch=x.copy())) == 0
    assert divergence(outcomes(ok("numpy", x), status("torch", "unsupported"))) == 0
    assert divergence(outcomes(raised("numpy"), raised("torch"))) == 0


def test_divergence_grows_with_the_spread() -> None:
    base = f32(1.0, 2.0)
    scores = [divergence(values(numpy=base, torch=base + f32(d, 0))) for d in (1e-6, 1e-3, 1.0)]
    assert 0 < scores[0] < scores[1] < scores[2] < 0.6
    masks = divergence(values(numpy=base, torch=f32(np.nan, 2.0)))
    assert 0.45 <= masks <= 0.6


# --- properties -----------------------------------------------------------------------------

FLOAT_DTYPES = st.sampled_from([np.float16, np.float32, np.float64, np.complex64])
SPECIALS = [0.0, -0.0, 1.0, 1.00001, 1.0001, 1.001, 2.0, np.nan, np.inf, -np.inf]


@st.composite
def arrays(draw: st.DrawFn, dtype: Any = None) -> np.ndarray:
    dtype = dtype or draw(FLOAT_DTYPES)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4))
    return draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(np.dtype(dtype))))


def with_other_nan_payload(x: np.ndarray) -> np.ndarray:
    """The same numbers, with every NaN given a different bit pattern."""
    if x.dtype != np.float32:
        return x.copy()
    bits = x.view(np.uint32).copy()
    bits[np.isnan(x)] = 0x7FC00001
    return bits.view(np.float32)


@settings(max_examples=200, deadline=None)
@given(arrays())
def test_compare_of_equal_outputs_is_empty(x: np.ndarray) -> None:
    found = compare(values(numpy=x, torch=with_other_nan_payload(x), jax=x.copy()))
    assert found == []
    assert divergence(values(numpy=x, torch=x.copy())) == 0.0


@settings(max_examples=200, deadline=None)
@given(arrays())
def test_widening_is_only_a_dtype_difference(x: np.ndarray) -> None:
    wide = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    expected = [] if wide.dtype == x.dtype else ["dtype"]
    assert kinds(compare(values(numpy=x, torch=wide, jax=x.copy()))) == expected


@st.composite
def case_values(draw: st.DrawFn) -> list[np.ndarray]:
    size = draw(st.integers(1, 3))
    libs = draw(st.integers(2, 4))
    out = []
    for _ in range(libs):
        dtype = draw(st.sampled_from([np.float16, np.float32, np.float64, np.int32]))
        picks = draw(st.lists(st.sampled_from(SPECIALS), min_size=size, max_size=size))
        with np.errstate(invalid="ignore", over="ignore"):
            arr = np.array(picks, dtype=np.float64)
            if np.dtype(dtype).kind == "i":
                arr = np.nan_to_num(arr, nan=0, posinf=7, neginf=-7)
            out.append(arr.astype(dtype))
    return out


@settings(max_examples=400, deadline=None)
@given(case_values(), st.data())
def test_kinds_do_not_depend_on_which_library_returned_what(
    arrays_: list[np.ndarray], data: st.DataObject
) -> None:
    names = ["numpy", "torch", "jax", "paddle"][: len(arrays_)]
    i, j = data.draw(st.permutations(range(len(names))))[:2]
    swapped = list(arrays_)
    swapped[i], swapped[j] = swapped[j], swapped[i]
    before = compare({n: ok(n, a) for n, a in zip(names, arrays_, strict=True)})
    after = compare({n: ok(n, a) for n, a in zip(names, swapped, strict=True)})
    assert set(kinds(before)) == set(kinds(after))
    for found in (before, after):
        assert all(d.kind in DISCREPANCY_KINDS and d.odd for d in found)
        assert len(set(kinds(found))) == len(found)  # one per kind at most


@settings(max_examples=400, deadline=None)
@given(case_values())
def test_divergence_is_a_bounded_score_consistent_with_compare(arrays_: list[np.ndarray]) -> None:
    names = ["numpy", "torch", "jax", "paddle"][: len(arrays_)]
    cases = {n: ok(n, a) for n, a in zip(names, arrays_, strict=True)}
    score = divergence(cases)
    assert 0.0 <= score <= 1.0
    assert score == divergence(cases)  # deterministic
    if compare(cases):
        assert score > 0.0


DTYPE_NAMES = st.sampled_from(sorted(TOLERANCE))


@given(st.lists(DTYPE_NAMES, max_size=5))
def test_tolerance_is_the_max_over_dtypes(names: list[str]) -> None:
    rtol, atol = tolerance(*names)
    assert rtol == max((TOLERANCE[n][0] for n in names), default=0.0)
    assert atol == max((TOLERANCE[n][1] for n in names), default=0.0)
    assert tolerance(*reversed(names)) == (rtol, atol)


def test_tolerance_table() -> None:
    exact = ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
    assert all(TOLERANCE[n] == (0.0, 0.0) for n in exact)
    order = ["float64", "float32", "float16", "bfloat16"]
    assert [TOLERANCE[n] for n in order] == sorted(TOLERANCE[n] for n in order)
    assert TOLERANCE["complex64"] == TOLERANCE["float32"]
    assert TOLERANCE["complex128"] == TOLERANCE["float64"]
    assert tolerance("float32", "float64") == TOLERANCE["float32"]
    with pytest.raises(KeyError, match="known dtypes"):
        tolerance("float8")
