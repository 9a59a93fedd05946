"""Named checks the operation traits (``xamt/catalog/data/ops.toml``) refer to.

Three registries, each of small functions of one case's :class:`View`:

- :data:`CONDITIONS`: when a trait's ``opens`` applies (non-finite input, values at the
  dtype's limits, integers that may wrap...);
- :data:`DOMAINS`: whether a case lies outside an operation's domain (a probability target
  holding a negative value, a variance without degrees of freedom...): such a case is no case;
- :data:`POSITIONS`: the result positions no answer can be held to (an exact integer beyond
  the result dtype);
- :data:`EQUATES`: the positions of one result where a second answer stands beside the first
  (a limit beside its IEEE evaluation).

A check names no operation: what it applies to is the traits file's business. Each one has a
unit test (tests/test_checks.py) and, where the corpus holds one, a labelled case.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from xamt import formulas
from xamt.oracle import special
from xamt.tolerance import TOLERANCE

FLOATING_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


@dataclass(frozen=True, kw_only=True)
class View:
    """What the checks read of one case: its values by role, the group's roles, the case's
    dtype and input-class tags, its array inputs in role order, and the elementwise
    operation whose standard special cases apply to it ("" where none do)."""

    values: Mapping[str, Any]
    roles: tuple[str, ...] = ()
    dtype: str = ""
    tags: frozenset[str] = frozenset()
    arrays: tuple[np.ndarray, ...] = ()
    plain_op: str = ""
    params: Mapping[str, Any] = field(default_factory=dict)  # the group's own canonical values
    nan_parameter: bool = False  # a scalar parameter is NaN
    componentwise: bool = False  # complex results are sums or differences part by part


Condition = Callable[[View, str], bool]  # (view, the trait's bound) -> holds


def _always(view: View, bound: str) -> bool:
    return True


def _nonfinite_input(view: View, bound: str) -> bool:
    """A floating or complex array input holds NaN or an infinity."""
    return any(a.dtype.kind in "fc" and not np.isfinite(a).all() for a in view.arrays)


def _infinite_input(view: View, bound: str) -> bool:
    """A floating or complex array input holds an infinity."""
    return bool({"inf", "neg-inf"} & view.tags)


def _nan_input(view: View, bound: str) -> bool:
    """A floating or complex array input holds NaN."""
    return "nan" in view.tags


def _dtype_limit_input(view: View, bound: str) -> bool:
    """A floating input holds its dtype's largest finite magnitude."""
    return view.dtype in FLOATING_DTYPES and bool({"dtype-max", "dtype-min"} & view.tags)


def _int_overflow_input(view: View, bound: str) -> bool:
    """An integer input sits at its dtype's limits (the ``int-overflow`` tag)."""
    return "int-overflow" in view.tags


def _integer_may_wrap(view: View, bound: str) -> bool:
    """Integer inputs whose aggregate (``bound``) may leave their dtype though no value sits
    at its limits: [2**63 - 2, 6, 2**63 - 2] sums to 2**64 + 2 in int64; differences of
    order ``n`` of values spanning more than the range."""
    ints = [a for a in view.arrays if a.dtype.kind in "iu" and a.size]
    if not ints:
        return False
    if bound != "difference" and _int_overflow_input(view, bound):
        return True
    limit = max(int(np.iinfo(a.dtype).max) for a in ints)
    if bound == "difference":
        order = view.values.get("n")
        times = 2 ** (min(order, 64) - 1) if isinstance(order, int) and order > 1 else 1
        return any((int(a.max()) - int(a.min())) * times > limit for a in ints)
    n = max(a.size for a in ints)
    largest = [max(abs(int(a.max())), abs(int(a.min()))) for a in ints]
    if bound == "product":
        m = max(largest)
        return m > 1 and n * math.log2(m) >= math.log2(limit)
    if bound == "matrix-product":
        return n * math.prod(largest) > limit
    return n * max(largest) > limit  # a sum


def _low_precision_decimals(view: View, bound: str) -> bool:
    """A 16-bit float input rounded to a number of decimals other than 0."""
    decimals = view.values.get("decimals")
    return view.dtype in ("float16", "bfloat16") and decimals not in (None, 0)


