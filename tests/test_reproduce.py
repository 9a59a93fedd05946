"""Reproduction verdicts (xamt.fuzz.reproduce), without workers.

Candidates come from a campaign's books (as in test_campaign: outcomes made here, a real store
in a temporary folder). Their reproduction runs are recorded in the store, as a reproduction
killed after its last run leaves them; :func:`reproduce` then gives every verdict from those
runs without starting a worker: all runs reproduced, some, none.
"""

from __future__ import annotations

from pathlib import Path

from test_campaign import JAX_SAYS_ONE, make_campaign, process, returned, sinc_case, sinc_group

from xamt.fuzz.campaign import Campaign
from xamt.fuzz.reproduce import RUNS, _line, reproduce
from xamt.store import CandidateRow
from xamt.types import ErrorInfo, Outcome

NAN, HALF, TWO = [float("nan")], [0.5], [2.0]


def torch_crashes() -> dict[str, Outcome]:
    outs = returned({"numpy": HALF, "jax": HALF})
    outs["torch"] = Outcome(library="torch", api="torch.sinc", status="crash", signal="SIGSEGV")
    return outs


def torch_raises() -> dict[str, Outcome]:
    outs = returned({"numpy": TWO, "jax": TWO})
    error = ErrorInfo(
        type="AttributeError", module="torch", message="'NoneType' object has no attribute 'shape'"
    )
    outs["torch"] = Outcome(library="torch", api="torch.sinc", status="error", error=error)
    return outs


def three_root_causes(tmp_path: Path) -> tuple[Campaign, dict[str, list[CandidateRow]]]:
    """A campaign whose books hold three root causes: jax's sinc(nan) (met three times, so
    two candidates), torch crashing on one input and raising on another (met once each)."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    process(
        camp,
        [sinc_case(NAN), sinc_case(HALF), sinc_case(NAN), sinc_case(TWO), sinc_case(NAN)],
        [
            returned(JAX_SAYS_ONE),
            torch_crashes(),
            returned(JAX_SAYS_ONE),
            torch_raises(),
            returned(JAX_SAYS_ONE),
        ],
    )
    by_cause: dict[str, list[CandidateRow]] = {}
    for cand in camp.store.pending_candidates(camp.campaign_id):
        cause = f"{cand.payload['library']} {cand.payload['family']}"
        by_cause.setdefault(cause, []).append(cand)
    assert sorted((cause, len(c)) for cause, c in by_cause.items()) == [
        ("jax value", 2),
        ("torch crash", 1),
        ("torch status", 1),
    ]
    return camp, by_cause


def test_verdicts_come_from_the_runs_each_signature_had(tmp_path: Path) -> None:
    camp, cands = three_root_causes(tmp_path)
    store = camp.store
    # Runs recorded for each signature's first candidate (its representative): jax's showed
    # up in every run, torch's crash in one, torch's error in none.
    store.record_runs(
        [
            (cands["jax value"][0].id, 3, 3),
            (cands["torch crash"][0].id, 1, 3),
            (cands["torch status"][0].id, 0, 3),
        ]
    )
    summary = reproduce(store, camp.campaign_id, {}, {"sinc": sinc_group()}, runs=RUNS)
    assert (summary.reproduced, summary.flaky, summary.not_reproduced) == (1, 1, 1)
    assert summary.pending == 0

    def status(cand: CandidateRow) -> tuple[str, int, int]:
        row = store.candidate(cand.id)
        return row.status, row.reproduced, row.runs

    # the representative's verdict is its signature's: the other jax candidate shares it
    assert [status(c) for c in cands["jax value"]] == [("reproduced", 3, 3)] * 2
    assert status(cands["torch crash"][0]) == ("flaky", 1, 3)
    assert status(cands["torch status"][0]) == ("not-reproduced", 0, 3)
    # Only the reproduced one is a finding, counted as often as the campaign met it.
    (row,) = store.findings(camp.campaign_id)
    assert row.signature == cands["jax value"][0].signature and row.occurrences == 3
    finding = row.finding
    assert (finding.library, finding.reproduced, finding.runs) == ("jax", 3, 3)
    assert finding.outputs["jax"]["status"] == "ok" and finding.case["values"]
    # Nothing is pending any more: a second pass gives no verdict and counts nothing twice.
    again = reproduce(store, camp.campaign_id, {}, {"sinc": sinc_group()})
    assert (again.reproduced, again.flaky, again.not_reproduced, again.pending) == (0, 0, 0, 0)
    assert store.findings(camp.campaign_id)[0].occurrences == 3
    assert store.pending_candidates(camp.campaign_id) == []
    camp.store.close()


def test_candidates_of_groups_not_taken_stay_pending(tmp_path: Path) -> None:
    camp, _ = three_root_causes(tmp_path)
    summary = reproduce(camp.store, camp.campaign_id, {}, {})
    assert (summary.reproduced, summary.flaky, summary.not_reproduced) == (0, 0, 0)
    assert len(camp.store.pending_candidates(camp.campaign_id)) == 4
    camp.store.close()


def test_reproduction_progress_promises_no_time_before_a_twentieth_is_done() -> None:
    early = _line(0, 3, 32, 12864, 30.0)  # the fresh workers' start-up is in the rate
    assert "32/12864" in early and "left" not in early
    settled = _line(0, 3, 1000, 12864, 100.0)
    assert settled.endswith("about 1186 s left")
