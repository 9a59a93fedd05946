"""The special cases of the Python array API standard's elementwise functions, as a reference.

Encodes the "Special Cases" sections of the standard's elementwise functions
(https://data-apis.org/array-api/latest/API_specification/elementwise_functions.html; the rules
are the same in 2024.12, 2025.12 and the draft) for real floating-point inputs and, where the
standard lists them, complex inputs (which follow C99 Annex G). Where a rule fixes the result,
a library that returns something else departs from the standard: :func:`departs` finds those
positions, and the fuzzer blames such a library with confidence "reference".

Every operation is data: rows ``<conditions> -> <result>`` (separated by ``;`` or a new line)
in :data:`REAL` and :data:`COMPLEX`, or a :class:`Via` record over another operation's rows,
parsed once into :data:`RULES`. One function evaluates them all.

- Conditions are ``role predicate`` pairs joined by `` & ``. Roles: ``x`` (unary), ``x1`` and
  ``x2`` (binary); for complex inputs ``a``/``b``, the real/imaginary parts of ``x`` (or ``x1``),
  and ``c``/``d`` those of ``x2``. Predicates are the words of :data:`PREDICATES` (``+0``,
  ``±inf``, ``+fin`` for "a positive finite number", ``odd`` for "an odd integer value") or a
  comparison with another role (``=-x1``, ``!=c``).
- A result is one value, or ``real, imaginary`` for a complex result: ``nan``, a constant of
  :data:`CONSTANTS` with an optional sign (``+0``, ``-inf``, ``3pi/4``, ``True``), an input
  (``x1``, ``-|x1|``) or a value of :data:`DERIVED` (``sgn*inf``, ``inf*cos(b)``). A leading
  ``±`` marks a sign the standard leaves unspecified ("0 + 0j", "sign of the imaginary component
  is unspecified"): only the magnitude is checked. ``+nan``/``-nan`` fix a NaN's sign bit
  (copysign). ``?`` marks a row whose result the standard leaves open.

Note:
    Precedence: the standard's first-listed applicable rule wins. Rows are evaluated in order
    and each one claims the positions no earlier row claimed; a ``?`` row claims them without
    fixing a result, so no later row applies there either. A rule that joins cases with "or"
    is written as consecutive rows with the same result.

    Tolerance: a finite non-zero required value (pi/2, 1, an input) is met within
    ``4 * eps(output dtype) * |expected|``, which also covers "an implementation-dependent
    approximation to +π/2". Zeros, infinities and NaN are exact, with the signs of zeros and
    infinities, unless marked ``±``.

    Not encoded: rules that fix only the sign of an otherwise computed result ("the result has
    a positive mathematical sign"; where the magnitude is exact too, a zero or infinite factor
    of multiply, the sign is part of the row), the general "in the remaining cases"
    computations, results the standard calls implementation-defined or -dependent (complex
    multiply and divide beyond all-NaN operands, complex reciprocal), complex pow (only
    "should" follow exp(x2*log(x1))), and mixed real/complex binary inputs. ``negative`` and
    ``positive`` have no special cases. The standard's "1 + 0j" for tanh(+inf + yj) leaves
    the imaginary sign unchecked: C99 G.6.2.6, the source of these tables, has
    ``1 + 0·sin(2y) j``. Subnormal inputs are taken at face value: a library that flushes them
    to zero departs where a rule depends on them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np

Kind = Literal["real", "complex"]
Variables = Mapping[str, np.ndarray]

# --- vocabulary -----------------------------------------------------------------------------


def _integral(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (np.floor(x) == x)


def _odd(x: np.ndarray) -> np.ndarray:
    return _integral(x) & (np.fmod(x, 2.0) != 0)


def _half(x: np.ndarray) -> np.ndarray:
    return np.isfinite(x) & (x - np.floor(x) == 0.5)


def _nearest_even(x: np.ndarray) -> np.ndarray:
    low = np.floor(x)
    return np.where(np.fmod(low, 2.0) == 0, low, low + 1.0)


# Predicates on one role's values (float64, NaN compares false unless said otherwise).
PREDICATES: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "any": lambda x: np.ones(x.shape, dtype=bool),
    "nan": np.isnan,
    "!nan": lambda x: ~np.isnan(x),
    "+nan": lambda x: np.isnan(x) & ~np.signbit(x),  # NaN with sign bit 0
    "-nan": lambda x: np.isnan(x) & np.signbit(x),
    "+0": lambda x: (x == 0) & ~np.signbit(x),
    "-0": lambda x: (x == 0) & np.signbit(x),
    "±0": lambda x: x == 0,
    "!0": lambda x: x != 0,  # "not equal to 0": NaN included
    "nz": lambda x: (x != 0) & ~np.isnan(x),  # "a nonzero number": infinities included
    "+inf": lambda x: x == np.inf,
    "-inf": lambda x: x == -np.inf,
    "±inf": np.isinf,
    "!inf": lambda x: ~np.isinf(x),  # "a finite number or NaN"
    "fin": np.isfinite,
    "nzfin": lambda x: np.isfinite(x) & (x != 0),
    "+fin": lambda x: np.isfinite(x) & (x > 0),
    "-fin": lambda x: np.isfinite(x) & (x < 0),
    ">0": lambda x: x > 0,
    "<0": lambda x: x < 0,
    ">1": lambda x: x > 1,
    "<1": lambda x: x < 1,
    "<-1": lambda x: x < -1,
    "=1": lambda x: x == 1,
    "=-1": lambda x: x == -1,
    "!=1": lambda x: x != 1,  # NaN included
    "abs>1": lambda x: np.abs(x) > 1,
    "abs<1": lambda x: np.abs(x) < 1,
    "abs=1": lambda x: np.abs(x) == 1,
    "int": _integral,  # "integer-valued" / "an integer value": finite
    "!int": lambda x: ~_integral(x),
    "odd": _odd,  # "an odd integer value"
    "!odd": lambda x: ~_odd(x),
    "half": _half,  # two integers are equally close
}
# A condition comparing a role with another one: "x2 =-x1", "a !=c".
RELATION = re.compile(r"(=|!=)(-?)([a-z]\w*)$")

CONSTANTS: dict[str, float] = {
    "0": 0.0,
    "1": 1.0,
    "inf": math.inf,
    "nan": math.nan,
    "pi": math.pi,
    "pi/2": math.pi / 2,
    "pi/4": math.pi / 4,
    "3pi/4": 3 * math.pi / 4,
    "False": 0.0,
    "True": 1.0,
}


def _xor_sign(v: Variables, magnitude: float) -> np.ndarray:
    return np.where(np.signbit(v["x1"]) ^ np.signbit(v["x2"]), -magnitude, magnitude)


# Results computed from the inputs: signs of products, cis(b) = cos(b) + sin(b) j scaled.
DERIVED: dict[str, Callable[[Variables], np.ndarray]] = {
    "sgn*inf": lambda v: _xor_sign(v, math.inf),
    "sgn*0": lambda v: _xor_sign(v, 0.0),
    "inf*cos(b)": lambda v: math.inf * np.cos(v["b"]),
    "inf*sin(b)": lambda v: math.inf * np.sin(v["b"]),
    "0*cos(b)": lambda v: 0.0 * np.cos(v["b"]),
    "0*sin(b)": lambda v: 0.0 * np.sin(v["b"]),
    "even(x)": lambda v: _nearest_even(v["x"]),
}

# --- the tables -----------------------------------------------------------------------------
# One row per rule, in the standard's order; rows are separated by ";" or a new line.

_ROUNDING = """
    x int -> x; x +inf -> +inf; x -inf -> -inf; x +0 -> +0; x -0 -> -0; x nan -> nan
