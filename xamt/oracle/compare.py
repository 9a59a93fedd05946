"""The oracles: what is wrong in one case's outcomes, and how much the libraries disagree.

:func:`compare` turns the outcomes of one case (library name -> :class:`~xamt.types.Outcome`)
into :class:`~xamt.types.Discrepancy` records, one per kind at most, in the order of
:data:`~xamt.types.DISCREPANCY_KINDS`:

1. ``crash``, ``hang``, ``resource``: every library with that status is odd.
2. ``status``: some libraries raised while others returned; the minority side is odd (on a
   tie, the side that raised). The libraries that returned are then compared among themselves.
3. Output kinds, among the libraries that returned: ``shape`` (structure or shape), then per
   leaf ``dtype``, ``nan`` (NaN masks), ``inf`` (inf masks with sign), ``signed-zero`` (both
   zero, sign bits differ; floats only) and ``value`` (finite positions beyond the dtype's
   ``(rtol, atol)`` from :mod:`xamt.tolerance`; integers and bool exact).

For every output kind the libraries are partitioned into classes of mutually agreeing outputs;
the largest class is the majority and every other library is odd. A tie between the largest
classes is broken by a float64 ``reference`` outcome when one is given (the class that agrees
with it wins); otherwise the class met first, in the order of ``outcomes``, wins.

:func:`divergence` scores the same facts continuously in ``[0, 1]`` for variance-guided fuzzing.

Note:
    Masks are compared before values, and values only where both sides are finite, so a NaN
    is never also a value mismatch. Values are never judged on relative error alone near zero:
    ``atol`` guards there. A dtype difference (a promotion) is its own kind: float32 against
    float64 holding the same numbers is a ``dtype`` finding and nothing else.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, partial
from typing import Any, NamedTuple

import numpy as np

from xamt.oracle import summary as summaries
from xamt.oracle.signature import headline
from xamt.tolerance import TOLERANCE
from xamt.types import Discrepancy, Outcome
from xamt.workers.protocol import BFloat16, Opaque, Summary

# Outcomes that say nothing about the operation itself: they are left out of every comparison.
IGNORED_STATUSES = frozenset({"unsupported", "unknown-api", "bad-request"})
# Statuses that are discrepancies on their own, whatever the other libraries did.
FATAL_KINDS = ("crash", "hang", "resource")
# The per-leaf checks, in reporting order (``shape`` and ``dtype`` come before them).
LEAF_CHECKS = ("nan", "inf", "signed-zero", "value")

# Weights of :func:`divergence`: the score of a case is the largest weight that applies, scaled
# for masks by the fraction of differing positions and for values by the squashed spread.
DIVERGENCE_WEIGHTS: dict[str, float] = {
    "crash": 1.0,
    "hang": 1.0,
    "resource": 1.0,
    "status": 0.8,
    "shape": 0.7,
    "nan": 0.6,
    "inf": 0.6,
    "value": 0.6,
    "dtype": 0.4,
    "signed-zero": 0.35,
}

# Largest (rows x rows x size) temporary for comparing every pair of outputs at once.
PAIRWISE_LIMIT = 1 << 16


# --------------------------------------------------------------------------------------------
# Value trees -> leaves


class _Leaf(NamedTuple):
    """One leaf of an output tree: a numeric array, or a token for anything else."""

    dtype: str  # xamt dtype name; "<type>" for a non-numeric leaf
    array: np.ndarray | None = None  # bfloat16 as its exact float32 values; a summary's sample
    token: tuple[str, str] | None = None  # (type, repr) of a non-numeric leaf
    summary: Summary | None = None  # a summarized array (its sample is ``array``)

    @property
    def shape(self) -> tuple[int, ...]:
        if self.summary is not None:
            return self.summary.shape
        return () if self.array is None else self.array.shape


class _Flat(NamedTuple):
    """An output tree flattened: its layout (structure and shapes) and its leaves in order."""

    layout: str  # e.g. "([2, 3], obj)"; tuples and lists are both sequences
    leaves: tuple[_Leaf, ...]
    dtypes: tuple[str, ...]


def _flatten(value: Any) -> _Flat:
    if type(value) is np.ndarray:  # the common case, short-cut
        name = _NAME_OF.get(value.dtype)
        if name is not None:
            return _Flat(str(list(value.shape)), (_Leaf(name, value),), (name,))
    leaves: list[_Leaf] = []
    layout = _walk(value, leaves)
    return _Flat(layout=layout, leaves=tuple(leaves), dtypes=tuple(leaf.dtype for leaf in leaves))


def _identical(flats: Sequence[_Flat]) -> bool:
    """Whether every output is bit for bit the first one (the common, cheap case)."""
    first = flats[0]
    for flat in flats[1:]:
        if flat.layout != first.layout or flat.dtypes != first.dtypes:
            return False
        for a, b in zip(flat.leaves, first.leaves, strict=True):
            if a.array is None or b.array is None:
                if a.token != b.token:
                    return False
            elif a.summary is not None or b.summary is not None:
                if a.summary is None or b.summary is None or a.summary.digest is None:
                    return False
                if a.summary.digest != b.summary.digest:
                    return False
            elif a.array.tobytes() != b.array.tobytes():
                return False
    return True


def _walk(value: Any, leaves: list[_Leaf]) -> str:
    if isinstance(value, tuple | list):
        inner = ", ".join([_walk(v, leaves) for v in value])
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: repr(kv[0]))
        return "{" + ", ".join([f"{k!r}: {_walk(v, leaves)}" for k, v in items]) + "}"
    leaf = _leaf(value)
    leaves.append(leaf)
    if leaf.array is None:
        return "None" if value is None else "obj"
    return str(list(leaf.array.shape if leaf.summary is None else leaf.summary.shape))


def _token(type_name: str, text: str) -> _Leaf:
    return _Leaf(dtype=f"<{type_name}>", token=(type_name, text))


# numpy dtype -> xamt dtype name (``dtype.name`` is slow, and this runs for every leaf).
_NAME_OF: dict[np.dtype[Any], str] = {np.dtype(n): n for n in TOLERANCE if n != "bfloat16"}


def _leaf(value: Any) -> _Leaf:
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        name = _NAME_OF.get(arr.dtype)
        if name is not None:
            return _Leaf(dtype=name, array=arr)
        if arr.dtype.name in TOLERANCE:  # another byte order
            return _Leaf(dtype=arr.dtype.name, array=arr.astype(arr.dtype.newbyteorder("=")))
        return _token(f"ndarray[{arr.dtype.name}]", repr(arr.tolist()))
    if isinstance(value, BFloat16):
        return _Leaf(dtype="bfloat16", array=np.asarray(value.values, dtype=np.float32))
    if isinstance(value, Summary):
        return _Leaf(dtype=value.dtype, array=value.sample, summary=value)
    if isinstance(value, bool):
        return _Leaf(dtype="bool", array=np.array(value))
    if isinstance(value, int):
        for dtype in (np.int64, np.uint64):
            try:
                return _Leaf(dtype=np.dtype(dtype).name, array=np.array(value, dtype=dtype))
            except OverflowError:
                continue
        return _token("int", repr(value))
    if isinstance(value, float):
        return _Leaf(dtype="float64", array=np.array(value, dtype=np.float64))
    if isinstance(value, complex):
        return _Leaf(dtype="complex128", array=np.array(value, dtype=np.complex128))
    if isinstance(value, Opaque):
        return _token(value.type, value.repr)
    if value is None:
        return _token("None", "None")
    return _token(type(value).__name__, repr(value))


# --------------------------------------------------------------------------------------------
# One leaf position across libraries


class _Stack:
    """One numeric leaf position across rows (libraries, then the reference if any).

    Values are stacked as ``(rows, size)``: exactly (uint64 bits and sign) when every row is
    bool or integer, else in float64 (complex128 if any row is complex). Masks are computed
    on demand, on components (a complex number is two floats).
    """

    def __init__(
        self,
        leaves: Sequence[_Leaf],
        libs: int,
        floor: tuple[float, float] = (0.0, 0.0),
        normwise: bool = False,
    ) -> None:
        arrays = [leaf.array for leaf in leaves if leaf.array is not None]
        assert len(arrays) == len(leaves), "a numeric position holds arrays only"
        self.libs = libs  # rows before this are libraries; a row after them is the reference
        self.dtypes = [leaf.dtype for leaf in leaves]  # (bfloat16 rows hold float32 arrays)
        self.size = arrays[0].size
        kinds = {a.dtype.kind for a in arrays}
        tols = [TOLERANCE[leaf.dtype] for leaf in leaves]
        # a floating result is never held to more than its input's precision
        self.rtol = np.array([max(t[0], floor[0]) if t[0] else 0.0 for t in tols])
        self.atol = np.array([max(t[1], floor[1]) if t[1] else 0.0 for t in tols])
        self.is_float = np.array([a.dtype.kind in "fc" for a in arrays])
        self.exact = kinds <= {"b", "i", "u"}
        if normwise and not self.exact:
            # an output summed from many products (a convolution, a normalization) is held to
            # its dtype's precision relative to the output's largest magnitude: a position
            # that cancels to near zero carries the rounding of the terms it summed
            scale = np.array([_largest_finite(a) for a in arrays])
            self.atol = np.maximum(self.atol, self.rtol * scale)
        self.complex = "c" in kinds
        # complex results against real ones (a documented complex norm): a real row has no
        # imaginary part to hold a NaN, so NaN is compared per number, a complex number with
        # a NaN part being NaN (numpy.isnan); nan+nanj against nan is one NaN, while inf+nanj
        # against inf still differs (a real result has an imaginary part 0)
        self.mixed = self.complex and kinds != {"c"}
        self._arrays = [a.reshape(self.size) for a in arrays]

    @cached_property
    def values(self) -> np.ndarray:
        dtype = np.complex128 if self.complex else np.float64
        with np.errstate(invalid="ignore", over="ignore"):  # the values are what they are
            return np.stack(self._arrays).astype(dtype, copy=False)

    @cached_property
    def bits(self) -> np.ndarray:
        return np.stack([a.astype(np.uint64) for a in self._arrays])

    @cached_property
    def negative(self) -> np.ndarray:
        return np.stack([a < 0 for a in self._arrays])

    @cached_property
    def parts(self) -> np.ndarray:
        """Real components: the values, or (re, im) pairs side by side for complex."""
        return self.values.view(np.float64) if self.complex else self.values

    @cached_property
    def finite(self) -> np.ndarray:
        return np.isfinite(self.values)

    @cached_property
    def all_finite(self) -> bool:
        return bool(self.finite.all())

    @cached_property
    def any_zero(self) -> bool:
        return bool(self.zero.any())

    @cached_property
    def nan(self) -> np.ndarray:
        if self.mixed:
            parts = self.parts.reshape(len(self._arrays), self.size, 2)
            number = np.isnan(parts).any(axis=2)
            return np.repeat(number, 2, axis=1)
        return np.isnan(self.parts)

    @cached_property
    def posinf(self) -> np.ndarray:
        return self.parts == np.inf

    @cached_property
    def neginf(self) -> np.ndarray:
        return self.parts == -np.inf

    @cached_property
    def zero(self) -> np.ndarray:
        return self.parts == 0

    @cached_property
    def sign(self) -> np.ndarray:
        return np.signbit(self.parts)

    def quiet(self, check: str) -> bool:
        """Whether no two rows can disagree on a mask ``check`` (no NaN, inf or zero at all)."""
        if self.exact:
            return True
        if check == "signed-zero":
            return not self.any_zero
        return self.all_finite

    def mismatch(self, check: str, r: int) -> np.ndarray | None:
        """Positions where each row disagrees with row ``r`` on ``check``; None: none can."""
        if check == "value":
            return self._value_mismatch(r)
        if self.exact or (check != "signed-zero" and self.all_finite):
            return None
        if check == "nan":
            return self.nan != self.nan[r]
        if check == "inf":
            return (self.posinf != self.posinf[r]) | (self.neginf != self.neginf[r])
        if check == "signed-zero":
            if not self.any_zero:
                return None
            both_float = (self.is_float & self.is_float[r])[:, None]
            return self.zero & self.zero[r] & (self.sign != self.sign[r]) & both_float
        raise ValueError(f"unknown check {check!r}")

    def _value_mismatch(self, r: int) -> np.ndarray:
        if self.exact:
            return (self.bits != self.bits[r]) | (self.negative != self.negative[r])
        a = self.values
        b = a[r]
        rtol = np.maximum(self.rtol, self.rtol[r])[:, None]
        atol = np.maximum(self.atol, self.atol[r])[:, None]
        with np.errstate(all="ignore"):
            limit = atol + rtol * np.maximum(np.abs(a), np.abs(b))
            return (np.abs(a - b) > limit) & self.finite & self.finite[r]

    def conflicts(self, check: str) -> np.ndarray:
        """``(rows, rows)``: whether two rows disagree on ``check`` anywhere (all pairs at
        once when the pairwise temporaries are small, else row by row)."""
        rows = len(self.rtol)
        if rows * rows * self.size > PAIRWISE_LIMIT:
            found = [self.mismatch(check, r) for r in range(rows)]
            if any(bad is None for bad in found):
                return np.zeros((rows, rows), dtype=bool)
            return np.stack([bad.any(axis=1) for bad in found if bad is not None])
        if check == "signed-zero":
            zero, sign = self.zero, self.sign
            both = np.logical_and.outer(self.is_float, self.is_float)[..., None]
            bad = zero[:, None] & zero[None] & (sign[:, None] != sign[None]) & both
        elif check != "value":
            raise ValueError(f"pairwise conflicts are for value and signed-zero, not {check!r}")
        elif self.exact:
            bits, neg = self.bits, self.negative
            bad = (bits[:, None] != bits[None]) | (neg[:, None] != neg[None])
        else:
            a, fin = self.values, self.finite
            rtol = np.maximum.outer(self.rtol, self.rtol)[..., None]
            atol = np.maximum.outer(self.atol, self.atol)[..., None]
            with np.errstate(all="ignore"):
                mag = np.abs(a)
                limit = atol + rtol * np.maximum(mag[:, None], mag[None])
                bad = (np.abs(a[:, None] - a[None]) > limit) & fin[:, None] & fin[None]
        return bad.any(axis=2)

    def signed_zero_split(self) -> bool:
        """Whether two float library rows hold 0.0 and -0.0 at the same position."""
        if self.exact or not self.any_zero:
            return False
        floats = self.is_float[: self.libs, None]
        zero, sign = self.zero[: self.libs] & floats, self.sign[: self.libs]
        return bool(((zero & sign).any(axis=0) & (zero & ~sign).any(axis=0)).any())

    def values_surely_agree(self) -> bool:
        """A cheap sufficient test that every pair of library rows agrees on values.

        The spread of a column bounds every pair's difference, and the tightest pair limit is
        at least the smallest tolerance applied to the smallest magnitude.
        """
        if self.exact:
            return not bool(self._value_mismatch(0)[: self.libs].any())
        if self.complex:
            return False
        a = self.values[: self.libs]
        fin = self.finite[: self.libs]
        with np.errstate(all="ignore"):
            if fin.all():
                spread = a.max(axis=0) - a.min(axis=0)
                small = np.abs(a).min(axis=0)
                bound = self.atol[: self.libs].min() + self.rtol[: self.libs].min() * small
                return bool((spread <= bound).all())
            hi = np.max(a, axis=0, where=fin, initial=-np.inf)
            lo = np.min(a, axis=0, where=fin, initial=np.inf)
            small = np.min(np.abs(a), axis=0, where=fin, initial=np.inf)
            bound = self.atol[: self.libs].min() + self.rtol[: self.libs].min() * small
            return bool(((hi - lo <= bound) | (fin.sum(axis=0) < 2)).all())

    note = ""  # said once after an explanation that used this leaf

    def value_example(self, odd: int, major: int) -> tuple[str, str, str] | None:
        """At the first position where row ``odd``'s value departs from row ``major``'s:
        each value with the digits that tell them apart (:func:`_digits`), and a note with
        the dtype, the distance (ULPs in one floating dtype, else the relative error) and
        the reference's value where there is one. None where they do not depart."""
        bad = _Stack.mismatch(self, "value", major)
        if bad is None or not bad[odd].any():
            return None
        i = int(np.argmax(bad[odd]))
        a, b = self._arrays[odd], self._arrays[major]
        x, y = a[i], b[i]
        da, db = self.dtypes[odd], self.dtypes[major]
        notes = [da if da == db else f"{da} vs {db}"]
        ulps = _ulps(x, y) if da == db == a.dtype.name == b.dtype.name else None
        if ulps is not None and ulps <= MAX_ULPS_SHOWN:
            notes[0] += f", {ulps} ULP"
        elif not self.exact and not self.complex:
            with np.errstate(all="ignore"):
                scale = max(abs(float(x)), abs(float(y)))
                if scale > 0 and math.isfinite(scale):
                    notes[0] += f", relative error {abs(float(x) - float(y)) / scale:.2g}"
        if len(self._arrays) > self.libs:  # the reference row
            ref, name = self._arrays[self.libs][i], self.dtypes[self.libs]
            label = "float64 reference" if name == "float64" else f"reference in {name}"
            notes.append(f"{label} {_digits(ref)}")
        return _digits(x), _digits(y), "; ".join(notes)

    def tally(self, check: str, odd: int, major: int) -> tuple[int, int, str]:
        """For :meth:`_Rows.explain`: positions where row ``odd`` has what row ``major`` has
        not, the other way round, and an example (``"x vs y"``), on ``check``."""
        if check == "value":
            bad = _Stack.mismatch(self, "value", major)
            if bad is None or not bad[odd].any():
                return 0, 0, ""
            i = int(np.argmax(bad[odd]))
            vals = self._arrays if self.exact else self.values
            return int(bad[odd].sum()), 0, f"{_fmt(vals[odd][i])} vs {_fmt(vals[major][i])}"
        if self.exact:
            return 0, 0, ""
        if check == "nan":
            nan = self.nan
            return int((nan[odd] & ~nan[major]).sum()), int((nan[major] & ~nan[odd]).sum()), ""
        if check == "inf":
            bad = _Stack.mismatch(self, "inf", major)
            if bad is None or not bad[odd].any():
                return 0, 0, ""
            i = int(np.argmax(bad[odd]))
            return (
                int(bad[odd].sum()),
                0,
                f"{_fmt(self.parts[odd][i])} vs {_fmt(self.parts[major][i])}",
            )
        if check == "signed-zero":
            both = self.zero[odd] & self.zero[major]
            sign = self.sign
            return (
                int((both & sign[odd] & ~sign[major]).sum()),
                int((both & sign[major] & ~sign[odd]).sum()),
                "",
            )
        return 0, 0, ""

    def divergence(self) -> float:
        """This leaf's share of :func:`divergence` (rows are libraries only)."""
        if self.size == 0:
            return 0.0
        score = 0.0
        if self.exact:
            if not self._value_mismatch(0).any():
                return 0.0
            spread = float((self.values.max(axis=0) - self.values.min(axis=0)).max())
            # One integer step is 1 (and huge int64 may round together in float64).
            return DIVERGENCE_WEIGHTS["value"] * _squash(max(spread, 1.0))
        if not self.all_finite:
            for kind, masks in (("nan", (self.nan,)), ("inf", (self.posinf, self.neginf))):
                split = np.zeros(self.parts.shape[1], dtype=bool)
                for mask in masks:
                    split |= mask.any(axis=0) & ~mask.all(axis=0)
                if split.any():
                    weight = DIVERGENCE_WEIGHTS[kind] * (0.75 + 0.25 * float(split.mean()))
                    score = max(score, weight)
        if self.any_zero and self.is_float.all():
            sign = self.sign
            if (self.zero.all(axis=0) & sign.any(axis=0) & ~sign.all(axis=0)).any():
                score = max(score, DIVERGENCE_WEIGHTS["signed-zero"])
        a = self.values
        rtol, atol = float(self.rtol.max()), float(self.atol.max())
        with np.errstate(all="ignore"):
            if self.complex:
                spread = np.abs(a - a[0]).max(axis=0)
            else:
                spread = a.max(axis=0) - a.min(axis=0)
            ratio = spread / (atol + rtol * np.abs(a).max(axis=0))
        if not self.all_finite:
            ratio = ratio[self.finite.all(axis=0)]
        worst = float(ratio.max()) if ratio.size else 0.0
        return max(score, DIVERGENCE_WEIGHTS["value"] * _squash(worst))


