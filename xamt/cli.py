"""The ``xamt`` command line: a thin Typer edge over plain functions.

Errors a user can cause are :class:`~xamt.errors.XamtError` subclasses; they are printed as one
line and turned into their documented exit code here, never shown as a traceback.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import numpy as np
import typer
from rich.console import Console
from rich.table import Table

from xamt import __version__, envs
from xamt.callspec import parse_keyword, parse_value
from xamt.catalog import model as catalog_model
from xamt.catalog.build import build as catalog_build_fn
from xamt.catalog.check import check as check_groups
from xamt.catalog.check import sample_groups
from xamt.catalog.model import Catalog
from xamt.errors import OutputError, UnknownApi, UsageError, XamtError
from xamt.libraries import check_library, library_names, library_of_api
from xamt.merge import merge_command
from xamt.oracle.verdict import judge
from xamt.outcomes import outcome_text
from xamt.report.commands import file as file_command
from xamt.report.commands import report as report_command
from xamt.serialize import to_jsonable
from xamt.types import Call, Outcome
from xamt.workers.health import check_imports, verify_env
from xamt.workers.pool import DEFAULT_DEADLINE, DEFAULT_MEMORY_CAP, WorkerPool

# `xamt call`: the libraries disagreed (the verdict blames a library or finds a split).
DISAGREEMENT_EXIT = 18

app = typer.Typer(
    help="Cross-framework differential fuzzer for deep-learning library APIs.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
env_app = typer.Typer(help="Build and inspect per-library environments.", no_args_is_help=True)
app.add_typer(env_app, name="env")

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Turn XamtError into a one-line message and its exit code; Ctrl-C into exit 130."""
    import functools

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except XamtError as exc:
            err.print(f"[bold red]error:[/] {exc}", markup=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err.print("interrupted")
            raise typer.Exit(130) from None

    return wrapper  # type: ignore[return-value]


def version_callback(value: bool) -> None:
    if value:
        out.print(f"xamt {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """xamt: run equivalent APIs of numpy, torch, tensorflow, jax, paddle, mindspore and mxnet
    on the same inputs and report crashes and disagreements."""


# --- env -------------------------------------------------------------------------------------
VariantOpt = Annotated[
    str, typer.Option("--variant", envvar="XAMT_VARIANT", help="Environment variant: cpu or cuda.")
]


def _libraries(names: list[str] | None, all_: bool) -> list[str]:
    if all_:
        return list(library_names())
    if not names:
        raise UsageError(
            f"name the libraries to use, or pass --all (known: {', '.join(library_names())})"
        )
    return [check_library(n) for n in dict.fromkeys(names)]


@env_app.command("install")
@handles_errors
def env_install(
    libraries: Annotated[list[str] | None, typer.Argument(help="Libraries to install.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Install every known library.")] = False,
    variant: VariantOpt = "cpu",
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if up to date.")] = False,
    installer: Annotated[str, typer.Option(help="auto (uv if present), uv or pip.")] = "auto",
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary.")] = False,
) -> None:
    """Build each library's virtualenv under XAMT_HOME from images/<lib>/requirements-<variant>.txt.

    Idempotent: an environment built from the same spec is kept (instant); a changed spec
    rebuilds it; an interrupted build is never taken for a healthy one.
    """
    if installer not in ("auto", "uv", "pip"):
        raise UsageError(f"unknown installer {installer!r}; choose auto, uv or pip")
    libs = _libraries(libraries, all_)
    envs.check_variant(variant)
    failures = []
    for i, lib in enumerate(libs, 1):
        before = envs.status(lib, variant)
        label = f"[{i}/{len(libs)}] {lib}"
        if before.state == "ready" and not force:
            out.print(f"{label}: up to date ({before.path})")
            continue
        out.print(f"{label}: building ({before.state}) in {envs.env_dir(lib, variant)}")

        def show(line: str, label: str = label) -> None:
            if not quiet:
                out.print(f"  {line}", markup=False)

        try:
            st = envs.install(
                lib, variant, force=force, installer=installer, progress=show, verify=verify_env
            )
        except XamtError as exc:
            err.print(f"{label}: [red]failed[/]: {exc}")
            failures.append(lib)
            continue
        info = envs.marker_info(st)
        out.print(
            f"{label}: [green]ready[/] {info.get('version', '')} in {info.get('seconds', '?')} s"
        )
    if failures:
        raise envs.InstallFailed(f"could not build: {', '.join(failures)}")


@env_app.command("list")
@handles_errors
def env_list(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    variant: VariantOpt = "cpu",
    check: Annotated[bool, typer.Option(help="Start each worker to check that it imports.")] = True,
) -> None:
    """Show each library's environment: state, version, interpreter, imports, dtypes."""
    envs.check_variant(variant)
    statuses = [envs.status(lib, variant) for lib in library_names()]
    checked: dict[str, dict[str, Any]] = {}
    if check:
        checked = check_imports({s.library: s.python for s in statuses if s.usable})
    rows = []
    for st in statuses:
        row: dict[str, Any] = {**envs.as_dict(st), "installed": st.usable}
        row.update(checked.get(st.library, {"imports": None, "version": None, "dtypes": []}))
        if not row.get("version"):
            row["version"] = envs.marker_info(st).get("version") or None
        rows.append(row)
    if as_json:
        out.print(json.dumps(rows, indent=2), markup=False)
        return
    table = Table("library", "state", "version", "imports", "dtypes", "interpreter")
    for row in rows:
        imports = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[row["imports"]]
        table.add_row(
            row["library"],
            row["state"],
            row["version"] or "-",
            imports,
            str(len(row["dtypes"])) if row["dtypes"] else "-",
            row["python"],
        )
    out.print(table)
    for row in rows:
        if row.get("error"):
            err.print(f"{row['library']}: {row['error']}", markup=False)


# --- call ------------------------------------------------------------------------------------
@app.command("call")
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
            help="A positional argument, e.g. 'randn(2,3):float32', '[1,nan]:float64', "
            "'(0,1)', '@int64', '2'. Repeat for more.",
        ),
    ] = None,
    kwarg: Annotated[
        list[str] | None,
        typer.Option("--kwarg", "-k", help="A keyword argument NAME=VALUE. Repeat for more."),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed for generated arrays and the libraries.")] = 0,
    deadline: Annotated[
        float, typer.Option(help="Seconds a call may take (then: hang).")
    ] = DEFAULT_DEADLINE,
    variant: VariantOpt = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Run one call on several libraries, show what each returned or raised, and the verdict.

    Every API gets the same arguments; the verdict is the fuzzer's (which library departs, by
    the array API special cases or the majority, or an even split). Exit code 0 when the
    libraries agree (refusing an input is not a disagreement), 18 when they disagree, 5 when
    an API does not exist.

    Example: xamt call numpy.sinc paddle.sinc torch.sinc -a '[nan, -inf, 0.5]:float32'
    """
    if deadline <= 0:
        raise UsageError("--deadline must be positive")
    rng = np.random.default_rng(seed)
    args = tuple(parse_value(a, rng) for a in arg or [])
    kwargs = dict(parse_keyword(k, rng) for k in kwarg or [])
    by_lib: dict[str, str] = {}
    for api in apis:
        lib = library_of_api(api)
        if lib in by_lib:
            raise UsageError(f"two APIs of {lib} ({by_lib[lib]}, {api}); give one per library")
        by_lib[lib] = api
    pythons = {lib: envs.interpreter(lib, variant) for lib in by_lib}
    with WorkerPool(pythons, deadline=deadline, memory_cap=DEFAULT_MEMORY_CAP) as pool:
        pool.start()
        outcomes = pool.fanout(
            {lib: Call(api=api, args=args, kwargs=kwargs, seed=seed) for lib, api in by_lib.items()}
        )
        versions = {lib: h.version for lib, h in pool.hellos().items()}
    op = next(iter(by_lib.values())).rsplit(".", 1)[-1].lower()
    verdict = judge(outcomes, op=op, inputs=[a for a in args if isinstance(a, np.ndarray)])
    if as_json:
        document = {
            "outcomes": [_outcome_json(o, versions.get(o.library)) for o in outcomes.values()],
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
        out.print(json.dumps(document, indent=2), markup=False)
    else:
        _print_outcomes(list(outcomes.values()), versions)
        for b in verdict.blames:
            who = f"{b.library} ({b.confidence})" if not b.split else f"split: {b.library}"
            out.print(f"{b.kind}: {who}: {b.detail}", markup=False)
        refused = sorted(lib for lib, state in verdict.support.items() if state == "refused")
        if refused:
            out.print(
                f"refused the input (support gap, not a bug): {', '.join(refused)}", markup=False
            )
    unknown = [o for o in outcomes.values() if o.status == "unknown-api"]
    if unknown:
        raise UnknownApi("; ".join(o.detail for o in unknown))
    if verdict.blames:
        raise typer.Exit(DISAGREEMENT_EXIT)


def _print_outcomes(outcomes: list[Outcome], versions: dict[str, str]) -> None:
    table = Table("library", "api", "status", "result", show_lines=False)
    colors = {"ok": "green", "error": "yellow", "unsupported": "blue"}
    for o in outcomes:
        color = colors.get(o.status, "red")
        table.add_row(
            f"{o.library} {versions.get(o.library, '')}",
            o.api,
            f"[{color}]{o.status}[/]",
            outcome_text(o).replace("[", r"\["),
        )
    out.print(table)


def _outcome_json(o: Outcome, version: str | None) -> dict[str, Any]:
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


# --- catalog ---------------------------------------------------------------------------------
catalog_app = typer.Typer(
    help="Groups of equivalent APIs: build, inspect, check.", no_args_is_help=True
)
app.add_typer(catalog_app, name="catalog")
CatalogOpt = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        envvar="XAMT_CATALOG",
        help="Catalog file (default: the one shipped with xamt).",
    ),
]


def _load_catalog(path: Path | None) -> Catalog:
    return catalog_model.load(path or catalog_model.CATALOG_PATH)


@catalog_app.command("build")
@handles_errors
def catalog_build(
    libraries: Annotated[list[str] | None, typer.Argument(help="Libraries (default: all).")] = None,
    output: Annotated[Path | None, typer.Option(help="Where to write the catalog.")] = None,
    only: Annotated[
        str | None, typer.Option(help="Regex on operation names (partial build).")
    ] = None,
    fresh: Annotated[
        bool, typer.Option(help="Ignore checkpointed results of earlier runs.")
    ] = False,
    variant: VariantOpt = "cpu",
) -> None:
    """Build the catalog from the installed libraries: inventory, normalization, candidates,
    execution-validated groups. Resumes from checkpointed results unless --fresh."""
    libs = _libraries(libraries, all_=not libraries)
    if len(libs) < 2:
        raise UsageError("a catalog needs at least two libraries")
    pattern = _regex(only) if only else None
    cache = envs.xamt_home() / "catalog"
    if fresh and cache.exists():
        for stale in cache.glob("probes-*.jsonl"):
            stale.unlink()
    target = output or catalog_model.CATALOG_PATH
    pythons = {lib: envs.interpreter(lib, variant) for lib in libs}
    started = time.monotonic()
    with WorkerPool(pythons, deadline=20) as pool:
        out.print(f"starting {len(libs)} workers")
        pool.start()
        catalog = catalog_build_fn(
            pool,
            cache_dir=cache,
            ops=(lambda op: bool(pattern.search(op))) if pattern else None,
            progress=lambda line: out.print(f"  {line}", markup=False),
        )
    catalog_model.save(catalog, target)
    stats = catalog.stats()
    out.print(
        f"wrote {target}: {stats['groups']} groups, {stats['matched_apis']} APIs, "
        f"{time.monotonic() - started:.0f} s"
    )


def _regex(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as exc:
        raise UsageError(f"--only {text!r} is not a regular expression: {exc}") from None


@catalog_app.command("stats")
@handles_errors
def catalog_stats(
    catalog: CatalogOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Totals: groups, matched API names, distinct callables, groups per library."""
    stats = _load_catalog(catalog).stats()
    if as_json:
        out.print(json.dumps(stats, indent=2), markup=False)
        return
    out.print(
        f"groups {stats['groups']}  operations {stats['operations']}  "
        f"matched APIs {stats['matched_apis']}  distinct callables "
        f"{stats['distinct_callables']}"
    )
    table = Table("library", "version", "groups", "APIs")
    for lib, n in stats["groups_per_library"].items():
        table.add_row(
            lib,
            stats["library_versions"].get(lib, "-"),
            str(n),
            str(stats["apis_per_library"][lib]),
        )
    out.print(table)
    out.print("families: " + ", ".join(f"{k} {v}" for k, v in stats["families"].items()))


