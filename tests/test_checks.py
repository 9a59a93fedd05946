"""The named checks of the operation traits (xamt/oracle/checks.py): one test per check, named
``test_<registry>_<check name with underscores>`` (tests/test_ops.py holds every check to it)."""

from __future__ import annotations

from typing import Any

import numpy as np

from xamt.oracle.checks import CONDITIONS, DOMAINS, EQUATES, POSITIONS, View

F32 = np.float32
I32 = np.int32


def view(values: dict[str, Any], **kw: Any) -> View:
    arrays = tuple(v for v in values.values() if isinstance(v, np.ndarray))
    return View(values=values, arrays=kw.pop("arrays", arrays), **kw)


def test_condition_always() -> None:
    assert CONDITIONS["always"](view({}), "")


def test_condition_nonfinite_input() -> None:
    holds = CONDITIONS["nonfinite-input"]
    assert holds(view({"x": np.array([1.0, np.inf], F32)}), "")
    assert holds(view({"x": np.array([complex(1, np.nan)], np.complex64)}), "")
    assert not holds(view({"x": np.array([1.0, -0.0], F32)}), "")
    assert not holds(view({"x": np.array([1, 2], I32)}), "")


def test_condition_dtype_limit_input() -> None:
    holds = CONDITIONS["dtype-limit-input"]
    assert holds(view({}, dtype="float32", tags=frozenset({"dtype-max"})), "")
    assert not holds(view({}, dtype="int32", tags=frozenset({"dtype-max"})), "")
    assert not holds(view({}, dtype="float32", tags=frozenset({"nan"})), "")


def test_condition_ill_conditioned_matrix() -> None:
    """cond(A) * eps reaching the dtype's relative tolerance, or a matrix singular at the
    dtype's precision; only the first (matrix) input counts, and only finite floats."""
    holds = CONDITIONS["ill-conditioned-matrix"]
    singular = np.array([[1.0, 2.0], [2.0, 4.0]], F32)
    near = np.array([[1.0, 1.0], [1.0, 1.0 + 1e-5]], F32)  # cond about 4e5: 4e5 * 1.2e-7 > 1e-4
    good = np.array([[2.0, 1.0], [1.0, 3.0]], F32)
    assert holds(view({"x": singular}, dtype="float32"), "")
    assert holds(view({"x": near}, dtype="float32"), "")
    # in float64 the same matrix's error bound (4e5 * 2.2e-16) is well within float64's rtol
    assert not holds(view({"x": near.astype(np.float64)}, dtype="float64"), "")
    assert not holds(view({"x": good}, dtype="float32"), "")
    assert not holds(view({"x": good, "b": singular}, dtype="float32"), "")  # b: no matter
    batch = np.stack([good, singular])
    assert holds(view({"x": batch}, dtype="float32"), "")
    assert not holds(view({"x": np.array([[1.0, np.nan], [0.0, 1.0]], F32)}, dtype="float32"), "")
    assert not holds(view({"x": np.array([1.0, 0.0], F32)}, dtype="float32"), "")  # no matrix
    assert holds(view({"x": np.array([[1, 1], [1, 1]], np.complex64)}, dtype="complex64"), "")


def test_condition_complex_infinity_with_nan() -> None:
    holds = CONDITIONS["complex-infinity-with-nan"]
    c64 = np.complex64
    assert holds(view({"x": np.array([complex(np.inf, np.nan), 1], c64)}), "")
    assert holds(view({"x": np.array([complex(np.nan, -np.inf)], c64)}), "")
    assert not holds(view({"x": np.array([complex(np.inf, 0.0), complex(np.nan, 1)], c64)}), "")
    assert not holds(view({"x": np.array([np.inf, np.nan], F32)}), "")


def test_condition_int_overflow_input() -> None:
    holds = CONDITIONS["int-overflow-input"]
    assert holds(view({}, tags=frozenset({"int-overflow"})), "")
    assert not holds(view({}, tags=frozenset({"dtype-max"})), "")


def test_condition_integer_may_wrap() -> None:
    holds = CONDITIONS["integer-may-wrap"]
    big = np.array([2**62, 2**62, 6], np.int64)  # sums past int64, no value at the limit
    assert holds(view({"x": big}), "sum")
    assert not holds(view({"x": np.array([1, 2, 3], I32)}), "sum")
    assert holds(view({"x": np.array([2**16, 2**16], I32)}), "product")
    assert not holds(view({"x": np.array([2, 3], I32)}), "product")
    assert holds(
        view({"x1": np.array([2**16], I32), "x2": np.array([2**16], I32)}), "matrix-product"
    )
    span = np.array([-(2**31), 1], I32)  # INT_MIN and 1: the difference leaves int32
    assert holds(view({"x": span}), "difference")
    assert not holds(view({"x": np.array([-5, 5], I32)}), "difference")
    assert holds(view({"x": np.array([-(2**29), 2**29], I32), "n": 3}), "difference")
    assert not holds(view({"x": np.array([1.0, 2.0], F32)}), "sum")