"""
_LOGARITHM = "x nan -> nan; x <0 -> nan; x ±0 -> -inf; x =1 -> +0; x +inf -> +inf"
_ODD = "x nan -> nan; x +0 -> +0; x -0 -> -0"
_QUOTIENT = """
    x1 nan -> nan; x2 nan -> nan
    x1 ±inf & x2 ±inf -> nan; x1 ±0 & x2 ±0 -> nan
    x1 +0 & x2 >0 -> +0; x1 -0 & x2 >0 -> -0; x1 +0 & x2 <0 -> -0; x1 -0 & x2 <0 -> +0
    x1 >0 & x2 +0 -> +inf; x1 >0 & x2 -0 -> -inf; x1 <0 & x2 +0 -> -inf; x1 <0 & x2 -0 -> +inf
"""

REAL: dict[str, str] = {
    "abs": "x nan -> nan; x -0 -> +0; x -inf -> +inf",
    "acos": "x nan -> nan; x >1 -> nan; x <-1 -> nan; x =1 -> +0",
    "acosh": "x nan -> nan; x <1 -> nan; x =1 -> +0; x +inf -> +inf",
    "add": """
        x1 nan -> nan; x2 nan -> nan
        x1 +inf & x2 -inf -> nan; x1 -inf & x2 +inf -> nan
        x1 +inf & x2 +inf -> +inf; x1 -inf & x2 -inf -> -inf
        x1 +inf & x2 fin -> +inf; x1 -inf & x2 fin -> -inf
        x1 fin & x2 +inf -> +inf; x1 fin & x2 -inf -> -inf
        x1 -0 & x2 -0 -> -0; x1 -0 & x2 +0 -> +0; x1 +0 & x2 -0 -> +0; x1 +0 & x2 +0 -> +0
        x1 ±0 & x2 nzfin -> x2; x1 nzfin & x2 ±0 -> x1
        x1 nzfin & x2 =-x1 -> +0
    """,
    "asin": "x nan -> nan; x >1 -> nan; x <-1 -> nan; x +0 -> +0; x -0 -> -0",
    "asinh": f"{_ODD}; x +inf -> +inf; x -inf -> -inf",
    "atan": f"{_ODD}; x +inf -> pi/2; x -inf -> -pi/2",
    "atan2": """
        x1 nan -> nan; x2 nan -> nan
        x1 >0 & x2 +0 -> pi/2; x1 >0 & x2 -0 -> pi/2
        x1 +0 & x2 >0 -> +0; x1 +0 & x2 +0 -> +0; x1 +0 & x2 -0 -> pi; x1 +0 & x2 <0 -> pi
        x1 -0 & x2 >0 -> -0; x1 -0 & x2 +0 -> -0; x1 -0 & x2 -0 -> -pi; x1 -0 & x2 <0 -> -pi
        x1 <0 & x2 +0 -> -pi/2; x1 <0 & x2 -0 -> -pi/2
        x1 +fin & x2 +inf -> +0; x1 +fin & x2 -inf -> pi
        x1 -fin & x2 +inf -> -0; x1 -fin & x2 -inf -> -pi
        x1 +inf & x2 fin -> pi/2; x1 -inf & x2 fin -> -pi/2
        x1 +inf & x2 +inf -> pi/4; x1 +inf & x2 -inf -> 3pi/4
        x1 -inf & x2 +inf -> -pi/4; x1 -inf & x2 -inf -> -3pi/4
    """,
    "atanh": """
        x nan -> nan; x <-1 -> nan; x >1 -> nan
        x =-1 -> -inf; x =1 -> +inf; x +0 -> +0; x -0 -> -0
    """,
    "ceil": _ROUNDING,
    "copysign": """
        x1 !nan & x2 <0 -> -|x1|; x1 !nan & x2 -0 -> -|x1|
        x1 !nan & x2 +0 -> |x1|; x1 !nan & x2 >0 -> |x1|
        x1 !nan & x2 -nan -> -|x1|; x1 !nan & x2 +nan -> |x1|
        x1 nan & x2 <0 -> -nan; x1 nan & x2 -0 -> -nan
        x1 nan & x2 +0 -> +nan; x1 nan & x2 >0 -> +nan
        x1 nan & x2 -nan -> -nan; x1 nan & x2 +nan -> +nan
    """,
    "cos": "x nan -> nan; x +0 -> 1; x -0 -> 1; x +inf -> nan; x -inf -> nan",
    "cosh": "x nan -> nan; x +0 -> 1; x -0 -> 1; x +inf -> +inf; x -inf -> +inf",
    "divide": f"""{_QUOTIENT}
        x1 +inf & x2 +fin -> +inf; x1 +inf & x2 -fin -> -inf
        x1 -inf & x2 +fin -> -inf; x1 -inf & x2 -fin -> +inf
        x1 +fin & x2 +inf -> +0; x1 +fin & x2 -inf -> -0
        x1 -fin & x2 +inf -> -0; x1 -fin & x2 -inf -> +0
    """,
    "equal": """
        x1 nan -> False; x2 nan -> False
        x1 +inf & x2 +inf -> True; x1 -inf & x2 -inf -> True
        x1 -0 & x2 ±0 -> True; x1 +0 & x2 ±0 -> True
        x1 fin & x2 fin & x1 =x2 -> True; x1 any -> False
    """,
    "exp": "x nan -> nan; x +0 -> 1; x -0 -> 1; x +inf -> +inf; x -inf -> +0",
    "expm1": f"{_ODD}; x +inf -> +inf; x -inf -> -1",
    "floor": _ROUNDING,
    "floor_divide": f"""{_QUOTIENT}
        # "libraries may return NaN" (+-inf // finite), "may return -1.0" (mixed signs)
        x1 +inf & x2 +fin -> ?; x1 +inf & x2 -fin -> ?
        x1 -inf & x2 +fin -> ?; x1 -inf & x2 -fin -> ?
        x1 +fin & x2 +inf -> +0; x1 +fin & x2 -inf -> ?
        x1 -fin & x2 +inf -> ?; x1 -fin & x2 -inf -> +0
    """,
    "hypot": """
        x1 ±inf -> +inf; x2 ±inf -> +inf; x1 ±0 -> |x2|; x2 ±0 -> |x1|
        x1 !inf & x2 nan -> nan; x2 !inf & x1 nan -> nan
    """,
    "isfinite": "x ±inf -> False; x nan -> False; x fin -> True",
    "isinf": "x ±inf -> True; x any -> False",
    "isnan": "x nan -> True; x any -> False",
    "log": _LOGARITHM,
    "log1p": "x nan -> nan; x <-1 -> nan; x =-1 -> -inf; x -0 -> -0; x +0 -> +0; x +inf -> +inf",
    "log2": _LOGARITHM,
    "log10": _LOGARITHM,
    "logaddexp": """
        x1 nan -> nan; x2 nan -> nan; x1 +inf & x2 !nan -> +inf; x1 !nan & x2 +inf -> +inf
    """,
    "maximum": "x1 nan -> nan; x2 nan -> nan",
    "minimum": "x1 nan -> nan; x2 nan -> nan",
    "multiply": """
        x1 nan -> nan; x2 nan -> nan
        x1 ±inf & x2 ±0 -> nan; x1 ±0 & x2 ±inf -> nan
        x1 ±inf & x2 ±inf -> sgn*inf; x1 ±inf & x2 nzfin -> sgn*inf; x1 nzfin & x2 ±inf -> sgn*inf
        # the sign rule on a product that is exactly zero ("remaining cases": IEEE 754)
        x1 ±0 & x2 fin -> sgn*0; x1 fin & x2 ±0 -> sgn*0
    """,
    "nextafter": "x1 nan -> nan; x2 nan -> nan; x1 -0 & x2 +0 -> +0; x1 +0 & x2 -0 -> -0",
    "not_equal": """
        x1 nan -> True; x2 nan -> True
        x1 +inf & x2 -inf -> True; x1 -inf & x2 +inf -> True
        x1 fin & x2 fin & x1 !=x2 -> True
        # "In the remaining cases, the result is False" would include a finite number against
        # an infinite one; only the evidently meant remainder, equal operands, is kept
        x1 =x2 -> False
    """,
    "pow": """
        x1 !=1 & x2 nan -> nan; x2 +0 -> 1; x2 -0 -> 1; x1 nan & x2 !0 -> nan
        x1 abs>1 & x2 +inf -> +inf; x1 abs>1 & x2 -inf -> +0
        x1 abs=1 & x2 +inf -> 1; x1 abs=1 & x2 -inf -> 1; x1 =1 & x2 !nan -> 1
        x1 abs<1 & x2 +inf -> +0; x1 abs<1 & x2 -inf -> +inf
        x1 +inf & x2 >0 -> +inf; x1 +inf & x2 <0 -> +0
        x1 -inf & x2 >0 & x2 odd -> -inf; x1 -inf & x2 >0 & x2 !odd -> +inf
        x1 -inf & x2 <0 & x2 odd -> -0; x1 -inf & x2 <0 & x2 !odd -> +0
        x1 +0 & x2 >0 -> +0; x1 +0 & x2 <0 -> +inf
        x1 -0 & x2 >0 & x2 odd -> -0; x1 -0 & x2 >0 & x2 !odd -> +0
        x1 -0 & x2 <0 & x2 odd -> -inf; x1 -0 & x2 <0 & x2 !odd -> +inf
        x1 -fin & x2 fin & x2 !int -> nan
    """,
    "remainder": """
        x1 nan -> nan; x2 nan -> nan
        x1 ±inf & x2 ±inf -> nan; x1 ±0 & x2 ±0 -> nan
        x1 +0 & x2 >0 -> +0; x1 -0 & x2 >0 -> +0; x1 +0 & x2 <0 -> -0; x1 -0 & x2 <0 -> -0
        x1 >0 & x2 +0 -> nan; x1 >0 & x2 -0 -> nan; x1 <0 & x2 +0 -> nan; x1 <0 & x2 -0 -> nan
        x1 +inf & x2 +fin -> nan; x1 +inf & x2 -fin -> nan
        x1 -inf & x2 +fin -> nan; x1 -inf & x2 -fin -> nan
        x1 +fin & x2 +inf -> x1; x1 +fin & x2 -inf -> x2
        x1 -fin & x2 +inf -> x2; x1 -fin & x2 -inf -> x1
    """,
    "round": f"""{_ROUNDING}
        # "the even integer closest to x_i": a zero of either sign for +-0.5
        x half & x abs<1 -> ±0; x half -> even(x)
    """,
    "sign": "x <0 -> -1; x ±0 -> ±0; x >0 -> 1; x nan -> nan",
    "signbit": """
        x +0 -> False; x -0 -> True; x +inf -> False; x -inf -> True
        x +fin -> False; x -fin -> True; x +nan -> False; x -nan -> True
    """,
    "sin": f"{_ODD}; x ±inf -> nan",
    "sinh": f"{_ODD}; x +inf -> +inf; x -inf -> -inf",
    "sqrt": "x nan -> nan; x <0 -> nan; x +0 -> +0; x -0 -> -0; x +inf -> +inf",
    "tan": f"{_ODD}; x ±inf -> nan",
    "tanh": f"{_ODD}; x +inf -> 1; x -inf -> -1",
    "trunc": _ROUNDING,
}

_LOG_COMPLEX = """
    a fin & b +inf -> +inf, pi/2; a fin & b nan -> nan, nan
    a -inf & b +fin -> +inf, pi; a +inf & b +fin -> +inf, +0
    a -inf & b +inf -> +inf, 3pi/4; a +inf & b +inf -> +inf, pi/4
    a ±inf & b nan -> +inf, nan
    a nan & b fin -> nan, nan; a nan & b +inf -> +inf, nan; a nan & b nan -> nan, nan
