"""The campaign loop's bookkeeping, without workers (xamt.fuzz.campaign).

Budgets and shards as parsed, the groups a campaign takes, what one batch books (support,
signatures, candidates, the schedule, the store), and the saved state that lets a killed
campaign resume exactly, through a real store in a temporary folder. The outcomes of a batch
are made here, as a library would return them; nothing runs a library.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xamt import replay
from xamt.catalog import model
from xamt.catalog.model import Group
from xamt.errors import UsageError
from xamt.findings import from_json
from xamt.fuzz.campaign import (
    CANDIDATES_PER_SIGNATURE,
    FATAL_REPEATS,
    FEASIBLE_SIZE,
    Budget,
    Campaign,
    CampaignConfig,
    _Batch,
    parse_budget,
    parse_shard,
    select_groups,
    shard_of,
    signature_key,
)
from xamt.fuzz.cancel import Cancelled
from xamt.fuzz.run import unjudged_lines
from xamt.replay import Replayed, judge_case
from xamt.serialize import case_to_jsonable
from xamt.store import Store
from xamt.types import Case, Outcome
from xamt.workers.pool import WorkerPool

LIBS = ("numpy", "torch", "jax")
APIS = {"numpy": "numpy.sinc", "torch": "torch.sinc", "jax": "jax.numpy.sinc"}

# -- budgets, shards, groups ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "budget"),
    [
        ("90s", Budget(seconds=90.0)),
        ("10m", Budget(seconds=600.0)),
        ("1.5m", Budget(seconds=90.0)),
        ("2h", Budget(seconds=7200.0)),
        ("500", Budget(cases=500)),
        ("500c", Budget(cases=500)),
        (" 60s ", Budget(seconds=60.0)),
    ],
)
def test_budgets_are_times_or_whole_numbers_of_cases(text: str, budget: Budget) -> None:
    assert parse_budget(text) == budget


@pytest.mark.parametrize("text", ["0", "0s", "-5", "0.5", "2.5c", "ten", "10x", "", "1e3"])
def test_bad_budgets_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError, match="budget"):
        parse_budget(text)


def test_budgets_say_what_they_are() -> None:
    assert str(Budget(cases=500)) == "500 cases"
    assert str(Budget(seconds=90.0)) == "90 s"


def test_shards() -> None:
    assert parse_shard("0/4") == (0, 4) and parse_shard(" 3/4 ") == (3, 4)
    for bad in ("4/4", "1/0", "-1/2", "a/b", "1", "1/2/3"):
        with pytest.raises(UsageError, match="shard"):
            parse_shard(bad)
    assert all(0 <= shard_of(f"g{i}", 7) < 7 for i in range(100))
    assert shard_of("sum[axis]", 4) == shard_of("sum[axis]", 4)


def test_shards_split_the_groups_once_each() -> None:
    catalog = model.load()
    whole = {g.id for g in select_groups(catalog, LIBS)}
    parts = [{g.id for g in select_groups(catalog, LIBS, shard=(i, 4))} for i in range(4)]
    assert set().union(*parts) == whole and sum(map(len, parts)) == len(whole)
    assert all(parts), "every shard has groups"


def test_groups_keep_only_the_chosen_libraries_and_span_two() -> None:
    catalog = model.load()
    chosen = select_groups(catalog, ("numpy", "paddle"))
    assert chosen
    for g in chosen:
        libs = {m.library for m in g.members}
        assert libs == {"numpy", "paddle"}
    # a group one of the two libraries lacks is left out
    only_one = [
        g.id
        for g in catalog.groups
        if {m.library for m in g.members} & {"numpy", "paddle"} == {"numpy"}
    ]
    assert only_one and not {g.id for g in chosen} & set(only_one)
    filtered = select_groups(catalog, LIBS, pattern=r"^sinc$")
    assert [g.id for g in filtered] == ["sinc"]
    with pytest.raises(UsageError, match="not a regular expression"):
        select_groups(catalog, LIBS, pattern="(")


# -- one batch's books -------------------------------------------------------------------------


def sinc_group() -> Group:
    (group,) = select_groups(model.load(), LIBS, pattern=r"^sinc$")
    return group


def make_campaign(
    tmp_path: Path,
    *,
    name: str = "fuzz-0-1",
    seed: int = 5,
    budget: Budget | None = None,
    participation: float = 0.0,
) -> Campaign:
    """A campaign on the sinc group with a pool that is never started and a real store (no
    participation floor unless given: a saturated library is left out of cold cases)."""
    config = CampaignConfig(
        name=name,
        seed=seed,
        budget=budget or Budget(cases=100),
        libraries=LIBS,
        batch=4,
        participation=participation,
    )
    pool = WorkerPool(dict.fromkeys(LIBS, sys.executable))
    store = Store(tmp_path / "xamt.sqlite")
    return Campaign(config, [sinc_group()], pool, store, known=[])


def sinc_case(x: list[float]) -> Case:
    return Case(
        group="sinc",
        dtype="float32",
        value_class="non-finite",
        values={"x": np.array(x, dtype=np.float32)},
        apis=dict(APIS),
        seed=3,
    )


def returned(values: dict[str, list[float]]) -> dict[str, Outcome]:
    """Each library returned these float32 values."""
    return {
        lib: Outcome(library=lib, api=APIS[lib], status="ok", value=np.array(v, np.float32))
        for lib, v in values.items()
    }


class Ran:
    """What the pool gives back for a submitted batch, made here: the outcomes of each case
    (as the campaign reads them), or the judged cases."""

    def __init__(
        self, group: Group, cases: list[Case], outcomes: list[dict[str, Outcome]], ticket: int = 0
    ):
        self.group, self.cases, self.ran, self.ticket = group, cases, outcomes, ticket
        self.withdrawn: list[tuple[int, str]] = []
        self.probes: list[tuple[Outcome, ...]] = [() for _ in cases]  # no gradient cases

    def case_of(self, library: str, slot: int) -> int:
        return slot  # one call per case and library

    def withdraw(self, case: int, library: str) -> None:
        self.withdrawn.append((case, library))

    def outcomes(self) -> tuple[list[dict[str, Outcome]], list[Outcome | None]]:
        return self.ran, [None] * len(self.ran)

    def collect(self) -> list[Replayed]:
        return [
            judge_case(c, self.group, o, None) for c, o in zip(self.cases, self.ran, strict=True)
        ]


def process(camp: Campaign, cases: list[Case], outcomes: list[dict[str, Outcome]]) -> None:
    """Book one batch as the loop does after the workers answered; commits to the store."""
    picks = [camp.schedule.pick(camp.rng) for _ in cases]
    ran: Any = Ran(sinc_group(), cases, outcomes)
    camp._process(_Batch(picks=picks, cases=cases, submitted=ran), 0.0, 0.0)


JAX_SAYS_ONE = {"numpy": [float("nan")], "torch": [float("nan")], "jax": [1.0]}
ALL_AGREE = {"numpy": [0.0], "torch": [0.0], "jax": [0.0]}


def test_a_batch_books_signatures_candidates_support_and_the_store(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    nan = sinc_case([float("nan")])
    agree = sinc_case([1.0])
    run = judge_case(nan, sinc_group(), returned(JAX_SAYS_ONE), None)
    (signed,) = run.signed  # jax departs from the standard's sinc(nan) = nan
    assert signed.blame.library == "jax"
    sig = signed.signature
    process(
        camp,
        [nan, nan, agree, nan],
        [returned(JAX_SAYS_ONE)] * 2
        + [
            returned(ALL_AGREE),
            returned(JAX_SAYS_ONE),
        ],
    )
    state = camp.state
    assert state.seq == 4
    assert state.seen == {sig: 3}  # every occurrence counted
    assert state.kinds == Counter({signed.blame.kind: 1})  # a root cause counted once
    assert state.suspected == {sig}  # no known difference given: a suspected bug
    assert state.support["sinc"] == {lib: {"float32": "ok"} for lib in LIBS}
    # In the store: the four cases, and at most CANDIDATES_PER_SIGNATURE candidates per root
    # cause, each carrying its finding.
    counts = camp.store.counts(camp.campaign_id)
    assert counts["cases"] == 4 and counts["divergent_cases"] == 3
    candidates = camp.store.pending_candidates(camp.campaign_id)
    assert [c.signature for c in candidates] == [sig] * CANDIDATES_PER_SIGNATURE
    assert [c.seq for c in candidates] == [0, 1]
    finding = from_json(candidates[0].payload, "candidate")
    assert (finding.library, finding.callable, finding.classification) == (
        "jax",
        signed.callable,
        "suspected-bug",
    )
    assert finding.case["values"] == case_to_jsonable(nan)["values"]
    # The next batch goes on from there, in the same books.
    process(camp, [nan], [returned(JAX_SAYS_ONE)])
    assert camp.state.seq == 5 and camp.state.seen == {sig: 4}
    assert len(camp.store.pending_candidates(camp.campaign_id)) == CANDIDATES_PER_SIGNATURE
    # the state is saved with a batch at most every STATE_EVERY seconds: the store still has
    # the first batch's, until the run stops and saves it
    assert camp.store.campaign_state(camp.campaign_id)["seen"] == {sig: 3}
    camp._save()
    stored = camp.store.campaign_state(camp.campaign_id)
    assert stored["seen"] == {sig: 4} and stored["suspected"] == [sig]


def test_a_case_the_judge_fails_on_is_kept_unjudged_and_said_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    nan = sinc_case([float("nan")])
    real_judge = replay.judge
    calls = iter([True, False, True])  # the judge fails on the second case only

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        if not next(calls):
            raise ZeroDivisionError("a defect of the judge")
        return real_judge(*args, **kwargs)

    monkeypatch.setattr(replay, "judge", failing_once)
    process(camp, [nan, nan, nan], [returned(JAX_SAYS_ONE)] * 3)
    assert camp.state.seq == 3  # every case booked, the failed one too
    assert sum(camp.state.seen.values()) == 2  # the two judged cases' blames only
    ((count, error),) = camp.state.unjudged.values()
    assert count == 1 and error.startswith("ZeroDivisionError: a defect of the judge (at ")
    camp._save()
    again = make_campaign(tmp_path)
    assert again.open(resume=True)
    assert again.state.unjudged == {"sinc": [1, error]}  # kept across a resume
    (first, *rest) = unjudged_lines(again.state.unjudged)
    assert "1 cases of 1 groups could not be judged" in first
    assert rest == [f"  sinc: 1 cases, {error}"]
    assert unjudged_lines({}) == []


def test_a_resume_runs_again_the_batches_committed_after_the_saved_state(
    tmp_path: Path,
) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    nan = sinc_case([float("nan")])
    process(camp, [nan, nan], [returned(JAX_SAYS_ONE)] * 2)  # saved with its state
    process(camp, [nan, nan], [returned(JAX_SAYS_ONE)] * 2)  # rows only
    assert camp.store.counts(camp.campaign_id)["cases"] == 4
    again = make_campaign(tmp_path)
    assert again.open(resume=True)
    assert again.state.seq == 2 and sum(again.state.seen.values()) == 2
    assert again.store.counts(again.campaign_id)["cases"] == 2  # the unsaved batch is gone


def test_a_case_where_all_agree_books_nothing_but_its_count(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    before = camp.schedule.state()
    process(camp, [sinc_case([0.0])], [returned(ALL_AGREE)])
    assert camp.state.seq == 1 and not camp.state.seen and not camp.state.suspected
    assert camp.store.pending_candidates(camp.campaign_id) == []
    assert camp.schedule.state() != before  # the schedule learnt from the pick all the same


def test_participation_counts_each_library_in_the_cases_of_its_groups(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    without_jax = {k: v for k, v in ALL_AGREE.items() if k != "jax"}
    process(
        camp,
        [sinc_case([0.0]), sinc_case([1.0]), sinc_case([2.0])],
        [returned(ALL_AGREE), returned(without_jax), returned(without_jax)],
    )
    assert camp.state.participation == {"numpy": [3, 3], "torch": [3, 3], "jax": [3, 1]}
    camp._save()
    assert camp.store.campaign_state(camp.campaign_id)["participation"]["jax"] == [3, 1]
    again = make_campaign(tmp_path)
    again.open(resume=True)
    assert again.state.participation == camp.state.participation  # kept across a resume


def test_a_saturated_library_keeps_the_cases_of_signatures_it_has_run(tmp_path: Path) -> None:
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    warm, cold = sinc_case([0.0, 1.0]), sinc_case([0.0])  # the same values, another shape
    assert set(camp._paced(warm, {"jax"}).apis) == {"numpy", "torch"}  # never run: left out
    process(
        camp, [sinc_case([2.0, 3.0])], [returned({"numpy": [1, 1], "torch": [1, 1], "jax": [1, 1]})]
    )
    assert set(camp._paced(warm, {"jax"}).apis) == set(LIBS)  # run that signature: stays
    # a case of another signature, where jax has a warm case of the group and dtype: that
    # case instead, with fresh values of the cold case's value class; every library stays
    cold = dataclasses.replace(cold, value_class="ordinary", seed=11)
    took = camp._paced(cold, {"jax"})
    assert set(took.apis) == set(LIBS) and took.values["x"].shape == (2,)
    assert signature_key(took, "jax") == signature_key(warm, "jax")
    assert took.value_class == "ordinary" and took.seed == 11
    assert np.isfinite(took.values["x"]).all() and not np.array_equal(took.values["x"], [2, 3])
    # none warm of that dtype: left out, as before
    other = dataclasses.replace(cold, dtype="float64", values={"x": np.zeros(3)})
    assert set(camp._paced(other, {"jax"}).apis) == {"numpy", "torch"}
    assert camp.state.paced["jax"] == 2


def test_a_saturated_library_takes_cold_cases_that_keep_it_at_the_participation_floor(
    tmp_path: Path,
) -> None:
    camp = make_campaign(tmp_path, participation=0.5)
    camp.open(resume=False)
    taken = []
    for i in range(8):
        case = camp._paced(sinc_case([float(i)] * (i + 1)), {"jax"})  # a new shape each time
        camp._tally(case)
        taken.append("jax" in case.apis)
    # never warm: it takes a case whenever leaving it out would put it under half
    assert taken == [True, False, True, False, True, False, True, False]
    assert camp._drawn_part["jax"] == [8, 4] and camp._drawn_part["numpy"] == [8, 8]
    assert camp.state.paced["jax"] == 4
    # not saturated: always in, whatever the floor
    assert "jax" in camp._paced(sinc_case([0.0] * 20), set()).apis
    # a resumed campaign counts from what it committed
    process(camp, [sinc_case([1.0])], [returned({"numpy": [1], "torch": [1]})])
    camp._save()
    again = make_campaign(tmp_path, participation=0.5)
    again.open(resume=True)
    assert again._drawn_part["jax"] == [1, 0]
    assert "jax" in again._paced(sinc_case([0.0] * 30), {"jax"}).apis


def test_a_case_slow_warm_is_never_repeated_as_a_warm_case(tmp_path: Path) -> None:
    """A case some library took seconds over (numpy.round with decimals=2**31-1, under the
    hang deadline) is not kept to stand in for cold cases: repeated, it stalled a campaign."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    slow = {
        lib: dataclasses.replace(o, seconds=3.0 if lib == "numpy" else 0.001)
        for lib, o in returned({"numpy": [1, 1], "torch": [1, 1], "jax": [1, 1]}).items()
    }
    process(camp, [sinc_case([2.0, 3.0])], [slow])
    cold = sinc_case([0.0, 1.0, 2.0])
    assert set(camp._paced(cold, {"jax"}).apis) == {"numpy", "torch"}  # nothing to stand in
    quick = {lib: dataclasses.replace(o, seconds=0.001) for lib, o in slow.items()}
    process(camp, [sinc_case([1.0] * 5)], [quick])  # kept first: compared when one is dropped
    process(camp, [sinc_case([4.0, 5.0, 6.0, 7.0])], [quick])
    took = camp._paced(cold, {"jax"})
    assert set(took.apis) == set(LIBS) and took.values["x"].shape in ((4,), (5,))
    # the same signature slow on other values: that warm case is dropped
    process(camp, [sinc_case([9.0, 9.0, 9.0, 9.0])], [slow])
    assert camp._paced(cold, {"jax"}).values["x"].shape == (5,)  # only the other one is left