def test_condition_low_precision_decimals() -> None:
    holds = CONDITIONS["low-precision-decimals"]
    assert holds(view({"decimals": 2}, dtype="bfloat16"), "")
    assert not holds(view({"decimals": 0}, dtype="float16"), "")
    assert not holds(view({"decimals": 2}, dtype="float32"), "")


def test_condition_complex_infinite_input() -> None:
    holds = CONDITIONS["complex-infinite-input"]
    x = np.array([complex(np.inf, 0.0)], np.complex64)
    assert holds(view({"x": x}, plain_op="exp2"), "")  # no complex table for exp2
    assert not holds(view({"x": x}, plain_op="exp"), "")  # Annex G's table fixes exp
    assert not holds(view({"x": x}, plain_op=""), "")  # not a plain elementwise call
    assert not holds(view({"x": np.array([1 + 1j], np.complex64)}, plain_op="exp2"), "")


def test_condition_infinite_parameter_array() -> None:
    """batch_norm with scale [-inf, 1]: a parameter array holds an infinity; an infinity in
    the data itself, or NaN in a parameter, is not this condition."""
    holds = CONDITIONS["infinite-parameter-array"]
    x = np.array([[1.0, 2.0]], F32)
    assert holds(view({"x": x, "scale": np.array([-np.inf, 1.0], F32)}, arrays=(x,)), "")
    assert not holds(view({"x": x, "scale": np.array([np.nan, 1.0], F32)}, arrays=(x,)), "")
    inf_x = np.array([[np.inf, 2.0]], F32)
    assert not holds(view({"x": inf_x, "scale": np.ones(2, F32), "eps": 1e-3}, arrays=(inf_x,)), "")


def test_condition_parameter_beyond_dtype() -> None:
    """celu(x_float16, alpha=1e30): the Python float parameter is infinite once cast to float16,
    finite in float32; an array input, a bool or a NaN parameter is no such parameter."""
    holds = CONDITIONS["parameter-beyond-dtype"]
    x = np.array([1.0, -2.0], np.float16)
    assert holds(view({"x": x, "alpha": 1e30}, dtype="float16"), "")
    assert holds(view({"x": x, "alpha": -(2**31)}, dtype="float16"), "")
    assert holds(view({"x": x, "alpha": 10**400}, dtype="float32"), "")
    assert not holds(view({"x": x, "alpha": 1e30}, dtype="float32"), "")
    assert not holds(view({"x": x, "alpha": 1e30}, dtype="float64"), "")
    assert not holds(view({"x": x, "alpha": float("nan")}, dtype="float16"), "")
    assert not holds(view({"x": x, "alpha": float("inf")}, dtype="float16"), "")
    assert not holds(view({"x": np.full(2, 1e30), "flag": True}, dtype="float16"), "")


def test_condition_nan_parameter() -> None:
    holds = CONDITIONS["nan-parameter"]
    assert holds(view({}, nan_parameter=True), "")
    assert not holds(view({}), "")


def test_domain_clip_bounds() -> None:
    outside = DOMAINS["clip-bounds"]
    x = np.array([1.0, 2.0], F32)
    assert outside(view({"x": x, "min": 3.0, "max": 1.0}))
    assert not outside(view({"x": x, "min": 1.0, "max": 3.0}))
    ints = np.array([1, 2], I32)
    assert outside(view({"x": ints, "min": np.array(0.5)}))  # a floating bound
    assert outside(view({"x": ints, "max": np.array(2**40)}))  # beyond int32
    assert not outside(view({"x": ints, "min": np.array(0), "max": np.array(5)}))


def test_domain_same_sign_ends() -> None:
    outside = DOMAINS["same-sign-ends"]
    assert outside(view({"start": -1.0, "stop": 10.0}))
    assert not outside(view({"start": 1.0, "stop": 10.0}))
    assert not outside(view({"start": -1.0, "stop": -10.0}))


def test_domain_positive_count() -> None:
    outside = DOMAINS["positive-count"]
    assert outside(view({"n": 0})) and outside(view({"n": -3}))
    assert not outside(view({"n": 4}))


def test_domain_degrees_of_freedom() -> None:
    outside = DOMAINS["degrees-of-freedom"]
    x = np.ones((2, 3), F32)
    assert outside(view({"x": x, "correction": 3, "axis": 1}))
    assert not outside(view({"x": x, "correction": 1, "axis": 1}))
    assert outside(view({"x": x, "correction": 6}))  # every axis: six terms
    assert not outside(view({"x": x, "correction": float("nan")}))
    assert not outside(view({"x": x, "correction": 1, "axis": 5}))  # for the libraries


def test_domain_probability_target() -> None:
    outside = DOMAINS["probability-target"]
    x = np.array([0.2, 0.8], F32)
    assert outside(view({"x": x, "target": np.array([-0.1, 1.1], F32)}))
    assert not outside(view({"x": x, "target": np.array([0.1, 0.9], F32)}))
    negative_log = {"x": x, "target": np.array([-0.1, -2.0], F32), "log_target": True}
    assert not outside(view(negative_log))
    assert not outside(view({"x": x, "target": np.array([np.nan, 0.5], F32)}))


