"""The variance-guided schedule: exploration, exploitation, pipelined picks, saved state."""

from __future__ import annotations

import numpy as np

from xamt.fuzz.schedule import Pick, UniformSchedule, VarianceSchedule

CLASSES = ("ordinary", "boundary", "non-finite")


def arms(
    groups: int, dtypes: tuple[str, ...] = ("float32", "float16")
) -> list[tuple[str, str, str]]:
    return [(f"g{i:02d}", d, v) for i in range(groups) for d in dtypes for v in CLASSES]


def test_pipelined_picks_do_not_repeat_an_untried_group() -> None:
    """Picks made before earlier ones are counted (a campaign keeps batches in flight) still
    spread over the groups nobody picked yet."""
    schedule = VarianceSchedule(arms(40))
    rng = np.random.default_rng(0)
    picks = [schedule.pick(rng) for _ in range(40)]
    assert len({p.arm[0] for p in picks}) == 40
    for p in picks:
        schedule.update(p, 0.0)
    assert schedule.inflight == {}


def test_productive_group_gets_the_budget() -> None:
    schedule = VarianceSchedule(arms(10))
    rng = np.random.default_rng(1)
    for _ in range(10):  # exploration: each group once
        p = schedule.pick(rng)
        schedule.update(p, 1.0 if p.arm[0] == "g03" else 0.0, novel=p.arm[0] == "g03")
    later = []
    for _ in range(60):
        p = schedule.pick(rng)
        if p.parent is None:
            later.append(p.arm[0])
        schedule.update(p, 1.0 if p.arm[0] == "g03" else 0.0)
    # the productive group's untried arms come first, and it stays the most picked group
    assert len({a for a in schedule.stats if a.startswith("/g03/") and a.count("/") == 3}) == 6
    assert later[:10].count("g03") >= 5
    assert later.count("g03") > max(later.count(g) for g in set(later) - {"g03"})


def test_untried_dtype_follows_what_was_productive_elsewhere() -> None:
    schedule = VarianceSchedule(arms(2))
    schedule.update(Pick(("g00", "float32", "ordinary")), 0.0)
    schedule.update(Pick(("g00", "float16", "ordinary")), 1.0)
    rng = np.random.default_rng(2)
    p = schedule.pick(rng)
    assert p.arm[:2] == ("g01", "float16")


def test_saved_state_continues_the_same_picks() -> None:
    """A campaign commits the schedule with picks still in flight; loading that state and
    the rng gives the picks the uninterrupted schedule makes."""
    a = VarianceSchedule(arms(8))
    rng = np.random.default_rng(3)
    pending = [a.pick(rng) for _ in range(6)]
    for p in pending[:3]:
        a.update(p, 0.5, case={"x": 1}, novel=True)
    b = VarianceSchedule(arms(8))
    b.load(a.state())
    rng_b = np.random.default_rng()
    rng_b.bit_generator.state = rng.bit_generator.state
    assert b.inflight == a.inflight and sum(b.inflight.values()) == 3 * 3
    assert [a.pick(rng) for _ in range(10)] == [b.pick(rng_b) for _ in range(10)]


def test_uniform_baseline_ignores_feedback() -> None:
    schedule = UniformSchedule(arms(5))
    rng = np.random.default_rng(4)
    picks = [schedule.pick(rng) for _ in range(500)]
    counts = {g: sum(p.arm[0] == g for p in picks) for g in {p.arm[0] for p in picks}}
    assert len(counts) == 5 and min(counts.values()) > 60


def test_a_small_budget_exploits_before_every_group_was_tried() -> None:
    """With fewer cases than three per group, a group that paid gets the budget at once,
    while the groups not tried yet keep being drawn (about as a uniform schedule would)."""
    schedule = VarianceSchedule(arms(40), budget=100)
    assert schedule.thrifty and not VarianceSchedule(arms(40)).thrifty
    schedule.update(Pick(("g03", "float32", "ordinary")), 1.0, novel=True)
    for g in range(20, 40):
        schedule.update(Pick((f"g{g:02d}", "float32", "ordinary")), 0.0)
    rng = np.random.default_rng(5)
    picks = []
    for _ in range(100):
        p = schedule.pick(rng)
        picks.append(p.arm[0])
        schedule.update(p, 1.0 if p.arm[0] == "g03" else 0.0, novel=p.arm[0] == "g03")
    assert picks.count("g03") >= 10  # a uniform schedule: 1 in 40
    untried = {f"g{g:02d}" for g in range(20) if g != 3}
    assert len(untried & set(picks)) >= 10  # the untried groups are still explored
