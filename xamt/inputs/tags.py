"""``input_classes``: tags computed from a concrete case, from a documented vocabulary.

=====================  ===============================================================
tag                    the case holds...
=====================  ===============================================================
nan                    a NaN in an input array (real or imaginary part)
inf / neg-inf          +inf / -inf in an input array
neg-zero               -0.0 in a float input array
subnormal              a nonzero value smaller than the dtype's smallest normal
zero                   a zero in an input array
dtype-max / dtype-min  the largest / most negative finite value of the dtype
int-overflow           an integer at its dtype's max or min (arithmetic can wrap)
zero-divisor           a zero in the second array of a two-array case
empty                  an array with a zero-length dimension
scalar                 a 0-d array
size-one               an array of size one with at least one dimension
high-rank              an array of rank 4 or more
broadcast              arrays of different shapes
out-of-range-axis      an axis outside [-ndim, ndim)
negative-axis          a negative axis
tuple-axis             several axes
keepdims               keepdims given as True
out-of-range-index     an index array with values outside the first dimension
param-boundary         a scalar parameter at a boundary (0, -1, nan, huge) instead of its
                       canonical value
kernel-beyond-input    (deep-learning core) a kernel or pooling window larger than the input
                       in a spatial dimension
param-default          an optional parameter (axis, keepdims) omitted
=====================  ===============================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np

from xamt.catalog.dlcore import is_dl
from xamt.catalog.model import Group
from xamt.catalog.normalize import canonical_param
from xamt.inputs.draw import array_roles, common_optional
from xamt.types import Case
from xamt.workers.protocol import BFloat16

TAGS = (
    "nan",
    "inf",
    "neg-inf",
    "neg-zero",
    "subnormal",
    "zero",
    "dtype-max",
    "dtype-min",
    "int-overflow",
    "zero-divisor",
    "empty",
    "scalar",
    "size-one",
    "high-rank",
    "broadcast",
    "out-of-range-axis",
    "negative-axis",
    "tuple-axis",
    "keepdims",
    "out-of-range-index",
    "param-boundary",
    "param-default",
    "kernel-beyond-input",
)


def _arrays(case: Case, group: Group) -> list[np.ndarray]:
    out = []
    for role in array_roles(group):
        value = case.values.get(role)
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, BFloat16):
                out.append(v.values)
            elif isinstance(v, np.ndarray):
                out.append(v)
    return out


def _kernel_beyond_input(case: Case) -> bool:
    """A convolution kernel or a pooling window wider than the input in some spatial
    dimension (with no padding to make up for it)."""
    x = case.values.get("x")
    x = x.values if isinstance(x, BFloat16) else x
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        return False
    spatial = x.shape[2:]
    padding = case.values.get("padding", 0)
    pad = padding if isinstance(padding, int) and padding > 0 else 0
    kernel = case.values.get("kernel")
    kernel = kernel.values if isinstance(kernel, BFloat16) else kernel
    if isinstance(kernel, np.ndarray) and kernel.ndim == x.ndim:
        if any(k > s + 2 * pad for k, s in zip(kernel.shape[2:], spatial, strict=True)):
            return True
    window = case.values.get("kernel_size")
    return isinstance(window, int) and window > min(spatial) + 2 * pad


# Operations whose axis defaults to the last one (numpy and the array API standard).
LAST_AXIS_DEFAULT = frozenset({"sort", "argsort"})


def input_classes(case: Case, group: Group) -> list[str]:
    """The tags of ``case`` (sorted in vocabulary order)."""
    tags: set[str] = set()
    arrays = _arrays(case, group)
    # the deep-learning core's arrays differ in shape by design (x, kernel, statistics), and
    # a kernel holding a zero divides nothing
    dl = is_dl(group.shapes)
    if dl and _kernel_beyond_input(case):
        tags.add("kernel-beyond-input")
    for i, arr in enumerate(arrays):
        tags |= _value_tags(arr, case.dtype)
        if arr.ndim == 0:
            tags.add("scalar")
        elif arr.size == 0:
            tags.add("empty")
        elif arr.size == 1:
            tags.add("size-one")
        if arr.ndim >= 4:
            tags.add("high-rank")
        if i == 1 and arr.size and np.any(arr == 0) and not dl:
            tags.add("zero-divisor")
    if len({a.shape for a in arrays}) > 1 and not dl:
        tags.add("broadcast")
    ndim = arrays[0].ndim if arrays else 0
    axis = case.values.get("axis")
    if axis is not None:
        axes = axis if isinstance(axis, tuple) else (axis,)
        if len(axes) > 1:
            tags.add("tuple-axis")
        # a 0-d array has no axis at all (some libraries read it as 1-d, the standard does not)
        if any(isinstance(a, int) and (a >= ndim or a < -ndim) for a in axes):
            tags.add("out-of-range-axis")
        if any(isinstance(a, int) and a < 0 for a in axes):
            tags.add("negative-axis")
    elif group.op in LAST_AXIS_DEFAULT and arrays and ndim == 0:
        # the default axis -1 of a 0-d array does not exist: numpy.sort raises AxisError
        # where numpy.argsort reads the array as 1-d
        tags.add("out-of-range-axis")
    optional = common_optional(group)
    if ("axis" in optional and "axis" not in group.roles and "axis" not in case.values) or (
        "keepdims" in optional and "keepdims" not in case.values
    ):
        tags.add("param-default")
    if case.values.get("keepdims") is True:
        tags.add("keepdims")
    for role in group.roles:
        if role in array_roles(group) or role in ("axis", "keepdims") or role not in case.values:
            continue
        value = case.values[role]
        canonical = canonical_param(group, role, bool(arrays))
        if isinstance(value, np.ndarray):
            if arrays and arrays[0].ndim and np.any((value >= arrays[0].shape[0]) | (value < 0)):
                tags.add("out-of-range-index")
        elif not _same(value, canonical):
            tags.add("param-boundary")
    return [t for t in TAGS if t in tags]


def _same(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) or (a != a and b != b)  # nan == nan here
    except (TypeError, ValueError):
        return False


def _value_tags(arr: np.ndarray, dtype: str) -> set[str]:
    tags: set[str] = set()
    if arr.size == 0:
        return tags
    kind = arr.dtype.kind
    if kind == "b":
        return tags
    if kind in "iu":
        info = np.iinfo(arr.dtype)
        if np.any(arr == 0):
            tags.add("zero")
        if np.any(arr == info.max):
            tags |= {"dtype-max", "int-overflow"}
        if info.min < 0 and np.any(arr == info.min):
            tags |= {"dtype-min", "int-overflow"}
        return tags
    parts = [arr.real, arr.imag] if kind == "c" else [arr]
    for part in parts:
        if np.any(np.isnan(part)):
            tags.add("nan")
        if np.any(part == np.inf):
            tags.add("inf")
        if np.any(part == -np.inf):
            tags.add("neg-inf")
        zeros = part == 0
        if np.any(zeros):
            tags.add("zero")
            if np.any(np.signbit(part) & zeros):
                tags.add("neg-zero")
        finite = part[np.isfinite(part)]
        if finite.size:
            if dtype == "bfloat16":
                tiny, big = 2.0**-126, 3.3895313892515355e38
            else:
                fi = np.finfo(part.dtype)
                tiny, big = float(fi.tiny), float(fi.max)
            mag = np.abs(finite.astype(np.float64))
            if np.any((mag > 0) & (mag < tiny)):
                tags.add("subnormal")
            if np.any(finite.astype(np.float64) >= big):
                tags.add("dtype-max")
            if np.any(finite.astype(np.float64) <= -big):
                tags.add("dtype-min")
    return tags
