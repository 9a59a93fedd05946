"""``xamt fuzz``: options in, :func:`xamt.fuzz.run.run_fuzz`, a summary out."""

from __future__ import annotations

import re
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from xamt.cli.common import (
    CampaignOutOpt,
    CatalogOpt,
    DeadlineOpt,
    SeedOpt,
    Variant,
    VariantOpt,
    handles_errors,
    out,
    safe,
    say,
    warn,
)
from xamt.errors import UsageError
from xamt.fuzz import PARTICIPATION, Schedule
from xamt.workers.pool import DEFAULT_DEADLINE

if TYPE_CHECKING:
    from xamt.fuzz.campaign import Progress

# The campaign stopped before its budget was spent (Ctrl-C): --resume continues it.
UNFINISHED_EXIT = 130
# Progress lines of one phase (the campaign's batches, reproduction's chunks, minimization's
# findings) are printed at most this often when stdout is not a terminal.
LINE_EVERY = 5.0


class Display:
    """Progress of a fuzz run: on a terminal, a live bar for fuzzing (elapsed, remaining,
    rate) and a status line for later phases; elsewhere, lines at most every
    :data:`LINE_EVERY` seconds per phase (the first line of a phase at once)."""

    def __init__(self, budget: str) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        from xamt.fuzz.campaign import parse_budget

        self.budget = parse_budget(budget)
        self.live = out.is_terminal
        self.phase = ""
        self.last = 0.0
        self.bar = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=out,
            transient=True,
        )
        self.task: Any = None

    def campaign(self, progress: Progress) -> None:
        from xamt.fuzz.run import campaign_line

        if not self.live:
            self.detail(campaign_line(progress))
            return
        total = self.budget.seconds or float(self.budget.cases or 1)
        done = progress.seconds if self.budget.seconds else float(progress.cases)
        text = safe(
            f"fuzzing: {progress.cases} cases, {progress.rate:.0f}/s, "
            f"{progress.signatures} signatures, {progress.suspected} suspected"
        )
        if self.task is None:
            self.bar.start()
            self.task = self.bar.add_task(text, total=total)
        self.bar.update(self.task, completed=min(done, total), description=text)

    def message(self, text: str) -> None:
        """A line of progress: details (indented) throttled by phase, the rest printed."""
        if self.task is not None:
            self.bar.stop()
            self.task = None
        if text.startswith("  "):
            self.detail(text)
        else:
            self.phase = ""
            say(text)

    def detail(self, text: str) -> None:
        word = re.search(r"[a-z]+", text)
        phase = word.group() if word else ""
        now = time.monotonic()
        if phase != self.phase or now - self.last >= LINE_EVERY:
            self.phase, self.last = phase, now
            say(text)

    def close(self) -> None:
        if self.task is not None:
            self.bar.stop()
            self.task = None


def register(app: typer.Typer) -> None:
    app.command("fuzz")(fuzz)


