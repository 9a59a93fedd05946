"""Fixed or still present: stored findings re-run on the installed library versions."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from xamt import envs
from xamt.catalog.model import Catalog, CatalogError
from xamt.findings import Finding, Verification, decode_case
from xamt.outcomes import outcome_text
from xamt.replay import Replay, case_misfit, judge_case
from xamt.store import FindingRow, Store, StoreError, utc_now
from xamt.workers.pool import WorkerPool

# The most verifications a finding keeps (the newest).
HISTORY = 20


@dataclass(frozen=True, kw_only=True)
class Verdict:
    signature: str
    key: str
    present: bool
    versions: dict[str, str]
    lines: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def verify_findings(
    store: Store,
    rows: Sequence[FindingRow],
    *,
    catalog: Catalog,
    variant: str = "cpu",
    runs: int = 1,
) -> list[Verdict]:
    """Re-run each finding's (minimized) case in fresh workers; record the verdicts.

    A finding is still present if its signature (the same library, callable, kind family,
    dtype, error type and trigger) shows up in any run. The verdict is appended to the
    finding's ``verifications`` (time, versions, present), and ``consecutive_misses`` counts
    the verifications in a row that did not reproduce it.
    """
    if not rows:
        return []
    findings = [r.finding for r in rows]
    cases = [
        decode_case(f.case, f"{store.path}: finding {r.signature}: case", StoreError)
        for f, r in zip(findings, rows, strict=True)
    ]
    groups = {}
    for row in rows:
        try:
            groups[row.group] = catalog.group(row.group)
        except CatalogError:
            raise CatalogError(
                f"finding {row.signature} is of group {row.group!r}, which the "
                "catalog no longer has; rebuild or use the catalog it came from"
            ) from None
    for row, case in zip(rows, cases, strict=True):
        why = case_misfit(case, {row.group: groups[row.group]})
        if why:
            raise StoreError(
                f"{store.path}: finding {row.signature}: the case does not fit: {why}; the "
                "store is corrupted"
            )
    libs = sorted({lib for c in cases for lib in c.apis})
    seen: list[set[str]] = [set() for _ in rows]
    last: list[list[str]] = [[] for _ in rows]
    versions: dict[str, str] = {}
    for _ in range(runs):
        with WorkerPool({lib: envs.interpreter(lib, variant) for lib in libs}) as pool:
            versions = {lib: h.version for lib, h in pool.start().items()}
            replayed = Replay(pool, groups).run(cases)
        for i, (finding, result) in enumerate(zip(findings, replayed, strict=True)):
            # the same root cause, met with the finding's own trigger
            again = judge_case(
                result.case,
                groups[finding.group],
                result.outcomes,
                result.reference,
                trigger=finding.trigger,
                probes=result.probes,
            )
            seen[i] |= again.signatures()
            last[i] = [
                f"{lib}: {o.status}: {outcome_text(o)}" for lib, o in result.outcomes.items()
            ]
    return [
        record_verdict(store, row, finding, sigs, versions, lines)
        for row, finding, sigs, lines in zip(rows, findings, seen, last, strict=True)
    ]


def record_verdict(
    store: Store,
    row: FindingRow,
    finding: Finding,
    signatures: Collection[str],
    versions: Mapping[str, str],
    lines: Sequence[str] = (),
) -> Verdict:
    """Record one verification of ``finding``: present if its signature is among the
    ``signatures`` its case showed in the runs. The verdict (time, the versions of the
    finding's own libraries, present) is appended to its ``verifications`` (the last
    :data:`HISTORY` kept) and ``consecutive_misses`` counts the misses in a row; the store's
    finding is updated."""
    present = row.signature in signatures
    used = {lib: versions[lib] for lib in finding.case.get("apis", {}) if lib in versions}
    history = (
        *finding.verifications,
        Verification(at=utc_now(), versions=used, present=present),
    )
    updated = finding.replace(
        signature=row.signature,
        verifications=history[-HISTORY:],
        consecutive_misses=0 if present else finding.consecutive_misses + 1,
    )
    store.update_finding(updated)
    return Verdict(
        signature=row.signature, key=finding.key, present=present, versions=used, lines=tuple(lines)
    )
