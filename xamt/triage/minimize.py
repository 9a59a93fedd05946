"""Shrink a finding's case while it keeps showing the *same* signature.

Deterministic passes, tried in order until none makes progress or a cap is hit:

0. **dtype**: the same values in the group's validation dtype (float32 for most groups), or
   else in the canonical dtype of their kind (int32 for integers, float32, complex64), so one
   root cause met in several dtypes minimizes to one case and one signature;
1. **defaults**: drop optional parameters (``keepdims``, an optional ``axis``); then set
   each whole-number parameter to 0, then 1;
2. **shapes**: slice every array to length 1 or half along one dimension, flatten to the
   first 1-3 elements, or take the first element as a 0-d array (arrays of one shape shrink
   together, so elementwise pairs stay aligned);
3. **elements**: remove chunks of elements along each dimension (halves, quarters, ...,
   single elements; arrays of one shape lose the same positions), then drop size-1
   dimensions (an array of one element becomes 0-d, a multi-dimensional one flat);
4. **values**: set all ordinary elements to 1, then 0; then each element in turn to 0, 1 or
   -1 (special values, the ones that matter, survive because replacing them changes the
   signature); then each element to a simpler value (:func:`simpler_values`: round numbers,
   fewer significant digits, a smaller magnitude). Every value pass offers only values
   simpler than the one it replaces.

A pass that makes progress goes on from its new case until it makes none; then the passes
start over from the first.

A candidate is kept only if the predicate finds the target signature in it. Candidates are
evaluated in small batches (one round trip to the workers each) and the first that keeps
the signature wins, so the result does not depend on timing. A seen-set skips candidates
already tried; caps on calls and seconds bound the work and the stop reason is recorded.
"""

from __future__ import annotations

import hashlib
import json
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from xamt.catalog.model import Group
from xamt.inputs.draw import array_roles
from xamt.replay import case_binds
from xamt.serialize import case_to_jsonable
from xamt.types import Case
from xamt.workers.protocol import BFloat16

MAX_CALLS = 160
MAX_SECONDS = 40.0
BATCH = 8
VALUE_POSITIONS = 24  # per array, for the one-element-at-a-time value pass

# Evaluates candidate cases; returns, per case, the signatures it shows.
Predicate = Callable[[Sequence[Case]], list[set[str]]]


@dataclass(frozen=True, kw_only=True)
class Minimized:
    case: Case
    calls: int
    seconds: float
    stop: str  # "fixpoint", "max-calls" or "max-time"
    accepted: int


def element_count(case: Case, group: Group) -> int:
    """How many array elements a case holds."""
    return sum(a.size for a in _arrays(case, group).values())


def minimize(
    case: Case,
    signature: str,
    group: Group,
    predicate: Predicate,
    *,
    max_calls: int = MAX_CALLS,
    max_seconds: float = MAX_SECONDS,
) -> Minimized:
    """The smallest case found that still shows ``signature`` (``case`` itself at worst)."""
    started = time.monotonic()
    seen = {_fingerprint(case)}
    calls = accepted = 0
    current = case
    stop = "fixpoint"
    progress = True
    while progress:
        progress = False
        for generate in PASSES:
            improved = True
            while improved and stop == "fixpoint":  # a pass that helps goes on from its case
                improved = False
                pending = [
                    c
                    for c in generate(current, group)
                    if _fingerprint(c) not in seen and case_binds(c, group)
                ]
                for start in range(0, len(pending), BATCH):
                    if calls >= max_calls:
                        stop = "max-calls"
                        break
                    if time.monotonic() - started > max_seconds:
                        stop = "max-time"
                        break
                    batch = pending[start : start + BATCH][: max_calls - calls]
                    seen.update(_fingerprint(c) for c in batch)
                    calls += len(batch)
                    shown = predicate(batch)
                    winner = next(
                        (c for c, sigs in zip(batch, shown, strict=True) if signature in sigs),
                        None,
                    )
                    if winner is not None:
                        current = winner
                        accepted += 1
                        progress = improved = True
                        break
            if stop != "fixpoint":
                break
        if stop != "fixpoint":
            break
    return Minimized(
        case=current, calls=calls, seconds=time.monotonic() - started, stop=stop, accepted=accepted
    )


def _fingerprint(case: Case) -> str:
    data = json.dumps(case_to_jsonable(case)["values"], sort_keys=True)
    return hashlib.sha256(data.encode()).hexdigest()


def _arrays(case: Case, group: Group) -> dict[tuple[str, int], np.ndarray]:
    """Array inputs by (role, index in a sequence role), as numpy (bfloat16 as float32)."""
    found = {}
    for role in array_roles(group):
        value = case.values.get(role)
        items = value if isinstance(value, list) else [value]
        for i, v in enumerate(items):
            if isinstance(v, BFloat16):
                found[(role, i)] = v.values
            elif isinstance(v, np.ndarray):
                found[(role, i)] = v
    return found


