"""An output folder's findings.json: the document of a campaign, read from the store, and its one
writer. :mod:`xamt.findings` owns the encoding (schema 2); this module only assembles and writes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from xamt import __version__
from xamt.findings import Document, dumps_document
from xamt.paths import write_atomic
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


def write_findings(path: Path, document: Document) -> None:
    """Write findings.json atomically; OutputError if it cannot be written."""
    write_atomic(path, dumps_document(document))
