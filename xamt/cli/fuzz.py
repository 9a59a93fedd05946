"""``xamt fuzz``: options in, :func:`xamt.fuzz.run.run_fuzz`, a summary out."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, cast

import typer

from xamt.cli.common import (
    CampaignOutOpt,
    CatalogOpt,
    DeadlineOpt,
    Schedule,
    SeedOpt,
    Variant,
    VariantOpt,
    handles_errors,
    say,
    warn,
)
from xamt.workers.pool import DEFAULT_DEADLINE

if TYPE_CHECKING:
    from xamt.fuzz.run import Schedule as ScheduleName

# The campaign stopped before its budget was spent (Ctrl-C): --resume continues it.
UNFINISHED_EXIT = 130


def register(app: typer.Typer) -> None:
    app.command("fuzz")(fuzz)


@handles_errors
def fuzz(
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
            help="Seconds for minimizing findings (default: the fuzzing time, or "
            "120 for a budget in cases); past it findings keep their original case."
        ),
    ] = None,
    catalog: CatalogOpt = None,
    variant: VariantOpt = Variant.cpu,
) -> None:
    """Fuzz the catalog's groups across libraries and write findings.json.

    Only discrepancies that reproduce in freshly started workers become findings. Ctrl-C stops
    fuzzing, reproduces what was found and writes everything (exit 130); --resume continues a
    campaign that was stopped or killed.

    Example: `xamt fuzz --libs numpy,torch,jax --group '^(add|sum)' --budget 5m --out run1`
    """
    from xamt.fuzz.output import summary_lines
    from xamt.fuzz.run import FuzzConfig, run_fuzz

    config = FuzzConfig(
        budget=budget,
        seed=seed,
        libraries=tuple(x.strip() for x in libs.split(",") if x.strip()) if libs else None,
        group=group,
        shard=shard,
        out_dir=out_dir,
        schedule=cast("ScheduleName", schedule.value),
        resume=resume,
        reproduce_runs=reproduce_runs,
        deadline=deadline,
        known_differences=known_differences,
        triage_budget=triage_budget,
        catalog=catalog,
        variant=variant.value,
    )
    result = run_fuzz(config, on_progress=say, on_warning=warn)
    for line in summary_lines(result.document):
        say(line)
    say(f"wrote {result.findings_path}")
    if not result.finished:
        raise typer.Exit(UNFINISHED_EXIT)
