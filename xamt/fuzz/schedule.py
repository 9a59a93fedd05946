"""Where a campaign spends its budget: a variance-guided bandit, or uniform as the baseline.

An *arm* is (group, dtype, value class). The variance-guided schedule picks hierarchically:
a group, then a dtype within it, then a value class, each level by UCB1 on the mean reward of
what it picked before (untried options first). The reward of a case is its divergence score
(how much the libraries disagreed, 0..1) plus a bonus when it produced a discrepancy signature
not seen before in the campaign. Cases that diverged enter a corpus, and a growing share of
the budget mutates them (higher divergence, more likely picked), so a disagreement is explored
around where it was found.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Arm = tuple[str, str, str]
NOVELTY_BONUS = 1.0
EXPLORATION = 0.6
CORPUS_MIN_SCORE = 0.05
CORPUS_SIZE = 64
MUTATE_SHARE = 0.5


@dataclass
class _Stat:
    n: int = 0
    total: float = 0.0

    def add(self, reward: float) -> None:
        self.n += 1
        self.total += reward


@dataclass(frozen=True)
class Pick:
    """What to run next: a fresh case for ``arm``, or a mutation of corpus entry ``parent``."""

    arm: Arm
    parent: int | None = None


class UniformSchedule:
    """The baseline: every arm equally likely, fresh cases only."""

    name = "uniform"

    def __init__(self, arms: Sequence[Arm]) -> None:
        self.arms = list(arms)

    def pick(self, rng: np.random.Generator) -> Pick:
        return Pick(self.arms[int(rng.integers(0, len(self.arms)))])

    def update(self, pick: Pick, reward: float, case: Any = None) -> None:
        return None

    def corpus_case(self, index: int) -> Any:
        raise IndexError(index)

    def state(self) -> dict[str, Any]:
        return {}

    def load(self, state: dict[str, Any]) -> None:
        return None


@dataclass
class VarianceSchedule:
    """Hierarchical UCB over group -> dtype -> value class, plus a corpus of divergent cases.

    ``corpus`` holds (score, arm, serialized case) of the most divergent cases so far.
    """

    arms: Sequence[Arm]
    name: str = "variance"
    stats: dict[str, _Stat] = field(default_factory=lambda: defaultdict(_Stat))
    corpus: list[tuple[float, Arm, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.tree: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for g, d, v in self.arms:
            self.tree[g][d].append(v)

    def _ucb(self, keys: list[str], parent: str, rng: np.random.Generator) -> str:
        untried = [k for k in keys if self.stats[f"{parent}/{k}"].n == 0]
        if untried:
            return untried[int(rng.integers(0, len(untried)))]
        total = max(1, self.stats[parent].n)

        def score(k: str) -> float:
            s = self.stats[f"{parent}/{k}"]
            return s.total / s.n + EXPLORATION * math.sqrt(math.log(total) / s.n)

        return max(keys, key=score)

    def pick(self, rng: np.random.Generator) -> Pick:
        if self.corpus and rng.random() < MUTATE_SHARE:
            weights = np.array([c[0] for c in self.corpus], dtype=np.float64)
            index = int(rng.choice(len(self.corpus), p=weights / weights.sum()))
            return Pick(self.corpus[index][1], parent=index)
        group = self._ucb(sorted(self.tree), "", rng)
        dtype = self._ucb(sorted(self.tree[group]), f"/{group}", rng)
        vclass = self._ucb(sorted(self.tree[group][dtype]), f"/{group}/{dtype}", rng)
        return Pick((group, dtype, vclass))

    def update(self, pick: Pick, reward: float, case: Any = None) -> None:
        group, dtype, vclass = pick.arm
        for key in ("", f"/{group}", f"/{group}/{dtype}", f"/{group}/{dtype}/{vclass}"):
            self.stats[key].add(reward)
        if case is not None and reward >= CORPUS_MIN_SCORE:
            self.corpus.append((min(reward, 2.0), pick.arm, case))
            if len(self.corpus) > CORPUS_SIZE:
                self.corpus.sort(key=lambda c: -c[0])
                del self.corpus[CORPUS_SIZE:]

    def corpus_case(self, index: int) -> Any:
        return self.corpus[index][2]

    def state(self) -> dict[str, Any]:
        return {
            "stats": {k: [s.n, s.total] for k, s in self.stats.items() if s.n},
            "corpus": [[score, list(arm), case] for score, arm, case in self.corpus],
        }

    def load(self, state: dict[str, Any]) -> None:
        self.stats = defaultdict(_Stat, {k: _Stat(n, t) for k, (n, t) in state["stats"].items()})
        self.corpus = [(s, (a[0], a[1], a[2]), c) for s, a, c in state["corpus"]]


Schedule = UniformSchedule | VarianceSchedule


def make_schedule(kind: str, arms: Sequence[Arm]) -> Schedule:
    if kind == "uniform":
        return UniformSchedule(arms)
    return VarianceSchedule(arms)