def test_domain_ceil_mode_window() -> None:
    outside = DOMAINS["ceil-mode-window"]
    x = np.ones((1, 1, 5), F32)
    # kernel 2, stride 2 on 5: windows at 0, 2, 4 (the last starts inside): both conventions
    assert not outside(view({"x": x, "kernel_size": 2, "stride": 2}))
    # kernel 2, stride 3 on 5: ceil((5 - 2) / 3) = 1 more window, at 3: inside
    assert not outside(view({"x": x, "kernel_size": 2, "stride": 3}))
    # a stride above the kernel: kernel 1, stride 3 on 5: windows at 0 and 3, and rounded up
    # ceil(4 / 3) = 2 windows after the first, the last at 6: past the input
    assert outside(view({"x": x, "kernel_size": 1, "stride": 3}))
    # the group's own canonical values stand for roles the case does not hold
    assert outside(view({"x": x}, params={"kernel_size": 1, "stride": 3}))
    assert not outside(view({"x": x}, params={"kernel_size": 2, "stride": 2}))


def test_domain_transform_axes() -> None:
    outside = DOMAINS["transform-axes"]
    assert outside(view({"x": np.array(1.0, F32)}))
    assert not outside(view({"x": np.ones(3, F32)}))


def test_equates_zero_limit_at_infinity() -> None:
    where = EQUATES["zero-limit-at-infinity"]
    x = np.array([np.inf, 1.0, -np.inf, np.inf], F32)
    result = np.array([0.0, 0.0, -0.0, 1.0], F32)
    assert where(view({"x": x}, roles=("x",)), result).tolist() == [True, False, True, False]
    assert where(view({"x": x, "n": 1}, roles=("x", "n")), result) is None
    assert where(view({"x": x}, roles=("x",)), result[:2]) is None  # another shape


def test_positions_exact_integer_overflow() -> None:
    where = POSITIONS["exact-integer-overflow"]
    x1 = np.array([-(2**31), 12, -10], I32)
    x2 = np.array([0, 18, 2147483646], I32)
    assert where(view({"x1": x1, "x2": x2}), "gcd").tolist() == [True, False, False]
    assert where(view({"x1": x1, "x2": x2}), "lcm").tolist() == [False, False, True]
    assert where(view({"x1": x1.astype(F32), "x2": x2.astype(F32)}), "gcd") is None
    assert where(view({"x1": x1, "x2": x2}), "no-such-function") is None


def test_positions_tied_sort_keys() -> None:
    where = POSITIONS["tied-sort-keys"]
    # sorted keys: -3.4e38 (twice), -0.99, 0.13, 0.69: the first two indices may swap
    x = np.array([0.13, -3.4e38, 0.69, -0.99, -3.4e38], F32)
    assert where(view({"x": x}), "").tolist() == [True, True, False, False, False]
    assert where(view({"x": x, "descending": True}), "").tolist() == [
        False,
        False,
        False,
        True,
        True,
    ]
    rows = np.array([[1, 1, 0], [2, 0, 1]], I32)
    assert where(view({"x": rows, "axis": 1}), "").tolist() == [
        [False, True, True],
        [False, False, False],
    ]
    assert where(view({"x": rows, "axis": 0}), "").tolist() == [[False] * 3, [False] * 3]
    two_nans = np.array([np.nan, 1.0, np.nan], F32)
    assert where(view({"x": two_nans}), "").tolist() == [False, True, True]
    assert where(view({"x": x, "axis": 3}), "") is None  # no such axis: the libraries judge


def test_condition_not_componentwise() -> None:
    holds = CONDITIONS["not-componentwise"]
    assert not holds(view({}, plain_op="add"), "")  # componentwise in the standard
    assert not holds(view({}, plain_op="subtract"), "")  # as add, through its table
    assert holds(view({}, plain_op="exp"), "")
    assert holds(view({}, plain_op=""), "")
    assert not holds(view({}, componentwise=True), "")  # a sum or a difference


def test_condition_nan_input() -> None:
    holds = CONDITIONS["nan-input"]
    assert holds(view({}, tags=frozenset({"nan", "inf"})), "")
    assert not holds(view({}, tags=frozenset({"inf"})), "")


def test_condition_infinite_input() -> None:
    holds = CONDITIONS["infinite-input"]
    assert holds(view({}, tags=frozenset({"neg-inf"})), "")
    assert not holds(view({}, tags=frozenset({"nan"})), "")


def test_condition_complex_infinite_any() -> None:
    holds = CONDITIONS["complex-infinite-any"]
    assert holds(view({"x": np.array([complex(1, np.inf)], np.complex64)}), "")
    assert not holds(view({"x": np.array([complex(1, np.nan)], np.complex64)}), "")
    assert not holds(view({"x": np.array([np.inf], F32)}), "")
    # multi_dot's matrices come as one sequence (no array role)
    chain = [np.array([[1, 2]], np.complex64), np.array([[complex(-np.inf, 1)]], np.complex64)]
    assert holds(view({"xs": chain}, arrays=()), "")
    assert not holds(view({"xs": chain[:1]}, arrays=()), "")
