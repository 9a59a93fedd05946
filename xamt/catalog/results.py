"""Results of catalog calls as plain data, and when two of them are the same operation's.

The build (:mod:`xamt.catalog.build`), the validation of the deep-learning core's declared groups
(:mod:`xamt.catalog.dlcore`) and the check of the committed catalog (:mod:`xamt.catalog.check`)
compare members this way. This module imports no other module of :mod:`xamt.catalog`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from xamt.tolerance import TOLERANCE, tolerance
from xamt.workers.protocol import BFloat16, Opaque, Summary

BATCH = 400  # calls per library in one round of the worker pool


class HasLibrary(Protocol):
    """A member or a build candidate: whatever names the library it calls."""

    @property
    def library(self) -> str: ...


def to_plain(value: Any) -> Any:
    """An outcome value as JSON-able plain data (for the checkpoint file and comparison)."""
    if isinstance(value, BFloat16):
        value = value.values
    if isinstance(value, np.ndarray):
        flat = value.astype(np.complex128) if value.dtype.kind == "c" else value
        data = flat.ravel().tolist()
        if value.dtype.kind == "c":
            data = [[z.real, z.imag] for z in data]
        return {"dtype": value.dtype.name, "shape": list(value.shape), "data": data}
    if isinstance(value, Summary):  # a result beyond the result budget: its sample as data
        plain = to_plain(value.sample)
        return {**plain, "shape": list(value.shape), "digest": value.digest}
    if isinstance(value, (tuple, list)):
        return {"seq": [to_plain(v) for v in value]}
    if isinstance(value, (bool, int, float, complex)) and not isinstance(value, Opaque):
        return to_plain(np.asarray(value))
    return {"opaque": type(value).__name__}


def agree(a: Any, b: Any, *, finite_only: bool = False) -> bool:
    """Whether two plain results are the same operation's output on the same inputs, within
    the value oracle's tolerance for their dtypes (:mod:`xamt.tolerance`: integers
    exact). ``finite_only`` (a probe): positions where either answer is NaN or infinite do not
    count; the layouts and kinds still must match."""
    if "seq" in a or "seq" in b:
        return (
            "seq" in a
            and "seq" in b
            and len(a["seq"]) == len(b["seq"])
            and all(
                agree(x, y, finite_only=finite_only)
                for x, y in zip(a["seq"], b["seq"], strict=True)
            )
        )
    if "data" not in a or "data" not in b or a["shape"] != b["shape"]:
        return False
    kinds = {np.dtype(a["dtype"]).kind, np.dtype(b["dtype"]).kind}
    if "b" in kinds and kinds != {"b"}:
        return False
    x, y = _numeric(a), _numeric(b)
    if kinds == {"b"}:
        return bool(np.array_equal(x, y))
    try:
        rtol, atol = tolerance(a["dtype"], b["dtype"])
    except KeyError:
        rtol, atol = TOLERANCE["float32"]
    with np.errstate(invalid="ignore"):
        close = np.abs(x - y) <= atol + rtol * np.maximum(np.abs(x), np.abs(y))
    if finite_only:
        return bool(np.all(close | ~(np.isfinite(x) & np.isfinite(y))))
    same = (x == y) | (np.isnan(x) & np.isnan(y))  # equal infinities, NaN with NaN
    return bool(np.all(close | same))


def _numeric(plain: dict[str, Any]) -> np.ndarray:
    data = plain["data"]
    if np.dtype(plain["dtype"]).kind == "c":
        return np.array([complex(r, i) for r, i in data], dtype=np.complex128)
    return np.array(data, dtype=np.float64 if np.dtype(plain["dtype"]).kind != "b" else bool)


def form_groups(
    members: Sequence[HasLibrary],
    results: Sequence[Sequence[Any]],
    plain: int | None = None,
) -> list[list[int]]:
    """Pairwise agreement -> components -> the group-level check (all members agree).

    Results past the first ``plain`` ones answer probes
    (:data:`xamt.catalog.build.PROBE_SHAPES`): ``None`` (a probe the member refused) agrees
    with anything, and the others are compared where both are finite. Returns groups as lists
    of member indices, each spanning two libraries, deterministic.
    """
    n = len(members)

    def same(a: Any, b: Any, k: int) -> bool:
        if plain is None or k < plain:
            return bool(agree(a, b))
        return a is None or b is None or agree(a, b, finite_only=True)

    agrees = [
        [
            i == j
            or all(
                same(a, b, k) for k, (a, b) in enumerate(zip(results[i], results[j], strict=True))
            )
            for j in range(n)
        ]
        for i in range(n)
    ]
    remaining = list(range(n))
    groups = []
    while remaining:
        degree = {i: sum(agrees[i][j] for j in remaining) for i in remaining}
        seed = max(remaining, key=lambda i: (degree[i], -i))
        clique = [seed]
        for j in sorted(remaining, key=lambda i: (-degree[i], i)):
            if j != seed and all(agrees[j][k] for k in clique):
                clique.append(j)
        remaining = [i for i in remaining if i not in clique]
        if len({members[i].library for i in clique}) >= 2:
            groups.append(sorted(clique))
    return groups