def test_a_signal_while_waiting_puts_the_batch_back_unbooked(tmp_path: Path) -> None:
    """SIGINT/SIGTERM breaks off the wait on the workers; the batch waited on goes back to the
    front of the pending ones (saved with the state: --resume runs it first) and nothing of
    it is booked."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)

    class Interrupted(Ran):
        def outcomes(self) -> tuple[list[dict[str, Outcome]], list[Outcome | None]]:
            os.kill(os.getpid(), signal.SIGINT)  # arrives inside the interruptible wait
            time.sleep(5)
            raise AssertionError("the wait was not broken off")

    cases = [sinc_case([0.0]), sinc_case([1.0])]
    picks = [camp.schedule.pick(camp.rng) for _ in cases]
    batch = _Batch(picks=picks, cases=cases, submitted=Interrupted(sinc_group(), cases, []))
    with camp.cancel.installed(), pytest.raises(Cancelled):
        camp._process(batch, 0.0, 0.0)
    assert camp.state.seq == 0 and list(camp._pending) == [batch]
    assert camp.store.counts(camp.campaign_id)["cases"] == 0


# -- the saved state ---------------------------------------------------------------------------


def test_a_resumed_campaign_continues_from_its_saved_state(tmp_path: Path) -> None:
    """Everything the loop keeps (rng, schedule, books, batches drawn but not compared) comes
    back from the store, so the resumed campaign repeats the uninterrupted one."""
    first = make_campaign(tmp_path)
    assert first.open(resume=False) is False
    process(
        first,
        [sinc_case([float("nan")]), sinc_case([1.0])],
        [
            returned(JAX_SAYS_ONE),
            returned(ALL_AGREE),
        ],
    )
    # a batch drawn and submitted, not yet compared, when the campaign was killed
    pending = [first.schedule.pick(first.rng)]
    drawn = [sinc_case([2.0, float("inf")])]
    first._pending.append(_Batch(picks=pending, cases=drawn, submitted=None))  # type: ignore[arg-type]
    process(first, [sinc_case([float("nan")])], [returned(JAX_SAYS_ONE)])
    first._save()  # as a batch saves it every STATE_EVERY seconds, and the run's end
    saved = first.store.campaign_state(first.campaign_id)
    assert len(saved["pending"]) == 1
    first.store.close()

    second = make_campaign(tmp_path)
    assert second.open(resume=True) is True
    assert second.campaign_id == first.campaign_id
    again = json.loads(json.dumps(second._saved_state()))
    assert {k: v for k, v in again.items() if k != "pending"} == {
        k: v for k, v in saved.items() if k != "pending"
    }
    ((picks, cases),) = second._resumed
    assert picks == pending
    assert [case_to_jsonable(c) for c in cases] == [case_to_jsonable(c) for c in drawn]
    # the same random stream and schedule from here on
    assert second.rng.random() == first.rng.random()
    assert second.schedule.pick(second.rng) == first.schedule.pick(first.rng)
    second.store.close()


def test_resume_takes_the_unfinished_campaign_of_that_name_only(tmp_path: Path) -> None:
    first = make_campaign(tmp_path)
    first.open(resume=False)
    process(first, [sinc_case([float("nan")])], [returned(JAX_SAYS_ONE)])
    first.store.close()
    fresh = make_campaign(tmp_path)
    assert fresh.open(resume=False) is False  # without --resume: a new campaign
    assert fresh.campaign_id != first.campaign_id and fresh.state.seq == 0
    fresh.store.close()
    again = make_campaign(tmp_path)
    assert again.open(resume=True) is True  # the latest unfinished one of that name
    assert again.campaign_id == fresh.campaign_id
    again.store.finish_campaign(again.campaign_id, summary={})
    again.store.close()
    last = make_campaign(tmp_path)
    assert last.open(resume=True) is True and last.campaign_id == first.campaign_id
    assert last.state.seq == 1 and last.state.seen == first.state.seen
    last.store.close()


def test_a_library_that_died_twice_on_such_an_input_is_left_out_of_it(tmp_path: Path) -> None:
    """A worker that crashed FATAL_REPEATS times on one function, dtype family and set of
    trigger classes is not called on such cases again (each call would cost a restart), as
    long as two libraries are left to compare; its aliases and other float widths are the same
    function and family."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    crash = returned({"numpy": [0.5], "jax": [0.5]})
    crash["torch"] = Outcome(library="torch", api="torch.sinc", status="crash", signal="SIGSEGV")
    process(camp, [sinc_case([0.5])], [crash])
    assert camp._without_fatal(sinc_case([0.25])).apis == APIS  # once is not enough
    process(camp, [sinc_case([0.5])], [crash])
    assert camp.state.fatal["sinc"] == [["torch", "torch.sinc", "floating", [], FATAL_REPEATS]]
    kept = camp._without_fatal(sinc_case([0.25]))
    assert kept.apis == {"numpy": "numpy.sinc", "jax": "jax.numpy.sinc"}
    assert camp.state.skipped == Counter({"torch": 1})
    # also when it leaves one library (nothing is compared, and nothing found: the arm earns
    # nothing), but not for another dtype family
    two = dataclasses.replace(
        sinc_case([0.25]), apis={"numpy": "numpy.sinc", "torch": "torch.sinc"}
    )
    assert camp._without_fatal(two).apis == {"numpy": "numpy.sinc"}
    before = camp.store.counts(camp.campaign_id)
    process(camp, [camp._without_fatal(two)], [returned({"numpy": [0.5]})])
    after = camp.store.counts(camp.campaign_id)
    assert after["cases"] == before["cases"] + 1
    assert after["divergent_cases"] == before["divergent_cases"]
    ints = dataclasses.replace(sinc_case([0.25]), dtype="int32")
    assert camp._without_fatal(ints).apis == APIS
    # an alias, a wider float: the same function and family
    wide = dataclasses.replace(sinc_case([0.25]), dtype="float64")
    assert camp._without_fatal(wide).apis == kept.apis
    alias = dataclasses.replace(sinc_case([0.25]), apis={**APIS, "torch": "torch.special.sinc"})
    assert "torch" not in camp._without_fatal(alias).apis
    # the books come back with a resumed campaign (saved when the run stops)
    camp._save()
    camp.store.close()
    again = make_campaign(tmp_path)
    assert again.open(resume=True)
    assert again._without_fatal(sinc_case([0.25])).apis == kept.apis
    again.store.close()