def _squash(x: float) -> float:
    """Map [0, inf] onto [0, 1): x / (1 + x)."""
    if math.isnan(x) or x <= 0:
        return 0.0
    if math.isinf(x):
        return 1.0
    return x / (1.0 + x)


_COUNTS = ("nan", "posinf", "neginf", "zero", "negzero")


class _SummaryStack(_Stack):
    """A leaf position where some library's output came summarized (see
    :mod:`xamt.oracle.summary`): every row is summarized, compared on its sample (rows of
    ``SAMPLE_SIZE`` values, as a whole array's) and on its whole-array facts. A fact that
    differs adds one column to :meth:`mismatch`: NaN or inf counts (masks), the count of
    negative zeros among equally many zeros (signed zero), the finite range beyond tolerance
    where the masks agree, and the digest of integer outputs of one dtype (values)."""

    def __init__(
        self, leaves: Sequence[_Leaf], libs: int, floor: tuple[float, float] = (0.0, 0.0)
    ) -> None:
        self.sums = [_summary_of(leaf) for leaf in leaves]
        self.dtypes = [leaf.dtype for leaf in leaves]
        super().__init__(
            [_Leaf(leaf.dtype, s.sample) for leaf, s in zip(leaves, self.sums, strict=True)],
            libs,
            floor,
        )
        self.counts = {
            name: np.array(
                [np.nan if getattr(s, name) is None else float(getattr(s, name)) for s in self.sums]
            )
            for name in _COUNTS
        }
        total = self.sums[0].size
        self.note = (
            f"summarized: values compared at {self.size} of {total} positions, "
            "NaN/inf/zero counts and finite range over all"
        )

    def _differs(self, name: str, r: int) -> np.ndarray:
        a = self.counts[name]
        found = (a != a[r]) & ~np.isnan(a) & ~np.isnan(a[r])
        if self.mixed and name == "nan":
            # a summary counts NaN parts: a complex row's count is not a real row's (the
            # sample's masks compare them per number)
            complex_rows = np.array([x.dtype.kind == "c" for x in self._arrays])
            found &= complex_rows == complex_rows[r]
        return found

    def _gap(self, i: int, r: int) -> float:
        """How far row ``i``'s whole-array values are from row ``r``'s: the finite range's
        distance in tolerances (integers: in units; a digest differing at one dtype: 1).
        0 where the masks differ: a NaN is never also a value mismatch."""
        a, b = self.sums[i], self.sums[r]
        if self.exact:
            gap = 0.0
            for x, y in ((a.low, b.low), (a.high, b.high)):
                if x is not None and y is not None and x != y:
                    gap = max(gap, float(abs(int(x) - int(y))))
            same_dtype = self.dtypes[i] == self.dtypes[r]
            if not gap and same_dtype and a.digest and b.digest and a.digest != b.digest:
                gap = 1.0
            return gap
        for name in ("nan", "posinf", "neginf"):
            x, y = getattr(a, name), getattr(b, name)
            if x is None or y is None or x != y:
                return 0.0
        if not self.all_finite and any(
            (mask[i] != mask[r]).any() for mask in (self.nan, self.posinf, self.neginf)
        ):
            return 0.0  # as many NaNs, at other positions: the ranges cover other positions
        if (self._arrays[i].dtype.kind == "c") != (self._arrays[r].dtype.kind == "c"):
            return 0.0  # a complex range covers imaginary parts too
        rtol = max(float(self.rtol[i]), float(self.rtol[r]))
        atol = max(float(self.atol[i]), float(self.atol[r]))
        gap = 0.0
        for x, y in ((a.low, b.low), (a.high, b.high)):
            if x is None or y is None or float(x) == float(y):
                continue
            diff = abs(float(x) - float(y))
            limit = atol + rtol * max(abs(float(x)), abs(float(y)))
            gap = max(gap, diff / limit if limit > 0 else math.inf)
        return gap

    def _extra(self, check: str, r: int) -> np.ndarray:
        """Per row, whether its whole-array facts disagree with row ``r``'s on ``check``."""
        rows = len(self.sums)
        if check == "nan":
            return self._differs("nan", r)
        if check == "inf":
            return self._differs("posinf", r) | self._differs("neginf", r)
        if check == "signed-zero":
            zeros = self.counts["zero"]
            same = zeros == zeros[r]  # as many zeros (unknown compares false) ...
            if self.any_zero:  # ... at the same sampled positions
                same &= ~(self.zero != self.zero[r]).any(axis=1)
            return self.is_float & self.is_float[r] & same & self._differs("negzero", r)
        if check == "value":
            limit = 0.0 if self.exact else 1.0
            return np.array([self._gap(i, r) > limit for i in range(rows)])
        raise ValueError(f"unknown check {check!r}")

    def mismatch(self, check: str, r: int) -> np.ndarray | None:
        bad = super().mismatch(check, r)
        extra = self._extra(check, r)
        if not extra.any():
            return bad
        if bad is None:
            width = self.parts.shape[1] if check in ("nan", "inf", "signed-zero") else self.size
            bad = np.zeros((len(self.sums), width), dtype=bool)
        return np.concatenate([bad, extra[:, None]], axis=1)

    def conflicts(self, check: str) -> np.ndarray:
        rows = len(self.sums)
        found = [self.mismatch(check, r) for r in range(rows)]
        return np.stack(
            [np.zeros(rows, dtype=bool) if bad is None else bad.any(axis=1) for bad in found]
        )

    def _facts_differ(self, check: str, rows: int) -> bool:
        return any(self._extra(check, r)[:rows].any() for r in range(rows))

    def quiet(self, check: str) -> bool:
        return super().quiet(check) and not self._facts_differ(check, len(self.sums))

    def signed_zero_split(self) -> bool:
        return super().signed_zero_split() or self._facts_differ("signed-zero", self.libs)

    def values_surely_agree(self) -> bool:
        return super().values_surely_agree() and not self._facts_differ("value", self.libs)

    def divergence(self) -> float:
        score = super().divergence()
        rows = len(self.sums)
        for kind in ("nan", "inf"):
            if self._facts_differ(kind, rows):
                score = max(score, DIVERGENCE_WEIGHTS[kind] * 0.75)
        if self._facts_differ("signed-zero", rows):
            score = max(score, DIVERGENCE_WEIGHTS["signed-zero"])
        worst = max(self._gap(i, r) for i in range(rows) for r in range(rows))
        if self.exact and worst > 0:
            worst = max(worst, 1.0)
        return max(score, DIVERGENCE_WEIGHTS["value"] * _squash(worst))

    def tally(self, check: str, odd: int, major: int) -> tuple[int, int, str]:
        first, second, example = super().tally(check, odd, major)
        if not self._extra(check, major)[odd]:
            return first, second, example
        a, b = self.sums[odd], self.sums[major]
        if check in ("nan", "signed-zero"):  # whole-array counts: how many at least
            name = "nan" if check == "nan" else "negzero"
            x, y = getattr(a, name) or 0, getattr(b, name) or 0
            return max(0, x - y), max(0, y - x), example
        if example:
            return first, second, example
        if check == "inf":
            return first, second, f"{_infs(a)} vs {_infs(b)}"
        if a.low != b.low or a.high != b.high:
            finite = "" if self.exact else "finite "
            return first, second, f"{finite}range {_range(a)} vs {_range(b)}"
        return first, second, f"digest {a.digest} vs {b.digest}"