def _complex_infinite_input(view: View, bound: str) -> bool:
    """A plain elementwise function without complex special cases in the standard's tables
    (C99 Annex G) given a complex infinity."""
    return (
        bool(view.plain_op)
        and view.plain_op not in special.COMPLEX
        and view.plain_op not in special.COMPLEX_VIA
        and any(a.dtype.kind == "c" and np.isinf(a).any() for a in view.arrays)
    )


def _not_componentwise(view: View, bound: str) -> bool:
    """Neither an operation computed part by part on complex input (sums, differences: the
    group's "componentwise" trait) nor a plain elementwise function the standard defines
    componentwise (add, and what it reaches through its tables: subtract, round)."""
    if view.componentwise:
        return False
    op = view.plain_op
    seen: set[str] = set()
    while op in special.COMPLEX_VIA and op not in seen:
        seen.add(op)
        via = special.COMPLEX_VIA[op]
        if via.componentwise:
            return False
        op = via.base
    return True


def _nan_parameter(view: View, bound: str) -> bool:
    """A scalar parameter is NaN (``clip(x, max=nan)``)."""
    return view.nan_parameter


def _complex_infinite_any(view: View, bound: str) -> bool:
    """A complex array input, or one of a sequence of them (multi_dot's matrices), holds an
    infinite part (whatever the operation)."""
    sequences = (v for v in view.values.values() if isinstance(v, (list, tuple)))
    arrays = [*view.arrays, *(a for s in sequences for a in s if isinstance(a, np.ndarray))]
    return any(
        a.dtype.kind == "c" and (np.isinf(a.real).any() or np.isinf(a.imag).any()) for a in arrays
    )


def _ill_conditioned_matrix(view: View, bound: str) -> bool:
    """A finite floating matrix input (or one matrix of a batch) whose condition number times
    its dtype's epsilon reaches the comparison's relative tolerance: an inverse, solve or
    pseudo-inverse computed in that dtype carries a relative error of about cond * eps
    (backward-stable algorithms), more than two correct libraries are held to; a matrix
    singular at the dtype's precision (smallest singular value below max(M, N) * eps of the
    largest, the libraries' documented pseudo-inverse cutoff) among them."""
    for a in view.arrays[:1]:  # the matrix (a right-hand side's condition is no matter)
        if a.ndim < 2 or a.dtype.kind not in "fc" or not a.size or not np.isfinite(a).all():
            continue
        # (16-bit floats arrive widened to float32: their epsilon is the case dtype's)
        eps = special.epsilon(view.dtype if view.dtype in ("float16", "bfloat16") else a.dtype)
        rtol = TOLERANCE.get(view.dtype, TOLERANCE["float64"])[0]
        wide = a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)
        try:
            s = np.linalg.svd(wide, compute_uv=False)
        except np.linalg.LinAlgError:
            return True  # (no convergence: nothing about this matrix is well-conditioned)
        largest, smallest = s.max(axis=-1), s.min(axis=-1)
        cutoff = max(a.shape[-2:]) * eps * largest
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            condition = np.where(smallest > 0, largest / smallest, np.inf)
        if np.any((smallest <= cutoff) | (condition * eps >= rtol)):
            return True
    return False


def _complex_infinity_with_nan(view: View, bound: str) -> bool:
    """A complex array input holds an element with one part infinite and the other NaN (its
    modulus is +inf by C99's cabs, NaN as a sum of squared parts)."""
    return any(
        a.dtype.kind == "c"
        and bool(
            np.any((np.isinf(a.real) & np.isnan(a.imag)) | (np.isnan(a.real) & np.isinf(a.imag)))
        )
        for a in view.arrays
    )


def _infinite_parameter_array(view: View, bound: str) -> bool:
    """An array input besides the data (a normalization's scale, offset or running statistic,
    a convolution's kernel or bias) holds an infinity."""
    data = {id(a) for a in view.arrays}
    others = (getattr(v, "values", v) for v in view.values.values() if id(v) not in data)
    return any(
        isinstance(a, np.ndarray) and a.dtype.kind in "fc" and bool(np.isinf(a).any())
        for a in others
    )


