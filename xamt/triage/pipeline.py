"""Triage of a campaign's reproduced findings: minimize, find the trigger, classify, script.

For each reproduced finding not triaged yet:

1. **minimize** its case while the same *root* shows (the signature without trigger and
   dtype: the same library, callable, kind family and error type), trying the group's
   validation dtype first, so that one root cause met in several dtypes becomes one finding;
2. find the **trigger**: the one input class the minimized case still needs. Each class the
   case holds (:data:`xamt.replay.TRIGGERS`) is removed in turn (:func:`xamt.replay.neutralized`);
   the first whose removal makes the root disappear is the trigger, ``"ordinary"`` if none;
3. re-run the minimized case for the outputs the finding shows, **classify** it against the
   known differences, write its **repro scripts**, and store it under its final signature,
   where it joins any finding of the same root cause met through another case.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from xamt.catalog.model import Group
from xamt.errors import XamtError
from xamt.findings import SEVERITY, Finding, Minimization, to_json
from xamt.known import KnownDifference
from xamt.oracle.signature import signature_of
from xamt.outcomes import outcome_summary
from xamt.replay import (
    TRIGGERS,
    Replay,
    Replayed,
    Signed,
    case_dtype,
    classify_blame,
    judge_case,
    neutralized,
    trigger_of,
)
from xamt.serialize import case_from_jsonable, case_to_jsonable
from xamt.store import Store
from xamt.triage.minimize import Predicate, element_count, minimize
from xamt.triage.repro import write_repro
from xamt.types import Case
from xamt.workers.pool import WorkerPool

# Calls a minimization may spend, by kind: crashes restart a worker each time, hangs wait for
# the deadline: those are not worth shrinking far.
CALL_CAPS = {"hang": 0, "crash": 12, "resource": 12}
SIGNATURE_PATTERN = re.compile(r"[0-9a-f]{16}")


@dataclass(frozen=True, kw_only=True)
class TriageSummary:
    findings: int
    documented: int
    elements_before: tuple[int, ...]
    elements_after: tuple[int, ...]


def root_of(f: Finding) -> str:
    """A finding's signature without trigger and dtype: what minimization keeps (it may move
    the case to the group's validation dtype and find the trigger)."""
    return signature_of(
        family=f.family,
        library=f.library,
        callable=f.callable,
        dtype="*",
        trigger="*",
        error=f.error,
    )[0]


def pool_predicate(replay: Replay) -> Predicate:
    """Run candidate cases on the workers; the roots each shows."""

    def run(cases: Sequence[Case]) -> list[set[str]]:
        return [r.roots() for r in replay.run(cases)]

    return run


def needed_trigger(
    case: Case, group: Group, root: str, predicate: Predicate, tags: Sequence[str]
) -> str:
    """The first input class of ``case`` whose removal loses ``root`` (one batch of runs)."""
    present = [t for t in TRIGGERS if t in tags]
    variants = [(t, neutralized(case, group, t)) for t in present]
    tested = [(t, v) for t, v in variants if v is not None]
    shown = predicate([v for _, v in tested]) if tested else []
    for (t, _), roots in zip(tested, shown, strict=True):
        if root not in roots:
            return t
    untested = [t for t, v in variants if v is None]
    return untested[0] if untested else "ordinary"


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
    """Minimize, find the trigger of, classify and script every finding not triaged yet.

    Past ``max_seconds`` the remaining findings are classified and scripted with their
    original case (their minimization ``stop`` is ``"skipped"``) and the first trigger their
    case holds.
    """
    started = time.monotonic()
    replay = Replay(pool, groups)
    predicate = pool_predicate(replay)
    before, after = [], []
    documented = 0
    rows = [r for r in store.findings(campaign) if r.group in groups]
    todo = [r for r in rows if not r.finding.triaged]
    for n, row in enumerate(todo, 1):
        if not SIGNATURE_PATTERN.fullmatch(row.signature):
            raise XamtError(f"{store.path}: finding signature {row.signature!r} is malformed")
        f = row.finding
        group = groups[row.group]
        original = case_from_jsonable(f.original_case or f.case)
        progress(f"triage {n}/{len(todo)}: {f.key}")
        cap = CALL_CAPS.get(f.kind)
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            cap = 0
        root = root_of(f)
        result = minimize(
            original,
            root,
            group,
            predicate,
            **({"max_calls": cap} if cap is not None else {}),
        )
        current = result.case
        rerun: Replayed | None = None
        if cap == 0:
            trigger = trigger_of(f.input_classes)
        else:
            rerun = replay.run([current])[0]
            trigger = needed_trigger(current, group, root, predicate, rerun.tags)
        final = _final(f, current, group, root, trigger, rerun, known)
        final = final.replace(
            original_case=case_to_jsonable(original),
            minimization=Minimization(
                calls=result.calls,
                seconds=round(result.seconds, 2),
                stop="skipped" if cap == 0 else result.stop,
                accepted=result.accepted,
                elements_before=element_count(original, group),
                elements_after=element_count(current, group),
            ),
            versions=dict(versions),
            triaged=True,
        )
        documented += final.classification == "documented-difference"
        members = {
            lib: next(m for m in group.members if m.api == api) for lib, api in current.apis.items()
        }
        scripts = write_repro(
            out_dir / "repro" / final.signature,
            case=current,
            members=members,
            versions=versions,
            signature=final.signature,
            key=final.key,
        )
        final = final.replace(
            repro={lib: str(Path(p).relative_to(out_dir)) for lib, p in scripts.items()}
        )
        store.rekey_finding(row.signature, final.signature, to_json(final))
        before.append(element_count(original, group))
        after.append(element_count(current, group))
    return TriageSummary(
        findings=len(todo),
        documented=documented,
        elements_before=tuple(before),
        elements_after=tuple(after),
    )


def _final(
    f: Finding,
    case: Case,
    group: Group,
    root: str,
    trigger: str,
    rerun: Replayed | None,
    known: Sequence[KnownDifference],
) -> Finding:
    """The finding as the minimized case shows it, signed with its trigger and classified."""
    signed: Signed | None = None
    tags = tuple(f.input_classes)
    outputs = f.outputs
    if rerun is not None:
        again = judge_case(case, group, rerun.outcomes, rerun.reference, trigger=trigger)
        signed = next((s for s in again.signed if s.root == root), None)
        tags = again.tags
        outputs = {lib: outcome_summary(o) for lib, o in rerun.outcomes.items()}
    if signed is None:  # not re-run (a hang), or flaky on the last run: keep what was seen
        sig, key = signature_of(
            family=f.family,
            library=f.library,
            callable=f.callable,
            dtype=f.dtype,
            trigger=trigger,
            error=f.error,
        )
        return f.replace(
            signature=sig,
            key=key,
            trigger=trigger,
            input_classes=tags,
            case=case_to_jsonable(case),
            outputs=outputs,
        )
    blame = signed.blame
    classification, entry = classify_blame(known, signed, case, group)
    return f.replace(
        signature=signed.signature,
        key=signed.key,
        kind=blame.kind,
        classification=classification,
        severity=SEVERITY[blame.family],
        confidence=blame.confidence,
        trigger=trigger,
        input_classes=tags,
        dtype=case_dtype(case, group),
        detail=blame.detail,
        error=blame.error,
        apis=dict(case.apis),
        case=case_to_jsonable(case),
        outputs=outputs,
        known_difference=entry,
    )
