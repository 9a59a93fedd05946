"""One fuzz run, end to end: campaign, reproduction, triage, findings.json.

A plain function over a frozen :class:`FuzzConfig`; it prints nothing. The command line (or any
other caller) sees what happens through callbacks and gets a :class:`FuzzResult` back. Errors a
user can cause are :class:`~xamt.errors.XamtError` subclasses, raised before anything starts.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from xamt import envs
from xamt.catalog import model as catalog_model
from xamt.errors import UsageError, XamtError
from xamt.findings import Document
from xamt.fuzz import PARTICIPATION, Schedule
from xamt.fuzz.campaign import Budget, Progress
from xamt.libraries import check_library, library_names
from xamt.timing import LibraryTime, Phases, table_lines
from xamt.workers.pool import DEFAULT_DEADLINE

if TYPE_CHECKING:
    from xamt.fuzz.cancel import Cancellation
    from xamt.paths import FolderLock

# Seconds of minimization when the budget is a number of cases and no triage budget is given.
DEFAULT_TRIAGE_SECONDS = 120.0
# A time budget bounds the whole run (see :func:`plan`): the share spent fuzzing, and the
# shares of the budget (from the start) at which reproduction and minimization stop; writing
# takes the rest.
FUZZ_SHARE = 0.4
REPRODUCE_UNTIL = 0.72
TRIAGE_UNTIL = 0.82
FINISH_UNTIL = 0.95  # triage's batched passes stop then, whatever is left


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How a run spends its budget: fuzzing budget, and the monotonic times at which
    reproduction and minimization stop (None: no limit)."""

    fuzz: Budget
    fuzz_until: float | None  # fuzzing stops then, whatever its own budget says
    reproduce_until: float | None
    triage_seconds: float | None  # minimization time after reproduction (None: no limit)
    triage_until: float | None
    finish_until: float | None  # the batched trigger passes stop then

    def describe(self, total: Budget) -> str:
        if total.seconds is None:
            return f"budget {total}: fuzzing {self.fuzz}, then reproduction and triage"
        t = total.seconds
        return (
            f"budget {t:g} s for the whole run: start-up and fuzzing until "
            f"{FUZZ_SHARE * t:.0f} s, reproduction until {REPRODUCE_UNTIL * t:.0f} s, "
            f"minimization until {TRIAGE_UNTIL * t:.0f} s, then writing"
        )


def plan(total: Budget, started: float, triage_budget: float | None) -> Plan:
    """Split ``total``: a number of cases is fuzzed whole and reproduced whole, then minimized
    for ``triage_budget`` (default :data:`DEFAULT_TRIAGE_SECONDS`); a time bounds everything."""
    if total.seconds is None:
        return Plan(
            fuzz=total,
            fuzz_until=None,
            reproduce_until=None,
            triage_seconds=triage_budget if triage_budget is not None else DEFAULT_TRIAGE_SECONDS,
            triage_until=None,
            finish_until=None,
        )
    t = total.seconds
    return Plan(
        fuzz=Budget(seconds=FUZZ_SHARE * t),
        fuzz_until=started + FUZZ_SHARE * t,
        reproduce_until=started + REPRODUCE_UNTIL * t,
        triage_seconds=triage_budget,
        triage_until=started + TRIAGE_UNTIL * t,
        finish_until=started + FINISH_UNTIL * t,
    )


