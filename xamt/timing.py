"""Where a run's wall time went: per library (calls, compiles, hangs, restarts) and per phase.

The worker pool keeps one :class:`LibraryTime` per library; the campaign and the fuzz pipeline
keep a :class:`Phases` of the orchestrator's own work and of each stage. Both are plain records
that add up across resumes (:meth:`merged`) and travel as JSON in the store and findings.json.

Note:
    A *first* call is the first call of an API with a given input signature (dtypes, shapes and
    non-float parameters) in one worker process: where jax, tensorflow's functions and mindspore
    trace and compile. Its time is the compile estimate; every other call is *warm*.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass
class LibraryTime:
    """One library's time in a pool: seconds and counts."""

    calls: int = 0
    warm_seconds: float = 0.0  # calls whose input signature the worker had seen before
    first_calls: int = 0
    first_seconds: float = 0.0  # first calls of an input signature (tracing, compiling)
    hangs: int = 0
    hang_seconds: float = 0.0  # waiting on calls that missed their deadline
    deaths: int = 0  # crashes and memory-cap kills
    restarts: int = 0
    restart_seconds: float = 0.0  # from a replacement's launch to its hello, while work waited
    startup_seconds: float = 0.0  # the first start of the worker

    def record_call(self, seconds: float, first: bool) -> None:
        self.calls += 1
        if first:
            self.first_calls += 1
            self.first_seconds += seconds
        else:
            self.warm_seconds += seconds

    @property
    def lost_seconds(self) -> float:
        """Time lost to hangs and restarts."""
        return self.hang_seconds + self.restart_seconds

    def merged(self, other: LibraryTime) -> LibraryTime:
        out = LibraryTime()
        for f in fields(self):
            setattr(out, f.name, getattr(self, f.name) + getattr(other, f.name))
        return out

    def as_dict(self) -> dict[str, float | int]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LibraryTime:
        out = cls()
        for f in fields(cls):
            value = data.get(f.name)
            if isinstance(value, int | float) and not isinstance(value, bool):
                setattr(out, f.name, type(getattr(out, f.name))(value))
        return out


@dataclass
class Phases:
    """Seconds spent per named phase (``draw``, ``wait``, ``judge``, ``commit``, ``fuzz``,
    ``reproduce``, ``triage``, ``write``...), in the order first seen."""

    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        start = time.monotonic()
        try:
            yield
        finally:
            self.add(name, time.monotonic() - start)

    def merged(self, other: Phases) -> Phases:
        out = Phases(dict(self.seconds))
        for name, s in other.seconds.items():
            out.add(name, s)
        return out

    def as_dict(self) -> dict[str, float]:
        return {k: round(v, 3) for k, v in self.seconds.items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Phases:
        return cls({str(k): float(v) for k, v in data.items() if isinstance(v, int | float)})


def libraries_from_dict(data: Mapping[str, Any]) -> dict[str, LibraryTime]:
    return {str(lib): LibraryTime.from_dict(t) for lib, t in data.items() if isinstance(t, Mapping)}


def merge_libraries(
    a: Mapping[str, LibraryTime], b: Mapping[str, LibraryTime]
) -> dict[str, LibraryTime]:
    out = dict(a)
    for lib, t in b.items():
        out[lib] = out[lib].merged(t) if lib in out else t
    return out


def breakdown_rows(
    libraries: Mapping[str, LibraryTime], wall: float
) -> list[tuple[str, str, str, str, str, str, str]]:
    """Rows of the per-library table: library, calls, warm s, first s (count), hang s
    (count), restart s (count), busy share of the wall time."""
    rows = []
    for lib, t in sorted(libraries.items()):
        busy = t.warm_seconds + t.first_seconds + t.lost_seconds
        rows.append(
            (
                lib,
                f"{t.calls}",
                f"{t.warm_seconds:.1f}",
                f"{t.first_seconds:.1f} ({t.first_calls})",
                f"{t.hang_seconds:.1f} ({t.hangs})",
                f"{t.restart_seconds:.1f} ({t.restarts})",
                f"{100 * busy / wall:.0f}%" if wall > 0 else "-",
            )
        )
    return rows


def table_lines(libraries: Mapping[str, LibraryTime], wall: float) -> list[str]:
    """The per-library table as aligned plain-text lines (header first)."""
    rows = [BREAKDOWN_COLUMNS, *breakdown_rows(libraries, wall)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(BREAKDOWN_COLUMNS))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) for c, w in zip(row, widths, strict=True)]
        cells[0] = row[0].ljust(widths[0])
        lines.append("  ".join(cells))
    return lines


BREAKDOWN_COLUMNS = (
    "library",
    "calls",
    "warm s",
    "first s (n)",
    "hang s (n)",
    "restart s (n)",
    "busy",
)