"""
_ALL_NAN = "a nan & b nan & c nan & d nan -> nan, nan"

COMPLEX: dict[str, str] = {
    "abs": """
        a ±inf -> +inf; b ±inf -> +inf; a ±0 -> |b|; b ±0 -> |a|
        a nan & b fin -> nan; a fin & b nan -> nan; a nan & b nan -> nan
    """,
    "acos": """
        a ±0 & b +0 -> pi/2, -0; a ±0 & b nan -> pi/2, nan
        a fin & b +inf -> pi/2, -inf; a nzfin & b nan -> nan, nan
        a -inf & b +fin -> pi, -inf; a +inf & b +fin -> +0, -inf
        a -inf & b +inf -> 3pi/4, -inf; a +inf & b +inf -> pi/4, -inf
        a ±inf & b nan -> nan, ±inf
        a nan & b fin -> nan, nan; a nan & b +inf -> nan, -inf; a nan & b nan -> nan, nan
    """,
    "acosh": """
        a ±0 & b +0 -> +0, pi/2; a fin & b +inf -> +inf, pi/2
        a nzfin & b nan -> nan, nan; a +0 & b nan -> nan, ±pi/2
        a -inf & b +fin -> +inf, pi; a +inf & b +fin -> +inf, +0
        a -inf & b +inf -> +inf, 3pi/4; a +inf & b +inf -> +inf, pi/4
        a ±inf & b nan -> +inf, nan
        a nan & b fin -> nan, nan; a nan & b +inf -> +inf, nan; a nan & b nan -> nan, nan
    """,
    "asinh": """
        a +0 & b +0 -> +0, +0; a +fin & b +inf -> +inf, pi/2; a fin & b nan -> nan, nan
        a +inf & b +fin -> +inf, +0; a +inf & b +inf -> +inf, pi/4
        a nan & b +0 -> nan, +0; a nan & b nzfin -> nan, nan
        a nan & b +inf -> ±inf, nan; a nan & b nan -> nan, nan
    """,
    "atanh": """
        a +0 & b +0 -> +0, +0; a +0 & b nan -> +0, nan; a =1 & b +0 -> +inf, +0
        a +fin & b +inf -> +0, pi/2; a nzfin & b nan -> nan, nan
        a +inf & b +fin -> +0, pi/2; a +inf & b +inf -> +0, pi/2; a +inf & b nan -> +0, nan
        a nan & b fin -> nan, nan; a nan & b +inf -> ±0, pi/2; a nan & b nan -> nan, nan
    """,
    "cosh": """
        a +0 & b +0 -> 1, +0; a +0 & b +inf -> nan, ±0; a +0 & b nan -> nan, ±0
        a nzfin & b +inf -> nan, nan; a nzfin & b nan -> nan, nan
        a +inf & b +0 -> +inf, +0; a +inf & b nzfin -> inf*cos(b), inf*sin(b)
        a +inf & b +inf -> ±inf, nan; a +inf & b nan -> +inf, nan
        a nan & b ±0 -> nan, ±0; a nan & b nzfin -> nan, nan; a nan & b nan -> nan, nan
    """,
    "divide": _ALL_NAN,
    "equal": """
        a nan -> False; b nan -> False; c nan -> False; d nan -> False
        a =c & b =d -> True; a any -> False
    """,
    "exp": """
        a ±0 & b +0 -> 1, +0; a fin & b +inf -> nan, nan; a fin & b nan -> nan, nan
        a +inf & b +0 -> +inf, +0
        a -inf & b fin -> 0*cos(b), 0*sin(b); a +inf & b nzfin -> inf*cos(b), inf*sin(b)
        a -inf & b +inf -> ±0, ±0; a +inf & b +inf -> ±inf, nan
        a -inf & b nan -> ±0, ±0; a +inf & b nan -> ±inf, nan
        a nan & b +0 -> nan, +0; a nan & b !0 -> nan, nan; a nan & b nan -> nan, nan
    """,
    "expm1": """
        a ±0 & b +0 -> ±0, +0; a fin & b +inf -> nan, nan; a fin & b nan -> nan, nan
        a +inf & b +0 -> +inf, +0
        # +0 * cis(b) - 1.0 and +infinity * cis(b) - 1.0
        a -inf & b fin -> -1, 0*sin(b); a +inf & b nzfin -> inf*cos(b), inf*sin(b)
        a -inf & b +inf -> -1, ±0; a +inf & b +inf -> ±inf, nan
        a -inf & b nan -> -1, ±0; a +inf & b nan -> ±inf, nan
        a nan & b +0 -> nan, +0; a nan & b !0 -> nan, nan; a nan & b nan -> nan, nan
    """,
    "isfinite": """
        a nan -> False; b nan -> False; a ±inf -> False; b ±inf -> False
        a fin & b fin -> True
    """,
    "isinf": "a ±inf -> True; a !inf & b ±inf -> True; a any -> False",
    "isnan": "a nan -> True; b nan -> True; a any -> False",
    "log": f"a -0 & b +0 -> -inf, pi; a +0 & b +0 -> -inf, +0; {_LOG_COMPLEX}",
    "log1p": f"a =-1 & b +0 -> -inf, +0; {_LOG_COMPLEX}",
    "multiply": _ALL_NAN,
    "not_equal": """
        a nan -> True; b nan -> True; c nan -> True; d nan -> True
        a !=c -> True; b !=d -> True; a any -> False
    """,
    "sign": "a ±0 & b ±0 -> ±0, ±0; a nan -> nan, nan; b nan -> nan, nan",
    "sinh": """
        a +0 & b +0 -> +0, +0; a +0 & b +inf -> ±0, nan; a +0 & b nan -> ±0, nan
        a +fin & b +inf -> nan, nan; a +fin & b nan -> nan, nan
        a +inf & b +0 -> +inf, +0; a +inf & b +fin -> inf*cos(b), inf*sin(b)
        a +inf & b +inf -> ±inf, nan; a +inf & b nan -> ±inf, nan
        a nan & b +0 -> nan, +0; a nan & b nzfin -> nan, nan; a nan & b nan -> nan, nan
    """,
    "sqrt": """
        a ±0 & b +0 -> +0, +0; a any & b +inf -> +inf, +inf; a fin & b nan -> nan, nan
        a -inf & b +fin -> +0, +inf; a +inf & b +fin -> +inf, +0
        a -inf & b nan -> nan, ±inf; a +inf & b nan -> +inf, nan
        # "a is NaN and b is any value" would include b = -inf, where C99 (csqrt(conj(z)) =
        # conj(csqrt(z))) has +inf - inf j: left open
        a nan & b -inf -> ?; a nan & b any -> nan, nan; a nan & b nan -> nan, nan
    """,
    "tanh": """
        a +0 & b +0 -> +0, +0
        # a +0 & b +inf / nan: "+0 + NaN j", but "may be NaN + NaN j" with older C libraries
        a nzfin & b +inf -> nan, nan; a +0 & b +inf -> ?
        a nzfin & b nan -> nan, nan; a +0 & b nan -> ?
        # "1 + 0j"; C99 G.6.2.6 has 1 + 0*sin(2b) j: the imaginary sign is not checked
        a +inf & b +fin -> 1, ±0; a +inf & b +inf -> 1, ±0; a +inf & b nan -> 1, ±0
        a nan & b +0 -> nan, +0; a nan & b nz -> nan, nan; a nan & b nan -> nan, nan
    """,
}


@dataclass(frozen=True, kw_only=True)
class Via:
    """An operation whose special cases are another one's, "as if implemented as" it.

    ``args`` names an :data:`ARGS` map from this operation's inputs to the base's, ``result``
    a :data:`RESULTS` map back. ``componentwise``: the base's *real* rows apply to the real
    and to the imaginary parts independently (complex add, round); both parts must be fixed.
    """

    base: str
    args: str = ""
    result: str = ""
    componentwise: bool = False


REAL_VIA: dict[str, Via] = {
    "reciprocal": Via(base="divide", args="1,x"),
    "square": Via(base="multiply", args="x,x"),
    "subtract": Via(base="add", args="x1,-x2"),
}
COMPLEX_VIA: dict[str, Via] = {
    "add": Via(base="add", componentwise=True),
    "asin": Via(base="asinh", args="1j*x", result="-1j*w"),
    "atan": Via(base="atanh", args="1j*x", result="-1j*w"),
    "cos": Via(base="cosh", args="1j*x"),
    "log2": Via(base="log", result="w/ln2"),
    "log10": Via(base="log", result="w/ln10"),
    "round": Via(base="round", componentwise=True),
    "sin": Via(base="sinh", args="1j*x", result="-1j*w"),
    "square": Via(base="multiply", args="x,x"),
    "subtract": Via(base="add", args="x1,-x2"),
    "tan": Via(base="tanh", args="1j*x", result="-1j*w"),
}

BINARY = frozenset(
    "add atan2 copysign divide equal floor_divide hypot logaddexp maximum minimum multiply"
    " nextafter not_equal pow remainder subtract".split()
)
# Beyond the standard: special values that a function's mathematical definition fixes where
# the standard has no such function. The Bessel functions of the second kind Y0, Y1 and the
# modified K0, K1 are real only for x > 0 (DLMF 10.2 and 10.25: a branch cut along the
# negative axis, a logarithmic singularity at 0), and vanish as x -> +inf (DLMF 10.7, 10.30).
DEFINED: dict[str, str] = {
    "bessel_y0": "x nan -> nan; x ±0 -> -inf; x <0 -> nan; x +inf -> +0",
    "bessel_y1": "x nan -> nan; x ±0 -> -inf; x <0 -> nan; x +inf -> +0",
    "bessel_k0": "x nan -> nan; x ±0 -> +inf; x <0 -> nan; x +inf -> +0",
    "bessel_k1": "x nan -> nan; x ±0 -> +inf; x <0 -> nan; x +inf -> +0",
}
BEYOND_STANDARD = frozenset(DEFINED)

SPECIAL_OPS: frozenset[str] = frozenset().union(REAL, REAL_VIA, COMPLEX, COMPLEX_VIA, DEFINED)

# --- parsed rows ----------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Part:
    """One component of a row's result: ``name`` negated or not, its sign checked or not."""

    name: str  # a constant, a role, "|role|", a DERIVED name
    negate: bool = False
    signless: bool = False  # "±": only the magnitude is fixed
    nan_sign: bool = False  # "+nan"/"-nan": the NaN's sign bit is fixed


