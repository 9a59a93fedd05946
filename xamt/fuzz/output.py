"""findings.json (schema 2, encoded by :mod:`xamt.findings`) of a campaign, its terminal
summary, and the output folder's writers."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from xamt import __version__
from xamt.errors import OutputError
from xamt.findings import CLASSIFICATIONS, Document, dumps_document
from xamt.paths import replace_file
from xamt.store import Store


def findings_document(
    store: Store, campaign: int, *, libraries: dict[str, str], campaign_info: dict[str, Any]
) -> Document:
    """The findings.json document of ``campaign``: its findings and its support matrix."""
    findings = tuple(row.finding for row in store.findings(campaign))
    support = store.campaign_state(campaign).get("support", {})
    return Document(
        xamt_version=__version__,
        libraries=dict(libraries),
        campaign=campaign_info,
        findings=findings,
        support=support if isinstance(support, dict) else {},
    )


def write_atomic(path: Path, text: str) -> None:
    """Write a text file atomically (a reader never sees half of it); OutputError if not."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc}); name a writable folder") from None


def writable_folder(path: Path, hint: str = "choose another") -> Path:
    """Create ``path`` if needed and check that files can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".xamt-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise OutputError(
            f"cannot write to the output folder {path}: {exc.strerror or exc}; {hint}"
        ) from None
    return path


def write_findings(path: Path, document: Document) -> None:
    """Write findings.json atomically."""
    write_atomic(path, dumps_document(document))


def summary_lines(document: Document, top: int = 15) -> list[str]:
    """The terminal summary: counts by classification and kind, then the suspected bugs by
    rank (severity, confidence, occurrences)."""
    findings = document.findings
    camp = document.campaign
    cases, seconds = camp.get("cases", 0), camp.get("seconds", 0.0)
    by_class = Counter(f.classification for f in findings)
    lines = [
        f"{cases} cases in {seconds:.0f} s ({cases / max(seconds, 1e-9):.0f}/s); "
        f"{len(findings)} root causes: "
        + ", ".join(f"{by_class.get(c, 0)} {c}" for c in CLASSIFICATIONS)
    ]
    for c in CLASSIFICATIONS:
        kinds = Counter(f.kind for f in findings if f.classification == c)
        if kinds:
            lines.append(f"  {c}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    bugs = [f for f in document.ranked() if f.suspected]
    refused = sum(
        state == "refused"
        for libs in document.support.values()
        for dtypes in libs.values()
        for state in dtypes.values()
    )
    if refused:
        lines.append(f"  support matrix: {refused} (group, library, dtype) refusals, not bugs")
    if bugs:
        lines.append("suspected bugs, most severe first:")
    for f in bugs[:top]:
        lines.append(
            f"  {f.severity:8} {f.confidence:9} {f.kind:11} {f.callable:32} {f.dtype:9} "
            f"{f.trigger:14} x{f.occurrences}"
        )
    if len(bugs) > top:
        lines.append(f"  ... and {len(bugs) - top} more in findings.json")
    return lines