# The share of the cases that can check gradients (a differentiable group's floating, finite,
# small inputs: xamt.oracle.gradient.eligible) that do, when the gradient oracle is on (the
# default). Each costs a vector-Jacobian and a Jacobian-vector product per library and four
# float64 reference calls per input element: bench/gradient_cost.py measures the rate.
GRADIENT_SHARE = 0.5
ORACLES = ("values", "gradients")


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
    schedule: Schedule = Schedule.variance
    resume: bool = False
    reproduce_runs: int = 3
    deadline: float = DEFAULT_DEADLINE
    known_differences: Path | None = None
    triage_budget: float | None = None
    catalog: Path | None = None
    variant: str = "cpu"
    # the oracles the campaign runs: "values" always, "gradients" on the cases that can
    oracles: tuple[str, ...] = ("values", "gradients")
    # under a time budget, the share of its groups' cases each library takes part in even when
    # it falls behind (the campaign waits for it): 0 to 1
    participation: float = PARTICIPATION
    # the fields the caller set on purpose (the command line's options that were given); a
    # resumed campaign refuses those that contradict the stored ones and takes the rest from
    # the store. None: the fields that differ from these defaults
    given: frozenset[str] | None = None


# The options a resumed campaign takes from the store: FuzzConfig field -> command-line option.
RESUMED_OPTIONS = {
    "budget": "--budget",
    "seed": "--seed",
    "libraries": "--libs",
    "group": "--group",
    "shard": "--shard",
    "schedule": "--schedule",
    "oracles": "--oracles",
    "reproduce_runs": "--reproduce",
    "deadline": "--deadline",
    "triage_budget": "--triage-budget",
    "catalog": "--catalog",
    "known_differences": "--known-differences",
    "variant": "--variant",
    "participation": "--participation",
}


def run_options(config: FuzzConfig, libraries: Sequence[str]) -> dict[str, Any]:
    """The options of a new campaign as stored with it (``campaign-state.schema.json#run``)."""
    from xamt.fuzz.campaign import parse_budget

    budget = parse_budget(config.budget)
    return {
        "budget": str(budget.cases) if budget.cases is not None else f"{budget.seconds!r}s",
        "seed": config.seed,
        "libraries": list(libraries),
        "group": config.group,
        "shard": config.shard,
        "schedule": str(config.schedule),
        "oracles": list(config.oracles),
        "reproduce_runs": config.reproduce_runs,
        "deadline": config.deadline,
        "triage_budget": config.triage_budget,
        "catalog": None if config.catalog is None else str(Path(config.catalog).resolve()),
        "known_differences": None
        if config.known_differences is None
        else str(Path(config.known_differences).resolve()),
        "variant": config.variant,
        "participation": config.participation,
    }


def _given(config: FuzzConfig) -> set[str]:
    if config.given is not None:
        return set(config.given)
    defaults = FuzzConfig()
    return {f for f in RESUMED_OPTIONS if getattr(config, f) != getattr(defaults, f)}


def _comparable(field: str, value: Any) -> Any:
    """A stored or given option in one form (budgets parsed, paths resolved, sets unordered)."""
    from xamt.fuzz.campaign import parse_budget

    if value is None:
        return None
    if field == "budget":
        return parse_budget(str(value))
    if field in ("libraries", "oracles"):
        return frozenset(value)
    if field in ("catalog", "known_differences"):
        return Path(value).resolve()
    if field == "schedule":
        return str(value)
    return value