def _with(case: Case, group: Group, new: dict[tuple[str, int], np.ndarray]) -> Case:
    values = dict(case.values)
    for (role, i), arr in new.items():
        wrapped: Any = BFloat16(arr.astype(np.float32)) if case.dtype == "bfloat16" else arr
        if isinstance(values[role], list):
            items = list(values[role])
            items[i] = wrapped
            values[role] = items
        else:
            values[role] = wrapped
    return replace(case, values=values)


# The canonical dtype of each dtype kind: a root cause met in int64 and int32 is one finding,
# made in int32, when it shows there.
CANONICAL_DTYPE = {
    "float16": "float32",
    "bfloat16": "float32",
    "float64": "float32",
    "int8": "int32",
    "int16": "int32",
    "int64": "int32",
    "uint8": "int32",
    "uint16": "int32",
    "uint32": "int32",
    "uint64": "int32",
    "bool": "int32",
    "complex128": "complex64",
}


def _dtype(case: Case, group: Group) -> Iterator[Case]:
    yield from in_canonical_dtypes(case, group)


def in_canonical_dtypes(case: Case, group: Group) -> list[Case]:
    """The case in simpler dtypes, in order: the group's validation dtype, then the canonical
    dtype of its kind (:data:`CANONICAL_DTYPE`). Values are cast; a cast that changes a value
    beyond rounding (overflow, flush to zero, wrap, a dropped imaginary part) is not offered."""
    out = []
    for target in dict.fromkeys((group.dtype, CANONICAL_DTYPE.get(case.dtype, case.dtype))):
        moved = in_dtype(case, group, target)
        if moved is not None:
            out.append(moved)
    return out


def in_dtype(case: Case, group: Group, target: str) -> Case | None:
    """The case with its arrays cast to ``target`` (None: already, or not castable)."""
    if case.dtype == target or target == "bfloat16":
        return None
    arrays = _arrays(case, group)
    if not arrays:
        return None
    values = dict(case.values)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        cast = {key: arr.astype(target) for key, arr in arrays.items()}
    if not all(_keeps_values(arrays[key], moved) for key, moved in cast.items()):
        return None
    for (role, i), arr in cast.items():
        if isinstance(values[role], list):
            items = list(values[role])
            items[i] = arr
            values[role] = items
        else:
            values[role] = arr
    return replace(case, dtype=target, values=values)


def _keeps_values(before: np.ndarray, after: np.ndarray) -> bool:
    """Whether a cast kept every value what it was: NaN, the same infinity, zero, and finite
    values up to the target's rounding. A cast that overflows (float64's largest to inf),
    flushes (a subnormal to 0), wraps an integer or drops an imaginary part would move the
    case to other values, where another defect may show the same signature."""
    with np.errstate(all="ignore"):
        a = before.astype(np.complex128).ravel()
        b = after.astype(np.complex128).ravel()
        exact = after.dtype.kind in "biu" or before.dtype.kind in "biu"
        eps = 0.0 if exact else float(np.finfo(after.dtype).eps)
        for x, y in ((a.real, b.real), (a.imag, b.imag)):
            same_nan = np.array_equal(np.isnan(x), np.isnan(y))
            finite = np.isfinite(x) & np.isfinite(y)
            infinite = ~finite & ~np.isnan(x)  # (where either is infinite)
            same_special = np.array_equal(x[infinite], y[infinite])
            same_zero = np.array_equal(x == 0, y == 0)
            close = bool(np.all(np.abs(x[finite] - y[finite]) <= eps * np.abs(x[finite])))
            if not (same_nan and same_special and same_zero and close):
                return False
    return True


def _defaults(case: Case, group: Group) -> Iterator[Case]:
    for role in ("keepdims", "axis"):
        if role in case.values and role not in group.roles:
            values = dict(case.values)
            del values[role]
            yield replace(case, values=values)


def _parameters(case: Case, group: Group) -> Iterator[Case]:
    """Each whole-number parameter set to 0, then 1 (an offset of -1 the finding does not
    need reads as the cause in a repro)."""
    arrays = set(array_roles(group))
    for role, value in case.values.items():
        if role in arrays or isinstance(value, bool | np.bool_):
            continue
        if isinstance(value, int | np.integer):
            for simple in (0, 1):
                if value == simple:
                    break  # only simpler values: 0 is simpler than 1
                yield replace(case, values={**case.values, role: simple})


