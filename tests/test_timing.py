"""Time accounting records, and how a run splits its budget."""

from __future__ import annotations

import pytest

from xamt.fuzz.campaign import Budget
from xamt.fuzz.run import DEFAULT_TRIAGE_SECONDS, FUZZ_SHARE, REPRODUCE_UNTIL, TRIAGE_UNTIL, plan
from xamt.timing import LibraryTime, Phases, libraries_from_dict, merge_libraries, table_lines


def test_calls_split_into_warm_and_first() -> None:
    t = LibraryTime()
    t.record_call(0.5, first=True)
    t.record_call(0.01, first=False)
    t.record_call(0.02, first=False)
    assert (t.calls, t.first_calls) == (3, 1)
    assert t.first_seconds == 0.5 and t.warm_seconds == pytest.approx(0.03)


def test_library_times_add_up_across_resumes_and_survive_json() -> None:
    a = LibraryTime(calls=3, warm_seconds=1.0, hangs=1, hang_seconds=2.0, restarts=1)
    b = LibraryTime(calls=2, warm_seconds=0.5, restarts=2, restart_seconds=1.5)
    both = merge_libraries({"jax": a}, {"jax": b, "torch": b})
    assert both["jax"].calls == 5 and both["jax"].restarts == 3
    assert both["jax"].lost_seconds == pytest.approx(3.5)
    assert both["torch"] == b
    back = libraries_from_dict({lib: t.as_dict() for lib, t in both.items()})
    assert back == both


def test_malformed_saved_times_are_ignored_not_trusted() -> None:
    back = libraries_from_dict({"jax": {"calls": "many", "hangs": True, "warm_seconds": 2}})
    assert back["jax"] == LibraryTime(warm_seconds=2.0)
    assert libraries_from_dict({"jax": [1, 2]}) == {}
    assert Phases.from_dict({"fuzz": 3, "draw": "x"}).seconds == {"fuzz": 3.0}


def test_phases_accumulate_in_order() -> None:
    p = Phases()
    p.add("fuzz", 2.0)
    p.add("reproduce", 1.0)
    p.add("fuzz", 1.0)
    with p.timed("write"):
        pass
    assert list(p.seconds) == ["fuzz", "reproduce", "write"] and p.seconds["fuzz"] == 3.0
    assert p.merged(Phases({"fuzz": 1.0})).seconds["fuzz"] == 4.0


def test_table_lines_are_aligned_and_show_each_library() -> None:
    lines = table_lines(
        {"jax": LibraryTime(calls=10, first_calls=9, first_seconds=4.0), "numpy": LibraryTime()},
        wall=8.0,
    )
    assert len(lines) == 3 and len({len(line) for line in lines}) == 1
    assert lines[1].startswith("jax") and lines[1].endswith("50%")
    assert "4.0 (9)" in lines[1]


def test_a_time_budget_bounds_every_phase() -> None:
    steps = plan(Budget(seconds=100.0), started=1000.0, triage_budget=None)
    assert steps.fuzz_until == pytest.approx(1000.0 + FUZZ_SHARE * 100)
    assert steps.reproduce_until == pytest.approx(1000.0 + REPRODUCE_UNTIL * 100)
    assert steps.triage_until == pytest.approx(1000.0 + TRIAGE_UNTIL * 100)
    assert steps.fuzz_until < steps.reproduce_until < steps.triage_until < 1000.0 + 100
    assert "100 s for the whole run" in steps.describe(Budget(seconds=100.0))


def test_a_case_budget_is_fuzzed_and_reproduced_whole() -> None:
    steps = plan(Budget(cases=500), started=0.0, triage_budget=None)
    assert steps.fuzz == Budget(cases=500)
    assert steps.fuzz_until is None and steps.reproduce_until is None
    assert steps.triage_seconds == DEFAULT_TRIAGE_SECONDS and steps.triage_until is None
    assert plan(Budget(cases=5), 0.0, triage_budget=7.0).triage_seconds == 7.0