def _shown(field: str, value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def resumed_config(config: FuzzConfig) -> FuzzConfig:
    """The run ``config`` continues with ``--resume``: the stored campaign's options, with
    :class:`~xamt.errors.UsageError` for one given that contradicts them (naming the option and
    the stored value), :class:`~xamt.store.StoreError` for a stored config that is malformed,
    :class:`~xamt.store.NothingToResume` when there is nothing to resume. Without ``--shard``
    the folder's one unfinished campaign is resumed, whichever its shard."""
    from xamt import schemas
    from xamt.fuzz.campaign import parse_budget, parse_shard
    from xamt.store import Store, StoreError, check_resumable

    path = config.out_dir / "xamt.sqlite"
    given = _given(config)
    name = "fuzz-{}-{}".format(*parse_shard(config.shard))
    if "shard" not in given and path.is_file():
        with Store(path) as store:
            names = [n for n in store.unfinished_campaigns() if n.startswith("fuzz-")]
        if len(names) > 1:
            shards = ", ".join(n.removeprefix("fuzz-").replace("-", "/") for n in names)
            raise UsageError(
                f"{path}: several unfinished campaigns (shards {shards}); say which to resume "
                "with --shard"
            )
        name = names[0] if names else name
    check_resumable(path, name)
    with Store(path) as store:
        found = store.resumable_campaign(name)
    assert found is not None  # check_resumable said so
    campaign_id, stored_config, _state, _seq = found
    run = stored_config.get("run")
    if run is None:
        return config  # a campaign stored by an older xamt: the command line says everything
    where = f"{path}: campaign {campaign_id} config (corrupted)"
    schemas.validate("campaign-state", run, where, StoreError, definition="run")
    try:
        parse_budget(run["budget"])
        parse_shard(run["shard"])
        check = [check_library(lib) for lib in run["libraries"]]
    except XamtError as exc:
        raise StoreError(f"{where}: {exc}") from None
    stored: dict[str, Any] = {
        "budget": run["budget"],
        "seed": run["seed"],
        "libraries": tuple(check),
        "group": run.get("group"),
        "shard": run["shard"],
        "schedule": Schedule(run["schedule"]),
        "oracles": tuple(run["oracles"]),
        "reproduce_runs": run.get("reproduce_runs", config.reproduce_runs),
        "deadline": run.get("deadline", config.deadline),
        "triage_budget": run.get("triage_budget"),
        "catalog": None if run.get("catalog") is None else Path(run["catalog"]),
        "known_differences": None
        if run.get("known_differences") is None
        else Path(run["known_differences"]),
        "variant": run.get("variant", config.variant),
        "participation": run.get("participation", config.participation),
    }
    for field in sorted(given & set(RESUMED_OPTIONS), key=list(RESUMED_OPTIONS).index):
        mine, theirs = getattr(config, field), stored[field]
        if field == "libraries" and mine is None:
            mine = library_names()
        if _comparable(field, mine) != _comparable(field, theirs):
            option = RESUMED_OPTIONS[field]
            raise UsageError(
                f"--resume continues campaign {campaign_id} as it was started: {option} "
                f"{_shown(field, mine)} contradicts its stored {option} {_shown(field, theirs)}; "
                f"drop {option}, or start a new campaign in another --out folder"
            )
    return dataclasses.replace(config, **stored)


@dataclass(frozen=True, kw_only=True)
class FuzzResult:
    """What a fuzz run left behind.

    ``finished``: the budget was spent, nothing was interrupted and every candidate has its
    verdict (the campaign is recorded as finished); otherwise ``--resume`` continues it.
    ``interrupted``: a signal (Ctrl-C, SIGTERM: ``stopped_by``) stopped it.
    """

    campaign_id: int
    findings_path: Path
    document: Document
    cases: int
    seconds: float
    finished: bool
    interrupted: bool
    phases: Phases  # wall seconds of startup, fuzz, reproduce, triage, write
    libraries: dict[str, LibraryTime]  # each library's time while fuzzing
    pending: int = 0  # signatures left to reproduce (the budget ran out): --resume continues
    stopped_by: str = ""  # the signal that stopped the run (SIGINT, SIGTERM), if one did
    # per library: the cases of its groups ("cases") and those it took part in ("took_part")
    participation: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)


def _ignore(_message: str) -> None:
    pass


def campaign_line(p: Progress) -> str:
    """The one-line report of the campaign loop after a batch."""
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(p.candidates.items())) or "none"
    return f"  {p.cases} cases, {p.rate:.0f}/s; new signatures by kind: {kinds}; at {p.group}"


