"""The replay service's judging of one case (xamt/replay.py): what a case may be judged on,
and the outcomes it reads before the verdict."""

from __future__ import annotations

import numpy as np

from xamt.catalog import model
from xamt.replay import beyond_memory_cap, judge_case
from xamt.types import Case, ErrorInfo, Outcome


def test_a_hang_on_a_size_beyond_the_memory_cap_is_the_request_not_a_bug() -> None:
    """eye(2**31 - 1) asks for 2**62 elements: tensorflow missing its deadline while it
    allocates is no hang to blame, and the others' refusals leave no case; the same hang on
    eye(3) is blamed."""
    group = model.load().group("eye")
    apis = {m.library: m.api for m in group.members if m.library in ("numpy", "tensorflow", "jax")}

    def run(n: int) -> set[tuple[str, str]]:
        case = Case(group=group.id, dtype="-", value_class="boundary", values={"n": n}, apis=apis)
        assert beyond_memory_cap(case, group) == (n > 2**29)
        too_big = ErrorInfo(type="ValueError", message="Maximum allowed dimension exceeded")
        outs = {
            "numpy": Outcome(library="numpy", api=apis["numpy"], status="error", error=too_big),
            "jax": Outcome(library="jax", api=apis["jax"], status="error", error=too_big),
            "tensorflow": Outcome(library="tensorflow", api=apis["tensorflow"], status="hang"),
        }
        if n <= 2**29:
            eye = np.eye(n)
            outs["numpy"] = Outcome(library="numpy", api=apis["numpy"], status="ok", value=eye)
            outs["jax"] = Outcome(library="jax", api=apis["jax"], status="ok", value=eye)
        replayed = judge_case(case, group, outs, None, known=[])
        return {(s.blame.kind, s.blame.library) for s in replayed.decided}

    assert run(2**31 - 1) == set()
    assert run(3) == {("hang", "tensorflow")}


def test_only_a_size_parameter_implies_an_allocation() -> None:
    """around(x, decimals=2**31 - 1) asks for no memory: a hang there is still a hang."""
    group = next(g for g in model.load().groups if "decimals" in g.roles)
    case = Case(
        group=group.id,
        dtype="float32",
        value_class="boundary",
        values={"x": np.ones(2, np.float32), "decimals": 2**31 - 1},
        apis={m.library: m.api for m in group.members},
    )
    assert not beyond_memory_cap(case, group)