@dataclass(frozen=True, kw_only=True)
class Rule:
    """One row: positions where every ``(role, predicate)`` holds get ``result``.

    ``result`` is None for ``?``: the standard leaves the result open there.
    """

    text: str
    when: tuple[tuple[str, str], ...]
    result: tuple[Part, ...] | None


_ROLES: dict[tuple[Kind, int], tuple[str, ...]] = {
    ("real", 1): ("x",),
    ("real", 2): ("x1", "x2"),
    ("complex", 1): ("a", "b"),
    ("complex", 2): ("a", "b", "c", "d"),
}
# Complex operations whose result is real (or bool).
_REAL_RESULT = frozenset({"abs", "equal", "isfinite", "isinf", "isnan", "not_equal"})


def _part(token: str, roles: tuple[str, ...], text: str) -> Part:
    signless = token.startswith("±")
    body = token.removeprefix("±")
    negate = body.startswith("-")
    name = body.removeprefix("-").removeprefix("+")
    absolute = name[:1] == name[-1:] == "|" and name[1:-1] in roles
    if not (name in CONSTANTS or name in DERIVED or name in roles or absolute):
        raise ValueError(f"special-case row {text!r}: unknown value {token!r}")
    return Part(
        name=name, negate=negate, signless=signless, nan_sign=name == "nan" and body != name
    )


