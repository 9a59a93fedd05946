"""Array values by value class and dtype (numpy only; bfloat16 as exact float32 values).

Value classes:

* ``ordinary``: what a user would pass: small normal floats, small integers, random bools.
* ``boundary``: ordinary values with special ones mixed in: 0, -0.0, ±1, the dtype's min and
  max, eps, the smallest subnormal, and values at and just beyond common domain edges
  (±1 ± eps for asin/acos/atanh, 0 for log and division).
* ``non-finite``: ordinary values with nan, inf and -inf mixed in (floats and complex; for
  integers and bool it falls back to ``boundary``).
"""

from __future__ import annotations

import numpy as np

from xamt.workers.protocol import BFloat16

BF16_MAX = float(np.float32(3.3895313892515355e38))
BF16_EPS = 2.0**-7
BF16_TINY = 2.0**-126
BF16_SUBNORMAL = 2.0**-133


def _np_dtype(dtype: str) -> np.dtype[np.generic]:
    return np.dtype("float32" if dtype == "bfloat16" else dtype)


def float_specials(dtype: str) -> np.ndarray:
    """Boundary values of a float dtype (finite ones only)."""
    if dtype == "bfloat16":
        mx, eps, tiny, sub = BF16_MAX, BF16_EPS, BF16_TINY, BF16_SUBNORMAL
    else:
        fi = np.finfo(np.dtype(dtype))
        mx, eps, tiny, sub = (
            float(fi.max),
            float(fi.eps),
            float(fi.tiny),
            float(fi.smallest_subnormal),
        )
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        mx,
        -mx,
        eps,
        -eps,
        tiny,
        sub,
        -sub,
        1.0 - eps,
        1.0 + eps,
        -1.0 + eps,
        -1.0 - eps,
        0.5,
        2.0,
    ]
    return np.array(values, dtype=np.float64)


def int_specials(dtype: str) -> np.ndarray:
    info = np.iinfo(np.dtype(dtype))
    values = {0, 1, int(info.max), int(info.min), int(info.max) - 1, int(info.min) + 1}
    if info.min < 0:
        values |= {-1, -2}
    return np.array(sorted(values), dtype=np.dtype(dtype))


NON_FINITE = np.array([np.nan, np.inf, -np.inf], dtype=np.float64)


def draw_array(
    rng: np.random.Generator, shape: tuple[int, ...], dtype: str, value_class: str
) -> np.ndarray | BFloat16:
    """An array of ``shape`` and ``dtype`` with values of ``value_class``."""
    kind = "f" if dtype == "bfloat16" else np.dtype(dtype).kind
    size = int(np.prod(shape, dtype=np.int64))
    if kind == "b":
        out: np.ndarray = rng.integers(0, 2, size).astype(bool)
    elif kind in "iu":
        lo = 0 if kind == "u" else -10
        out = rng.integers(lo, 11, size).astype(dtype)
        if value_class != "ordinary" and size:
            specials = int_specials(dtype)
            mask = rng.random(size) < 0.4
            out[mask] = rng.choice(specials, int(mask.sum()))
    else:
        real = rng.standard_normal(size) * rng.choice([1.0, 3.0])
        if value_class == "boundary" and size:
            specials = float_specials(dtype)
            mask = rng.random(size) < 0.5
            real[mask] = rng.choice(specials, int(mask.sum()))
        elif value_class == "non-finite" and size:
            mask = rng.random(size) < 0.35
            mask[rng.integers(0, size)] = True  # at least one
            real[mask] = rng.choice(NON_FINITE, int(mask.sum()))
        if kind == "c":
            imag = rng.standard_normal(size)
            if value_class == "non-finite" and size:
                m2 = rng.random(size) < 0.2
                imag[m2] = rng.choice(NON_FINITE, int(m2.sum()))
            out = np.empty(size, dtype=dtype)
            out.real, out.imag = real, imag
        else:
            with np.errstate(over="ignore"):
                out = real.astype(_np_dtype(dtype))
    out = out.reshape(shape)
    if dtype == "bfloat16":
        return BFloat16(round_to_bfloat16(out))
    return out


def round_to_bfloat16(values: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32."""
    f32 = np.asarray(values, dtype=np.float32)
    bits = f32.view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32).reshape(f32.shape)
    return np.where(np.isnan(f32), f32, out)
