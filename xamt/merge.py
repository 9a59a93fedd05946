"""Merge the output folders of sharded campaigns into one: one store, one findings.json.

A campaign sharded over a CI matrix (``xamt fuzz --shard i/n``) leaves one output folder per
shard, each with ``xamt.sqlite``, ``findings.json`` (schema 2) and ``repro/``. :func:`merge`
turns them into one output folder, deduplicated by signature (one root cause in one library),
that the report and the filer read as if one campaign had run:

- ``findings.json`` (schema 2, written by :func:`xamt.findings_io.write_findings`): one
  finding per signature, its ``occurrences`` summed over the inputs, the earliest
  ``first_seen``, the latest ``last_seen``, and the rest of the record (case, outputs,
  verifications, ...) from the input that saw it last; ``support`` is the union of the inputs'
  support matrices (:func:`xamt.findings.merge_support`: a dtype that worked once is "ok");
  ``libraries`` the union of the inputs' (a library seen at different versions lists them,
  comma-separated, in input order); ``campaign`` aggregates the inputs' campaign blocks (see
  :func:`campaign_info`).
- ``xamt.sqlite``: one finished campaign per input (its campaign block as config, its support
  matrix as state), and each finding recorded under every input that saw it, with the
  occurrences that input counted and its dates (:meth:`xamt.store.Store.import_finding`).
- ``repro/<signature>/``: each finding's repro files, from the input its record came from.

Each input is read from its store (the findings as the store holds them, with any later
verification), or, for a folder without a store, from its findings.json.

Note:
    What the merged store keeps: findings (with their dates) and support, which is what
    verification (``xamt repro --all``), the report and the filer read. Cases and candidates
    of the inputs are not copied.

    Safety. A signature names a folder of the output (``repro/<signature>``), so every
    signature read must be 16 lowercase hexadecimal digits, and every path built from one must
    resolve inside its folder; anything else is refused before anything is written. Only
    regular files are copied from a repro folder (no symbolic links). Merging the same
    campaign twice would count its findings twice, so an input whose campaign block is already
    among the earlier inputs' (a merged folder lists the blocks it merged) is refused, as is
    the same folder named twice. The store is written aside and moved into place last: a
    failed merge leaves no store that looks complete. An output folder that already holds a
    store or a findings.json is refused rather than overwritten.

Errors (exit codes as in the README): an input that does not exist or is not a folder, the same
input twice, a campaign merged twice: :class:`~xamt.errors.UsageError` (2); a folder that is not
an xamt output (neither ``xamt.sqlite`` nor ``findings.json``, or a store without its
findings.json): :class:`NotAnOutputFolder` (10); a corrupted, foreign or older store, or one
holding a malformed signature: :class:`~xamt.store.StoreError` (10); a findings.json of schema
1, with a field of the wrong type or a malformed signature: :class:`~xamt.findings.
FindingsError` (17); an output folder that cannot be written or already holds an output:
:class:`~xamt.errors.OutputError` (11).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xamt import __version__
from xamt.errors import OutputError, UsageError, XamtError
from xamt.findings import Document, Finding, FindingsError, load_document, merge_support
from xamt.findings_io import write_findings
from xamt.paths import check_signature, inside, replace_file, writable_folder
from xamt.store import Store, StoreError

STORE_NAME = "xamt.sqlite"
FINDINGS_NAME = "findings.json"
REPRO_NAME = "repro"


class NotAnOutputFolder(XamtError):
    """A merge input that is not the output folder of an xamt campaign."""

    exit_code = 10


@dataclass(frozen=True, kw_only=True)
class MergeSummary:
    """What :func:`merge` wrote.

    ``campaigns`` counts the campaigns merged (a merged input counts the campaigns it merged);
    ``findings`` distinct signatures; ``shared`` those seen in more than one input;
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


@dataclass(frozen=True, kw_only=True)
class _Input:
    """One input folder, read and checked: its findings.json and its findings (from its store,
    or from the findings.json of a folder without a store)."""

    path: Path
    document: Document
    findings: tuple[Finding, ...]

    @property
    def blocks(self) -> list[dict[str, Any]]:
        """The campaign blocks this input stands for (a merged folder: those it merged)."""
        return campaign_blocks(self.document.campaign)


@dataclass(kw_only=True)
class _Merged:
    """A finding being merged across inputs."""

    finding: Finding  # the record of the input that saw it last
    source: int  # that input's index
    occurrences: int = 0
    first_seen: str = ""
    last_seen: str = ""
    counts: dict[int, int] = field(default_factory=dict)  # input index -> occurrences

    def result(self) -> Finding:
        return self.finding.replace(
            occurrences=self.occurrences, first_seen=self.first_seen, last_seen=self.last_seen
        )