def parse_row(text: str, roles: tuple[str, ...], width: int) -> Rule:
    conditions, _, result = text.partition(" -> ")
    when: list[tuple[str, str]] = []
    for condition in conditions.split(" & "):
        role, _, predicate = condition.partition(" ")
        relation = RELATION.match(predicate)
        if role not in roles or not (
            predicate in PREDICATES or (relation is not None and relation[3] in roles)
        ):
            raise ValueError(f"special-case row {text!r}: bad condition {condition!r}")
        when.append((role, predicate))
    if result == "?":
        return Rule(text=text, when=tuple(when), result=None)
    parts = tuple(_part(token, roles, text) for token in result.split(", "))
    if len(parts) != width:
        raise ValueError(f"special-case row {text!r}: expected {width} result part(s)")
    try:  # a derived value must find its roles: evaluate it on empty inputs
        for part in parts:
            _value(part, dict.fromkeys(roles, np.zeros(0)), (0,))
    except KeyError as missing:
        raise ValueError(f"special-case row {text!r}: no role {missing} here") from None
    return Rule(text=text, when=tuple(when), result=parts)


def rows_of(table: str) -> list[str]:
    """The rows of one table entry: split at ";" and new lines, "#" comments dropped."""
    lines = (line.partition("#")[0] for line in table.splitlines())
    return [row.strip() for line in lines for row in line.split(";") if row.strip()]


