"""Tests of xamt.store: round trips, resume after a kill, idempotence, bad files."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import sqlite3
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xamt.errors import XamtError
from xamt.findings import FAMILY, SEVERITY, Finding, Kind
from xamt.serialize import case_from_jsonable, case_to_jsonable
from xamt.store import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    CandidateRecord,
    CaseRecord,
    Store,
    StoreError,
)
from xamt.types import DISCREPANCY_KINDS, Case

BATCH = 10  # cases per batch in these tests
CANDIDATES_EVERY = 5  # every fifth case of a batch has a candidate


def batch(index: int, *, payload_bytes: int = 64) -> tuple[list[CaseRecord], list[CandidateRecord]]:
    """The ``index``-th batch of a synthetic campaign: BATCH cases, BATCH // 5 candidates."""
    seqs = range(index * BATCH, (index + 1) * BATCH)
    cases = [
        CaseRecord(
            seq=s,
            group="sum",
            dtype="float32",
            value_class="ordinary",
            score=s / 7,
            kinds=("value",) if s % CANDIDATES_EVERY == 0 else (),
        )
        for s in seqs
    ]
    candidates = [
        CandidateRecord(
            seq=s,
            signature=f"sig-{s % 3}",
            kind="value",
            group="sum",
            dtype="float32",
            payload={"seq": s, "pad": "x" * payload_bytes},
        )
        for s in seqs
        if s % CANDIDATES_EVERY == 0
    ]
    return cases, candidates


def commit(store: Store, campaign: int, index: int, *, payload_bytes: int = 64) -> None:
    """Commit batch ``index`` with a state that records how far the campaign got."""
    cases, candidates = batch(index, payload_bytes=payload_bytes)
    next_seq = (index + 1) * BATCH
    state = {"batches": index + 1, "next_seq": next_seq, "scores": {"sum": [0.5, float("inf")]}}
    store.commit_batch(campaign, cases=cases, candidates=candidates, state=state, next_seq=next_seq)


def raw_rows(path: Path, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
    """Read the file behind the store's back."""
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, params).fetchall()
    finally:
        conn.close()


def finding_record(
    signature: str = "s1", kind: Kind = "value", note: str = "", **changes: Any
) -> Finding:
    """A finding of torch's sum; ``note`` is its detail (which payload won shows there)."""
    return Finding(
        signature=signature,
        key=f"{kind}/torch/torch.sum/float32/nan",
        kind=kind,
        classification="suspected-bug",
        severity=SEVERITY[FAMILY[kind]],
        confidence="majority",
        library="torch",
        callable="torch.sum",
        group="sum",
        apis={"numpy": "numpy.sum", "torch": "torch.sum"},
        trigger="nan",
        input_classes=("nan",),
        dtype="float32",
        detail=note,
    ).replace(**changes)


# -- schema and opening -----------------------------------------------------------------------


def test_new_store_has_versioned_schema_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "xamt.sqlite"
    with Store(path) as store:
        mode = store._conn.execute("PRAGMA journal_mode").fetchone()[0]
        sync = store._conn.execute("PRAGMA synchronous").fetchone()[0]
    assert (mode, sync) == ("wal", 2)  # 2 = FULL
    assert raw_rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert raw_rows(path, "PRAGMA application_id") == [(APPLICATION_ID,)]
    with Store(path) as store:  # reopening an existing store works
        assert store.resumable_campaign("any") is None


def test_store_error_is_a_xamt_error_with_exit_code_10() -> None:
    assert issubclass(StoreError, XamtError)
    assert StoreError.exit_code == 10


@pytest.mark.parametrize(
    "content",
    [os.urandom(4096), b"SQLite format 3\x00" + os.urandom(200), b"hello\n"],
    ids=["random", "bad-header", "text"],
)
def test_file_that_is_not_sqlite_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "junk.sqlite"
    path.write_bytes(content)
    with pytest.raises(StoreError, match="not an xamt store") as info:
        Store(path)
    assert str(path) in str(info.value)
    assert path.read_bytes() == content  # left as it was