@handles_errors
def fuzz(
    ctx: typer.Context,
    budget: Annotated[
        str, typer.Option(help="Time (90s, 10m, 1h) or a whole number of cases (500).")
    ] = "2m",
    seed: SeedOpt = 1,
    libs: Annotated[
        str | None,
        typer.Option(envvar="XAMT_LIBS", help="Comma-separated libraries (default: all)."),
    ] = None,
    group: Annotated[
        str | None, typer.Option(help="Only groups whose id matches this regex.")
    ] = None,
    shard: Annotated[
        str, typer.Option(help="i/n: this shard's groups (stable by group id).")
    ] = "0/1",
    out_dir: CampaignOutOpt = Path("xamt-out"),
    schedule: Annotated[
        Schedule, typer.Option(help="variance (guided) or uniform (baseline).")
    ] = Schedule.variance,
    resume: Annotated[
        bool, typer.Option(help="Continue the last unfinished campaign in --out.")
    ] = False,
    reproduce_runs: Annotated[int, typer.Option("--reproduce", help="Fresh-worker reruns.")] = 3,
    deadline: DeadlineOpt = DEFAULT_DEADLINE,
    known_differences: Annotated[
        Path | None,
        typer.Option(help="Known-differences TOML (default: the one shipped with xamt)."),
    ] = None,
    triage_budget: Annotated[
        float | None,
        typer.Option(
            help="Seconds for minimizing findings (default: what a time budget leaves, or "
            "120 for a budget in cases); past it findings keep their original case."
        ),
    ] = None,
    catalog: CatalogOpt = None,
    variant: VariantOpt = Variant.cpu,
    oracles: Annotated[
        str,
        typer.Option(
            help="Comma-separated oracles: values (always), gradients (each library's "
            "vector-Jacobian product against a float64 finite difference, on half of the "
            "cases whose inputs can be differentiated). --oracles values turns gradients off."
        ),
    ] = "values,gradients",
    participation: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Under a time budget, the share of its groups' cases each library takes part "
            "in even when it falls behind the others (the campaign waits for it); 0 leaves a "
            "library that falls behind out of the cases it has not run warm.",
        ),
    ] = PARTICIPATION,
) -> None:
    """Fuzz the catalog's groups across libraries and write findings.json.

    Only discrepancies that reproduce in freshly started workers become findings. Ctrl-C stops
    fuzzing within seconds (as does SIGTERM), puts the cases in flight back, writes the store
    and a partial findings.json and exits 130 (143 for SIGTERM); --resume continues a campaign
    that was stopped or killed, with the options it was started with.

    Example: `xamt fuzz --libs numpy,torch,jax --group '^(add|sum)' --budget 5m --out run1`
    """
    from xamt.fuzz.output import summary_lines
    from xamt.fuzz.run import ORACLES, FuzzConfig, run_fuzz, time_lines

    chosen_oracles = tuple(x.strip() for x in oracles.split(",") if x.strip())
    unknown = [o for o in chosen_oracles if o not in ORACLES]
    if unknown or not chosen_oracles:
        raise UsageError(
            f"--oracles: unknown {', '.join(unknown) or 'empty list'}; known: {', '.join(ORACLES)}"
        )
    if "values" not in chosen_oracles:
        raise UsageError(
            "--oracles: values always runs (gradients are judged where the values agree); "
            "write --oracles values,gradients or --oracles values"
        )
    config = FuzzConfig(
        oracles=chosen_oracles,
        budget=budget,
        seed=seed,
        libraries=tuple(x.strip() for x in libs.split(",") if x.strip()) if libs else None,
        group=group,
        shard=shard,
        out_dir=out_dir,
        schedule=schedule,
        resume=resume,
        reproduce_runs=reproduce_runs,
        deadline=deadline,
        known_differences=known_differences,
        triage_budget=triage_budget,
        catalog=catalog,
        variant=variant.value,
        participation=participation,
        given=given_options(ctx),
    )
    display = Display(budget)
    try:
        result = run_fuzz(
            config,
            on_progress=display.message,
            on_warning=warn,
            on_campaign=display.campaign,
        )
        if result.stopped_by:
            # the stop is written: a later signal (SIGTERM while the summary is printed, as
            # GitHub Actions sends it after SIGINT) changes nothing, as during the wind-down
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, signal.SIG_IGN)
    finally:
        display.close()
    for line in summary_lines(result.document):
        say(line)
    say(f"wrote {result.findings_path}")
    for line in time_lines(result):
        say(line)
    if result.stopped_by:
        raise typer.Exit(128 + signal.Signals[result.stopped_by].value)
    if result.interrupted:
        raise typer.Exit(UNFINISHED_EXIT)


# command-line parameter -> FuzzConfig field, where the names differ
_FIELD_OF = {"libs": "libraries", "out_dir": "out_dir"}


def given_options(ctx: typer.Context) -> frozenset[str]:
    """The FuzzConfig fields whose options were given (on the command line or through their
    environment variable), not left at their defaults: what --resume compares with the store."""
    given: set[str] = set()
    for name in ctx.params:
        source = ctx.get_parameter_source(name)  # (typer's own click: compare by name)
        if source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT"):
            given.add(_FIELD_OF.get(name, name))
    return frozenset(given)