# the largest finite value of each floating dtype a scalar parameter may be cast to
_LARGEST = {
    "float16": float(np.finfo(np.float16).max),
    "bfloat16": 3.3895313892515355e38,  # (2 - 2**-7) * 2**127; numpy has no bfloat16
    "float32": float(np.finfo(np.float32).max),
}


def _parameter_beyond_dtype(view: View, bound: str) -> bool:
    """A finite scalar parameter (a Python number, not an array) whose magnitude exceeds the
    largest finite value of the case's floating dtype: cast to that dtype it is infinite."""
    largest = _LARGEST.get(view.dtype)
    if largest is None:
        return False
    numbers = (
        v
        for v in view.values.values()
        if (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v))
    )
    return any(abs(v) > largest for v in numbers)


CONDITIONS: dict[str, Condition] = {
    "complex-infinity-with-nan": _complex_infinity_with_nan,
    "parameter-beyond-dtype": _parameter_beyond_dtype,
    "infinite-parameter-array": _infinite_parameter_array,
    "ill-conditioned-matrix": _ill_conditioned_matrix,
    "nan-parameter": _nan_parameter,
    "not-componentwise": _not_componentwise,
    "always": _always,
    "nonfinite-input": _nonfinite_input,
    "nan-input": _nan_input,
    "infinite-input": _infinite_input,
    "dtype-limit-input": _dtype_limit_input,
    "int-overflow-input": _int_overflow_input,
    "integer-may-wrap": _integer_may_wrap,
    "low-precision-decimals": _low_precision_decimals,
    "complex-infinite-input": _complex_infinite_input,
    "complex-infinite-any": _complex_infinite_any,
}


def _clip_bounds(view: View) -> bool:
    """A bound above the other, a floating bound for integer input, or an integer bound
    outside the input dtype's range: the standard leaves clip unspecified there."""
    low, high = view.values.get("min"), view.values.get("max")
    try:
        if low is not None and high is not None and bool(np.any(np.asarray(low) > high)):
            return True
    except (TypeError, ValueError):
        pass  # (shapes that do not broadcast: the libraries judge that)
    x = view.values.get("x")
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "iu":
        return False
    info = np.iinfo(x.dtype)
    for bound in (np.asarray(b) for b in (low, high) if b is not None):
        if bound.dtype.kind not in "iub":
            return True
        if bound.size and (int(bound.max()) > info.max or int(bound.min()) < info.min):
            return True
    return False


def _same_sign_ends(view: View) -> bool:
    """A geometric sequence between ends of opposite signs (no real terms)."""
    start, stop = view.values.get("start"), view.values.get("stop")
    if isinstance(start, int | float) and isinstance(stop, int | float):
        return start * stop < 0
    return False


def _positive_count(view: View) -> bool:
    """A sample count ``n`` below one."""
    n = view.values.get("n")
    return isinstance(n, int | np.integer) and int(n) <= 0


def _degrees_of_freedom(view: View) -> bool:
    """A variance's correction that leaves no degrees of freedom in some reduction."""
    x, correction = view.values.get("x"), view.values.get("correction")
    if not isinstance(x, np.ndarray) or not isinstance(correction, int | float | np.number):
        return False
    if not math.isfinite(float(correction)):
        return False  # (a NaN or infinite correction: the libraries judge that)
    axis = view.values.get("axis")
    try:
        axes = range(x.ndim) if axis is None else np.atleast_1d(axis).tolist()
        count = math.prod(x.shape[int(a)] for a in axes)
    except (IndexError, TypeError, ValueError):
        return False  # (an axis out of range: the libraries judge that)
    return count > 0 and count - correction <= 0


def _probability_target(view: View) -> bool:
    """A probability target (not a log target) holding a negative value."""
    if view.values.get("log_target") is True:
        return False
    target = view.values.get("target", view.arrays[1] if len(view.arrays) > 1 else None)
    if not isinstance(target, np.ndarray):
        return False
    with np.errstate(invalid="ignore"):  # a NaN target is no negative probability
        return bool(np.any(np.asarray(target) < 0))