def test_a_second_death_withdraws_such_calls_from_the_batches_in_flight(tmp_path: Path) -> None:
    """Batches drawn before torch's second death on sinc still hold torch calls on such cases:
    those are taken back from the pool, and a case whose torch call never ran is judged (and
    booked) without torch."""
    camp = make_campaign(tmp_path, budget=Budget(seconds=60))
    camp.open(resume=False)
    crash = returned({"numpy": [0.5], "jax": [0.5]})
    crash["torch"] = Outcome(library="torch", api="torch.sinc", status="crash", signal="SIGSEGV")
    ints = dataclasses.replace(sinc_case([0.25]), dtype="int32")
    in_flight = [sinc_case([0.25]), ints, sinc_case([0.75])]
    ran = Ran(sinc_group(), in_flight, [])
    camp._pending.append(_Batch(picks=[], cases=in_flight, submitted=ran))  # type: ignore[arg-type]
    process(camp, [sinc_case([0.5])], [crash])
    assert ran.withdrawn == []  # one death is not enough
    process(camp, [sinc_case([0.5])], [crash])
    assert ran.withdrawn == [(0, "torch"), (2, "torch")]  # not the integer case
    camp._pending.clear()
    withdrawn = returned({"numpy": [0.5], "jax": [float("nan")]})
    withdrawn["torch"] = Outcome(library="torch", api="torch.sinc", status="withdrawn")
    before = camp.state.skipped["torch"]
    process(camp, [sinc_case([0.5])], [withdrawn])
    assert camp.state.skipped["torch"] == before + 1
    last = [c for c in camp.store.pending_candidates(camp.campaign_id) if c.seq == 2]
    assert last and all(
        set(from_json(c.payload, "candidate").apis) == {"numpy", "jax"} for c in last
    )
    camp.store.close()


