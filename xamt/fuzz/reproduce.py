"""Independent reproduction: candidates re-run in freshly started workers, several times.

One representative case per signature runs ``runs`` times, each time in a new pool (fresh
processes). A candidate whose signature shows up every time is *reproduced* and becomes a
finding, with as many occurrences as the campaign met its signature; some of the time,
*flaky*; never, *not reproduced*. Other candidates of the same signature take the
representative's verdict. Verdicts are committed as they come, so a run killed during
reproduction continues where it stopped.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from xamt.catalog.model import Group
from xamt.findings import Finding, FindingsError, decode_case, from_json, to_json
from xamt.paths import check_signature
from xamt.replay import Replay
from xamt.store import CandidateRow, Store, StoreError
from xamt.workers.pool import WorkerPool

RUNS = 3


@dataclass(frozen=True, kw_only=True)
class ReproSummary:
    reproduced: int = 0
    flaky: int = 0
    not_reproduced: int = 0


def reproduce(
    store: Store,
    campaign: int,
    pythons: Mapping[str, str],
    groups: Mapping[str, Group],
    *,
    runs: int = RUNS,
    deadline: float = 10.0,
    memory_cap: int | None = None,
    progress: Callable[[str], None] = lambda _m: None,
) -> ReproSummary:
    """Reproduce the campaign's pending candidates; record verdicts and findings."""
    pending = [c for c in store.pending_candidates(campaign) if c.group in groups]
    if not pending:
        return ReproSummary()
    by_sig: dict[str, list[CandidateRow]] = defaultdict(list)
    for cand in pending:
        # a candidate's signature becomes its finding's, and a folder name: checked first
        check_signature(cand.signature, f"{store.path}: candidate {cand.id}", StoreError)
        by_sig[cand.signature].append(cand)
    reps = [cands[0] for cands in by_sig.values()]
    recorded = [_finding(store, c) for c in reps]
    cases = [
        decode_case(f.case, f"{store.path}: candidate {c.id}: case", StoreError)
        for f, c in zip(recorded, reps, strict=True)
    ]
    seen = store.campaign_state(campaign).get("seen", {})
    libs = sorted({lib for c in cases for lib in c.apis})
    hits: Counter[int] = Counter()
    for run in range(runs):
        progress(f"reproducing {len(reps)} signatures: run {run + 1}/{runs} in fresh workers")
        kwargs: dict[str, Any] = {"deadline": deadline}
        if memory_cap is not None:
            kwargs["memory_cap"] = memory_cap
        with WorkerPool({lib: pythons[lib] for lib in libs}, **kwargs) as pool:
            pool.start()
            replayed = Replay(pool, groups).run(cases)
        for cand, result in zip(reps, replayed, strict=True):
            if cand.signature in result.signatures():
                hits[cand.id] += 1
    summary: Counter[str] = Counter()
    for rep, found in zip(reps, recorded, strict=True):
        k = hits[rep.id]
        status = "reproduced" if k == runs else "flaky" if k else "not-reproduced"
        summary[status] += 1
        finding = None
        if status == "reproduced":
            finding = to_json(found.replace(reproduced=k, runs=runs))
        occurrences = int(seen.get(rep.signature, 1)) if isinstance(seen, dict) else 1
        # the verdict and the finding in one transaction: a kill between them cannot count twice
        store.set_candidate_status(
            rep.id, status, k, runs, finding=finding, occurrences=max(occurrences, 1)
        )
        for cand in by_sig[rep.signature][1:]:
            store.set_candidate_status(cand.id, status, k, runs)
    return ReproSummary(
        reproduced=summary["reproduced"],
        flaky=summary["flaky"],
        not_reproduced=summary["not-reproduced"],
    )


def _finding(store: Store, cand: CandidateRow) -> Finding:
    """A candidate's payload as a finding record; StoreError (exit 10) if it is malformed."""
    try:
        return from_json(cand.payload, f"{store.path}: candidate {cand.id}")
    except FindingsError as exc:
        raise StoreError(f"{exc}; the store is corrupted or from another xamt") from None
