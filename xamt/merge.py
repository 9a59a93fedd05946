"""Merge the output folders of sharded campaigns into one: one store, one findings.json.

A campaign sharded over a CI matrix (``xamt fuzz --shard i/n``) leaves one output folder per
shard, each with ``xamt.sqlite``, ``findings.json`` and ``repro/``. :func:`merge` turns them
into one output folder, deduplicated by signature, that the report and the filer read as if one
campaign had run:

- ``xamt.sqlite``: every campaign of every input, with its cases and candidates (new campaign
  ids, as ids are per store), and one finding per signature: occurrences summed, the earliest
  ``first_seen``, the latest ``last_seen``, the campaigns united, and the payload of the input
  that saw it last (the newest, as :meth:`xamt.store.Store.upsert_finding` keeps it).
- ``findings.json`` (schema 1): every finding of the merged store; ``libraries`` is the union
  of the inputs' (a library seen at different versions lists them, comma-separated, in input
  order); ``campaign`` aggregates the inputs' campaign blocks (see :func:`campaign_info`).
- ``repro/<signature>/``: each finding's repro scripts, from the input its payload came from.

Note:
    Merging the same campaign twice would count its findings twice, so an input whose campaign
    (same name, start time and config) is already among the earlier inputs is refused, as is the
    same folder named twice. The output is written aside and moved into place last: a failed
    merge leaves no store that looks complete. An output folder that already holds a store or a
    findings.json is refused rather than overwritten.

Errors (exit codes as in the README): an input that does not exist or is not a folder, the same
input twice, a campaign merged twice: :class:`~xamt.errors.UsageError` (2); a folder that is not
an xamt output (no ``xamt.sqlite`` or no readable schema-1 ``findings.json``):
:class:`NotAnOutputFolder` (10, the code of a store that is not an xamt store); a corrupted or
foreign store: :class:`~xamt.store.StoreError` (10); an output folder that cannot be written
or already holds an output: :class:`~xamt.errors.OutputError` (11).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import closing, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from xamt import __version__
from xamt.errors import OutputError, UsageError, XamtError
from xamt.fuzz.output import SCHEMA, finding_entry, writable_folder, write_findings
from xamt.store import FindingRow, Store, StoreError

STORE_NAME = "xamt.sqlite"
FINDINGS_NAME = "findings.json"
REPRO_NAME = "repro"
CAMPAIGN_COLUMNS = (
    "name",
    "config",
    "state",
    "next_seq",
    "batches",
    "started",
    "updated",
    "finished",
    "summary",
)
CASE_COLUMNS = ("seq", "grp", "dtype", "value_class", "score", "kinds")
CANDIDATE_COLUMNS = (
    "seq",
    "signature",
    "kind",
    "grp",
    "dtype",
    "payload",
    "status",
    "reproduced",
    "runs",
)


class NotAnOutputFolder(XamtError):
    """A merge input that is not the output folder of an xamt campaign."""

    exit_code = 10


@dataclass(frozen=True, kw_only=True)
class MergeSummary:
    """What :func:`merge` wrote.

    ``findings`` counts distinct signatures; ``shared`` those seen in more than one input;
    ``occurrences`` the occurrences of all findings, summed over the inputs.
    """

    inputs: int
    campaigns: int
    cases: int
    findings: int
    shared: int
    occurrences: int
    libraries: dict[str, str]
    store: Path
    findings_path: Path


@dataclass(kw_only=True)
class _Input:
    """One input folder, checked: its path, findings.json and the findings of its store."""

    path: Path
    document: dict[str, Any]
    findings: list[FindingRow]


@dataclass(kw_only=True)
class _Merged:
    """A finding being merged across inputs."""

    row: FindingRow
    source: Path
    occurrences: int
    first_seen: str
    campaigns: set[int]
    inputs: int = 1


# -- reading inputs ---------------------------------------------------------------------------


def _read_only(path: Path) -> sqlite3.Connection:
    """A connection to a store (already checked by opening it with :class:`Store`) that can
    only read.

    Note:
        Not SQLite's ``mode=ro``: a read-only connection to a WAL database leaves ``-wal`` and
        ``-shm`` files behind in the input folder; an ordinary connection, like the store's own,
        removes them when it closes.
    """
    try:
        conn = sqlite3.connect(path, timeout=30.0)
        conn.execute("PRAGMA query_only = ON")
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot open the store ({exc})") from exc
    return conn


def _check_input(folder: Path) -> _Input:
    if not folder.exists():
        raise UsageError(f"{folder}: no such folder; name the output folders of the shards")
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder; name the output folders of the shards")
    store_path = folder / STORE_NAME
    findings_path = folder / FINDINGS_NAME
    if not store_path.is_file():
        raise NotAnOutputFolder(
            f"{folder}: not an xamt output folder (no {STORE_NAME}); name the folder that "
            "`xamt fuzz --out` wrote"
        )
    try:
        document = json.loads(findings_path.read_text())
    except FileNotFoundError:
        raise NotAnOutputFolder(
            f"{folder}: no {FINDINGS_NAME} (the campaign did not finish writing); run "
            f"`xamt fuzz --resume --out {folder}` to finish it, or leave the folder out"
        ) from None
    except (OSError, ValueError) as exc:
        raise NotAnOutputFolder(f"{findings_path}: not readable JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        found = document.get("schema") if isinstance(document, dict) else None
        raise NotAnOutputFolder(
            f"{findings_path}: findings.json schema {found!r}; this xamt merges schema {SCHEMA}"
        )
    with Store(store_path) as store:  # checks it is an xamt store of a schema we read
        findings = store.findings()
    return _Input(path=folder, document=document, findings=findings)


def _rows(conn: sqlite3.Connection, sql: str, params: Sequence[Any] = ()) -> Iterator[Any]:
    try:
        yield from conn.execute(sql, params)
    except sqlite3.Error as exc:
        raise StoreError(f"could not read a store to merge ({exc})") from exc


# -- the merged findings.json -------------------------------------------------------------------


def _common(values: Sequence[Any]) -> Any:
    """The value when all agree, else the distinct values joined (as text) in order."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    return ", ".join(str(v) for v in distinct)