def _summary_of(leaf: _Leaf) -> Summary:
    if leaf.summary is not None:
        return leaf.summary
    assert leaf.array is not None, "a numeric position holds arrays only"
    value = BFloat16(leaf.array) if leaf.dtype == "bfloat16" else leaf.array
    return summaries.as_summary(value)


def _infs(s: Summary) -> str:
    return f"{s.posinf} +inf and {s.neginf} -inf"


def _range(s: Summary) -> str:
    return f"[{_fmt(s.low)}, {_fmt(s.high)}]"


def _largest_finite(a: np.ndarray) -> float:
    if a.dtype.kind not in "fc" or a.size == 0:
        return 0.0
    mag = np.abs(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64))
    finite = mag[np.isfinite(mag)]
    return float(finite.max()) if finite.size else 0.0


def _stack(
    leaves: Sequence[_Leaf],
    libs: int,
    floor: tuple[float, float] = (0.0, 0.0),
    normwise: bool = False,
) -> _Stack:
    """The stack for one leaf position: summarized when any output there is."""
    for leaf in leaves:
        if leaf.summary is not None:
            return _SummaryStack(leaves, libs, floor)
    return _Stack(leaves, libs, floor, normwise)


# --------------------------------------------------------------------------------------------
# Partitions into agreeing classes


