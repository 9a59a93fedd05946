"""Fixed or still present: stored findings re-run on the installed library versions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from xamt import envs
from xamt.catalog.model import Catalog, CatalogError
from xamt.fuzz.campaign import execute_cases, signatures
from xamt.inputs.tags import input_classes
from xamt.oracle.compare import compare
from xamt.outcomes import outcome_text
from xamt.serialize import case_from_jsonable
from xamt.store import FindingRow, Store, utc_now
from xamt.workers.pool import WorkerPool


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

    A finding is still present if its signature shows up in any run. The verdict is appended
    to the finding's ``verifications`` (time, versions, present), and ``consecutive_misses``
    counts the verifications in a row that did not reproduce it.
    """
    if not rows:
        return []
    cases = [case_from_jsonable(r.payload["case"]) for r in rows]
    groups = {}
    for row in rows:
        try:
            groups[row.group] = catalog.group(row.group)
        except CatalogError:
            raise CatalogError(
                f"finding {row.signature} is of group {row.group!r}, which the "
                "catalog no longer has; rebuild or use the catalog it came from"
            ) from None
    members = {(g.id, m.api): m for g in groups.values() for m in g.members}
    libs = sorted({lib for c in cases for lib in c.apis})
    seen: list[set[str]] = [set() for _ in rows]
    last: list[list[str]] = [[] for _ in rows]
    versions: dict[str, str] = {}
    for _ in range(runs):
        with WorkerPool({lib: envs.interpreter(lib, variant) for lib in libs}) as pool:
            versions = {lib: h.version for lib, h in pool.start().items()}
            outcomes, refs = execute_cases(pool, cases, groups, members)
        for i, (case, outs, ref) in enumerate(zip(cases, outcomes, refs, strict=True)):
            found = compare(outs, reference=ref)
            tags = input_classes(case, groups[case.group])
            seen[i] |= {sig for sig, _ in signatures(case, tags, found)}
            last[i] = [f"{lib}: {o.status}: {outcome_text(o)}" for lib, o in outs.items()]
    verdicts = []
    for row, sigs, lines in zip(rows, seen, last, strict=True):
        present = row.signature in sigs
        payload = dict(row.payload)
        history = list(payload.get("verifications", []))
        used = {lib: versions[lib] for lib in case_from_jsonable(payload["case"]).apis}
        history.append({"at": utc_now(), "versions": used, "present": present})
        payload["verifications"] = history[-20:]
        payload["consecutive_misses"] = 0 if present else payload.get("consecutive_misses", 0) + 1
        store.update_finding(row.signature, payload)
        verdicts.append(
            Verdict(
                signature=row.signature,
                key=str(payload.get("key", "")),
                present=present,
                versions=used,
                lines=tuple(lines),
            )
        )
    return verdicts