def _parse(tables: Mapping[str, str], kind: Kind) -> dict[str, tuple[Rule, ...]]:
    parsed: dict[str, tuple[Rule, ...]] = {}
    for op, table in tables.items():
        roles = _ROLES[kind, 2 if op in BINARY else 1]
        width = 1 if kind == "real" or op in _REAL_RESULT else 2
        parsed[op] = tuple(parse_row(text, roles, width) for text in rows_of(table))
    return parsed


# --- evaluation -----------------------------------------------------------------------------


class Fixed(NamedTuple):
    """What the rules fix, per position, for one operation on broadcast inputs.

    ``values``, ``signless`` and ``nan_sign`` hold one array per component of the result (one
    for a real result, real and imaginary part for a complex one); ``rule`` is the index of
    the row that claimed the position in the table evaluated (the base's for a :class:`Via`,
    the real part's for a componentwise one; -1: none).
    """

    mask: np.ndarray
    values: tuple[np.ndarray, ...]
    signless: tuple[np.ndarray, ...]
    nan_sign: tuple[np.ndarray, ...]
    rule: np.ndarray


def _complex(real: np.ndarray, imag: np.ndarray) -> np.ndarray:
    """``real + imag j`` without arithmetic (``1j * inf`` would make a NaN real part)."""
    out = np.empty(np.broadcast_shapes(real.shape, imag.shape), dtype=np.complex128)
    out.real = real
    out.imag = imag
    return out


