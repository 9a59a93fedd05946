"""One fuzz run, end to end: campaign, reproduction, triage, findings.json.

A plain function over a frozen :class:`FuzzConfig`; it prints nothing. The command line (or any
other caller) sees what happens through callbacks and gets a :class:`FuzzResult` back. Errors a
user can cause are :class:`~xamt.errors.XamtError` subclasses, raised before anything starts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xamt import envs
from xamt.catalog import model as catalog_model
from xamt.errors import UsageError
from xamt.findings import Document
from xamt.fuzz.campaign import Budget, Progress
from xamt.libraries import check_library, library_names
from xamt.workers.pool import DEFAULT_DEADLINE

Schedule = Literal["variance", "uniform"]
SCHEDULES: tuple[Schedule, ...] = ("variance", "uniform")
# Seconds of minimization when the budget is a number of cases and no triage budget is given.
DEFAULT_TRIAGE_SECONDS = 120.0


@dataclass(frozen=True, kw_only=True)
class FuzzConfig:
    """Everything one fuzz run needs; the defaults are the command line's.

    ``libraries`` None means every known library; ``budget`` is a time (``90s``, ``10m``,
    ``1h``) or a number of cases (``500``); ``shard`` is ``i/n``.
    """

    budget: str = "2m"
    seed: int = 1
    libraries: tuple[str, ...] | None = None
    group: str | None = None
    shard: str = "0/1"
    out_dir: Path = Path("xamt-out")
    schedule: Schedule = "variance"
    resume: bool = False
    reproduce_runs: int = 3
    deadline: float = DEFAULT_DEADLINE
    known_differences: Path | None = None
    triage_budget: float | None = None
    catalog: Path | None = None
    variant: str = "cpu"


@dataclass(frozen=True, kw_only=True)
class FuzzResult:
    """What a fuzz run left behind.

    ``finished``: the budget was spent and nothing was interrupted (the campaign is recorded as
    finished); otherwise ``--resume`` continues it.
    """

    campaign_id: int
    findings_path: Path
    document: Document
    cases: int
    seconds: float
    finished: bool
    interrupted: bool


def _ignore(_message: str) -> None:
    pass


def campaign_line(p: Progress) -> str:
    """The one-line report of the campaign loop after a batch."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(p.candidates.items())) or "none"
    return f"  {p.cases} cases, {p.rate:.0f}/s; new signatures by kind: {kinds}; at {p.group}"