class _Class(NamedTuple):
    members: tuple[int, ...]  # row indices, ascending
    ref: bool | None  # whether the class agrees with the reference; None: no reference


def _group(keys: Sequence[Hashable], ref_key: Hashable | None = None) -> list[_Class]:
    """Classes of equal keys, in order of first appearance."""
    found: dict[Hashable, list[int]] = {}
    for i, key in enumerate(keys):
        found.setdefault(key, []).append(i)
    return [
        _Class(members=tuple(m), ref=None if ref_key is None else key == ref_key)
        for key, m in found.items()
    ]


def _resolve(classes: Sequence[_Class]) -> tuple[_Class, list[_Class], str]:
    """The majority class, the odd classes (in order) and a note on how a tie was broken."""
    top = max(len(c.members) for c in classes)
    tied = [c for c in classes if len(c.members) == top]
    winner, note = tied[0], ""
    if len(tied) > 1:
        agreeing = [c for c in tied if c.ref]
        if len(agreeing) == 1:
            winner, note = agreeing[0], " (tie broken by the float64 reference)"
        else:
            note = " (tie without a deciding reference: the first class is kept)"
    return winner, [c for c in classes if c is not winner], note


class _Rows:
    """The leaves of the compared libraries (and of the reference, as a last row)."""

    def __init__(
        self,
        flats: Sequence[_Flat],
        has_ref: bool,
        floor: tuple[float, float] = (0.0, 0.0),
        normwise: bool = False,
    ) -> None:
        self.libs = len(flats) - (1 if has_ref else 0)
        self.has_ref = has_ref
        self.stacks: list[_Stack] = []
        self.tokens: list[list[tuple[str, str]]] = []
        for position in zip(*(f.leaves for f in flats), strict=True):
            if position[0].array is not None:
                self.stacks.append(_stack(position, self.libs, floor, normwise))
            else:
                self.tokens.append([leaf.token or ("", "") for leaf in position])

    def agree(self, check: str, r: int) -> np.ndarray:
        """Which rows agree with row ``r`` on ``check``, over every leaf."""
        ok = np.ones(self.libs + self.has_ref, dtype=bool)
        for stack in self.stacks:
            bad = stack.mismatch(check, r)
            if bad is not None:
                ok &= ~bad.any(axis=1)
        if check == "value":
            for tokens in self.tokens:
                ok &= np.array([t == tokens[r] for t in tokens])
        return ok

    def partition(self, check: str) -> list[_Class] | None:
        """Classes of libraries agreeing on ``check``; None when all of them agree."""
        if check == "value":
            if all(s.values_surely_agree() for s in self.stacks) and all(
                t == tokens[0] for tokens in self.tokens for t in tokens[: self.libs]
            ):
                return None
            return self._cliques(check)
        if all(s.quiet(check) for s in self.stacks):
            return None
        if check == "signed-zero":
            if not any(s.signed_zero_split() for s in self.stacks):
                return None
            return self._cliques(check)
        first = self.agree(check, 0)
        # Mask agreement is an equivalence: greedy classes are the equivalence classes.
        return None if first[: self.libs].all() else self._classes_exact(check, first)

    def conflicts(self, check: str) -> np.ndarray:
        """``(rows, rows)``: whether two rows disagree on ``check`` anywhere."""
        rows = self.libs + self.has_ref
        conflicts = np.zeros((rows, rows), dtype=bool)
        for stack in self.stacks:
            conflicts |= stack.conflicts(check)
        if check == "value":
            for tokens in self.tokens:
                conflicts |= np.array([[a != b for b in tokens] for a in tokens])
        return conflicts

    def _ref(self, agree: np.ndarray) -> bool | None:
        return bool(agree[self.libs]) if self.has_ref else None

    def _classes_exact(self, check: str, first: np.ndarray) -> list[_Class]:
        classes: list[_Class] = []
        unassigned = np.ones(self.libs, dtype=bool)
        agree = first
        while True:
            rep = int(np.argmax(unassigned))
            if classes:
                agree = self.agree(check, rep)
            members = agree[: self.libs] & unassigned
            members[rep] = True
            classes.append(
                _Class(members=tuple(int(i) for i in np.flatnonzero(members)), ref=self._ref(agree))
            )
            unassigned &= ~members
            if not unassigned.any():
                return classes

    def _cliques(self, check: str) -> list[_Class] | None:
        """Classes when agreement is not transitive (tolerance; a zero's sign, which only
        matters where both are zero): cliques of mutual agreement, best connected first."""
        n = self.libs
        full = ~self.conflicts(check)
        pair = full[:n, :n]
        if pair.all():
            return None
        agree: list[list[bool]] = pair.tolist()  # a handful of libraries: plain Python
        refs: list[bool] = full[:, n].tolist() if self.has_ref else []
        classes: list[_Class] = []
        left = set(range(n))
        while left:
            degree = {i: sum(agree[i][j] for j in left) for i in left}
            rep = min(left, key=lambda i: (-degree[i], i))  # the best connected, then the first
            members = [rep]
            for j in sorted(left - {rep}, key=lambda i: (-degree[i], i)):
                if all(agree[j][k] for k in members):
                    members.append(j)
            ref = refs[rep] if refs else None
            classes.append(_Class(members=tuple(sorted(members)), ref=ref))
            left -= set(members)
        return sorted(classes, key=lambda c: c.members[0])

    def explain(self, check: str, odd_class: _Class, major_class: _Class, who: _Who) -> str:
        """One line about the first odd library against the majority on a per-leaf check."""
        odd = odd_class.members[0]
        agree = self.agree(check, odd)  # show a majority library that this one disagrees with
        major = next((m for m in major_class.members if not agree[m]), major_class.members[0])
        first = second = 0
        example = ""
        notes: list[str] = []
        for stack in self.stacks:
            f, g, ex = stack.tally(check, odd, major)
            first, second, example = first + f, second + g, example or ex
            if (f or g or ex) and stack.note and stack.note not in notes:
                notes.append(stack.note)
        if check == "value":
            for tokens in self.tokens:
                if tokens[odd] != tokens[major]:
                    first += 1
                    if not example:
                        example = f"{_short(tokens[odd][1])} vs {_short(tokens[major][1])}"
        o, m, oh, mh = who.odd, who.major, who.odd_has, who.major_has
        if check == "nan":
            parts = [
                f"{o} {oh} NaN at {_n(first)} where {m} {mh} none" if first else "",
                f"{m} {mh} NaN at {_n(second)} where {o} {oh} none" if second else "",
            ]
        elif check == "signed-zero":
            parts = [
                f"{o} {oh} -0.0 where {m} {mh} 0.0 at {_n(first)}" if first else "",
                f"{o} {oh} 0.0 where {m} {mh} -0.0 at {_n(second)}" if second else "",
            ]
        else:
            where = f"at {_n(first)}" if first else "outside the sampled positions"
            shown = self._value_example(odd, major) if check == "value" else None
            if shown is not None:
                x, y, note = shown
                odd_gives = "gives" if who.odd_has == "has" else "give"
                major_gives = "gives" if who.major_has == "has" else "give"
                example = f"{o} {odd_gives} {x} where {m} {major_gives} {y}; {note}"
            parts = [f"{o} {who.odd_differs} from {m} {where} (e.g. {example})"]
        text = f"{_TITLES[check]}: " + "; ".join(p for p in parts if p)
        return text + "".join(f" ({note})" for note in notes)

    def _value_example(self, odd: int, major: int) -> tuple[str, str, str] | None:
        """The first leaf's :meth:`_Stack.value_example` (a summarized one: on its sample)."""
        for stack in self.stacks:
            if isinstance(stack, _Stack):
                found = stack.value_example(odd, major)
                if found is not None:
                    return found
        return None


