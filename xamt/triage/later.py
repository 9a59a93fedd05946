"""Minimize afterwards what a campaign's budget left unminimized.

A time-bounded campaign reproduces every candidate but minimizes only as many findings as
its triage share allows (a 15-minute campaign: about a dozen of a few hundred suspected
bugs); the rest keep their original case, ``minimization.stop == "skipped"``.
:func:`minimize_left` takes those suspected bugs, most severe first, through triage again
(minimized to the fewest elements, key, dtype and trigger recomputed, scripts and the short
repro rewritten and run standalone) for a budget of its own, and writes findings.json again:
what `xamt minimize` runs before filing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from xamt import envs
from xamt.catalog import model as catalog_model
from xamt.errors import StoreMissing, UsageError
from xamt.findings import Finding, load_document
from xamt.findings_io import findings_document, write_findings
from xamt.known import DEFAULT_PATH, load_known
from xamt.paths import folder_lock
from xamt.store import Store, StoreError
from xamt.triage.pipeline import triage
from xamt.workers.pool import WorkerPool


@dataclass(frozen=True, kw_only=True)
class Left:
    """What :func:`minimize_left` did: the suspected bugs left unminimized before, those it
    took, and the elements of their inputs before and after."""

    waiting: int
    taken: int
    elements_before: tuple[int, ...]
    elements_after: tuple[int, ...]
    seconds: float


def unminimized(findings: list[Finding]) -> list[Finding]:
    """The suspected bugs whose minimization the budget skipped, most severe first."""
    left = [
        f
        for f in findings
        if f.suspected and f.minimization is not None and f.minimization.stop == "skipped"
    ]
    return sorted(left, key=lambda f: f.rank())


def minimize_left(
    out_dir: Path,
    *,
    seconds: float,
    most: int | None = None,
    variant: str = "cpu",
    catalog: Path | None = None,
    known_differences: Path | None = None,
    progress: Callable[[str], None] = lambda _m: None,
) -> Left:
    """Minimize, for ``seconds``, the suspected bugs of ``out_dir``'s campaign that its budget
    left unminimized (at most ``most``), and write its findings.json again."""
    if seconds <= 0 or (most is not None and most < 1):
        raise UsageError("--budget must be positive and --max at least 1")
    store_path = out_dir / "xamt.sqlite"
    findings_path = out_dir / "findings.json"
    if not store_path.is_file() or not findings_path.is_file():
        raise StoreMissing(
            f"{out_dir}: no campaign here (xamt.sqlite and findings.json); point --out at the "
            "folder `xamt fuzz --out` wrote"
        )
    started = time.monotonic()
    with folder_lock(out_dir, "xamt minimize"), Store(store_path) as store:
        document = load_document(findings_path)
        name = str(document.campaign.get("name", ""))
        campaign = store.last_campaign(name)
        if campaign is None:
            raise StoreError(f"{store_path}: no campaign {name!r}, which findings.json names")
        rows = store.findings(campaign)
        waiting = unminimized([r.finding for r in rows])
        chosen = waiting[:most] if most is not None else waiting
        if not chosen:
            progress("nothing to minimize: every suspected bug was minimized")
            return Left(waiting=0, taken=0, elements_before=(), elements_after=(), seconds=0.0)
        cat = catalog_model.load(catalog or catalog_model.CATALOG_PATH)
        groups = {g.id: g for g in cat.groups if g.id in {f.group for f in chosen}}
        # numpy also computes the float64 references
        libs = sorted({lib for f in chosen for lib in f.apis} | {"numpy"})
        pythons = {lib: envs.interpreter(lib, variant) for lib in libs}
        known = load_known(known_differences or DEFAULT_PATH)
        progress(
            f"minimizing {len(chosen)} of {len(waiting)} suspected bugs left unminimized, for "
            f"{seconds:.0f} s, with {len(libs)} libraries"
        )
        with WorkerPool(pythons) as pool:
            versions = {lib: h.version for lib, h in pool.start().items()}
            # the window is the budget from now: the workers' start-up is not minimization
            summary = triage(
                store,
                campaign,
                pool,
                groups,
                out_dir=out_dir,
                known=known,
                versions={**document.libraries, **versions},
                progress=progress,
                max_seconds=seconds,
                until=time.monotonic() + seconds * 1.5,
                retriage={f.signature for f in chosen},
            )
        doc = findings_document(
            store,
            campaign,
            libraries=dict(document.libraries),
            campaign_info=dict(document.campaign),
        )
        write_findings(findings_path, doc)
    return Left(
        waiting=len(waiting),
        taken=len(chosen),
        elements_before=summary.elements_before,
        elements_after=summary.elements_after,
        seconds=time.monotonic() - started,
    )
