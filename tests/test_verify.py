"""Verification of stored findings (xamt.triage.verify), without workers: what a verdict
records, and the checks made before any worker starts. A finding comes from a campaign's
books (test_campaign: outcomes made here) into a real store in a temporary folder."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from test_campaign import JAX_SAYS_ONE, make_campaign, process, returned, sinc_case

from xamt.catalog import model
from xamt.catalog.model import CatalogError
from xamt.findings import from_json
from xamt.store import FindingRow, Store
from xamt.triage.verify import HISTORY, record_verdict, verify_findings

VERSIONS = {"numpy": "2.4.6", "torch": "2.13.0+cpu", "jax": "0.10.3", "paddle": "3.3.1"}


def stored_finding(tmp_path: Path) -> tuple[Store, FindingRow]:
    """jax's sinc(nan) = 1.0, found by a campaign and stored as a reproduced finding."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    process(camp, [sinc_case([float("nan")])], [returned(JAX_SAYS_ONE)])
    (cand,) = camp.store.pending_candidates(camp.campaign_id)
    finding = from_json(cand.payload, "candidate").replace(reproduced=3, runs=3)
    camp.store.upsert_finding(finding, campaign=camp.campaign_id)
    return camp.store, camp.store.finding(cand.signature)


def test_a_verification_that_finds_it_again_or_misses_it(tmp_path: Path) -> None:
    store, row = stored_finding(tmp_path)
    sig = row.signature
    missed = record_verdict(store, row, row.finding, {"another"}, VERSIONS, ["jax: ok: ..."])
    assert (missed.signature, missed.present, missed.lines) == (sig, False, ("jax: ok: ...",))
    # the versions of the finding's own libraries only (paddle was not in its case)
    assert missed.versions == {"numpy": "2.4.6", "torch": "2.13.0+cpu", "jax": "0.10.3"}
    after = store.finding(sig).finding
    assert after.consecutive_misses == 1
    assert [(v.present, v.versions["jax"]) for v in after.verifications] == [(False, "0.10.3")]
    missed = record_verdict(store, store.finding(sig), after, set(), VERSIONS)
    assert store.finding(sig).finding.consecutive_misses == 2
    found = record_verdict(store, store.finding(sig), store.finding(sig).finding, {sig}, VERSIONS)
    assert found.present
    after = store.finding(sig).finding
    assert after.consecutive_misses == 0  # a miss streak ends when it shows up again
    assert [v.present for v in after.verifications] == [False, False, True]
    # what the finding was stays as it was: only its verification record moves
    assert (after.key, after.reproduced, after.case) == (row.finding.key, 3, row.finding.case)
    assert store.finding(sig).occurrences == row.occurrences
    store.close()


def test_a_finding_keeps_its_latest_verifications(tmp_path: Path) -> None:
    store, row = stored_finding(tmp_path)
    for i in range(HISTORY + 5):
        current = store.finding(row.signature)
        record_verdict(store, current, current.finding, {row.signature} if i == 0 else (), {})
    after = store.finding(row.signature).finding
    assert len(after.verifications) == HISTORY
    assert not any(v.present for v in after.verifications)  # the first (present) fell out
    assert after.consecutive_misses == HISTORY + 4
    store.close()


def test_nothing_to_verify_starts_nothing(tmp_path: Path) -> None:
    store = Store(tmp_path / "xamt.sqlite")
    assert verify_findings(store, [], catalog=model.load()) == []
    store.close()


def test_a_finding_of_a_group_the_catalog_lost_is_refused_before_any_worker(
    tmp_path: Path,
) -> None:
    store, row = stored_finding(tmp_path)
    catalog = model.load()
    without = dataclasses.replace(
        catalog, groups=tuple(g for g in catalog.groups if g.id != "sinc")
    )
    with pytest.raises(CatalogError, match=f"finding {row.signature} is of group 'sinc'"):
        verify_findings(store, [row], catalog=without, variant="no-such-variant")
    assert store.finding(row.signature).finding.verifications == ()
    store.close()