_TITLES = {"nan": "nan mask", "inf": "inf mask", "signed-zero": "signed zero", "value": "value"}


@dataclass(frozen=True)
class _Who:
    """The names of the first odd class and of the majority, with verbs that agree."""

    odd: str
    major: str
    odd_has: str
    major_has: str
    odd_differs: str

    @classmethod
    def of(cls, libs: Sequence[str], odd: _Class, major: _Class) -> _Who:
        single_odd, single_major = len(odd.members) == 1, len(major.members) == 1
        return cls(
            odd=", ".join(libs[i] for i in odd.members),
            major=", ".join(libs[i] for i in major.members),
            odd_has="has" if single_odd else "have",
            major_has="has" if single_major else "have",
            odd_differs="differs" if single_odd else "differ",
        )


def _fmt(x: Any) -> str:
    if isinstance(x, complex | np.complexfloating):
        return f"{complex(x):.6g}"
    if isinstance(x, float | np.floating):
        x = float(x)
        return repr(x) if not math.isfinite(x) or x == 0 else f"{x:.7g}"
    return str(x)


# Past this many ULPs apart, the relative error says more than the count of values between.
MAX_ULPS_SHOWN = 1 << 20


def _digits(x: Any) -> str:
    """A value with the digits that tell it apart from any other of its dtype: the shortest
    repr that round-trips at the value's own dtype (float32's -0.74565965, not
    -0.7456596)."""
    if isinstance(x, np.floating | np.complexfloating | np.integer | np.bool_):
        return str(x)
    return _fmt(x)


