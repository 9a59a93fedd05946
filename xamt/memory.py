"""The orchestrator's memory budget, and the per-call result budget derived from it.

Every value a library returns comes back to the orchestrator, and the pipeline holds many of
them at once: :data:`IN_FLIGHT_CASES` cases (the campaign's lookahead batches), each with one
result per library plus the float64 reference. A worker therefore ships at most a *result
budget* of array bytes per call (``--result-budget``); a larger result travels as a
:class:`~xamt.workers.protocol.Summary`. The result budget is derived from the orchestrator's
*memory budget* so that everything held at once, and the working set of comparing one case,
fits in it::

    result_budget = (memory_budget - BASELINE) / ((libraries + 1) * (IN_FLIGHT_CASES + WORKING))

``xamt call`` makes its inputs from generators (``randn(3, 4)``); one generated input may take
at most :func:`call_input_limit` bytes, a share of the smaller of the memory budget and a
worker's memory cap, checked before anything is allocated.

Knobs: ``XAMT_MEMORY_BUDGET`` (bytes, or with a K/M/G suffix; default :data:`MEMORY_FRACTION`
of the machine's memory: ``MemTotal``, or the cgroup's limit when lower),
``XAMT_RESULT_BUDGET`` (the per-call budget itself, overriding the derivation) and
``XAMT_CALL_INPUT_LIMIT`` (the limit of one ``xamt call`` input, overriding its derivation).
They depend on the machine only, never on what is free at the moment, so a resumed campaign
summarizes the same results as the run it resumes.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from xamt.errors import UsageError

MEMORY_FRACTION = 0.25
# What the orchestrator holds besides results: interpreter, numpy, catalog, store, reports.
BASELINE = 512 << 20
# Cases whose results can be held at once: the campaign's LOOKAHEAD batches of BATCH cases.
IN_FLIGHT_CASES = 3 * 48
# Comparing one case widens each result to float64 (float16: x4) and builds masks over it.
WORKING = 16
MIN_RESULT_BUDGET = 64 << 10  # a summary's sample (4096 complex128 values) always fits
MAX_RESULT_BUDGET = 64 << 20
# `xamt call`: the copies of one generated input held at once. The orchestrator makes it in
# float64 (complex128) and casts it, then frames it for each worker; a worker holds the
# received frame, the library's own copy, a result of like size and its reply.
CALL_INPUT_COPIES = 8
MIN_CALL_INPUT = 1 << 20

_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_CGROUP_LIMITS = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1
)


def parse_size(text: str, name: str = "size") -> int:
    """``"6G"``, ``"512M"``, ``"1048576"`` -> bytes (binary units)."""
    match = _SIZE.fullmatch(text)
    if match is None:
        raise UsageError(f"{name} must be a number of bytes, optionally with K, M or G: {text!r}")
    return int(float(match[1]) * _UNITS[match[2].lower()])


def meminfo(field: str) -> int:
    """A ``/proc/meminfo`` field in bytes (0 where it cannot be read)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def available_memory() -> int:
    """Bytes the machine has available now (``MemAvailable``; a large number if unknown)."""
    return meminfo("MemAvailable") or 1 << 62


def machine_memory() -> int:
    """Bytes of memory this process may use: ``MemTotal``, or the cgroup's limit if lower."""
    total = meminfo("MemTotal")
    if not total:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (OSError, ValueError):
            total = 8 << 30
    for path in _CGROUP_LIMITS:
        try:
            text = path.read_text().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:
            total = int(text)
    return total


def memory_budget() -> int:
    """The orchestrator's memory budget: ``XAMT_MEMORY_BUDGET``, else a fraction of the
    machine's memory."""
    text = os.environ.get("XAMT_MEMORY_BUDGET", "").strip()
    if text:
        return parse_size(text, "XAMT_MEMORY_BUDGET")
    return int(machine_memory() * MEMORY_FRACTION)


def result_budget(libraries: int, budget: int | None = None) -> int:
    """Array bytes one call's result may carry whole, for a pool of ``libraries`` workers
    under the memory ``budget`` (default :func:`memory_budget`); ``XAMT_RESULT_BUDGET``
    overrides it when no budget is given."""
    if budget is None:
        text = os.environ.get("XAMT_RESULT_BUDGET", "").strip()
        if text:
            return max(MIN_RESULT_BUDGET, parse_size(text, "XAMT_RESULT_BUDGET"))
        budget = memory_budget()
    held = (max(libraries, 1) + 1) * (IN_FLIGHT_CASES + WORKING)
    per_call = (budget - BASELINE) // held
    return int(min(MAX_RESULT_BUDGET, max(MIN_RESULT_BUDGET, per_call)) >> 10 << 10)


def call_input_limit(worker_cap: int, budget: int | None = None) -> int:
    """Bytes one generated input of ``xamt call`` may take: ``XAMT_CALL_INPUT_LIMIT``, else
    the smaller of the memory ``budget`` (default :func:`memory_budget`) and a worker's
    ``worker_cap`` (extra address space), shared among :data:`CALL_INPUT_COPIES` copies."""
    text = os.environ.get("XAMT_CALL_INPUT_LIMIT", "").strip()
    if text:
        return parse_size(text, "XAMT_CALL_INPUT_LIMIT")
    if budget is None:
        budget = memory_budget()
    held = min(budget, worker_cap) if worker_cap > 0 else budget
    return max(MIN_CALL_INPUT, held // CALL_INPUT_COPIES)


def size_text(n: int) -> str:
    """Bytes in binary units for a message: ``858.3 MiB``, ``1.0 GiB`` (``3.64e+25 B`` past
    a thousand TiB)."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB" if value < 1000 else f"{float(n):.3g} B"
