"""Summarized results on the orchestrator's side: what the oracles do with a
:class:`~xamt.workers.protocol.Summary`.

A worker summarizes a result beyond its result budget (:mod:`xamt.memory`). The oracles judge
a summarized leaf on its sample (the same positions in every library, so masks, signed zeros
and values line up) and on its whole-array facts: NaN, inf and zero counts, the finite range
and, for integers, the digest. A whole array met at the same position as a summarized one is
summarized here the same way. Where the oracles would change values (a reference cast to a
narrower dtype, positions set to zero), the sample changes and whatever fact no longer holds
for the whole array becomes unknown (None) and is not compared.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from xamt.workers.protocol import BFloat16, Summary, sample_positions, summary_of

__all__ = [
    "Summary",
    "as_summary",
    "cast",
    "dtype_of",
    "is_summary",
    "rounded",
    "sample_inputs",
    "zeroed",
]


def is_summary(value: Any) -> bool:
    return isinstance(value, Summary)


def as_summary(value: np.ndarray | BFloat16 | Summary) -> Summary:
    """``value`` as a summary (a whole array summarized as its worker would have)."""
    return value if isinstance(value, Summary) else summary_of(value)


def dtype_of(value: Any) -> np.dtype[Any] | None:
    """The numpy dtype of an array or a summary (None for bfloat16 and non-arrays)."""
    if isinstance(value, Summary):
        return None if value.dtype == "bfloat16" else np.dtype(value.dtype)
    if isinstance(value, np.ndarray | np.generic):
        return value.dtype
    return None


def _unknown_facts(s: Summary, sample: np.ndarray, **known: Any) -> Summary:
    facts: dict[str, Any] = dict.fromkeys(
        ("digest", "nan", "posinf", "neginf", "zero", "negzero", "low", "high")
    )
    facts.update(known)
    return dataclasses.replace(s, sample=sample, **facts)


def zeroed(s: Summary, where: np.ndarray) -> Summary:
    """``s`` with its sampled values at ``where`` (a mask over the sample) set to zero. The
    positions the sample found are met elsewhere too: the whole-array facts become unknown."""
    if not where.any():
        return s
    sample = s.sample.copy()
    sample[where] = 0
    return _unknown_facts(s, sample)


def cast(s: Summary, target: np.dtype[Any], name: str) -> Summary:
    """A floating summary cast to the narrower floating ``target`` (labelled ``name``), as
    :func:`numpy.ndarray.astype` would cast the whole array: NaN counts stay, inf counts stay
    where the finite range still fits; zeros (underflow) and the digest become unknown."""
    with np.errstate(all="ignore"):
        sample = s.sample.astype(target)
        low = None if s.low is None else float(np.asarray(s.low).astype(target).real)
        high = None if s.high is None else float(np.asarray(s.high).astype(target).real)
    fits = all(b is None or np.isfinite(b) for b in (low, high))
    return _unknown_facts(
        dataclasses.replace(s, dtype=name),
        sample,
        nan=s.nan,
        posinf=s.posinf if fits else None,
        neginf=s.neginf if fits else None,
        low=low,
        high=high,
    )


def rounded(s: Summary, dtype: np.dtype[Any], artefact: np.ndarray) -> Summary:
    """A float64 reference summary rounded to the integer ``dtype``, 0 at ``artefact`` (a
    mask over the sample): what :func:`xamt.oracle.verdict.judge` does to a whole one."""
    with np.errstate(all="ignore"):
        sample = np.where(artefact, 0, np.rint(s.sample)).astype(dtype)
    info = np.iinfo(dtype)
    bounds = []
    for bound in (s.low, s.high):
        fits = bound is not None and info.min <= float(bound) <= info.max and not artefact.any()
        bounds.append(int(np.rint(float(bound))) if fits else None)  # type: ignore[arg-type]
    return _unknown_facts(
        dataclasses.replace(s, dtype=dtype.name),
        sample,
        nan=0,
        posinf=0,
        neginf=0,
        negzero=0,
        low=bounds[0],
        high=bounds[1],
    )


def sample_inputs(inputs: list[np.ndarray], shape: tuple[int, ...]) -> list[np.ndarray] | None:
    """Each input broadcast to ``shape`` and read at the sample positions of that shape (1-D,
    without materializing the broadcast); None if they do not broadcast to ``shape``."""
    try:
        if np.broadcast_shapes(*(np.shape(x) for x in inputs)) != shape:
            return None
    except ValueError:
        return None
    if shape == ():
        return [np.asarray(x).reshape(1) for x in inputs]
    index = np.unravel_index(sample_positions(int(np.prod(shape, dtype=np.int64))), shape)
    return [np.broadcast_to(np.asarray(x), shape)[index] for x in inputs]