def time_lines(result: FuzzResult) -> list[str]:
    """Where the run's wall time went: by phase, then by library while fuzzing."""
    wall = sum(result.phases.seconds.values())
    parts = ", ".join(f"{name} {s:.0f} s" for name, s in result.phases.seconds.items())
    rate = result.cases / result.seconds if result.seconds else 0.0
    lines = [f"time: {wall:.0f} s in all ({parts}); fuzzing ran {rate:.0f} cases/s"]
    fuzz = result.phases.seconds.get("fuzz", 0.0)
    lines += ["  " + line for line in table_lines(result.libraries, fuzz)]
    lines += participation_lines(result.participation)
    return lines


def participation_lines(participation: dict[str, dict[str, int]]) -> list[str]:
    """Each library's share of its groups' cases that it took part in (a library left out of
    most cases, while saturated or after dying, is barely tested whatever the rate says)."""
    if not participation:
        return []
    parts = [
        f"{lib} {100 * p['took_part'] / p['cases']:.0f}% ({p['took_part']:,}/{p['cases']:,})"
        for lib, p in participation.items()
        if p["cases"]
    ]
    return [
        "participation (cases taken part in, of the cases of the library's groups): "
        + ", ".join(parts)
    ]


def _order(lib: str) -> int:
    names = library_names()
    return names.index(lib) if lib in names else len(names)


def unjudged_lines(unjudged: dict[str, list[Any]], most: int = 5) -> list[str]:
    """What to say of the cases the judge failed on (group -> [count, first error])."""
    if not unjudged:
        return []
    total = sum(n for n, _ in unjudged.values())
    lines = [
        f"{total} cases of {len(unjudged)} groups could not be judged (a defect in xamt, "
        "not in a library; please report it); the rest of the run is unaffected:"
    ]
    ranked = sorted(unjudged.items(), key=lambda kv: (-kv[1][0], kv[0]))
    lines += [f"  {group}: {n} cases, {error}" for group, (n, error) in ranked[:most]]
    if len(ranked) > most:
        lines.append(f"  ... and {len(ranked) - most} more groups")
    return lines


def run_fuzz(
    config: FuzzConfig,
    *,
    on_progress: Callable[[str], None] = _ignore,
    on_warning: Callable[[str], None] = _ignore,
    on_campaign: Callable[[Progress], None] | None = None,
) -> FuzzResult:
    """Fuzz the catalog's groups across libraries and write findings.json into ``out_dir``.

    Only discrepancies that reproduce in freshly started workers become findings. SIGINT or
    SIGTERM stops the run within seconds: the cases in flight go back to the campaign's pending
    work, the store and a findings.json marked partial are written, and reproduction and
    minimization are left to ``resume`` (the result is then not ``finished``; its ``stopped_by``
    names the signal). ``resume`` continues the folder's stored campaign with its stored options.
    One campaign runs in an output folder at a time (:func:`xamt.paths.folder_lock`).

    ``on_progress`` gets plain-text progress lines (never markup), ``on_warning`` what went
    wrong but did not stop the run, ``on_campaign`` the campaign loop's progress after each
    batch (default: :func:`campaign_line` into ``on_progress``).
    """
    from xamt.fuzz.cancel import Cancellation
    from xamt.paths import folder_lock, writable_folder
    from xamt.store import check_resumable

    cancel = Cancellation()
    with cancel.installed(), ExitStack() as held:
        if config.resume:
            if not config.out_dir.is_dir():
                check_resumable(config.out_dir / "xamt.sqlite", "fuzz-0-1")  # says there is none
            lock = held.enter_context(folder_lock(config.out_dir, "xamt fuzz --resume"))
            config = resumed_config(config)
        else:
            _check_options(config)  # bad usage is said before the folder is made
            folder = writable_folder(config.out_dir, "choose another with --out")
            lock = held.enter_context(folder_lock(folder, "xamt fuzz"))
        return _run(config, cancel, lock, on_progress, on_warning, on_campaign)


def _check_options(config: FuzzConfig) -> list[str]:
    """The chosen libraries; :class:`UsageError` (or a subclass) for options that cannot run."""
    from xamt.fuzz.campaign import parse_budget, parse_shard

    parse_budget(config.budget)
    parse_shard(config.shard)
    if config.schedule not in set(Schedule):
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
    return chosen