def test_a_death_is_noted_when_the_pool_reports_it_and_booked_once(tmp_path: Path) -> None:
    """torch runs ahead of the slowest library: its deaths are noted as the pool reports them
    (not when their batch is booked), the second one withdraws torch's later such calls, and
    booking the batches does not count the deaths again. Without a time budget (a campaign
    that repeats exactly) nothing is noted early."""
    camp = make_campaign(tmp_path, budget=Budget(seconds=60))
    camp.open(resume=False)
    first = [sinc_case([0.5]), sinc_case([0.5])]
    later = [sinc_case([0.25])]
    ran = [Ran(sinc_group(), first, [], ticket=1), Ran(sinc_group(), later, [], ticket=2)]
    for r in ran:
        camp._pending.append(_Batch(picks=[], cases=r.cases, submitted=r))  # type: ignore[arg-type]
    camp._on_failure(1, "torch", 0)
    assert camp.state.fatal["sinc"][0][4] == 1 and ran[1].withdrawn == []
    camp._on_failure(1, "torch", 1)
    assert camp.state.fatal["sinc"][0][4] == 2 and ran[1].withdrawn == [(0, "torch")]
    camp._on_failure(1, "numpy", 1)  # numpy dying says the input is too heavy: not noted here
    assert len(camp.state.fatal["sinc"]) == 1
    crash = returned({"numpy": [0.5], "jax": [0.5]})
    crash["torch"] = Outcome(library="torch", api="torch.sinc", status="crash", signal="SIGSEGV")
    camp._pending.popleft()
    ran[0].ran = [crash, crash]
    camp._process(
        _Batch(picks=[camp.schedule.pick(camp.rng)] * 2, cases=first, submitted=ran[0]), 0, 0
    )  # type: ignore[arg-type]
    assert camp.state.fatal["sinc"][0][4] == 2  # booked, not counted again
    camp.store.close()
    exact = make_campaign(tmp_path / "exact")
    exact.open(resume=False)
    exact._pending.append(_Batch(picks=[], cases=first, submitted=Ran(sinc_group(), first, [], 1)))  # type: ignore[arg-type]
    exact._on_failure(1, "torch", 0)
    assert exact.state.fatal == {}
    exact.store.close()


