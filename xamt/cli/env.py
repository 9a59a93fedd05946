"""``xamt env``: build and inspect per-library environments."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from xamt import envs
from xamt.cli.common import (
    Installer,
    JsonOpt,
    Variant,
    VariantOpt,
    cell,
    err,
    handles_errors,
    out,
    say,
    sub_app,
    warn,
)
from xamt.errors import UsageError, XamtError
from xamt.libraries import check_library, library_names
from xamt.workers.health import check_imports, verify_env

app = sub_app("Build and inspect per-library environments.")

LibrariesArg = Annotated[list[str] | None, typer.Argument(help="Libraries (see `xamt env list`).")]


def chosen_libraries(names: list[str] | None, all_: bool) -> list[str]:
    """The named libraries (checked, each once), or every known one with ``all_``."""
    if all_:
        return list(library_names())
    if not names:
        raise UsageError(
            f"name the libraries to use, or pass --all (known: {', '.join(library_names())})"
        )
    return [check_library(n) for n in dict.fromkeys(names)]


@app.command("install")
@handles_errors
def env_install(
    libraries: LibrariesArg = None,
    all_: Annotated[bool, typer.Option("--all", help="Install every known library.")] = False,
    variant: VariantOpt = Variant.cpu,
    force: Annotated[bool, typer.Option("--force", help="Rebuild even if up to date.")] = False,
    installer: Annotated[
        Installer, typer.Option("--installer", help="What builds the environment.")
    ] = Installer.auto,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only the summary.")] = False,
) -> None:
    """Build each library's virtualenv under XAMT_HOME from
    `images/LIB/requirements-VARIANT.txt`.

    Idempotent: an environment built from the same spec is kept (instant); a changed spec
    rebuilds it; an interrupted build is never taken for a healthy one.

    Example: `xamt env install numpy torch jax`
    """
    libs = chosen_libraries(libraries, all_)
    failures = []
    for i, lib in enumerate(libs, 1):
        before = envs.status(lib, variant.value)
        label = f"[{i}/{len(libs)}] {lib}"
        if before.state == "ready" and not force:
            say(f"{label}: up to date ({before.path})")
            continue
        say(f"{label}: building ({before.state}) in {envs.env_dir(lib, variant.value)}")

        def show(line: str) -> None:
            if not quiet:
                say(f"  {line}")

        try:
            st = envs.install(
                lib,
                variant.value,
                force=force,
                installer=installer.value,
                progress=show,
                verify=verify_env,
            )
        except XamtError as exc:
            err.print(Text.assemble(cell(f"{label}: "), ("failed", "red"), ": ", cell(exc)))
            failures.append(lib)
            continue
        info = envs.marker_info(st)
        out.print(
            Text.assemble(
                cell(f"{label}: "),
                ("ready", "green"),
                cell(f" {info.get('version', '')} in {info.get('seconds', '?')} s"),
            )
        )
    if failures:
        raise envs.InstallFailed(f"could not build: {', '.join(failures)}")


@app.command("list")
@handles_errors
def env_list(
    as_json: JsonOpt = False,
    variant: VariantOpt = Variant.cpu,
    check: Annotated[bool, typer.Option(help="Start each worker to check that it imports.")] = True,
) -> None:
    """Show each library's environment: state, version, interpreter, imports, dtypes.

    Example: `xamt env list --no-check --json`
    """
    statuses = [envs.status(lib, variant.value) for lib in library_names()]
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
        say(json.dumps(rows, indent=2))
        return
    table = Table("library", "state", "version", "imports", "dtypes", "interpreter")
    for row in rows:
        imports = {
            True: Text("yes", "green"),
            False: Text("no", "red"),
            None: Text("-"),
        }[row["imports"]]
        table.add_row(
            cell(row["library"]),
            cell(row["state"]),
            cell(row["version"] or "-"),
            imports,
            cell(len(row["dtypes"]) if row["dtypes"] else "-"),
            cell(row["python"]),
        )
    out.print(table)
    for row in rows:
        if row.get("error"):
            warn(f"{row['library']}: {row['error']}")