def _run(
    config: FuzzConfig,
    cancel: Cancellation,
    lock: FolderLock,
    on_progress: Callable[[str], None],
    on_warning: Callable[[str], None],
    on_campaign: Callable[[Progress], None] | None,
) -> FuzzResult:
    """:func:`run_fuzz` once the folder is held and the options are final."""
    from xamt.findings_io import findings_document, write_findings
    from xamt.fuzz.campaign import (
        Campaign,
        CampaignConfig,
        parse_budget,
        parse_shard,
        select_groups,
    )
    from xamt.fuzz.reproduce import reproduce
    from xamt.known import DEFAULT_PATH, load_known
    from xamt.paths import writable_folder
    from xamt.store import Store, check_store
    from xamt.triage.pipeline import triage
    from xamt.workers.pool import WorkerPool

    started = time.monotonic()
    chosen = _check_options(config)
    known = load_known(config.known_differences or DEFAULT_PATH)
    spent: Budget = parse_budget(config.budget)
    shard_spec = parse_shard(config.shard)
    cat = catalog_model.load(config.catalog or catalog_model.CATALOG_PATH)
    groups = select_groups(cat, chosen, config.group, shard_spec)
    if not groups:
        raise UsageError(
            f"no group matches --group {config.group!r} with these libraries and shard; "
            "see `xamt catalog list`"
        )
    name = f"fuzz-{shard_spec[0]}-{shard_spec[1]}"
    group_map = {g.id: g for g in groups}
    # the store before anything is written or started: nothing to resume, or a store that is
    # not one, or that holds malformed rows or cases that do not fit their groups, is said now
    # (exit 23 or 10)
    check_store(config.out_dir / "xamt.sqlite", name, resume=config.resume, groups=group_map)
    folder = writable_folder(config.out_dir, "choose another with --out")
    pythons = {lib: envs.interpreter(lib, config.variant) for lib in chosen}
    lock.announce()
    steps = plan(spent, started, config.triage_budget)
    campaign_config = CampaignConfig(
        name=name,
        seed=config.seed,
        budget=steps.fuzz,
        libraries=tuple(chosen),
        schedule=config.schedule,
        gradients=GRADIENT_SHARE if "gradients" in config.oracles else 0.0,
        participation=config.participation,
        run=run_options(config, chosen),
    )
    report = on_campaign or (lambda p: on_progress(campaign_line(p)))
    phases = Phases()
    pending = 0
    with Store(folder / "xamt.sqlite") as store, ExitStack() as stack:
        # a time budget: each library at its own pace, per-API deadlines, standby workers
        timed = spent.seconds is not None
        with WorkerPool(pythons, deadline=config.deadline, adaptive=timed, standby=timed) as pool:
            on_progress(f"starting {len(chosen)} workers; {len(groups)} groups")
            on_progress(steps.describe(spent))
            with cancel.interruptible():  # nothing drawn yet: a signal simply ends the run
                versions = {lib: h.version for lib, h in pool.start().items()}
                campaign = Campaign(campaign_config, groups, pool, store, known, cancel=cancel)
                resumed = campaign.open(config.resume)
            if resumed:
                on_progress(
                    f"resuming campaign {campaign.campaign_id} at case {campaign.state.seq}"
                )
            phases.add("startup", time.monotonic() - started)
            if steps.fuzz_until is not None:  # the startup came out of the fuzzing time
                campaign.stop_at(steps.fuzz_until)
            with phases.timed("fuzz"):
                progress = campaign.run(report)
            libraries = campaign.library_times()
            unjudged = campaign.state.unjudged
            gradient_counts = dict(campaign.state.gradients)
            participation = {
                lib: {"cases": n, "took_part": took}
                for lib, (n, took) in sorted(
                    campaign.state.participation.items(), key=lambda kv: _order(kv[0])
                )
            }
            for line in unjudged_lines(unjudged):
                on_warning(line)
            # the standby workers never ran a call: the first reproduction run's fresh pool,
            # then triage's (no start-up to wait for)
            fresh = pool.detach_standby() if not cancel.requested else None
            if fresh is not None:
                stack.enter_context(fresh)
            stopping = time.monotonic()
        interrupted = cancel.requested or not campaign.exhausted()
        if cancel.requested:
            on_warning(
                f"stopped by {cancel.name}: {progress.cases} cases run, "
                f"{campaign.put_back} drawn cases put back for --resume, workers stopped in "
                f"{time.monotonic() - stopping:.1f} s; reproduction and minimization are "
                "left to --resume"
            )
        else:
            try:
                with cancel.interruptible():
                    with phases.timed("reproduce"):
                        repro = reproduce(
                            store,
                            campaign.campaign_id,
                            pythons,
                            group_map,
                            runs=config.reproduce_runs,
                            deadline=config.deadline,
                            until=steps.reproduce_until,
                            first=fresh,
                            progress=lambda m: on_progress(f"  {m}"),
                            known=known,
                        )
                    pending = repro.pending
                    on_progress(
                        f"reproduced {repro.reproduced}, flaky {repro.flaky}, "
                        f"not reproduced {repro.not_reproduced} in {repro.seconds:.0f} s"
                        + (f"; {pending} left for --resume (budget spent)" if pending else "")
                    )
                    with phases.timed("triage"):
                        if fresh is None:
                            fresh = stack.enter_context(
                                WorkerPool(pythons, deadline=config.deadline)
                            )
                        fresh.start()
                        limits = [
                            x
                            for x in (
                                steps.triage_seconds,
                                steps.triage_until - time.monotonic()
                                if steps.triage_until
                                else None,
                            )
                            if x is not None
                        ]
                        summary = triage(
                            store,
                            campaign.campaign_id,
                            fresh,
                            group_map,
                            out_dir=folder,
                            known=known,
                            versions=versions,
                            progress=lambda m: on_progress(f"  {m}"),
                            max_seconds=max(0.0, min(limits)) if limits else None,
                            until=steps.finish_until,
                        )
                    on_progress(
                        f"triaged {summary.findings} findings: {summary.documented} documented "
                        "differences; repro scripts in " + str(folder / "repro")
                    )
            except KeyboardInterrupt:
                interrupted = True
                on_warning(
                    f"stopped by {cancel.name or 'SIGINT'}: what was not reproduced or triaged "
                    "stays pending (use --resume)"
                )
        write_started = time.monotonic()
        info = {
            "name": campaign_config.name,
            "seed": config.seed,
            "budget": str(spent),
            "schedule": config.schedule,
            "shard": config.shard,
            "cases": progress.cases,
            "seconds": round(progress.seconds, 1),
            "wall_seconds": round(time.monotonic() - started, 1),
            "unjudged": {g: n for g, (n, _) in unjudged.items()},
            "oracles": list(config.oracles),
            **({"gradients": gradient_counts} if "gradients" in config.oracles else {}),
            "participation": participation,
            **({"partial": True} if interrupted or pending else {}),
            **({"stopped_by": cancel.name} if cancel.requested else {}),
            "time": {
                "phases": phases.as_dict(),
                "libraries": {lib: t.as_dict() for lib, t in libraries.items()},
            },
        }
        document = findings_document(
            store, campaign.campaign_id, libraries=versions, campaign_info=info
        )
        findings_path = folder / "findings.json"
        write_findings(findings_path, document)
        done = not interrupted and not pending
        phases.add("write", time.monotonic() - write_started)
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
        phases=phases,
        libraries=libraries,
        pending=pending,
        stopped_by=cancel.name,
        participation=participation,
    )