def _ceil_mode_window(view: View) -> bool:
    """A last window that starts past the input in some spatial dimension (ceil((n - k) / s)
    windows after the first): torch drops it, the full convention keeps it."""
    x = view.values.get("x")
    k = view.values.get("kernel_size", view.params.get("kernel_size"))
    s = view.values.get("stride", view.params.get("stride"))
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        return False
    sizes = x.shape[2:]
    try:
        ks = [int(v) for v in np.broadcast_to(np.asarray(k), (len(sizes),))]
        ss = [int(v) for v in np.broadcast_to(np.asarray(s if s is not None else k), (len(sizes),))]
    except (TypeError, ValueError):
        return False
    for n, kk, st in zip(sizes, ks, ss, strict=True):
        if st > 0 and n >= kk and (-(-(n - kk) // st)) * st >= n:
            return True
    return False


def _transform_axes(view: View) -> bool:
    """A transform of a 0-d array: no axis to transform."""
    return bool(view.arrays) and view.arrays[0].ndim == 0


DOMAINS: dict[str, Callable[[View], bool]] = {
    "clip-bounds": _clip_bounds,
    "same-sign-ends": _same_sign_ends,
    "positive-count": _positive_count,
    "degrees-of-freedom": _degrees_of_freedom,
    "probability-target": _probability_target,
    "ceil-mode-window": _ceil_mode_window,
    "transform-axes": _transform_axes,
}


def _exact_integer_overflow(view: View, function: str) -> np.ndarray | None:
    """Where the exact ``function`` of two integer arrays leaves the integer result dtype."""
    exact = formulas.EXACT_INTEGER.get(function)
    arrays = view.arrays
    if exact is None or len(arrays) != 2 or any(a.dtype.kind not in "iu" for a in arrays):
        return None
    try:
        a, b = np.broadcast_arrays(*(x.astype(object) for x in arrays))
    except ValueError:
        return None  # (shapes that do not broadcast: the libraries judge that)
    info = np.iinfo(np.result_type(*arrays))
    values = np.frompyfunc(exact, 2, 1)(a, b)
    return np.asarray((values > info.max) | (values < info.min), bool).reshape(a.shape)


def _tied_sort_keys(view: View, function: str) -> np.ndarray | None:
    """Where an index result of sorting the data array (along ``axis``, the last by default;
    flattened for ``axis=None``) points at a key equal to a neighbouring key: which of the
    equal keys' indices comes first is the sort's (NaNs tie with NaNs)."""
    if not view.arrays or view.arrays[0].ndim == 0:
        return None
    x = view.arrays[0]
    axis = view.values.get("axis", -1)
    if axis is None:
        x, axis = x.ravel(), -1
    if not isinstance(axis, int) or isinstance(axis, bool) or not -x.ndim <= axis < x.ndim:
        return None
    keys = np.moveaxis(np.sort(x, axis=axis), axis, -1)
    same = keys[..., 1:] == keys[..., :-1]
    if x.dtype.kind in "fc":
        same |= np.isnan(keys[..., 1:]) & np.isnan(keys[..., :-1])
    tied = np.zeros(keys.shape, bool)
    tied[..., 1:] |= same
    tied[..., :-1] |= same
    if view.values.get("descending"):
        tied = tied[..., ::-1]
    return np.moveaxis(tied, -1, axis)


POSITIONS: dict[str, Callable[[View, str], np.ndarray | None]] = {
    "exact-integer-overflow": _exact_integer_overflow,
    "tied-sort-keys": _tied_sort_keys,
}


def _zero_limit_at_infinity(view: View, result: np.ndarray) -> np.ndarray | None:
    """Where a single real input is infinite and ``result`` is 0: the limit there, read as
    the NaN of the IEEE evaluation."""
    x = view.values.get("x")
    if set(view.roles) != {"x"} or not isinstance(x, np.ndarray) or x.dtype.kind != "f":
        return None
    if result.shape != x.shape or result.dtype.kind != "f":
        return None
    return np.isinf(x) & (result == 0)


# Positions of one library's result where a second answer stands beside the first: the
# rule gives the positions holding the second, which are read as NaN.
EQUATES: dict[str, Callable[[View, np.ndarray], np.ndarray | None]] = {
    "zero-limit-at-infinity": _zero_limit_at_infinity,
}