def test_a_huge_size_that_hung_workers_twice_is_drawn_feasible_in_every_group(
    tmp_path: Path,
) -> None:
    """A role at 2**31 - 1 with which workers hung twice (in any groups) is drawn at
    FEASIBLE_SIZE afterwards: past the input's extent, without gigabytes; other roles, small
    values and booleans stay as drawn."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    huge = dataclasses.replace(
        sinc_case([0.5]), values={**sinc_case([0.5]).values, "num": 2**31 - 1, "k": 2**31 - 1}
    )
    hang = returned({"numpy": [0.5], "jax": [0.5]})
    hang["torch"] = Outcome(library="torch", api="torch.sinc", status="hang")
    process(camp, [huge], [hang])
    assert camp._lighter(huge).values["num"] == 2**31 - 1  # once is not enough
    fine = dataclasses.replace(huge, values={**huge.values, "k": 3})
    process(camp, [fine], [hang])
    assert camp.state.huge == Counter({"num": 2, "k": 1})
    lighter = camp._lighter(huge)
    assert lighter.values["num"] == FEASIBLE_SIZE and lighter.values["k"] == 2**31 - 1
    assert camp._lighter(fine).values["num"] == FEASIBLE_SIZE
    small = dataclasses.replace(huge, values={**huge.values, "num": 7})
    assert camp._lighter(small).values == small.values
    camp._save()
    camp.store.close()
    again = make_campaign(tmp_path)
    assert again.open(resume=True) and again.state.huge == Counter({"num": 2, "k": 1})
    again.store.close()


def test_deaths_on_several_inputs_of_one_api_keep_the_classes_they_share(tmp_path: Path) -> None:
    """Two deaths of torch's sinc, one on NaN and inf, one on NaN alone: torch is left out of
    cases holding NaN, and still called on the others."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    crash = returned({"numpy": [0.5], "jax": [0.5]})
    crash["torch"] = Outcome(library="torch", api="torch.sinc", status="crash", signal="SIGSEGV")
    process(camp, [sinc_case([float("nan"), float("inf")])], [crash])
    process(camp, [sinc_case([float("nan"), 1.0])], [crash])
    assert camp.state.fatal["sinc"] == [["torch", "torch.sinc", "floating", ["nan"], 2]]
    assert "torch" not in camp._without_fatal(sinc_case([1.0, float("nan")])).apis
    assert camp._without_fatal(sinc_case([float("inf")])).apis == APIS
    assert camp._without_fatal(sinc_case([0.25])).apis == APIS


