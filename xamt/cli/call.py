"""``xamt call``: one call on several libraries, what each did, and the fuzzer's verdict."""

from __future__ import annotations

import json
from typing import Annotated, Any

import numpy as np
import typer
from rich.table import Table

from xamt.call import run_call
from xamt.callspec import parse_keywords, parse_value
from xamt.cli.common import (
    DeadlineOpt,
    JsonOpt,
    SeedOpt,
    Variant,
    VariantOpt,
    cell,
    handles_errors,
    out,
    say,
)
from xamt.errors import UnknownApi
from xamt.outcomes import outcome_text
from xamt.serialize import to_jsonable
from xamt.types import Outcome
from xamt.workers.pool import DEFAULT_DEADLINE

# `xamt call`: the libraries disagreed (the verdict blames a library or finds a split).
DISAGREEMENT_EXIT = 18
STATUS_STYLES = {"ok": "green", "error": "yellow", "unsupported": "blue"}


def register(app: typer.Typer) -> None:
    app.command("call")(call)


@handles_errors
def call(
    apis: Annotated[
        list[str],
        typer.Argument(
            help="Fully qualified APIs, one per library: numpy.add torch.add tf.math.add ..."
        ),
    ],
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            "-a",
            help="A positional argument, e.g. `randn(2,3):float32`, `[1,nan]:float64`, "
            "`(0,1)`, `@int64`, `2`. Repeat for more.",
        ),
    ] = None,
    kwarg: Annotated[
        list[str] | None,
        typer.Option(
            "--kwarg", "-k", help="A keyword argument NAME=VALUE. Repeat for more (each NAME once)."
        ),
    ] = None,
    seed: SeedOpt = 0,
    deadline: DeadlineOpt = DEFAULT_DEADLINE,
    variant: VariantOpt = Variant.cpu,
    as_json: JsonOpt = False,
) -> None:
    """Run one call on several libraries, show what each returned or raised, and the verdict.

    Every API gets the same arguments; the verdict is the fuzzer's (which library departs, by
    the array API special cases or the majority, or an even split). Exit code 0 when the
    libraries agree (refusing an input is not a disagreement), 18 when they disagree, 5 when
    an API does not exist.

    Example: `xamt call numpy.sinc paddle.sinc torch.sinc -a '[nan, -inf, 0.5]:float32'`
    """
    rng = np.random.default_rng(seed)
    args = tuple(parse_value(a, rng) for a in arg or [])
    kwargs = parse_keywords(kwarg or [], rng)
    result = run_call(apis, args, kwargs, seed=seed, variant=variant.value, deadline=deadline)
    outcomes, versions, verdict = result.outcomes, result.versions, result.verdict
    if as_json:
        document = {
            "outcomes": [outcome_json(o, versions.get(o.library)) for o in outcomes.values()],
            "verdict": [
                {
                    "kind": b.kind,
                    "library": b.library,
                    "confidence": b.confidence,
                    "detail": b.detail,
                }
                for b in verdict.blames
            ],
            "support": verdict.support,
        }
        say(json.dumps(document, indent=2))
    else:
        print_outcomes(list(outcomes.values()), versions)
        for b in verdict.blames:
            who = f"{b.library} ({b.confidence})" if not b.split else f"split: {b.library}"
            say(f"{b.kind}: {who}: {b.detail}")
        refused = sorted(lib for lib, state in verdict.support.items() if state == "refused")
        if refused:
            say(f"refused the input (support gap, not a bug): {', '.join(refused)}")
    unknown = [o for o in outcomes.values() if o.status == "unknown-api"]
    if unknown:
        raise UnknownApi("; ".join(o.detail for o in unknown))
    if verdict.blames:
        raise typer.Exit(DISAGREEMENT_EXIT)


def print_outcomes(outcomes: list[Outcome], versions: dict[str, str]) -> None:
    """One row per library: version, API, status, what it returned or raised."""
    table = Table("library", "api", "status", "result", show_lines=False)
    for o in outcomes:
        table.add_row(
            cell(f"{o.library} {versions.get(o.library, '')}"),
            cell(o.api),
            cell(o.status, STATUS_STYLES.get(o.status, "red")),
            cell(outcome_text(o)),
        )
    out.print(table)


def outcome_json(o: Outcome, version: str | None) -> dict[str, Any]:
    """An outcome as JSON: status, text, value (when it returned), signal, error."""
    return {
        "library": o.library,
        "version": version,
        "api": o.api,
        "status": o.status,
        "result": outcome_text(o),
        "value": to_jsonable(o.value) if o.status == "ok" else None,
        "signal": o.signal,
        "error": None if o.error is None else {"type": o.error.type, "message": o.error.message},
    }
