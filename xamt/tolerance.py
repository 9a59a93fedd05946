"""The dtype-keyed ``(rtol, atol)`` table of the value oracle, and how tolerances combine.

Two outputs ``a`` and ``b`` agree at a position when ``|a - b| <= atol + rtol * max(|a|, |b|)``
(see :mod:`xamt.oracle.compare`). The numbers are meant for *cross-library* comparisons: two
libraries compute the same function with different algorithms (summation order, fused
multiply-add, vectorized transcendental approximations, internal upcasting), so the tables of a
single library's own test suite (torch's ``_DTYPE_PRECISIONS``, jax's ``default_tolerance``)
are a floor, not a target. ``atol`` guards the neighbourhood of zero, where a relative error is
meaningless (``1e-30`` against ``0.0`` is agreement in float32).

Note:
    Integers and bool are exact: any difference is a real difference (wraparound, a different
    rounding mode of an integer division, a promotion that changed the result).
"""

from __future__ import annotations

TOLERANCE: dict[str, tuple[float, float]] = {
    # Exact kinds: integer arithmetic has one right answer.
    "bool": (0.0, 0.0),
    "int8": (0.0, 0.0),
    "int16": (0.0, 0.0),
    "int32": (0.0, 0.0),
    "int64": (0.0, 0.0),
    "uint8": (0.0, 0.0),
    "uint16": (0.0, 0.0),
    "uint32": (0.0, 0.0),
    "uint64": (0.0, 0.0),
    # float16: eps is 9.8e-4. Libraries often compute in float32 and round once, others round
    # every intermediate; rtol 1e-2 is about 10 ulps. atol 1e-3 (one eps) covers results that
    # cancel to near zero, below which float16 has only subnormals (< 6.1e-5).
    "float16": (1e-2, 1e-3),
    # bfloat16: eps is 7.8e-3 (8 significand bits). rtol 1.6e-2 is two ulps, the torch value;
    # atol 1e-2 is a bit more than one eps at 1.0, for cancellation near zero.
    "bfloat16": (1.6e-2, 1e-2),
    # float32: eps is 1.2e-7. rtol 1e-4 (about 800 ulps) absorbs different transcendental
    # approximations (SLEEF, Eigen, XLA, MKL VML) and reductions summed in another order;
    # atol 1e-5 matches torch's float32 atol for results near zero.
    "float32": (1e-4, 1e-5),
    # float64: eps is 2.2e-16. rtol 1e-7 leaves room for algorithmic differences (about 4.5e8
    # ulps) but still flags a float64 op that secretly computes in float32 (error ~6e-8 relative
    # per op grows past 1e-7 quickly, and is 1e-7..1e-6 for transcendental functions).
    # atol 1e-9 for results that cancel to near zero.
    "float64": (1e-7, 1e-9),
    # Complex numbers are judged on the modulus of the difference, with their component's table.
    "complex64": (1e-4, 1e-5),
    "complex128": (1e-7, 1e-9),
}


def tolerance(*dtypes: str) -> tuple[float, float]:
    """Return the loosest ``(rtol, atol)`` over ``dtypes``: each the maximum over the table.

    Outputs of different dtypes (a promotion difference) are compared with the looser one.
    No dtypes gives ``(0.0, 0.0)``: exact.

    Raises:
        KeyError: a dtype name the table does not know, with the known names.
    """
    rtol = atol = 0.0
    for name in dtypes:
        try:
            r, a = TOLERANCE[name]
        except KeyError:
            raise KeyError(
                f"no tolerance for dtype {name!r}; known dtypes: {', '.join(TOLERANCE)}"
            ) from None
        rtol = max(rtol, r)
        atol = max(atol, a)
    return rtol, atol
