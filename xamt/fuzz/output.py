"""findings.json (schema 1): the campaign's output contract, and its terminal summary."""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from xamt import __version__
from xamt.errors import OutputError
from xamt.store import Store

SCHEMA = 1


def finding_entry(signature: str, payload: dict[str, Any], occurrences: int) -> dict[str, Any]:
    """One finding as findings.json spells it."""
    case = payload["case"]
    return {
        "signature": signature,
        "key": payload.get("key", ""),
        "kind": payload["kind"],
        "classification": payload.get("classification", "suspected-bug"),
        "group": payload["group"],
        "apis": case["apis"],
        "odd": payload["odd"],
        "input_classes": payload["input_classes"],
        "dtype": payload["dtype"],
        "reproduced": payload["reproduced"],
        "runs": payload.get("runs", payload["reproduced"]),
        "occurrences": occurrences,
        "detail": payload.get("detail", ""),
        "case": {
            "value_class": case["value_class"],
            "seed": case["seed"],
            "values": case["values"],
        },
        "outputs": payload["outputs"],
        "original_case": payload.get("original_case", {}).get("values"),
        "minimization": payload.get("minimization"),
        "known_difference": payload.get("known_difference"),
        "repro": payload.get("repro", {}),
    }


def findings_document(
    store: Store, campaign: int, *, libraries: dict[str, str], campaign_info: dict[str, Any]
) -> dict[str, Any]:
    rows = store.findings(campaign)
    entries = [finding_entry(r.signature, r.payload, r.occurrences) for r in rows]
    entries.sort(key=lambda e: (e["kind"], e["group"], e["signature"]))
    return {
        "schema": SCHEMA,
        "xamt_version": __version__,
        "libraries": libraries,
        "campaign": campaign_info,
        "findings": entries,
    }


def write_atomic(path: Path, text: str) -> None:
    """Write a text file atomically (a reader never sees half of it); OutputError if not."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
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


def write_findings(path: Path, document: dict[str, Any]) -> None:
    """Write findings.json atomically."""
    write_atomic(path, json.dumps(document, indent=1, sort_keys=False) + "\n")


def summary_lines(document: dict[str, Any]) -> list[str]:
    findings = document["findings"]
    kinds = Counter(f["kind"] for f in findings)
    camp = document["campaign"]
    lines = [
        f"{camp['cases']} cases in {camp['seconds']:.0f} s "
        f"({camp['cases'] / max(camp['seconds'], 1e-9):.0f}/s); "
        f"{len(findings)} reproduced findings"
        + (": " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) if kinds else "")
    ]
    for f in findings[:15]:
        lines.append(
            f"  {f['kind']:12} {f['group']:28} {f['dtype']:9} odd: "
            f"{', '.join(f['odd']) or '-'}  [{', '.join(f['input_classes'][:4])}]"
        )
    if len(findings) > 15:
        lines.append(f"  ... and {len(findings) - 15} more in findings.json")
    return lines