def run_fuzz(
    config: FuzzConfig,
    *,
    on_progress: Callable[[str], None] = _ignore,
    on_warning: Callable[[str], None] = _ignore,
    on_campaign: Callable[[Progress], None] | None = None,
) -> FuzzResult:
    """Fuzz the catalog's groups across libraries and write findings.json into ``out_dir``.

    Only discrepancies that reproduce in freshly started workers become findings. Ctrl-C stops
    fuzzing, reproduces what was found and writes everything (the result is then not
    ``finished``); ``resume`` continues a campaign that was stopped or killed.

    ``on_progress`` gets plain-text progress lines (never markup), ``on_warning`` what went
    wrong but did not stop the run, ``on_campaign`` the campaign loop's progress after each
    batch (default: :func:`campaign_line` into ``on_progress``).
    """
    from xamt.fuzz.campaign import (
        Campaign,
        CampaignConfig,
        parse_budget,
        parse_shard,
        select_groups,
    )
    from xamt.fuzz.output import findings_document, writable_folder, write_findings
    from xamt.fuzz.reproduce import reproduce
    from xamt.known import DEFAULT_PATH, load_known
    from xamt.store import Store, check_store
    from xamt.triage.pipeline import triage
    from xamt.workers.pool import WorkerPool

    known = load_known(config.known_differences or DEFAULT_PATH)
    spent: Budget = parse_budget(config.budget)
    shard_spec = parse_shard(config.shard)
    if config.schedule not in SCHEDULES:
        raise UsageError(f"unknown schedule {config.schedule!r}; choose variance or uniform")
    if config.reproduce_runs < 1 or config.deadline <= 0:
        raise UsageError("--reproduce must be at least 1 and --deadline positive")
    chosen = (
        [check_library(x) for x in dict.fromkeys(config.libraries)]
        if config.libraries
        else list(library_names())
    )
    if len(chosen) < 2:
        raise UsageError("a campaign compares at least two libraries")
    cat = catalog_model.load(config.catalog or catalog_model.CATALOG_PATH)
    groups = select_groups(cat, chosen, config.group, shard_spec)
    if not groups:
        raise UsageError(
            f"no group matches --group {config.group!r} with these libraries and shard; "
            "see `xamt catalog list`"
        )
    name = f"fuzz-{shard_spec[0]}-{shard_spec[1]}"
    # the store before anything is written or started: nothing to resume, or a store that is
    # not one, or that holds malformed rows, is said now (exit 23 or 10)
    check_store(config.out_dir / "xamt.sqlite", name, resume=config.resume)
    folder = writable_folder(config.out_dir, "choose another with --out")
    pythons = {lib: envs.interpreter(lib, config.variant) for lib in chosen}
    campaign_config = CampaignConfig(
        name=name,
        seed=config.seed,
        budget=spent,
        libraries=tuple(chosen),
        schedule=config.schedule,
    )
    report = on_campaign or (lambda p: on_progress(campaign_line(p)))
    with Store(folder / "xamt.sqlite") as store:
        with WorkerPool(pythons, deadline=config.deadline) as pool:
            on_progress(f"starting {len(chosen)} workers; {len(groups)} groups; budget {spent}")
            versions = {lib: h.version for lib, h in pool.start().items()}
            campaign = Campaign(campaign_config, groups, pool, store, known)
            if campaign.open(config.resume):
                on_progress(
                    f"resuming campaign {campaign.campaign_id} at case {campaign.state.seq}"
                )
            progress = campaign.run(report)
        group_map = {g.id: g for g in groups}
        interrupted = False
        try:
            repro = reproduce(
                store,
                campaign.campaign_id,
                pythons,
                group_map,
                runs=config.reproduce_runs,
                deadline=config.deadline,
                progress=lambda m: on_progress(f"  {m}"),
            )
            on_progress(
                f"reproduced {repro.reproduced}, flaky {repro.flaky}, "
                f"not reproduced {repro.not_reproduced}"
            )
            with WorkerPool(pythons, deadline=config.deadline) as pool:
                pool.start()
                summary = triage(
                    store,
                    campaign.campaign_id,
                    pool,
                    group_map,
                    out_dir=folder,
                    known=known,
                    versions=versions,
                    progress=lambda m: on_progress(f"  {m}"),
                    max_seconds=config.triage_budget
                    if config.triage_budget is not None
                    else (spent.seconds or DEFAULT_TRIAGE_SECONDS),
                )
            on_progress(
                f"triaged {summary.findings} findings: {summary.documented} documented "
                "differences; repro scripts in " + str(folder / "repro")
            )
        except KeyboardInterrupt:
            interrupted = True
            on_warning(
                "interrupted: what was not reproduced or triaged stays pending (use --resume)"
            )
        info = {
            "name": campaign_config.name,
            "seed": config.seed,
            "budget": str(spent),
            "schedule": config.schedule,
            "shard": config.shard,
            "cases": progress.cases,
            "seconds": round(progress.seconds, 1),
        }
        document = findings_document(
            store, campaign.campaign_id, libraries=versions, campaign_info=info
        )
        findings_path = folder / "findings.json"
        write_findings(findings_path, document)
        done = campaign.exhausted() and not interrupted
        if done:
            store.finish_campaign(campaign.campaign_id, summary=info)
    return FuzzResult(
        campaign_id=campaign.campaign_id,
        findings_path=findings_path,
        document=document,
        cases=progress.cases,
        seconds=progress.seconds,
        finished=done,
        interrupted=interrupted,
    )