def test_an_input_too_heavy_for_two_workers_is_not_drawn_again_in_its_group(
    tmp_path: Path,
) -> None:
    """numpy and torch both hit the memory cap on a NaN input: later cases of the group are
    drawn without NaN (nothing is learnt from it, and each costs two restarts)."""
    camp = make_campaign(tmp_path)
    camp.open(resume=False)
    heavy = returned({"jax": [0.5]})
    for lib in ("numpy", "torch"):
        heavy[lib] = Outcome(library=lib, api=f"{lib}.sinc", status="resource")
    process(camp, [sinc_case([float("nan"), 2.0])], [heavy])
    assert camp.state.heavy == {"sinc": [["nan"], 1]}
    assert camp.state.fatal == {}  # no library is to blame
    lighter = camp._lighter(sinc_case([float("nan"), 0.5]))
    assert not np.isnan(lighter.values["x"]).any() and lighter.values["x"][1] == 0.5
    assert camp.state.lightened == 1
    other = sinc_case([float("inf")])
    assert camp._lighter(other) is other  # other input classes are drawn as before


def test_deaths_of_one_function_count_across_its_groups(tmp_path: Path) -> None:
    """torch dies on NaN once in sinc and once in another group of the same function: it is
    left out of both groups' NaN cases (each group would otherwise pay two deaths)."""
    config = CampaignConfig(
        name="fuzz-0-1", seed=5, budget=Budget(cases=100), libraries=LIBS, batch=4
    )
    other = dataclasses.replace(sinc_group(), id="sinc~2")
    pool = WorkerPool(dict.fromkeys(LIBS, sys.executable))
    camp = Campaign(config, [sinc_group(), other], pool, Store(tmp_path / "x.sqlite"), known=[])
    camp.open(resume=False)
    here = sinc_case([float("nan"), 1.0])
    there = dataclasses.replace(here, group="sinc~2")
    camp._note_fatal(here, "torch", ["nan"])
    assert camp._fatal_libraries(there) == set()  # once is not enough
    camp._note_fatal(there, "torch", ["nan"])
    assert camp._fatal_libraries(here) == camp._fatal_libraries(there) == {"torch"}
    assert camp._fatal_libraries(sinc_case([0.5])) == set()
    camp.store.close()