@catalog_app.command("list")
@handles_errors
def catalog_list(
    lib: Annotated[
        list[str] | None, typer.Option("--lib", help="Only groups with this library.")
    ] = None,
    family: Annotated[str | None, typer.Option(help="Only this family.")] = None,
    catalog: CatalogOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """List groups (id, family, dtype, libraries)."""
    cat = _load_catalog(catalog)
    wanted = {check_library(x) for x in lib or []}
    if family is not None and family not in catalog_model.FAMILIES:
        raise UsageError(
            f"unknown family {family!r}; families: {', '.join(catalog_model.FAMILIES)}"
        )
    groups = [
        g
        for g in cat.groups
        if wanted <= set(g.libraries) and (family is None or g.family == family)
    ]
    if as_json:
        out.print(
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
            ),
            markup=False,
        )
        return
    for g in groups:
        out.print(f"{g.id:32} {g.family:12} {g.dtype:8} {' '.join(g.libraries)}", markup=False)
    err.print(f"{len(groups)} groups")


@catalog_app.command("show")
@handles_errors
def catalog_show(
    group: Annotated[str, typer.Argument(help="Group id (see `xamt catalog list`).")],
    catalog: CatalogOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """One group: its roles, dtype and how each member binds them."""
    g = _load_catalog(catalog).group(group)
    if as_json:
        from dataclasses import asdict

        out.print(json.dumps(asdict(g), indent=2), markup=False)
        return
    out.print(f"{g.id}: {g.family}, roles {', '.join(g.roles)}, validated on {g.dtype}")
    table = Table("library", "api", "positional", "keywords", "optional roles")
    for m in g.members:
        table.add_row(
            m.library,
            m.api,
            ", ".join(m.args) or "-",
            ", ".join(f"{p}={r}" for p, r in m.kwargs.items()) or "-",
            ", ".join(f"{r}->{p}" for r, p in m.optional.items()) or "-",
        )
    out.print(table)


@catalog_app.command("check")
@handles_errors
def catalog_check(
    sample: Annotated[int | None, typer.Option(help="Check a seeded sample of N groups.")] = None,
    seed: Annotated[int, typer.Option(help="Seed of the sample.")] = 0,
    catalog: CatalogOpt = None,
    variant: VariantOpt = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Re-validate committed groups on the installed versions; exit 9 when any drifted."""
    if sample is not None and sample <= 0:
        raise UsageError("--sample must be positive")
    cat = _load_catalog(catalog)
    groups = sample_groups(cat, sample, seed)
    libs = sorted({lib for g in groups for lib in g.libraries}, key=library_names().index)
    pythons = {lib: envs.interpreter(lib, variant) for lib in libs}
    with WorkerPool(pythons, deadline=20) as pool:
        versions = {lib: h.version for lib, h in pool.start().items()}
        drifts = check_groups(pool, groups)
    changed = {
        lib: (cat.libraries.get(lib), v)
        for lib, v in versions.items()
        if cat.libraries.get(lib) != v
    }
    report = {
        "checked": len(groups),
        "drifted": len(drifts),
        "version_changes": {k: {"catalog": a, "installed": b} for k, (a, b) in changed.items()},
        "drift": [
            {"group": d.group, "failing": d.failing, "disagreeing": list(d.disagreeing)}
            for d in drifts
        ],
    }
    if as_json:
        out.print(json.dumps(report, indent=2), markup=False)
    else:
        for lib, (a, b) in changed.items():
            out.print(f"{lib}: catalog built with {a}, installed {b}")
        for d in drifts:
            parts = [f"{api} {status}" for api, status in d.failing.items()]
            parts += [f"{api} disagrees" for api in d.disagreeing]
            out.print(f"drift {d.group}: {'; '.join(parts)}", markup=False)
        out.print(f"checked {len(groups)} groups: {len(drifts)} drifted")
    if drifts:
        raise typer.Exit(9)


# --- fuzz ------------------------------------------------------------------------------------
@app.command("fuzz")
@handles_errors
def fuzz(
    budget: Annotated[str, typer.Option(help="Time (90s, 10m, 1h) or a number of cases.")] = "2m",
    seed: Annotated[int, typer.Option(help="Seed of the campaign.")] = 1,
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
    out_dir: Annotated[
        Path, typer.Option("--out", help="Output folder (store, findings.json).")
    ] = Path("xamt-out"),
    schedule: Annotated[
        str, typer.Option(help="variance (guided) or uniform (baseline).")
    ] = "variance",
    resume: Annotated[
        bool, typer.Option(help="Continue the last unfinished campaign in --out.")
    ] = False,
    reproduce_runs: Annotated[int, typer.Option("--reproduce", help="Fresh-worker reruns.")] = 3,
    deadline: Annotated[
        float, typer.Option(help="Seconds a call may take (then: hang).")
    ] = DEFAULT_DEADLINE,
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
    variant: VariantOpt = "cpu",
) -> None:
    """Fuzz the catalog's groups across libraries and write findings.json.

    Only discrepancies that reproduce in freshly started workers become findings. Ctrl-C stops
    fuzzing, reproduces what was found and writes everything; --resume continues a campaign that
    was stopped or killed.
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
        schedule=schedule,  # type: ignore[arg-type]  # checked by run_fuzz
        resume=resume,
        reproduce_runs=reproduce_runs,
        deadline=deadline,
        known_differences=known_differences,
        triage_budget=triage_budget,
        catalog=catalog,
        variant=variant,
    )
    result = run_fuzz(
        config,
        on_progress=lambda line: out.print(line, markup=False),
        on_warning=lambda line: err.print(line, markup=False),
    )
    for line in summary_lines(result.document):
        out.print(line, markup=False)
    out.print(f"wrote {result.findings_path}", markup=False)
    if not result.finished:
        raise typer.Exit(130)


# --- repro -----------------------------------------------------------------------------------
@app.command("repro")
@handles_errors
def repro_command(
    signature: Annotated[
        str | None,
        typer.Argument(help="A finding's signature (or a unique prefix); omit with --all."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Re-check every stored finding.")] = False,
    out_dir: Annotated[Path, typer.Option("--out", help="The campaign's output folder.")] = Path(
        "xamt-out"
    ),
    runs: Annotated[int, typer.Option(help="Fresh-worker reruns per finding.")] = 1,
    variant: VariantOpt = "cpu",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Re-run stored findings on the installed library versions: still present, or fixed.

    Each verdict is recorded with the finding (versions and time), for the issue filer.
    """
    from xamt.store import Store
    from xamt.triage.verify import verify_findings

    if (signature is None) == (not all_):
        raise UsageError("give a SIGNATURE or --all")
    store_path = out_dir / "xamt.sqlite"
    if not store_path.is_file():
        raise OutputError(f"no store at {store_path}; point --out at a campaign's output folder")
    with Store(store_path) as store:
        rows = store.findings() if all_ else [store.finding(str(signature))]
        verdicts = verify_findings(
            store, rows, catalog=_load_catalog(None), variant=variant, runs=runs
        )
    if as_json:
        out.print(json.dumps([v.as_dict() for v in verdicts], indent=2), markup=False)
        return
    for v in verdicts:
        state = "[red]still present[/]" if v.present else "[green]fixed[/]"
        out.print(
            f"{v.signature} {v.key}: {state} on "
            + ", ".join(f"{k} {x}" for k, x in sorted(v.versions.items()))
        )
        for line in v.lines:
            out.print(f"    {line}", markup=False)


# --- report and file -------------------------------------------------------------------------
app.command("report")(handles_errors(report_command))
app.command("file")(handles_errors(file_command))
app.command("merge")(handles_errors(merge_command))