def _times_i(args: list[np.ndarray]) -> list[np.ndarray]:
    return [_complex(-args[0].imag, args[0].real)]


def _times_minus_i(fixed: Fixed) -> Fixed:
    (real, imag), (s_real, s_imag), (n_real, n_imag) = fixed.values, fixed.signless, fixed.nan_sign
    return fixed._replace(
        values=(imag, -real), signless=(s_imag, s_real), nan_sign=(n_imag, n_real)
    )


def _scaled(factor: float) -> Callable[[Fixed], Fixed]:
    def scale(fixed: Fixed) -> Fixed:
        return fixed._replace(values=tuple(v * factor for v in fixed.values))

    return scale


ARGS: dict[str, Callable[[list[np.ndarray]], list[np.ndarray]]] = {
    "1,x": lambda a: [np.ones_like(a[0]), a[0]],
    "x,x": lambda a: [a[0], a[0]],
    "x1,-x2": lambda a: [a[0], -a[1]],
    "1j*x": _times_i,
}
RESULTS: dict[str, Callable[[Fixed], Fixed]] = {
    "-1j*w": _times_minus_i,
    "w/ln2": _scaled(1 / math.log(2)),
    "w/ln10": _scaled(1 / math.log(10)),
}


def _variables(kind: Kind, args: list[np.ndarray]) -> dict[str, np.ndarray]:
    if kind == "real":
        return dict(zip(_ROLES[kind, len(args)], args, strict=True))
    parts = [part for z in args for part in (z.real, z.imag)]
    return dict(zip(_ROLES[kind, len(args)], parts, strict=True))


def _holds(role: str, predicate: str, v: Variables) -> np.ndarray:
    relation = RELATION.match(predicate)
    if relation is None:
        return PREDICATES[predicate](v[role])
    other = -v[relation[3]] if relation[2] else v[relation[3]]
    return v[role] == other if relation[1] == "=" else v[role] != other


def _value(part: Part, v: Variables, shape: tuple[int, ...]) -> np.ndarray:
    name = part.name
    if name in CONSTANTS:
        value = np.full(shape, CONSTANTS[name])
    elif name in DERIVED:
        value = np.broadcast_to(DERIVED[name](v), shape)
    else:
        value = v[name.strip("|")]
        value = np.abs(value) if name.startswith("|") else value
    return -value if part.negate else value


def _apply(rules: tuple[Rule, ...], v: Variables, shape: tuple[int, ...]) -> Fixed:
    width = next((len(r.result) for r in rules if r.result is not None), 1)
    rule = np.full(shape, -1)
    mask = np.zeros(shape, dtype=bool)
    values = [np.zeros(shape) for _ in range(width)]
    signless = [np.zeros(shape, dtype=bool) for _ in range(width)]
    nan_sign = [np.zeros(shape, dtype=bool) for _ in range(width)]
    for index, row in enumerate(rules):
        hit = rule < 0
        for role, predicate in row.when:
            hit &= _holds(role, predicate, v)
        if not hit.any():
            continue
        rule[hit] = index
        if row.result is None:
            continue
        mask |= hit
        for k, part in enumerate(row.result):
            np.copyto(values[k], _value(part, v, shape), where=hit)
            signless[k] |= hit & part.signless
            nan_sign[k] |= hit & part.nan_sign
    return Fixed(mask, tuple(values), tuple(signless), tuple(nan_sign), rule)


RULES: dict[Kind, dict[str, tuple[Rule, ...]]] = {
    "real": _parse({**REAL, **DEFINED}, "real"),
    "complex": _parse(COMPLEX, "complex"),
}
VIA: dict[Kind, dict[str, Via]] = {"real": REAL_VIA, "complex": COMPLEX_VIA}


def _evaluate(op: str, kind: Kind, args: list[np.ndarray]) -> Fixed | None:
    via = VIA[kind].get(op)
    if via is None:
        rules = RULES[kind].get(op)
        return None if rules is None else _apply(rules, _variables(kind, args), args[0].shape)
    if via.componentwise:
        real = _evaluate(via.base, "real", [z.real for z in args])
        imag = _evaluate(via.base, "real", [z.imag for z in args])
        if real is None or imag is None:
            return None
        return Fixed(
            real.mask & imag.mask,
            real.values + imag.values,
            real.signless + imag.signless,
            real.nan_sign + imag.nan_sign,
            real.rule,
        )
    fixed = _evaluate(via.base, kind, ARGS[via.args](args) if via.args else args)
    return RESULTS[via.result](fixed) if fixed is not None and via.result else fixed


def _kind(dtype: np.dtype) -> Kind | None:
    if dtype.kind == "f" or dtype.name == "bfloat16":
        return "real"
    return "complex" if dtype.kind == "c" else None