def campaign_info(blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``campaign`` block of a merged findings.json, from the inputs' blocks.

    ``seed``, ``budget`` and ``schedule`` are the inputs' value when they agree, else their
    distinct values joined with ", "; ``shard`` lists the inputs' shards (``"0/3, 1/3, 2/3"``);
    ``cases`` and ``seconds`` are sums (``seconds`` is the time spent by all shards together;
    ``wall_seconds`` the longest shard's); ``merged`` holds the inputs' own blocks.
    """
    seconds = [float(b.get("seconds", 0.0)) for b in blocks]
    return {
        "name": "merge",
        "seed": _common([b.get("seed") for b in blocks]) if blocks else None,
        "budget": _common([b.get("budget", "") for b in blocks]) if blocks else "",
        "schedule": _common([b.get("schedule", "") for b in blocks]) if blocks else "",
        "shard": ", ".join(
            sorted(
                {str(b.get("shard", "")) for b in blocks if b.get("shard")},
                key=_shard_order,
            )
        ),
        "cases": sum(int(b.get("cases", 0)) for b in blocks),
        "seconds": round(sum(seconds), 1),
        "wall_seconds": round(max(seconds, default=0.0), 1),
        "merged": list(blocks),
    }


def _shard_order(text: str) -> tuple[int, int, str]:
    index, _, total = text.partition("/")
    try:
        return int(total), int(index), text
    except ValueError:
        return (1 << 30, 0, text)


def libraries_union(documents: Sequence[dict[str, Any]]) -> dict[str, str]:
    """Every library of the inputs with its version (distinct versions joined with ", ")."""
    seen: dict[str, list[str]] = {}
    for doc in documents:
        for lib, version in dict(doc.get("libraries") or {}).items():
            versions = seen.setdefault(str(lib), [])
            if str(version) not in versions:
                versions.append(str(version))
    return {lib: ", ".join(versions) for lib, versions in seen.items()}


# -- merging ----------------------------------------------------------------------------------


def _check_output(out: Path, inputs: Sequence[Path]) -> None:
    resolved = out.resolve()
    if any(resolved == p.resolve() for p in inputs):
        raise OutputError(f"{out}: is also an input; write the merge to another folder")
    for name in (STORE_NAME, FINDINGS_NAME):
        if (out / name).exists():
            raise OutputError(
                f"{out}: already holds an xamt output ({name}); name a new or empty folder"
            )
    writable_folder(out)


def merge(inputs: Sequence[Path], out: Path) -> MergeSummary:
    """Merge the output folders ``inputs`` (of ``xamt fuzz``) into the folder ``out``.

    One finding per signature; see the module docstring for how fields combine and for the
    errors raised.
    """
    if not inputs:
        raise UsageError("name at least one output folder to merge")
    paths = [Path(p) for p in inputs]
    seen: dict[Path, Path] = {}
    for p in paths:
        key = p.resolve()
        if key in seen:
            raise UsageError(f"{p}: named twice (also as {seen[key]}); name each folder once")
        seen[key] = p
    checked = [_check_input(p) for p in paths]
    _check_output(out, paths)

    partial = out / f".{STORE_NAME}.partial"
    _remove_store(partial)
    documents = [i.document for i in checked]
    try:
        Store(partial).close()  # the schema, exactly as xamt makes it
        campaigns, cases, merged = _copy_into(partial, checked)
        entries = [_entry(sig, m) for sig, m in sorted(merged.items())]
        _copy_repro(merged, out)
    except BaseException:
        _remove_store(partial)
        raise
    entries.sort(key=lambda e: (e["kind"], e["group"], e["signature"]))
    libraries = libraries_union(documents)
    document = {
        "schema": SCHEMA,
        "xamt_version": __version__,
        "libraries": libraries,
        "campaign": campaign_info([dict(d.get("campaign") or {}) for d in documents]),
        "findings": entries,
    }
    os.replace(partial, out / STORE_NAME)
    write_findings(out / FINDINGS_NAME, document)
    return MergeSummary(
        inputs=len(checked),
        campaigns=campaigns,
        cases=cases,
        findings=len(merged),
        shared=sum(1 for m in merged.values() if m.inputs > 1),
        occurrences=sum(m.occurrences for m in merged.values()),
        libraries=libraries,
        store=out / STORE_NAME,
        findings_path=out / FINDINGS_NAME,
    )


def _remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _entry(signature: str, m: _Merged) -> dict[str, Any]:
    """The findings.json entry of a merged finding (its payload must be xamt's own)."""
    try:
        return finding_entry(signature, m.row.payload, m.occurrences)
    except (KeyError, TypeError, AttributeError) as exc:
        raise NotAnOutputFolder(
            f"{m.source / STORE_NAME}: finding {signature} is not one this xamt wrote "
            f"(its payload lacks {exc}); merge outputs of the same xamt version"
        ) from None


def _copy_into(target: Path, inputs: Sequence[_Input]) -> tuple[int, int, dict[str, _Merged]]:
    """Copy every input's campaigns, cases and candidates into ``target`` and merge their
    findings; one transaction. Returns (campaigns, cases, merged findings by signature)."""
    merged: dict[str, _Merged] = {}
    identities: dict[tuple[Any, ...], Path] = {}
    n_campaigns = n_cases = 0
    with closing(sqlite3.connect(target, isolation_level=None)) as dst:
        dst.execute("PRAGMA foreign_keys = ON")
        dst.execute("BEGIN IMMEDIATE")
        try:
            for item in inputs:
                ids: dict[int, int] = {}
                with closing(_read_only(item.path / STORE_NAME)) as src:
                    cols = ", ".join(CAMPAIGN_COLUMNS)
                    for row in list(_rows(src, f"SELECT id, {cols} FROM campaigns ORDER BY id")):
                        old, values = row[0], tuple(row[1:])
                        identity = (values[0], values[5], values[1])  # name, started, config
                        if identity in identities:
                            raise UsageError(
                                f"{item.path}: campaign {values[0]!r} started {values[5]} is "
                                f"also in {identities[identity]}; merging it twice would count "
                                "its findings twice: leave one of the two folders out"
                            )
                        identities[identity] = item.path
                        marks = ", ".join("?" * len(CAMPAIGN_COLUMNS))
                        cur = dst.execute(
                            f"INSERT INTO campaigns ({cols}) VALUES ({marks})", values
                        )
                        assert cur.lastrowid is not None
                        ids[old] = cur.lastrowid
                    n_campaigns += len(ids)
                    for old, new in ids.items():
                        n_cases += _copy_rows(src, dst, "cases", CASE_COLUMNS, old, new)
                        _copy_rows(src, dst, "candidates", CANDIDATE_COLUMNS, old, new)
                for row in item.findings:
                    _add_finding(merged, row, item.path, ids)
            for sig, m in merged.items():
                dst.execute(
                    "INSERT INTO findings (signature, kind, grp, dtype, payload, occurrences, "
                    "first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        sig,
                        m.row.kind,
                        m.row.group,
                        m.row.dtype,
                        json.dumps(m.row.payload, separators=(",", ":")),
                        m.occurrences,
                        m.first_seen,
                        m.row.last_seen,
                    ),
                )
                dst.executemany(
                    "INSERT INTO finding_campaigns (signature, campaign) VALUES (?, ?)",
                    [(sig, c) for c in sorted(m.campaigns)],
                )
            dst.execute("COMMIT")
        except BaseException as exc:
            with suppress(sqlite3.Error):
                dst.execute("ROLLBACK")
            if isinstance(exc, sqlite3.Error):
                raise StoreError(f"{target}: could not write the merged store ({exc})") from exc
            raise
    return n_campaigns, n_cases, merged


def _copy_rows(
    src: sqlite3.Connection,
    dst: sqlite3.Connection,
    table: str,
    columns: Sequence[str],
    old: int,
    new: int,
) -> int:
    cols = ", ".join(columns)
    marks = ", ".join("?" * (len(columns) + 1))
    count = 0
    batch: list[tuple[Any, ...]] = []
    for row in _rows(src, f"SELECT {cols} FROM {table} WHERE campaign = ? ORDER BY seq", (old,)):
        batch.append((new, *row))
        if len(batch) >= 5000:
            dst.executemany(f"INSERT INTO {table} (campaign, {cols}) VALUES ({marks})", batch)
            count += len(batch)
            batch.clear()
    if batch:
        dst.executemany(f"INSERT INTO {table} (campaign, {cols}) VALUES ({marks})", batch)
        count += len(batch)
    return count


def _add_finding(
    merged: dict[str, _Merged], row: FindingRow, source: Path, ids: dict[int, int]
) -> None:
    campaigns = {ids[c] for c in row.campaigns if c in ids}
    current = merged.get(row.signature)
    if current is None:
        merged[row.signature] = _Merged(
            row=row,
            source=source,
            occurrences=row.occurrences,
            first_seen=row.first_seen,
            campaigns=campaigns,
        )
        return
    current.occurrences += row.occurrences
    current.first_seen = min(current.first_seen, row.first_seen)
    current.campaigns |= campaigns
    current.inputs += 1
    if row.last_seen >= current.row.last_seen:  # the newest payload wins, as in the store
        current.row = row
        current.source = source


def _copy_repro(merged: dict[str, _Merged], out: Path) -> None:
    """Copy each finding's ``repro/<signature>/`` from the input its payload came from."""
    for sig, m in merged.items():
        source = m.source / REPRO_NAME / sig
        target = out / REPRO_NAME / sig
        if not source.is_dir():
            continue
        try:
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(source, target)
        except OSError as exc:
            raise OutputError(
                f"cannot copy the repro scripts of {sig} to {target}: {exc.strerror or exc}"
            ) from None


# -- the command ------------------------------------------------------------------------------


def merge_command(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Output folders of `xamt fuzz` (one per shard) to merge."),
    ],
    out: Annotated[
        Path,
        typer.Option("--out", help="Folder to write the merged store and findings.json to."),
    ] = Path("xamt-merged"),
) -> None:
    """Merge the output folders of sharded campaigns into one, one finding per signature.

    The merged folder holds xamt.sqlite (every campaign, cases and candidates; findings with
    occurrences summed), findings.json (schema 1) and repro/, for `xamt report` and `xamt file`.
    """
    try:
        summary = merge(inputs, out)
    except XamtError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    libs = ", ".join(f"{lib} {version}" for lib, version in sorted(summary.libraries.items()))
    typer.echo(
        f"merged {summary.inputs} folders ({summary.campaigns} campaigns, {summary.cases} "
        f"cases): {summary.findings} findings, {summary.shared} seen in more than one folder, "
        f"{summary.occurrences} occurrences"
    )
    typer.echo(f"libraries: {libs or '-'}")
    typer.echo(f"wrote {summary.findings_path} and {summary.store}")
