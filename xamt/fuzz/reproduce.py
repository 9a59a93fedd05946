"""Independent reproduction: candidates re-run in freshly started workers, several times.

One representative case per signature runs ``runs`` times, each run in a new pool (fresh
processes, started once per run and fed the cases in chunks; the next run's pool loads while
the current one works). A candidate whose signature shows
up every time is *reproduced* and becomes a finding, with as many occurrences as the campaign
met its signature; some of the time, *flaky*; never, *not reproduced*. Other candidates of the
same signature take the representative's verdict.

Suspected bugs go first, most severe first. After each chunk the runs done (and, on a last
run, the verdicts) are committed, so a run killed during reproduction continues where it
stopped: no verdict lost, none given twice. When ``until`` comes (a time budget), candidates
that ran at least once get the verdict of the runs they had (``reproduced 1/1``); the others
stay pending for ``--resume``.
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xamt import memory
from xamt.catalog.model import Group
from xamt.findings import Finding, FindingsError, decode_case, from_json
from xamt.known import KnownDifference
from xamt.paths import check_signature
from xamt.replay import Replay, Submitted
from xamt.store import CandidateRow, Store, StoreError
from xamt.workers.pool import WorkerPool

RUNS = 3


CHUNK = 32  # cases per request to each pool, and per commit
LOOKAHEAD = 3  # chunks submitted ahead of the one collected
# Memory one pool of fresh workers may take (seven libraries loaded, a few calls made).
POOL_BYTES = 3 << 30


@dataclass(frozen=True, kw_only=True)
class ReproSummary:
    reproduced: int = 0
    flaky: int = 0
    not_reproduced: int = 0
    pending: int = 0  # signatures left without a verdict (``until`` came): --resume continues
    seconds: float = 0.0


def reproduce(
    store: Store,
    campaign: int,
    pythons: Mapping[str, str],
    groups: Mapping[str, Group],
    *,
    runs: int = RUNS,
    deadline: float = 10.0,
    memory_cap: int | None = None,
    until: float | None = None,
    first: WorkerPool | None = None,
    progress: Callable[[str], None] = lambda _m: None,
    known: Sequence[KnownDifference] | None = None,
) -> ReproSummary:
    """Reproduce the campaign's pending candidates; record verdicts and findings.

    ``until`` (a :func:`time.monotonic` time) stops between chunks (the first chunk always
    runs); what is left stays pending, with the runs it had. ``first``: a started pool of
    fresh workers for the first run (a campaign's standby workers), left open.
    """
    started = time.monotonic()
    pending = [c for c in store.pending_candidates(campaign) if c.group in groups]
    if not pending:
        return ReproSummary()
    by_sig: dict[str, list[CandidateRow]] = defaultdict(list)
    for cand in pending:
        # a candidate's signature becomes its finding's, and a folder name: checked first
        check_signature(cand.signature, f"{store.path}: candidate {cand.id}", StoreError)
        by_sig[cand.signature].append(cand)
    reps = [cands[0] for cands in by_sig.values()]
    recorded = {c.id: _finding(store, c) for c in reps}
    # most important first; hangs last among their peers: each waits out the full deadline
    reps.sort(key=lambda c: _order(recorded[c.id]))
    cases = {
        c.id: decode_case(recorded[c.id].case, f"{store.path}: candidate {c.id}: case", StoreError)
        for c in reps
    }
    seen = store.campaign_state(campaign).get("seen", {})
    done = {c.id: min(c.runs, runs) for c in reps}
    hits = {c.id: min(c.reproduced, done[c.id]) for c in reps}
    summary: Counter[str] = Counter()
    kwargs: dict[str, Any] = {"deadline": deadline}
    if memory_cap is not None:
        kwargs["memory_cap"] = memory_cap
    for cand in reps:  # verdicts of candidates whose runs were all done before
        if done[cand.id] >= runs:
            summary[_verdict(store, cand, recorded[cand.id], by_sig, hits, runs, seen)] += 1
    total = sum(runs - d for d in done.values())
    ran = 0

    def out_of_time() -> bool:
        return until is not None and time.monotonic() >= until and ran > 0

    def new_pool(libs: list[str]) -> WorkerPool:
        # standby workers: candidates that crash or hang come first, each would wait on a
        # restart
        pool = WorkerPool({lib: pythons[lib] for lib in libs}, standby=True, **kwargs)
        for worker in pool.workers.values():  # launched now, awaited when its run begins
            worker.start()
        return pool

    libs = sorted({lib for c in reps for lib in cases[c.id].apis})
    fresh = first if first is not None and set(libs) <= set(first.workers) else None
    upcoming: WorkerPool | None = None
    try:
        for run in range(runs):
            todo = [c for c in reps if done[c.id] == run]
            if not todo:
                continue
            if out_of_time():
                break
            if run == 0 and fresh is not None:
                pool, owned = fresh, False
            else:
                pool, owned = upcoming or new_pool(libs), True
                upcoming = None
            if run + 1 < runs and memory.available_memory() >= 2 * POOL_BYTES:
                upcoming = new_pool(libs)  # the next run's fresh workers load meanwhile
            try:
                pool.start()
                replay = Replay(pool, groups, known)
                chunks = [todo[i : i + CHUNK] for i in range(0, len(todo), CHUNK)]
                # chunks pipelined (as a campaign's batches): a library that hangs or restarts
                # on one chunk does not keep the others idle
                inflight: deque[tuple[list[CandidateRow], Submitted]] = deque()
                for k, chunk in enumerate(chunks):
                    if out_of_time():
                        break
                    while len(inflight) < LOOKAHEAD and k + len(inflight) < len(chunks):
                        ahead = chunks[k + len(inflight)]
                        inflight.append((ahead, replay.submit([cases[c.id] for c in ahead])))
                    _, submitted = inflight.popleft()
                    for cand, result in zip(chunk, submitted.collect(), strict=True):
                        hits[cand.id] += cand.signature in result.signatures()
                        done[cand.id] += 1
                    ran += len(chunk)
                    if run + 1 < runs:
                        store.record_runs([(c.id, hits[c.id], done[c.id]) for c in chunk])
                    else:
                        for cand in chunk:
                            found = recorded[cand.id]
                            summary[_verdict(store, cand, found, by_sig, hits, runs, seen)] += 1
                    progress(_line(run, runs, ran, total, time.monotonic() - started))
            finally:
                if owned:
                    pool.close()
    finally:
        if upcoming is not None:
            upcoming.close()
    if until is not None:
        # the time ran out: candidates run at least once get the verdict of the runs done
        for cand in reps:
            if 0 < done[cand.id] < runs:
                found = recorded[cand.id]
                verdict = _verdict(store, cand, found, by_sig, hits, done[cand.id], seen)
                summary[verdict] += 1
    left = sum(1 for c in reps if done[c.id] < runs and (until is None or done[c.id] == 0))
    return ReproSummary(
        reproduced=summary["reproduced"],
        flaky=summary["flaky"],
        not_reproduced=summary["not-reproduced"],
        pending=left,
        seconds=time.monotonic() - started,
    )


def _order(f: Finding) -> tuple[bool, bool, tuple[int, int, int, str]]:
    """Suspected bugs first, most severe first; hangs after their peers (each waits out the
    full deadline)."""
    return (not f.suspected, f.family == "hang", f.rank())


def _line(run: int, runs: int, ran: int, total: int, seconds: float) -> str:
    """A progress line; the time left only once a twentieth is done (the first chunks pay
    for starting the fresh workers, and would promise hours)."""
    rate = ran / seconds if seconds > 0 else 0.0
    settled = rate > 0 and ran * 20 >= total
    left = f", about {(total - ran) / rate:.0f} s left" if settled else ""
    return (
        f"reproducing in fresh workers (run {run + 1}/{runs}): {ran}/{total} case runs, "
        f"{rate:.0f}/s{left}"
    )


def _verdict(
    store: Store,
    rep: CandidateRow,
    found: Finding,
    by_sig: Mapping[str, list[CandidateRow]],
    hits: Mapping[int, int],
    runs: int,
    seen: Any,
) -> str:
    """Commit the verdict of a representative (and its signature's other candidates)."""
    k = hits[rep.id]
    status = "reproduced" if k == runs else "flaky" if k else "not-reproduced"
    finding = found.replace(reproduced=k, runs=runs) if status == "reproduced" else None
    occurrences = int(seen.get(rep.signature, 1)) if isinstance(seen, dict) else 1
    # the verdicts (the signature's other candidates' too) and the finding in one
    # transaction: a kill between them cannot count twice
    store.set_candidate_status(
        rep.id,
        status,
        k,
        runs,
        finding=finding,
        occurrences=max(occurrences, 1),
        siblings=[cand.id for cand in by_sig[rep.signature][1:]],
    )
    return status


def _finding(store: Store, cand: CandidateRow) -> Finding:
    """A candidate's payload as a finding record; StoreError (exit 10) if it is malformed."""
    try:
        return from_json(cand.payload, f"{store.path}: candidate {cand.id}")
    except FindingsError as exc:
        raise StoreError(f"{exc}; the store is corrupted or from another xamt") from None