def special_cases(op: str, inputs: Sequence[np.ndarray]) -> Fixed | None:
    """The full :class:`Fixed` record behind :func:`expected_special` and :func:`departs`.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    arrays = [np.asarray(x) for x in inputs]
    if op not in SPECIAL_OPS or len(arrays) != (2 if op in BINARY else 1):
        return None
    kinds = {_kind(a.dtype) for a in arrays}
    if len(kinds) != 1 or None in kinds:
        return None  # not float/complex, or real mixed with complex
    kind: Kind = "real" if kinds == {"real"} else "complex"
    wide = np.float64 if kind == "real" else np.complex128
    args = list(np.broadcast_arrays(*(a.astype(wide) for a in arrays)))
    with np.errstate(all="ignore"):
        return _evaluate(op, kind, args)


def expected_special(op: str, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """(mask, expected) for an elementwise operation on these inputs.

    op: canonical operation name (:data:`SPECIAL_OPS`). inputs: the array arguments in order
    (x for unary; x1, x2 for binary), any real float dtype (float16/float32/float64) or
    complex dtype, numpy arrays possibly 0-d, broadcastable. Returns None if op has no table
    (for this kind of input), the arity is wrong, or any input is not float/complex (or real
    inputs are mixed with complex ones). Otherwise mask (bool, broadcast shape) marks
    positions where a special-case rule fixes the result, and expected (float64, or complex128
    for a complex result; same broadcast shape) holds the required value there (NaN where NaN
    is required, with the sign of zeros and infinities exact; bool results as 0/1). Positions
    not covered by a rule are False in mask, and 0 in expected.

    Note:
        Where the standard leaves a sign unspecified, expected holds the positive value; judge
        outputs with :func:`departs`, which knows which signs are fixed. abs of a complex
        input is real: expected is float64 there.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    fixed = special_cases(op, inputs)
    if fixed is None:
        return None
    return fixed.mask, expected_of(fixed)


def expected_of(fixed: Fixed) -> np.ndarray:
    """The values a :class:`Fixed` requires (0 where no rule fixes the result)."""
    values = fixed.values
    expected = values[0] if len(values) == 1 else _complex(values[0], values[1])
    return np.where(fixed.mask, expected, 0)


def unspecified(op: str, inputs: Sequence[np.ndarray]) -> np.ndarray | None:
    """Positions a rule claims without fixing the result (the standard leaves it to the
    implementation, e.g. ``floor_divide`` by an infinity): no library can be wrong there.
    None if ``op`` has no table for these inputs.

    Raises:
        ValueError: the inputs do not broadcast together.
    """
    fixed = special_cases(op, inputs)
    return None if fixed is None else open_positions(fixed)


def open_positions(fixed: Fixed) -> np.ndarray:
    """Positions a rule of :class:`Fixed` claims without fixing the result."""
    return (fixed.rule >= 0) & ~fixed.mask


_EPS_BY_NAME = {"bfloat16": 2.0**-7}


def _eps(dtype: np.dtype | str) -> float:
    """Machine epsilon of a float dtype (of its parts if complex); 0 for bool and integers."""
    name = dtype if isinstance(dtype, str) else dtype.name
    if name in _EPS_BY_NAME:
        return _EPS_BY_NAME[name]
    resolved = np.dtype(dtype)
    return float(np.finfo(resolved).eps) if resolved.kind in "fc" else 0.0


def _misses(
    got: np.ndarray, want: np.ndarray, signless: np.ndarray, nan_sign: np.ndarray, eps: float
) -> np.ndarray:
    """Positions where ``got`` does not meet ``want`` (one real component)."""
    want_nan, got_nan = np.isnan(want), np.isnan(got)
    bad = want_nan != got_nan
    bad |= want_nan & got_nan & nan_sign & (np.signbit(got) != np.signbit(want))
    g = np.where(signless, np.abs(got), got)
    w = np.where(signless, np.abs(want), want)
    both = ~want_nan & ~got_nan
    exact = np.isinf(w) | (w == 0)
    bad |= both & exact & ((g != w) | (np.signbit(g) != np.signbit(w)))
    bad |= both & ~exact & ~(np.abs(g - w) <= 4 * eps * np.abs(w))
    return bad


def departs(
    op: str,
    inputs: Sequence[np.ndarray],
    output: np.ndarray,
    *,
    output_dtype: str | None = None,
    fixed: Fixed | None = None,
) -> np.ndarray | None:
    """Bool mask of the positions where ``output`` violates a special-case rule.

    A violation: NaN required but not NaN (or with the wrong sign bit, where the rule fixes
    it), non-NaN required but NaN, a wrong infinity or sign of infinity, a wrong sign of zero
    where the rule says +0 or -0, a non-zero where a zero is required, or a finite required
    value missed by more than ``4 * eps * |expected|`` with the eps of the output's dtype
    (``output_dtype`` names it when the array carries another one, e.g. "bfloat16" carried
    as float32; bool and integer outputs are exact). ``fixed``: the rules' result for these
    inputs when the caller has it already (:func:`special_cases`).

    Returns None where :func:`expected_special` does, and when ``output`` cannot be judged:
    not of the broadcast shape, not numeric, or complex where the result is real (or the other
    way round).
    """
    if fixed is None:
        fixed = special_cases(op, inputs)
    if fixed is None:
        return None
    got = np.asarray(output)
    complex_result = len(fixed.values) == 2
    numeric = got.dtype.kind in "biufc" or got.dtype.name in _EPS_BY_NAME
    if got.shape != fixed.mask.shape or not numeric or (got.dtype.kind == "c") != complex_result:
        return None
    eps = _eps(output_dtype or got.dtype)
    parts = (got.real, got.imag) if complex_result else (got,)
    bad = np.zeros(fixed.mask.shape, dtype=bool)
    with np.errstate(all="ignore"):
        for part, want, signless, nan_sign in zip(
            parts, fixed.values, fixed.signless, fixed.nan_sign, strict=True
        ):
            bad |= _misses(part.astype(np.float64), want, signless, nan_sign, eps)
    return bad & fixed.mask
