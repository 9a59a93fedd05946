"""``xamt catalog``: groups of equivalent APIs — build, inspect, check."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from xamt.catalog import gradients as gradient_members
from xamt.catalog import model as catalog_model
from xamt.catalog.model import Catalog, Family
from xamt.catalog.ops import traits_of
from xamt.catalog.run import build_from_envs, check_gradients_installed, check_installed
from xamt.catalog.shared import shared_code
from xamt.cli.common import (
    CatalogOpt,
    JsonOpt,
    Variant,
    VariantOpt,
    cell,
    handles_errors,
    out,
    say,
    sub_app,
    warn,
)
from xamt.cli.env import chosen_libraries
from xamt.errors import UsageError
from xamt.libraries import check_library

app = sub_app("Groups of equivalent APIs: build, inspect, check.")

# `xamt catalog check` found drift.
DRIFT_EXIT = 9


def load_catalog(path: Path | None) -> Catalog:
    """The catalog at ``path``, or the one shipped with xamt."""
    return catalog_model.load(path or catalog_model.CATALOG_PATH)


@app.command("build")
@handles_errors
def catalog_build(
    libraries: Annotated[list[str] | None, typer.Argument(help="Libraries (default: all).")] = None,
    out_path: Annotated[
        Path | None,
        typer.Option("--out", help="Where to write the catalog (default: the shipped one)."),
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", hidden=True, help="Deprecated: use --out.")
    ] = None,
    only: Annotated[
        str | None, typer.Option(help="Regex on operation names (partial build).")
    ] = None,
    fresh: Annotated[
        bool, typer.Option(help="Ignore checkpointed results of earlier runs.")
    ] = False,
    variant: VariantOpt = Variant.cpu,
) -> None:
    """Build the catalog from the installed libraries: inventory, normalization, candidates,
    execution-validated groups. Resumes from checkpointed results unless --fresh.

    Example: `xamt catalog build numpy torch --only '^(add|sum)$' --out my-catalog.toml`
    """
    if output is not None:
        if out_path is not None:
            raise UsageError("give --out only (--output is its old spelling)")
        warn("--output is deprecated; use --out")
        out_path = output
    libs = chosen_libraries(libraries, all_=not libraries)
    target = out_path or catalog_model.CATALOG_PATH
    started = time.monotonic()
    catalog = build_from_envs(libs, variant=variant.value, only=only, fresh=fresh, progress=say)
    catalog_model.save(catalog, target)
    stats = catalog.stats()
    say(
        f"wrote {target}: {stats['groups']} groups, {stats['matched_apis']} APIs, "
        f"{time.monotonic() - started:.0f} s"
    )
    check = "xamt catalog gradients"
    if out_path is not None:
        check += f" --catalog {target} --out {target.with_name('gradient_members.json')}"
    say(f"the members' gradients are checked apart: run `{check}` (about 8 minutes)")


@app.command("stats")
@handles_errors
def catalog_stats(catalog: CatalogOpt = None, as_json: JsonOpt = False) -> None:
    """Totals: groups, matched API names, distinct callables, groups per library.

    Example: `xamt catalog stats --json`
    """
    stats = load_catalog(catalog).stats()
    if as_json:
        say(json.dumps(stats, indent=2))
        return
    say(
        f"groups {stats['groups']}  operations {stats['operations']}  "
        f"matched APIs {stats['matched_apis']}  distinct callables "
        f"{stats['distinct_callables']}"
    )
    table = Table("library", "version", "groups", "APIs")
    for lib, n in stats["groups_per_library"].items():
        table.add_row(
            cell(lib),
            cell(stats["library_versions"].get(lib, "-")),
            cell(n),
            cell(stats["apis_per_library"][lib]),
        )
    out.print(table)
    libs = list(stats["groups_per_library"])
    families = Table("family", "groups", "operations", *libs, title="groups per family")
    for family, row in stats["per_family"].items():
        families.add_row(
            cell(family),
            cell(row["groups"]),
            cell(row["operations"]),
            *(cell(row["groups_per_library"][lib]) for lib in libs),
        )
    out.print(families)
    core = stats["deep_learning_core"]
    say(
        f"deep-learning core (declared groups, xamt/catalog/data/dlcore.toml): "
        f"{core['groups']} groups, {core['operations']} operations; "
        + ", ".join(f"{lib} {n}" for lib, n in core["groups_per_library"].items())
    )


@app.command("list")
@handles_errors
def catalog_list(
    lib: Annotated[
        list[str] | None, typer.Option("--lib", help="Only groups with this library.")
    ] = None,
    family: Annotated[Family | None, typer.Option(help="Only this family.")] = None,
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List groups (id, family, dtype, libraries).

    Example: `xamt catalog list --lib paddle --family reduction`
    """
    cat = load_catalog(catalog)
    wanted = {check_library(x) for x in lib or []}
    groups = [
        g
        for g in cat.groups
        if wanted <= set(g.libraries) and (family is None or g.family == family)
    ]
    if as_json:
        say(
            json.dumps(
                [
                    {
                        "id": g.id,
                        "family": g.family,
                        "dtype": g.dtype,
                        "roles": list(g.roles),
                        "libraries": list(g.libraries),
                    }
                    for g in groups
                ],
                indent=2,
            )
        )
        return
    for g in groups:
        say(f"{g.id:32} {g.family:12} {g.dtype:8} {' '.join(g.libraries)}")
    warn(f"{len(groups)} groups")


