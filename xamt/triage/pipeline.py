"""Triage of a campaign's reproduced findings: minimize, classify, write repro scripts."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xamt.catalog.model import Group, Member
from xamt.fuzz.campaign import execute_cases, signatures
from xamt.inputs.tags import input_classes
from xamt.oracle.compare import compare
from xamt.serialize import case_from_jsonable, case_to_jsonable
from xamt.store import Store
from xamt.triage.known import KnownDifference, classify
from xamt.triage.minimize import Predicate, element_count, minimize
from xamt.triage.repro import write_repro
from xamt.types import Case
from xamt.workers.pool import WorkerPool

# Calls a minimization may spend, by kind: crashes restart a worker each time, hangs wait for
# the deadline: those are not worth shrinking far.
CALL_CAPS = {"hang": 0, "crash": 12, "resource": 12}


@dataclass(frozen=True, kw_only=True)
class TriageSummary:
    findings: int
    documented: int
    elements_before: tuple[int, ...]
    elements_after: tuple[int, ...]


def pool_predicate(pool: WorkerPool, groups: Mapping[str, Group]) -> Predicate:
    """Run candidate cases on the workers; the signatures each shows."""
    members: dict[tuple[str, str], Member] = {
        (g.id, m.api): m for g in groups.values() for m in g.members
    }

    def run(cases: Sequence[Case]) -> list[set[str]]:
        outcomes, refs = execute_cases(pool, cases, groups, members)
        return [
            {
                sig
                for sig, _ in signatures(
                    c, input_classes(c, groups[c.group]), compare(o, reference=r)
                )
            }
            for c, o, r in zip(cases, outcomes, refs, strict=True)
        ]

    return run


def triage(
    store: Store,
    campaign: int,
    pool: WorkerPool,
    groups: Mapping[str, Group],
    *,
    out_dir: Path,
    known: Sequence[KnownDifference],
    versions: Mapping[str, str],
    progress: Callable[[str], None] = lambda _m: None,
    max_seconds: float | None = None,
) -> TriageSummary:
    """Minimize, classify and script every finding of the campaign not triaged yet.

    Past ``max_seconds`` the remaining findings are classified and scripted with their
    original case (their minimization ``stop`` is ``"skipped"``).
    """
    started = time.monotonic()
    predicate = pool_predicate(pool, groups)
    before, after = [], []
    documented = 0
    rows = [r for r in store.findings(campaign) if r.group in groups]
    for n, row in enumerate(rows, 1):
        payload: dict[str, Any] = dict(row.payload)
        group = groups[row.group]
        case = case_from_jsonable(payload.get("original_case", payload["case"]))
        if payload.get("triaged"):
            current = case_from_jsonable(payload["case"])
        else:
            progress(f"triage {n}/{len(rows)}: {payload.get('key', row.signature)}")
            cap = CALL_CAPS.get(row.kind)
            if max_seconds is not None and time.monotonic() - started > max_seconds:
                cap = 0
            result = minimize(
                case,
                row.signature,
                group,
                predicate,
                **({"max_calls": cap} if cap is not None else {}),
            )
            current = result.case
            payload["minimization"] = {
                "calls": result.calls,
                "seconds": round(result.seconds, 2),
                "stop": "skipped" if cap == 0 else result.stop,
                "accepted": result.accepted,
                "elements_before": element_count(case, group),
                "elements_after": element_count(current, group),
            }
        tags = input_classes(current, group)
        classification, entry = classify(
            known,
            kind=row.kind,
            group=row.group,
            odd=payload["odd"],
            dtype=row.dtype,
            input_classes=tags,
            error=payload.get("error", ""),
        )
        documented += classification == "documented-difference"
        members = {
            lib: next(m for m in group.members if m.api == api) for lib, api in current.apis.items()
        }
        folder = out_dir / "repro" / row.signature
        scripts = write_repro(
            folder,
            case=current,
            members=members,
            versions=versions,
            signature=row.signature,
            key=payload.get("key", ""),
        )
        payload.update(
            {
                "original_case": case_to_jsonable(case),
                "case": case_to_jsonable(current),
                "input_classes": tags,
                "classification": classification,
                "known_difference": None
                if entry is None
                else {"id": entry.id, "reason": entry.reason, "link": entry.link},
                "repro": {lib: str(Path(p).relative_to(out_dir)) for lib, p in scripts.items()},
                "versions": dict(versions),
                "triaged": True,
            }
        )
        store.update_finding(row.signature, payload)
        before.append(element_count(case, group))
        after.append(element_count(current, group))
    return TriageSummary(
        findings=len(rows),
        documented=documented,
        elements_before=tuple(before),
        elements_after=tuple(after),
    )