def _ulps(x: Any, y: Any) -> int | None:
    """How many representable values of their (one, floating) dtype lie between two finite
    values; None for other values."""
    if not (isinstance(x, np.floating) and isinstance(y, np.floating)) or x.dtype != y.dtype:
        return None
    if not (np.isfinite(x) and np.isfinite(y)) or x.dtype.itemsize not in (2, 4, 8):
        return None
    bits = 8 * x.dtype.itemsize
    unsigned = np.dtype(f"u{x.dtype.itemsize}")

    def order(v: Any) -> int:
        i = int(np.array(v).view(unsigned))
        magnitude = i & ((1 << (bits - 1)) - 1)
        return -magnitude if i >> (bits - 1) else magnitude

    return abs(order(x) - order(y))


def _short(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _n(count: int) -> str:
    return f"{count} position" + ("" if count == 1 else "s")


def _finding(
    kind: str,
    libs: Sequence[str],
    classes: Sequence[_Class],
    explain: Callable[[_Class, _Class, _Who], str],
) -> Discrepancy:
    """A Discrepancy naming every library outside the majority class."""
    major, odd_classes, note = _resolve(classes)
    odd = sorted(libs[i] for c in odd_classes for i in c.members)
    text = explain(odd_classes[0], major, _Who.of(libs, odd_classes[0], major))
    others = [libs[i] for c in odd_classes[1:] for i in c.members]
    also = f" (also odd: {', '.join(others)})" if others else ""
    return Discrepancy(kind=kind, odd=tuple(odd), detail=f"{text}{also}{note}")


# --------------------------------------------------------------------------------------------
# Public functions


def compare(
    outcomes: Mapping[str, Outcome], *, reference: Outcome | None = None
) -> list[Discrepancy]:
    """Return the discrepancies among one case's outcomes, one per kind at most.

    Args:
        outcomes: library name -> what it did with the case; this order breaks ties.
        reference: an optional float64 reference outcome (e.g. numpy on upcast inputs); when
            it returned, it decides ties between equally large classes of agreeing libraries.

    Returns:
        Discrepancies in the order of :data:`xamt.types.DISCREPANCY_KINDS`, ``odd`` sorted.
    """
    live = {lib: o for lib, o in outcomes.items() if o.status not in IGNORED_STATUSES}
    found: list[Discrepancy] = []
    for kind in FATAL_KINDS:
        odd = sorted(lib for lib, o in live.items() if o.status == kind)
        if odd:
            found.append(_fatal(kind, odd, live))
    returned = [lib for lib, o in live.items() if o.status == "ok"]
    raised = [lib for lib, o in live.items() if o.status == "error"]
    if returned and raised:
        found.append(_status(returned, raised, live))
    if len(returned) >= 2:
        has_ref = reference is not None and reference.status == "ok"
        ref = reference.value if reference is not None and has_ref else None
        found.extend(
            _compare_returned(returned, [live[lib].value for lib in returned], ref, has_ref)
        )
    return found


def _status(returned: list[str], raised: list[str], live: Mapping[str, Outcome]) -> Discrepancy:
    """The minority side is odd; on a tie, the side that raised."""
    odd_raised = len(raised) <= len(returned)
    odd, major = (raised, returned) if odd_raised else (returned, raised)
    error = _error_text(live[sorted(odd)[0]]) if odd_raised else ""
    verbs = ("raised", "returned") if odd_raised else ("returned", "raised")
    detail = f"status: {', '.join(odd)} {verbs[0]} where {', '.join(major)} {verbs[1]}"
    if error:
        detail += f" ({_short(error, 120)})"
    return Discrepancy(kind="status", odd=tuple(sorted(odd)), detail=detail, error=error)


def _fatal(kind: str, odd: list[str], live: Mapping[str, Outcome]) -> Discrepancy:
    names = ", ".join(odd)
    if kind == "crash":
        first = live[odd[0]]
        error = first.signal or (f"exit {first.exit_code}" if first.exit_code is not None else "")
        how = f" ({error})" if error else ""
        return Discrepancy(kind=kind, odd=tuple(odd), detail=f"{names} crashed{how}", error=error)
    if kind == "hang":
        return Discrepancy(kind=kind, odd=tuple(odd), detail=f"{names} missed the deadline")
    return Discrepancy(kind=kind, odd=tuple(odd), detail=f"{names} exceeded the memory cap")


def _error_text(outcome: Outcome) -> str:
    """``"<ExceptionType>: <first line of the message>"`` of an outcome that raised.

    The first line is the first informative one (see :func:`xamt.oracle.signature.headline`).
    """
    if outcome.error is None:
        return headline(outcome.detail)
    line = headline(outcome.error.message)
    return f"{outcome.error.type}: {line}" if line else outcome.error.type


@dataclass(frozen=True)
class Partition:
    """How the libraries that returned split on one output kind.

    ``classes`` are tuples of indices into ``libs``: libraries whose outputs agree with each
    other; ``ref`` says per class whether it agrees with the float64 reference (``None``
    without one). :meth:`describe` words one class against another for a finding's detail.
    """

    kind: str
    libs: tuple[str, ...]
    classes: tuple[_Class, ...]
    explain: Callable[[_Class, _Class, _Who], str]
    keys: tuple[Any, ...] = ()  # per class, what its members share (the dtypes, for "dtype")

    def names(self, c: _Class) -> tuple[str, ...]:
        return tuple(self.libs[i] for i in c.members)

    def describe(self, odd: _Class, major: _Class) -> str:
        return self.explain(odd, major, _Who.of(self.libs, odd, major))


def partitions(
    libs: Sequence[str],
    values: Sequence[Any],
    reference: Any = None,
    *,
    has_ref: bool = False,
    input_dtype: str | None = None,
    normwise: bool = False,
) -> list[Partition]:
    """The output kinds on which the libraries that returned ``values`` disagree, each with
    its classes of agreeing libraries, in reporting order.

    ``reference`` (when ``has_ref``) is a reference output; it is cast to the libraries'
    floating dtype first, so a float64 result beyond that dtype's range counts as the
    overflow the dtype must show. A shape split leaves only the largest class (the first on a
    tie) for the later kinds. ``input_dtype``, a floating dtype, is a floor for the
    tolerance of floating results: a float16 input computed in float32 is compared at
    float16's precision. ``normwise``: each output's absolute tolerance is at least its
    relative tolerance times the output's largest finite magnitude (sums of many products).
    """
    found: list[Partition] = []
    libs = list(libs)
    flats = [_flatten(v) for v in values]
    if _identical(flats):
        return found
    ref = _flatten(reference) if has_ref else None

    shape = _shape_partition(libs, flats, ref)
    if shape is not None:
        found.append(shape)
        major = _resolve(list(shape.classes))[0].members
        libs = [libs[i] for i in major]
        flats = [flats[i] for i in major]
        if len(libs) < 2:
            return found
    dtypes = [f.dtypes for f in flats]
    if any(d != dtypes[0] for d in dtypes):
        found.append(_dtype_partition(libs, dtypes))

    if ref is not None and ref.layout != flats[0].layout:
        ref = None  # a reference of another shape cannot break ties
    if ref is not None:
        ref = _at_lowest_precision(ref, flats)
    if any(d != dtypes[0] for d in dtypes):
        # float64 beside float32 results is compared in float32, as the reference is: numpy's
        # finite 1.8e307 histogram edge against the float32 libraries' inf is their dtype (a
        # finding of its own above), not an inf mask numpy departs from
        flats = [_at_lowest_precision(f, flats) for f in flats]
    floor = TOLERANCE.get(input_dtype or "", (0.0, 0.0)) if input_dtype else (0.0, 0.0)
    rows = _Rows(
        flats if ref is None else [*flats, ref],
        has_ref=ref is not None,
        floor=floor,
        normwise=normwise,
    )
    for check in LEAF_CHECKS:
        leaf_classes = rows.partition(check)
        if leaf_classes is not None:
            found.append(
                Partition(check, tuple(libs), tuple(leaf_classes), partial(rows.explain, check))
            )
    return found


def _shape_partition(libs: list[str], flats: list[Any], ref: Any) -> Partition | None:
    """The shape partition, where the layouts (structure and shapes) differ (the reference's
    layout breaks ties)."""
    layouts = [f.layout for f in flats]
    if all(layout == layouts[0] for layout in layouts):
        return None
    classes = _group(layouts, None if ref is None else ref.layout)
    return Partition(
        "shape",
        tuple(libs),
        tuple(classes),
        lambda o, m, who: (
            f"shape: {who.odd} returned {layouts[o.members[0]]} "
            f"where {who.major} returned {layouts[m.members[0]]}"
        ),
    )


def _dtype_partition(libs: list[str], dtypes: list[Any]) -> Partition:
    """The dtype partition: a promotion difference (the reference, float64 by construction,
    has no say)."""
    by_dtype = tuple(_group(dtypes))
    return Partition(
        "dtype",
        tuple(libs),
        by_dtype,
        lambda o, m, who: (
            f"dtype: {who.odd} returned {_dtypes(dtypes[o.members[0]])} "
            f"where {who.major} returned {_dtypes(dtypes[m.members[0]])}"
        ),
        keys=tuple(dtypes[c.members[0]] for c in by_dtype),
    )


# Floating dtypes by precision, lowest first; a reference is rounded to the lowest one the
# libraries return at that position.
_FLOAT_ORDER = ("float16", "bfloat16", "float32", "float64")
_COMPLEX_ORDER = ("complex64", "complex128")


def _at_lowest_precision(ref: _Flat, flats: Sequence[_Flat]) -> _Flat:
    """``ref`` with each floating leaf rounded to the lowest precision ``flats`` hold there."""
    leaves = []
    for i, leaf in enumerate(ref.leaves):
        names = {f.leaves[i].dtype for f in flats}
        target = None
        for order in (_FLOAT_ORDER, _COMPLEX_ORDER):
            if leaf.dtype in order and names <= set(order):
                target = min(names, key=order.index)
        if leaf.array is None or target is None or target == leaf.dtype:
            leaves.append(leaf)
            continue
        np_target = np.float32 if target == "bfloat16" else np.dtype(target)
        if leaf.summary is not None:
            name = "float32" if target == "bfloat16" else target
            cast_summary = summaries.cast(leaf.summary, np.dtype(np_target), name)
            leaves.append(_Leaf(name, cast_summary.sample, summary=cast_summary))
            continue
        with np.errstate(all="ignore"):
            cast = leaf.array.astype(np_target)
        leaves.append(_Leaf(dtype="float32" if target == "bfloat16" else target, array=cast))
    return _Flat(ref.layout, tuple(leaves), tuple(lf.dtype for lf in leaves))


def _compare_returned(
    libs: list[str], values: list[Any], ref: Any, has_ref: bool
) -> list[Discrepancy]:
    """The output kinds among libraries that returned, as majority-vote discrepancies."""
    return [
        _finding(p.kind, p.libs, p.classes, p.explain)
        for p in partitions(libs, values, ref, has_ref=has_ref)
    ]


def _dtypes(names: tuple[str, ...]) -> str:
    return names[0] if len(names) == 1 else "(" + ", ".join(names) + ")"


def divergence(outcomes: Mapping[str, Outcome]) -> float:
    """Score in ``[0, 1]`` how much the libraries disagree on one case; 0 when all agree.

    1.0 for a crash, hang or resource outcome, 0.8 for a status split, 0.7 for a shape
    mismatch; otherwise the largest of: 0.4 for a dtype difference, 0.35 for a signed-zero
    difference, up to 0.6 for NaN/inf mask differences (by the fraction of positions), and
    ``0.6 * x / (1 + x)`` for values, where ``x`` is the largest spread across libraries at a
    finite position divided by its tolerance (for integers, by one). Values inside tolerance
    still score a little, so the schedule can climb toward a mismatch.
    """
    live = [o for o in outcomes.values() if o.status not in IGNORED_STATUSES]
    if any(o.status in FATAL_KINDS for o in live):
        return 1.0
    returned = [o for o in live if o.status == "ok"]
    if returned and any(o.status == "error" for o in live):
        return DIVERGENCE_WEIGHTS["status"]
    if len(returned) < 2:
        return 0.0
    flats = [_flatten(o.value) for o in returned]
    if _identical(flats):
        return 0.0
    if any(f.layout != flats[0].layout for f in flats):
        return DIVERGENCE_WEIGHTS["shape"]
    score = DIVERGENCE_WEIGHTS["dtype"] if any(f.dtypes != flats[0].dtypes for f in flats) else 0.0
    for position in zip(*(f.leaves for f in flats), strict=True):
        if position[0].array is None:
            if any(leaf.token != position[0].token for leaf in position):
                score = max(score, DIVERGENCE_WEIGHTS["value"] / 2)
            continue
        score = max(score, _stack(position, len(position)).divergence())
    return min(1.0, score)


__all__ = [
    "DIVERGENCE_WEIGHTS",
    "FATAL_KINDS",
    "IGNORED_STATUSES",
    "LEAF_CHECKS",
    "Partition",
    "compare",
    "divergence",
    "partitions",
]