@app.command("show")
@handles_errors
def catalog_show(
    group: Annotated[str, typer.Argument(help="Group id (see `xamt catalog list`).")],
    catalog: CatalogOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """One group: its roles, dtype and how each member binds them.

    Example: `xamt catalog show 'sum[axis]'`
    """
    g = load_catalog(catalog).group(group)
    traits = traits_of(g)
    if as_json:
        shared = [shared_code(m.library, m.api) for m in g.members]
        found = list({c.name: asdict(c) for c in shared if c is not None}.values())
        say(
            json.dumps(
                {**asdict(g), "traits": [asdict(t) for t in traits], "shared_code": found}, indent=2
            )
        )
        return
    say(f"{g.id}: {g.family}, roles {', '.join(g.roles)}, validated on {g.dtype}")
    table = Table("library", "api", "positional", "keywords", "optional roles")
    for m in g.members:
        table.add_row(
            cell(m.library),
            cell(m.api),
            cell(", ".join(m.args) or "-"),
            cell(", ".join(f"{p}={r}" for p, r in m.kwargs.items()) or "-"),
            cell(", ".join(f"{r}->{p}" for r, p in m.optional.items()) or "-"),
        )
    out.print(table)
    if g.params:
        say("canonical values: " + ", ".join(f"{k}={v}" for k, v in g.params.items()))
    for m in g.members:
        how = [
            *(f"{r} in {layout}" for r, layout in m.layout.items()),
            *(f"{p} as {enc}" for p, enc in m.encode.items()),
            *(f"{p}={v!r}" for p, v in m.fixed.items()),
        ]
        if how:
            say(f"  {m.api}: " + "; ".join(how))
    if g.reference:
        say(f"reference: the float64 formula {g.reference} (xamt/formulas.py)")
    for t in traits:
        effect = (
            f"opens {', '.join(t.opens)} when {t.when}"
            if t.opens
            else f"domain {t.domain}"
            if t.domain
            else f"positions {t.positions}"
            if t.positions
            else f"equates {t.equates}"
            if t.equates
            else f"compares {t.compare}"
        )
        say(f"trait {t.name}: {effect}: {t.reason} ({t.link})")
    for m in g.members:
        code = shared_code(m.library, m.api)
        if code is not None:
            others = ", ".join(a for a in code.apis if a != m.api)
            say(f"shared code {code.name}: {m.api} runs {code.code} with {others} ({code.link})")


@app.command("check")
@handles_errors
def catalog_check(
    sample: Annotated[int | None, typer.Option(help="Check a seeded sample of N groups.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 0,
    catalog: CatalogOpt = None,
    variant: VariantOpt = Variant.cpu,
    as_json: JsonOpt = False,
) -> None:
    """Re-validate committed groups on the installed versions; exit 9 when any drifted.

    Example: `xamt catalog check --sample 50 --seed 3`
    """
    result = check_installed(load_catalog(catalog), sample=sample, seed=seed, variant=variant.value)
    drifts, changed = result.drifts, result.version_changes
    report = {
        "checked": result.checked,
        "drifted": len(drifts),
        "version_changes": {k: {"catalog": a, "installed": b} for k, (a, b) in changed.items()},
        "drift": [
            {"group": d.group, "failing": d.failing, "disagreeing": list(d.disagreeing)}
            for d in drifts
        ],
    }
    if as_json:
        say(json.dumps(report, indent=2))
    else:
        for lib, (a, b) in changed.items():
            say(f"{lib}: catalog built with {a}, installed {b}")
        for d in drifts:
            parts = [f"{api} {status}" for api, status in d.failing.items()]
            parts += [f"{api} disagrees" for api in d.disagreeing]
            say(f"drift {d.group}: {'; '.join(parts)}")
        say(f"checked {result.checked} groups: {len(drifts)} drifted")
    if drifts:
        raise typer.Exit(DRIFT_EXIT)


@app.command("gradients")
@handles_errors
def catalog_gradients(
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out", help="Where to write the result (default: the shipped gradient_members.json)."
        ),
    ] = None,
    only: Annotated[
        str | None, typer.Option(help="Regex on operation names (a partial check, not saved).")
    ] = None,
    catalog: CatalogOpt = None,
    variant: VariantOpt = Variant.cpu,
    as_json: JsonOpt = False,
) -> None:
    """Check each differentiable group's member gradients on its canonical inputs against a
    float64 finite difference; keep the members that agree (the fuzzer's gradient oracle asks
    only them).

    Example: `xamt catalog gradients --only '^(sin|tanh)$' --out /tmp/grad.json`
    """
    chosen = load_catalog(catalog)
    started = time.monotonic()
    result = check_gradients_installed(chosen, variant=variant.value, only=only, progress=say)
    target = out_path or (None if only else gradient_members.MEMBERS_PATH)
    if target is not None:
        gradient_members.save(result, target)
    report = gradient_members.summary(result, chosen.groups)
    if as_json:
        say(json.dumps(report, indent=2))
        return
    say(
        f"checked {report['checked_groups']} groups in {time.monotonic() - started:.0f} s: "
        f"{report['differentiable_groups']} differentiable, {report['dropped']} members dropped"
    )
    for lib, n in report["members_per_library"].items():
        say(f"  {lib}: {n} members in {report['groups_per_library'].get(lib, 0)} groups")
    if target is not None:
        say(f"wrote {target}")
