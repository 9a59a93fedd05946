"""Fuzz campaigns: schedules, the campaign loop, reproduction."""

from enum import StrEnum


class Schedule(StrEnum):
    """How a campaign picks groups: variance-guided, or uniformly (the baseline)."""

    variance = "variance"
    uniform = "uniform"