# -- reading inputs ---------------------------------------------------------------------------


def _read_input(folder: Path) -> _Input:
    if not folder.exists():
        raise UsageError(f"{folder}: no such folder; name the output folders of the shards")
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder; name the output folders of the shards")
    store_path = folder / STORE_NAME
    findings_path = folder / FINDINGS_NAME
    has_store, has_findings = store_path.is_file(), findings_path.is_file()
    if not has_store and not has_findings:
        raise NotAnOutputFolder(
            f"{folder}: not an xamt output folder (neither {STORE_NAME} nor {FINDINGS_NAME}); "
            "name the folder that `xamt fuzz --out` wrote"
        )
    if has_store and not has_findings:
        raise NotAnOutputFolder(
            f"{folder}: no {FINDINGS_NAME} (the campaign did not finish writing); run "
            f"`xamt fuzz --resume --out {folder}` to finish it, or leave the folder out"
        )
    document = load_document(findings_path)  # schema 1 and wrong types: FindingsError (17)
    listed = {f.signature: f for f in document.findings}
    for sig in listed:  # (the schema checked them too: a signature names a folder)
        check_signature(sig, f"{findings_path}: nothing was merged", FindingsError)
    if not has_store:
        return _Input(path=folder, document=document, findings=document.findings)
    # read only (a shard may be on a read-only medium); checks it is an xamt store of the
    # schema we read
    with Store(store_path, readonly=True) as store:
        rows = store.findings()
        for row in rows:
            check_signature(row.signature, f"{store_path}: nothing was merged", StoreError)
        # StoreError for a payload this xamt did not write
        findings = tuple(row.finding for row in rows)
    return _Input(path=folder, document=document, findings=findings)


# -- the merged findings.json -------------------------------------------------------------------


def campaign_blocks(block: dict[str, Any]) -> list[dict[str, Any]]:
    """The campaign blocks a findings.json stands for: those it merged, or its own."""
    merged = block.get("merged")
    if isinstance(merged, list) and all(isinstance(b, dict) for b in merged):
        return list(merged)
    return [block] if block else []