def _shapes(case: Case, group: Group) -> Iterator[Case]:
    arrays = _arrays(case, group)
    if not arrays:
        return
    shapes = {a.shape for a in arrays.values()}
    together = len(shapes) == 1
    targets = [list(arrays)] if together else [[k] for k in arrays]
    for keys in targets:
        shape = arrays[keys[0]].shape
        size = int(np.prod(shape))
        if size == 0:
            continue
        cuts: list[Callable[[np.ndarray], np.ndarray]] = []
        # Around the special values first (a NaN is often what matters): keep the element.
        for flat_index in _special_positions([arrays[k] for k in keys]):
            coords = np.unravel_index(flat_index, shape)
            cuts.append(partial(_element, index=flat_index))
            cuts.append(partial(_prefix_at, start=flat_index))
            for dim, n in enumerate(shape):
                if n > 1:
                    cuts.append(partial(_take_at, axis=dim, index=int(coords[dim])))
        if len(shape) > 0:
            cuts.append(_first)
        for k in (1, 2, 3):
            if len(shape) != 1 or size > k:
                cuts.append(partial(_prefix, k=k))
        for dim, n in enumerate(shape):
            if n > 1:
                cuts.append(partial(_take, axis=dim, n=1))
                if n > 3:
                    cuts.append(partial(_take, axis=dim, n=n // 2))
        for cut in cuts:
            new = {key: np.ascontiguousarray(cut(arrays[key])) for key in keys}
            if all(new[key].shape != arrays[key].shape for key in keys):
                yield _with(case, group, new)


def _special_positions(arrays: Sequence[np.ndarray], limit: int = 2) -> list[int]:
    """Flat positions of the first special values in any of ``arrays``."""
    found: list[int] = []
    for arr in arrays:
        for i, x in enumerate(arr.reshape(-1).tolist()):
            if len(found) >= limit:
                return found
            if i not in found and _is_special(x, arr.dtype):
                found.append(i)
    return found


def _element(a: np.ndarray, index: int) -> np.ndarray:
    return a.reshape(-1)[index : index + 1].reshape(())


def _prefix_at(a: np.ndarray, start: int) -> np.ndarray:
    return a.reshape(-1)[start : start + 1].copy()


def _take_at(a: np.ndarray, axis: int, index: int) -> np.ndarray:
    return np.take(a, [index], axis=axis)


def _first(a: np.ndarray) -> np.ndarray:
    return a.reshape(-1)[:1].reshape(())


def _prefix(a: np.ndarray, k: int) -> np.ndarray:
    return a.reshape(-1)[:k].copy()


def _take(a: np.ndarray, axis: int, n: int) -> np.ndarray:
    return np.take(a, range(n), axis=axis)


def _is_special(x: Any, dtype: np.dtype[Any]) -> bool:
    if dtype.kind == "b":
        return False
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return bool(x == info.max or x == info.min)
    value = complex(x)
    for part in (value.real, value.imag):
        if not np.isfinite(part) or (part == 0 and np.signbit(part)):
            return True
        if part != 0 and abs(part) < np.finfo(dtype if dtype.kind == "f" else np.float64).tiny:
            return True
        if abs(part) >= np.finfo(dtype if dtype.kind == "f" else np.float64).max:
            return True
    return False


def _values(case: Case, group: Group) -> Iterator[Case]:
    arrays = _arrays(case, group)
    simple = (1, 0) if case.dtype != "bool" else (True, False)
    for fill in simple:  # every ordinary element at once
        new = {}
        for key, arr in arrays.items():
            out = arr.copy()
            flat = out.reshape(-1)
            for i, x in enumerate(flat):
                if not _is_special(x, arr.dtype):
                    flat[i] = fill
            new[key] = out
        if any(new[k].tobytes() != arrays[k].tobytes() for k in arrays):
            yield _with(case, group, new)
    for key, arr in arrays.items():  # then one element at a time
        flat = arr.reshape(-1)
        for i in range(min(flat.size, VALUE_POSITIONS)):
            for value in (0, 1, -1) if arr.dtype.kind not in "bu" else (0, 1):
                if flat[i] == value and not _is_special(flat[i], arr.dtype):
                    break  # only simpler values: 0, then 1, then -1

                out = arr.copy()
                out.reshape(-1)[i] = value
                yield _with(case, group, {key: out})


# --------------------------------------------------------------------------------------------
# Element-level passes: after the passes above reach their fixpoint, each array is cut to the
# fewest elements that keep the signature (chunks of halves, quarters ... single elements
# removed along each dimension), its size-1 dimensions dropped, and its values moved toward
# round numbers of small magnitude.

DELETE_SINGLES = 24  # along a dimension at most this long, single elements are tried too
# Round values, simplest first; any other value is simpler with fewer significant digits,
# then with a smaller magnitude.
ROUND_VALUES = (0, 1, -1, 2, -2, 0.5, -0.5)


def _deletions(case: Case, group: Group) -> Iterator[Case]:
    """The case with a chunk of elements removed along one dimension: halves first, then
    quarters, ... then single elements (arrays of one shape lose the same positions)."""
    arrays = _arrays(case, group)
    shapes = {a.shape for a in arrays.values()}
    targets = [list(arrays)] if len(shapes) == 1 else [[k] for k in arrays]
    for keys in targets:
        shape = arrays[keys[0]].shape
        for dim, n in enumerate(shape):
            if n < 2:
                continue
            size = n // 2
            while size >= 1:
                if size == 1 and n > DELETE_SINGLES:
                    break
                for start in range(0, n, size):
                    drop = np.arange(start, min(start + size, n))
                    if len(drop) == n:
                        continue
                    new = {
                        k: np.ascontiguousarray(np.delete(arrays[k], drop, axis=dim)) for k in keys
                    }
                    yield _with(case, group, new)
                size //= 2


def _dimensions(case: Case, group: Group) -> Iterator[Case]:
    """The case with one size-1 dimension dropped, or an array of one element as 0-d, or a
    multi-dimensional array flattened (arrays of one shape together)."""
    arrays = _arrays(case, group)
    shapes = {a.shape for a in arrays.values()}
    targets = [list(arrays)] if len(shapes) == 1 else [[k] for k in arrays]
    for keys in targets:
        shape = arrays[keys[0]].shape
        reshapes: list[tuple[int, ...]] = []
        if len(shape) >= 1 and int(np.prod(shape)) == 1:
            reshapes.append(())
        reshapes += [shape[:d] + shape[d + 1 :] for d, n in enumerate(shape) if n == 1]
        if len(shape) > 1:
            reshapes.append((int(np.prod(shape)),))
        for target in dict.fromkeys(reshapes):
            if target != shape:
                yield _with(case, group, {k: arrays[k].reshape(target).copy() for k in keys})


def simplicity(x: Any) -> tuple[int, float]:
    """How simple a value reads (smaller is simpler): the round values in their order, then
    fewer significant digits, then a smaller magnitude."""
    value = x if isinstance(x, np.floating) else np.float64(complex(x).real)
    if float(value) in ROUND_VALUES and not (value == 0 and np.signbit(value)):
        return (0, float(ROUND_VALUES.index(float(value))))
    # the shortest digits that give the value back at its own dtype
    mantissa = np.format_float_scientific(value, unique=True).split("e")[0]
    digits = len(mantissa.replace("-", "").replace(".", "").rstrip("0") or "0")
    return (1 + digits, abs(float(value)))


def simpler_values(x: Any, dtype: np.dtype[Any]) -> list[Any]:
    """Candidates simpler than ``x`` (:func:`simplicity`) that ``dtype`` holds exactly, in
    order: the round values, ``x`` rounded to 1, 2, ... significant digits, half of ``x``."""
    if dtype.kind not in "iuf" or _is_special(x, dtype):
        return []
    value = float(x)
    found: list[Any] = []
    candidates: list[float] = [float(v) for v in ROUND_VALUES]
    candidates += [float(f"{value:.{k}g}") for k in range(1, 8)]
    candidates.append(value / 2 if dtype.kind == "f" else float(int(value) // 2))
    with np.errstate(all="ignore"):
        for c in candidates:
            if dtype.kind in "iu":
                info = np.iinfo(dtype)
                if not c.is_integer() or not info.min <= c <= info.max:
                    continue  # a fraction, or out of the integer type's range
            held = dtype.type(c)
            if held in found or simplicity(held) >= simplicity(x):
                continue
            found.append(held)
    return found


def _simpler(case: Case, group: Group) -> Iterator[Case]:
    """The case with one element moved to a simpler value (:func:`simpler_values`)."""
    for key, arr in _arrays(case, group).items():
        flat = arr.reshape(-1)
        for i in range(min(flat.size, VALUE_POSITIONS)):
            for value in simpler_values(flat[i], arr.dtype):
                out = arr.copy()
                out.reshape(-1)[i] = value
                yield _with(case, group, {key: out})


# The passes in order. The element cuts follow the shape cuts and come before the value
# passes, whose candidates are one per element: on a 16-element pair the value passes alone
# would spend the call cap before any element is removed.
PASSES: tuple[Callable[[Case, Group], Iterator[Case]], ...] = (
    _dtype,
    _defaults,
    _parameters,
    _shapes,
    _deletions,
    _dimensions,
    _values,
    _simpler,
)