@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_store_is_refused(tmp_path: Path, keep: float) -> None:
    path = tmp_path / "xamt.sqlite"
    with Store(path) as store:
        cid = store.start_campaign(name="c", config={})
        for i in range(20):
            commit(store, cid, i, payload_bytes=2000)
    data = path.read_bytes()
    assert not (tmp_path / "xamt.sqlite-wal").exists()  # closing checkpointed the log
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(StoreError, match="not an xamt store") as info:
        Store(path)
    assert str(path) in str(info.value)


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="another application"):
        Store(path)
    assert raw_rows(path, "SELECT name FROM sqlite_master") == [("t",)]


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "xamt.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer xamt") as info:
        Store(path)
    assert str(path) in str(info.value)


def test_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="folder"):
        Store(tmp_path)


# -- campaigns and batches --------------------------------------------------------------------


def test_campaign_round_trip(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        config = {"seed": 1, "budget": "60s", "libraries": ["numpy", "torch"]}
        cid = store.start_campaign(name="nightly", config=config)
        assert store.resumable_campaign("nightly") == (cid, config, None, 0)
        commit(store, cid, 0)
        resumed = store.resumable_campaign("nightly")
        assert resumed is not None
        assert resumed[0] == cid and resumed[1] == config and resumed[3] == BATCH
        assert resumed[2] == {"batches": 1, "next_seq": 10, "scores": {"sum": [0.5, float("inf")]}}
        counts = store.counts(cid)
        assert counts["cases"] == BATCH and counts["batches"] == 1 and counts["next_seq"] == BATCH
        assert counts["divergent_cases"] == 2
        assert counts["candidates"] == counts["candidates.pending"] == 2
        assert counts["findings"] == 0
        assert all(counts[f"findings.{kind}"] == 0 for kind in DISCREPANCY_KINDS)
        store.finish_campaign(cid, summary={"cases": 10})
        assert store.resumable_campaign("nightly") is None
        assert raw_rows(store.path, "SELECT summary FROM campaigns") == [('{"cases":10}',)]


def test_resume_after_reopen_gives_last_state_and_next_seq(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        cid = store.start_campaign(name="c", config={"seed": 3})
        for i in range(3):
            commit(store, cid, i)
    with Store(path) as store:
        resumed = store.resumable_campaign("c")
        assert resumed is not None
        assert resumed[0] == cid and resumed[3] == 3 * BATCH
        assert resumed[2] is not None and resumed[2]["batches"] == 3
        commit(store, cid, 3)  # the loop carries on from next_seq
        assert store.counts(cid)["cases"] == 4 * BATCH


def test_resumable_campaign_is_the_latest_unfinished_of_its_name(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        first = store.start_campaign(name="a", config={})
        second = store.start_campaign(name="a", config={})
        other = store.start_campaign(name="b", config={})
        assert store.resumable_campaign("a") == (second, {}, None, 0)
        store.finish_campaign(second, summary={})
        assert store.resumable_campaign("a") == (first, {}, None, 0)
        assert store.resumable_campaign("b") == (other, {}, None, 0)
        assert store.resumable_campaign("c") is None


def test_committing_a_batch_twice_stores_it_once(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 0)
        commit(store, cid, 0)
        counts = store.counts(cid)
        assert (counts["cases"], counts["candidates"]) == (BATCH, 2)
        assert len(store.pending_candidates(cid)) == 2


def test_same_seq_in_two_campaigns_is_two_rows(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        a = store.start_campaign(name="a", config={})
        b = store.start_campaign(name="b", config={})
        commit(store, a, 0)
        commit(store, b, 0)
        assert store.counts(a)["cases"] == store.counts(b)["cases"] == BATCH


def test_commit_batch_refuses_misuse_and_writes_nothing(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 1)  # next_seq 20
        cases, candidates = batch(0)
        with pytest.raises(ValueError, match="goes back"):
            store.commit_batch(cid, cases=cases, candidates=candidates, state={}, next_seq=10)
        with pytest.raises(ValueError, match="must exceed"):
            store.commit_batch(cid, cases=cases, candidates=candidates, state={}, next_seq=5)
        with pytest.raises(TypeError, match="not JSON-able"):
            store.commit_batch(cid, cases=cases, candidates=[], state={"x": object()}, next_seq=30)
        with pytest.raises(StoreError, match="no campaign 99"):
            store.commit_batch(99, cases=cases, candidates=[], state={}, next_seq=30)
        assert store.counts(cid)["cases"] == BATCH  # only batch 1
        store.finish_campaign(cid, summary={})
        with pytest.raises(ValueError, match="finished"):
            commit(store, cid, 2)
        with pytest.raises(StoreError, match="no campaign 99"):
            store.finish_campaign(99, summary={})
        with pytest.raises(StoreError, match="no campaign 99"):
            store.counts(99)


def test_interrupted_commit_leaves_no_partial_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        other = store.start_campaign(name="other", config={})
        commit(store, other, 0)
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 0)

        def interrupt(campaign: int) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(store, "_before_commit", interrupt)
        with pytest.raises(KeyboardInterrupt):
            commit(store, cid, 1)
        monkeypatch.undo()
        assert store.counts(cid)["cases"] == BATCH
        commit(store, cid, 1)  # the store is usable afterwards
    with Store(path) as store:
        resumed = store.resumable_campaign("c")
        assert resumed is not None and resumed[3] == 2 * BATCH
        assert store.counts(cid)["cases"] == 2 * BATCH
        assert store.counts(other)["cases"] == BATCH


def _commit_forever(path: str, name: str, started: Any) -> None:
    """Child process: resume campaign ``name`` and commit batches until killed."""
    rng = random.Random(os.getpid())
    store = Store(Path(path))
    resumed = store.resumable_campaign(name)
    if resumed is None:
        cid, next_seq = store.start_campaign(name=name, config={"seed": 0}), 0
    else:
        cid, _, _, next_seq = resumed
    # Linger inside the transaction, after the inserts, so kills often land mid-batch.
    store._before_commit = lambda campaign: time.sleep(rng.random() * 0.01)  # type: ignore[method-assign]
    index = next_seq // BATCH
    while True:
        commit(store, cid, index, payload_bytes=4000)
        index += 1
        started.set()


def test_sigkill_at_a_random_point_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    ctx = multiprocessing.get_context("spawn")
    rng = random.Random(20240501)
    previous = 0
    for _ in range(3):
        started = ctx.Event()
        child = ctx.Process(target=_commit_forever, args=(str(path), "killed", started))
        child.start()
        assert started.wait(60), "the child committed nothing"
        time.sleep(rng.random() * 0.3)
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(10)
        assert child.exitcode == -signal.SIGKILL

        with Store(path) as store:
            resumed = store.resumable_campaign("killed")
            assert resumed is not None
            cid, _, state, next_seq = resumed
            assert state is not None
            batches = next_seq // BATCH
            assert next_seq > previous and next_seq % BATCH == 0
            assert state == {
                "batches": batches,
                "next_seq": next_seq,
                "scores": {"sum": [0.5, float("inf")]},
            }
            counts = store.counts(cid)
            assert counts["cases"] == next_seq
            assert counts["candidates"] == batches * (BATCH // CANDIDATES_EVERY)
            seqs = raw_rows(path, "SELECT seq FROM cases WHERE campaign = ? ORDER BY seq", (cid,))
            assert [s for (s,) in seqs] == list(range(next_seq))
            cand = raw_rows(path, "SELECT seq FROM candidates ORDER BY seq")
            assert [s for (s,) in cand] == list(range(0, next_seq, CANDIDATES_EVERY))
            previous = next_seq


# -- triage and findings ----------------------------------------------------------------------


def test_candidate_payload_round_trips_a_serialized_case(tmp_path: Path) -> None:
    values: dict[str, Any] = {
        "x": np.array([-0.0, np.nan, np.inf, 1.5], dtype=np.float32),
        "axis": (0, -1),
    }
    case = Case(
        group="sum", dtype="float32", value_class="non-finite", values=values,
        apis={"numpy": "numpy.sum", "torch": "torch.sum"}, seed=7,
    )  # fmt: skip
    payload = {"case": case_to_jsonable(case), "outputs": {"torch": {"status": "crash"}}}
    record = CandidateRecord(
        seq=0, signature="s1", kind="crash", group="sum", dtype="float32", payload=payload
    )
    case_record = CaseRecord(
        seq=0, group="sum", dtype="float32", value_class="non-finite", score=1.0, kinds=("crash",)
    )
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        store.commit_batch(cid, cases=[case_record], candidates=[record], state={}, next_seq=1)
        (row,) = store.pending_candidates(cid)
    assert (row.campaign, row.seq, row.signature, row.kind, row.group, row.dtype) == (
        cid, 0, "s1", "crash", "sum", "float32",
    )  # fmt: skip
    assert (row.status, row.reproduced, row.runs) == ("pending", 0, 0)
    assert row.payload == json.loads(json.dumps(payload))
    back = case_from_jsonable(row.payload["case"])
    assert back.values["x"].tobytes() == values["x"].tobytes()  # -0.0 and NaN bit for bit
    assert back.values["axis"] == (0, -1) and back.apis == case.apis and back.seed == 7


def test_set_candidate_status(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 0)
        first, second = store.pending_candidates(cid)
        store.set_candidate_status(first.id, "flaky", 1, 3)
        assert [c.id for c in store.pending_candidates(cid)] == [second.id]
        row = store.candidate(first.id)
        assert (row.status, row.reproduced, row.runs) == ("flaky", 1, 3)
        store.set_candidate_status(second.id, "not-reproduced", 0, 3)
        assert store.pending_candidates(cid) == []
        counts = store.counts(cid)
        assert counts["candidates.flaky"] == counts["candidates.not-reproduced"] == 1
        with pytest.raises(ValueError, match="status"):
            store.set_candidate_status(first.id, "pending", 0, 0)
        with pytest.raises(ValueError, match="only with status 'reproduced'"):
            store.set_candidate_status(first.id, "flaky", 1, 3, finding=finding_record())
        with pytest.raises(StoreError, match="no candidate 999"):
            store.set_candidate_status(999, "flaky", 1, 3)


def test_status_with_finding_is_one_transaction_counted_once(tmp_path: Path) -> None:
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 0)
        cand = store.pending_candidates(cid)[0]
        store.set_candidate_status(cand.id, "reproduced", 3, 3, finding=finding_record())
        store.set_candidate_status(cand.id, "reproduced", 3, 3, finding=finding_record())
        (finding,) = store.findings(cid)
        assert finding.signature == cand.signature and finding.occurrences == 1
        assert finding.campaigns == (cid,) and finding.kind == "value"
        assert store.counts(cid)["findings.value"] == 1


def test_upsert_finding_across_campaigns(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite"
    with Store(path) as store:
        a = store.start_campaign(name="a", config={})
        b = store.start_campaign(name="b", config={})
        c = store.start_campaign(name="c", config={})
        store.upsert_finding(finding_record("s1", note="old"), campaign=a)
        store.upsert_finding(finding_record("s2", "crash"), campaign=a)
        (before,) = [f for f in store.findings() if f.signature == "s1"]
        time.sleep(0.01)
    with Store(path) as store:
        store.upsert_finding(finding_record("s1", note="new"), campaign=b)
        store.upsert_finding(finding_record("s1", note="newer"), campaign=b)
        everything = {f.signature: f for f in store.findings()}
        assert set(everything) == {"s1", "s2"}
        s1 = everything["s1"]
        assert s1.occurrences == 3 and s1.campaigns == (a, b)
        assert s1.first_seen == before.first_seen and s1.last_seen > before.last_seen
        assert s1.last_seen.endswith("Z") and s1.payload["detail"] == "newer"
        assert (s1.kind, s1.group, s1.dtype) == ("value", "sum", "float32")
        assert everything["s2"].occurrences == 1 and everything["s2"].campaigns == (a,)
        assert [f.signature for f in store.findings(b)] == ["s1"]
        assert store.findings(c) == []
        counts_a = store.counts(a)
        assert (counts_a["findings"], counts_a["findings.value"], counts_a["findings.crash"]) == (
            2, 1, 1,
        )  # fmt: skip
        assert store.counts(b)["findings"] == 1
        with pytest.raises(StoreError, match="no campaign 99"):
            store.upsert_finding(finding_record("s1"), campaign=99)
        assert store.findings()[0].occurrences == 3  # the failed upsert changed nothing


def test_rekey_joins_an_existing_finding(tmp_path: Path) -> None:
    """Triage moves a finding to the signature of its trigger: it joins a finding of the same
    root cause met through another case (occurrences add up, campaigns join, the earliest
    first sighting stays), or takes the new name alone."""
    with Store(tmp_path / "x.sqlite") as store:
        a = store.start_campaign(name="a", config={})
        b = store.start_campaign(name="b", config={})
        store.upsert_finding(finding_record("old", note="1"), campaign=a)
        store.upsert_finding(finding_record("old", note="2"), campaign=a)
        store.upsert_finding(finding_record("new", note="3"), campaign=b)
        first_old = store.finding("old").first_seen
        store.rekey_finding("old", finding_record("new", note="triaged"))
        rows = {r.signature: r for r in store.findings()}
        assert set(rows) == {"new"}
        assert rows["new"].occurrences == 3 and rows["new"].campaigns == (a, b)
        assert rows["new"].first_seen == first_old and rows["new"].payload["detail"] == "triaged"
        store.rekey_finding("new", finding_record("newer", note="again"))
        assert [r.signature for r in store.findings()] == ["newer"]
        with pytest.raises(StoreError, match="no finding"):
            store.rekey_finding("gone", finding_record("x"))


def test_drop_removes_one_finding_and_its_campaign_links(tmp_path: Path) -> None:
    with Store(tmp_path / "x.sqlite") as store:
        a = store.start_campaign(name="a", config={})
        store.upsert_finding(finding_record("slow", kind="hang"), campaign=a)
        store.upsert_finding(finding_record("kept"), campaign=a)
        store.drop_finding("slow")
        assert [r.signature for r in store.findings(a)] == ["kept"]
        assert raw_rows(store.path, "SELECT count(*) FROM finding_campaigns") == [(1,)]
        with pytest.raises(StoreError, match="no finding slow"):
            store.drop_finding("slow")


def test_import_finding_keeps_counts_and_dates(tmp_path: Path) -> None:
    with Store(tmp_path / "x.sqlite") as store:
        a = store.start_campaign(name="a", config={})
        b = store.start_campaign(name="b", config={})
        early = finding_record(
            "s",
            note="early",
            occurrences=4,
            first_seen="2026-01-01T00:00:00.000Z",
            last_seen="2026-01-02T00:00:00.000Z",
        )
        store.import_finding(early, campaign=a)
        late = finding_record(
            "s",
            note="late",
            occurrences=3,
            first_seen="2026-02-01T00:00:00.000Z",
            last_seen="2026-02-02T00:00:00.000Z",
        )
        store.import_finding(late, campaign=b)
        row = store.finding("s")
        assert row.occurrences == 7 and row.campaigns == (a, b)
        assert row.first_seen.startswith("2026-01-01") and row.last_seen.startswith("2026-02-02")
        assert row.payload["detail"] == "late"


def test_store_of_schema_1_is_refused_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"older xamt.*start a new store"):
        Store(path)


def test_a_signatures_other_candidates_leave_pending_with_its_finding(tmp_path: Path) -> None:
    """Reproduction runs one candidate per signature; the others take its verdict in the same
    transaction as the finding, so no kill can leave them pending to be reproduced, and the
    finding counted, again."""
    with Store(tmp_path / "s.sqlite") as store:
        cid = store.start_campaign(name="c", config={})
        commit(store, cid, 0)
        first, second = store.pending_candidates(cid)
        store.set_candidate_status(
            first.id, "reproduced", 3, 3, finding=finding_record(), siblings=[second.id]
        )
        assert store.pending_candidates(cid) == []
        assert store.candidate(second.id).status == "reproduced"