def _common(values: Sequence[Any]) -> Any:
    """The value when all agree, else the distinct values joined (as text) in order."""
    distinct = list(dict.fromkeys(values))
    if len(distinct) == 1:
        return distinct[0]
    return ", ".join(str(v) for v in distinct)


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def campaign_info(blocks: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The ``campaign`` block of a merged findings.json, from the inputs' blocks.

    ``seed``, ``budget`` and ``schedule`` are the inputs' value when they agree, else their
    distinct values joined with ", "; ``shard`` lists the inputs' shards (``"0/3, 1/3, 2/3"``);
    ``cases`` and ``seconds`` are sums (``seconds`` is the time spent by all shards together;
    ``wall_seconds`` the longest shard's); ``merged`` holds the inputs' own blocks.
    """
    seconds = [_number(b.get("seconds")) for b in blocks]
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
        "cases": int(sum(_number(b.get("cases")) for b in blocks)),
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


def libraries_union(documents: Sequence[Document]) -> dict[str, str]:
    """Every library of the inputs with its version (distinct versions joined with ", ")."""
    seen: dict[str, list[str]] = {}
    for doc in documents:
        for lib, version in doc.libraries.items():
            versions = seen.setdefault(lib, [])
            for v in version.split(", "):
                if v not in versions:
                    versions.append(v)
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


def _check_campaigns(checked: Sequence[_Input]) -> None:
    """Refuse a campaign block met twice: its findings would be counted twice."""
    seen: dict[str, Path] = {}
    for item in checked:
        for block in item.blocks:
            identity = json.dumps(block, sort_keys=True)
            if identity in seen:
                raise UsageError(
                    f"{item.path}: campaign {block.get('name', '?')!r} (shard "
                    f"{block.get('shard', '-')}, seed {block.get('seed', '?')}) is also in "
                    f"{seen[identity]}; merging it twice would count its findings twice: leave "
                    "one of the two folders out"
                )
            seen[identity] = item.path


def _merge_findings(checked: Sequence[_Input]) -> dict[str, _Merged]:
    merged: dict[str, _Merged] = {}
    for index, item in enumerate(checked):
        for f in item.findings:
            m = merged.get(f.signature)
            if m is None:
                m = merged[f.signature] = _Merged(
                    finding=f, source=index, first_seen=f.first_seen, last_seen=f.last_seen
                )
            elif f.last_seen >= m.last_seen:  # the newest record wins, as in the store
                m.finding, m.source = f, index
            m.occurrences += f.occurrences
            m.counts[index] = m.counts.get(index, 0) + f.occurrences
            m.first_seen = min(filter(None, (m.first_seen, f.first_seen)), default="")
            m.last_seen = max(m.last_seen, f.last_seen)
    return merged


def merge(inputs: Sequence[Path], out: Path) -> MergeSummary:
    """Merge the output folders ``inputs`` (of ``xamt fuzz`` or ``xamt merge``) into the folder
    ``out``: one finding per signature. See the module docstring for how fields combine and for
    the errors raised; every input is read and checked before anything is written."""
    if not inputs:
        raise UsageError("name at least one output folder to merge")
    paths = [Path(p) for p in inputs]
    seen: dict[Path, Path] = {}
    for p in paths:
        key = p.resolve()
        if key in seen:
            raise UsageError(f"{p}: named twice (also as {seen[key]}); name each folder once")
        seen[key] = p
    checked = [_read_input(p) for p in paths]
    _check_campaigns(checked)
    _check_output(out, paths)
    merged = _merge_findings(checked)
    sources = {sig: _repro_source(sig, m, checked) for sig, m in sorted(merged.items())}
    writable_folder(out)

    support: dict[str, dict[str, dict[str, str]]] = {}
    for item in checked:
        merge_support(support, item.document.support)
    blocks = [block for item in checked for block in item.blocks]
    document = Document(
        xamt_version=__version__,
        libraries=libraries_union([item.document for item in checked]),
        campaign=campaign_info(blocks),
        findings=tuple(m.result() for _, m in sorted(merged.items())),
        support=support,
    )
    partial = out / f".{STORE_NAME}.partial"
    _remove_store(partial)
    try:
        _write_store(partial, checked, merged)
        for sig, source in sources.items():
            if source is not None:
                _copy_repro(source, inside(out, REPRO_NAME, sig, what="a repro folder"))
        os.replace(partial, out / STORE_NAME)
    except BaseException:
        _remove_store(partial)
        raise
    write_findings(out / FINDINGS_NAME, document)
    return MergeSummary(
        inputs=len(checked),
        campaigns=sum(max(len(item.blocks), 1) for item in checked),
        cases=int(document.campaign["cases"]),
        findings=len(merged),
        shared=sum(1 for m in merged.values() if len(m.counts) > 1),
        occurrences=sum(m.occurrences for m in merged.values()),
        libraries=document.libraries,
        store=out / STORE_NAME,
        findings_path=out / FINDINGS_NAME,
    )


def _remove_store(path: Path) -> None:
    for suffix in ("", "-wal", "-shm"):
        with suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _write_store(target: Path, checked: Sequence[_Input], merged: dict[str, _Merged]) -> None:
    """One finished campaign per input in a new store at ``target``, each finding recorded
    under every input that saw it, with the occurrences and dates that input knew."""
    with Store(target) as store:
        for index, item in enumerate(checked):
            block = item.document.campaign
            cid = store.start_campaign(
                name=str(block.get("name") or f"merged-{index}"),
                config={"merged_from": item.path.name, "campaign": block},
            )
            store.commit_batch(
                cid, cases=[], candidates=[], state={"support": item.document.support}, next_seq=0
            )
            for sig in sorted(sig for sig, m in merged.items() if index in m.counts):
                m = merged[sig]
                # the merged record and dates, with the occurrences this input counted
                found = m.result().replace(occurrences=m.counts[index])
                store.import_finding(found, campaign=cid)
            store.finish_campaign(cid, summary=block)


def _repro_source(signature: str, m: _Merged, checked: Sequence[_Input]) -> Path | None:
    """The ``repro/<signature>`` folder to copy: the one of the input the record came from,
    else of any other input that saw it (checked to stay inside its input folder)."""
    order = [m.source, *sorted(i for i in m.counts if i != m.source)]
    for index in order:
        folder = checked[index].path
        source = inside(
            folder,
            REPRO_NAME,
            signature,
            error=NotAnOutputFolder,
            what="a repro folder of this input (nothing was merged)",
        )
        if source.is_dir():
            return source
    return None


def _copy_repro(source: Path, target: Path) -> None:
    """Copy the regular files of ``source`` (not links, not folders) into ``target``, each
    written aside and renamed into place (a link already in ``target`` is replaced, never
    followed)."""
    try:
        target.mkdir(parents=True, exist_ok=True)
        for entry in sorted(source.iterdir()):
            if entry.is_symlink() or not entry.is_file():
                continue
            replace_file(target / entry.name, entry.read_bytes())
    except OSError as exc:
        raise OutputError(
            f"cannot copy the repro files of {source.name} to {target}: {exc.strerror or exc}"
        ) from None
