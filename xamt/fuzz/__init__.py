"""Fuzz campaigns: schedules, the campaign loop, reproduction."""

from enum import StrEnum


class Schedule(StrEnum):
    """How a campaign picks groups: variance-guided, or uniformly (the baseline)."""

    variance = "variance"
    uniform = "uniform"


# Under a time budget, the share of its groups' cases a library that falls behind the others
# still takes part in (jax compiling each new signature): one that leaving out of a case it
# has not run warm would put below it takes the case, and the campaign waits for it, so that
# its rate counts every library. 0 leaves it out of every such case.
PARTICIPATION = 0.8
