"""Where a campaign spends its budget: a variance-guided bandit, or uniform as the baseline.

An *arm* is (group, dtype, value class). The variance-guided schedule picks hierarchically:
a group, then a dtype within it, then a value class. Until every group was tried, untried groups
come first. After that a group is drawn with a weight of its recent reward (earlier rewards
decay) times the number of its arms never tried: a discrepancy signature names the dtype and
input class, so the untried arms of a group that keeps finding new signatures are where new
ones are likeliest. Within a group, dtypes and value classes go by UCB1 on their mean reward,
untried ones first, and among those the ones that earned most in other groups. Picks not yet
rewarded count as tried: a campaign keeps batches in flight, and its next picks must not pile
onto the same untried arm.

The reward of a case is its divergence score (how much the libraries disagreed, 0..1) plus a
bonus when it produced a discrepancy signature not seen before in the campaign. Cases that
diverged enter a corpus, and a growing share of the budget mutates them (higher divergence, more
likely picked), so a disagreement is explored around where it was found.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Arm = tuple[str, str, str]
NOVELTY_BONUS = 1.0  # reward per signature a case showed first
DIVERGENCE_WEIGHT = 0.1  # reward per unit of divergence (discounted when seen before)
EXPLORATION = 0.6
CORPUS_MIN_SCORE = 0.05
CORPUS_SIZE = 64
MUTATE_SHARE = 0.1
# A group's value is its recent reward: one that found much early and nothing since gives way.
GROUP_DECAY = 0.8
REWARD_FLOOR = 0.05  # a group that found nothing lately still gets some of the budget
FRESH_FLOOR = 0.5  # ... and so does one whose arms were all tried
# A budget of fewer cases than this many times the groups cannot try every group first and
# still exploit what it finds: the schedule is *thrifty* (see VarianceSchedule._group).
THRIFTY_BELOW = 3
MUTATE_AFTER = 200  # a thrifty schedule mutates once this many cases came back


@dataclass
class _Stat:
    n: float = 0
    total: float = 0.0

    def add(self, reward: float, decay: float = 1.0) -> None:
        """Count a reward; ``decay`` < 1 weighs earlier rewards less (recent productivity)."""
        self.n = self.n * decay + 1
        self.total = self.total * decay + reward


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

    def update(self, pick: Pick, reward: float, case: Any = None, novel: bool = False) -> None:
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

    ``corpus`` holds [weight, arm, serialized case] of divergent cases. A corpus entry loses
    half its weight each time a mutation of it finds nothing new, so the budget moves on from
    a disagreement once its neighbourhood is explored. The share of mutations adapts: it
    grows while mutations find new signatures more often than fresh cases do.
    """

    arms: Sequence[Arm]
    name: str = "variance"
    stats: dict[str, _Stat] = field(default_factory=lambda: defaultdict(_Stat))
    corpus: list[list[Any]] = field(default_factory=list)
    novelty: dict[str, list[int]] = field(
        default_factory=lambda: {"fresh": [0, 0], "mutation": [0, 0]}
    )
    inflight: dict[str, int] = field(default_factory=dict)  # picked, not updated yet
    budget: int | None = None  # cases the campaign expects to run (None: unknown, many)

    def __post_init__(self) -> None:
        self.tree: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
        for g, d, v in self.arms:
            self.tree[g][d].append(v)
        self.groups = sorted(self.tree)
        self.index = {g: i for i, g in enumerate(self.groups)}
        self.thrifty = self.budget is not None and self.budget < THRIFTY_BELOW * len(self.groups)
        self._count_fresh()

    def _count_fresh(self) -> None:
        """Per group, how many of its arms were never picked; and the groups never picked (in
        group order). Group weights are recomputed at the next pick."""
        self.fresh = {
            g: sum(self._tries(f"/{g}/{d}/{v}") == 0 for d, vs in self.tree[g].items() for v in vs)
            for g in self.groups
        }
        self.unpicked = [g for g in self.groups if self._tries(f"/{g}") == 0]
        self._weights: np.ndarray | None = None

    def _weight(self, group: str) -> float:
        """A group's weight once every group was tried: recent reward times fresh arms."""
        stat = self.stats[f"/{group}"]
        return (stat.total / stat.n + REWARD_FLOOR) * (self.fresh[group] + FRESH_FLOOR)

    def _reweigh(self, group: str) -> None:
        if self._weights is not None:
            self._weights[self.index[group]] = self._weight(group)

    def _group(self, rng: np.random.Generator) -> str:
        """Untried groups first; then groups drawn by recent reward times arms never tried.

        A discrepancy signature names the dtype and input class, so an arm not tried yet in a
        group that keeps finding new signatures is where new ones are likeliest.
        """
        if self.thrifty:
            return self._thrifty_group(rng)
        if self.unpicked:  # the groups never picked, in order: what _ucb would pick among
            return self.unpicked[int(rng.integers(0, len(self.unpicked)))]
        if not self.explored:
            return self._ucb(self.groups, "", rng)
        if self._weights is None:
            self._weights = np.array([self._weight(g) for g in self.groups])
        weights = self._weights
        return self.groups[int(rng.choice(len(self.groups), p=weights / weights.sum()))]

    def _thrifty_group(self, rng: np.random.Generator) -> str:
        """Under a small budget: every group weighed at once by its recent reward times its
        arms never tried, a group not back yet counting the mean reward of all cases so far.

        Note:
            Untried groups have all their arms fresh, so they are drawn about as often as a
            uniform schedule draws them until some group earns more than the mean; that group
            then gets the budget its reward and fresh arms say, without waiting for every
            other group to be tried once.
        """
        overall = self.stats[""]
        prior = overall.total / overall.n if overall.n else 0.0
        means = np.array(
            [
                (s.total / s.n) if (s := self.stats.get(f"/{g}")) is not None and s.n else prior
                for g in self.groups
            ]
        )
        fresh = np.array([self.fresh[g] for g in self.groups], dtype=np.float64)
        weights = (means + REWARD_FLOOR) * (fresh + FRESH_FLOOR)
        return self.groups[int(rng.choice(len(self.groups), p=weights / weights.sum()))]

    def _ucb(
        self, keys: list[str], parent: str, rng: np.random.Generator, shared: str | None = None
    ) -> str:
        """UCB1 among ``keys`` under ``parent``; untried keys first.

        Among untried keys, ``shared`` statistics (the same dtype or value class in all groups)
        decide: what was productive elsewhere is tried first here.
        """
        untried = [k for k in keys if self._tries(f"{parent}/{k}") == 0]
        if untried:
            if shared is None:
                return untried[int(rng.integers(0, len(untried)))]
            return self._best(untried, f"*{shared}", rng)
        scored = [k for k in keys if self.stats[f"{parent}/{k}"].n > 0]
        if not scored:  # all picked, none back yet
            return keys[int(rng.integers(0, len(keys)))]
        return self._best(scored, parent, rng)

    def _tries(self, key: str) -> float:
        """Cases picked under ``key``: those counted, and those picked but not back yet."""
        return self.stats[key].n + self.inflight.get(key, 0)

    @property
    def explored(self) -> bool:
        """Whether every group was tried once (the exploration phase is over)."""
        return self.stats["*groups"].n >= len(self.tree)

    def _best(self, keys: list[str], parent: str, rng: np.random.Generator) -> str:
        total = max(1, self.stats[parent].n)
        untried = [k for k in keys if self.stats[f"{parent}/{k}"].n == 0]
        if untried:
            return untried[int(rng.integers(0, len(untried)))]

        def score(k: str) -> float:
            s = self.stats[f"{parent}/{k}"]
            return s.total / s.n + EXPLORATION * math.sqrt(math.log(total) / s.n)

        return max(keys, key=score)

    def mutate_share(self) -> float:
        """0 until every group was tried once; then between 0.03 and MUTATE_SHARE, by how
        novelty-productive mutations have been compared with fresh cases."""
        if not self.explored and not (self.thrifty and self.stats[""].n >= MUTATE_AFTER):
            return 0.0
        fresh_n, fresh_new = self.novelty["fresh"]
        mut_n, mut_new = self.novelty["mutation"]
        if mut_n < 20:
            return MUTATE_SHARE / 2
        fresh_rate = (fresh_new + 1) / (fresh_n + 2)
        mut_rate = (mut_new + 1) / (mut_n + 2)
        return min(MUTATE_SHARE, max(0.03, MUTATE_SHARE * (mut_rate / fresh_rate) ** 2))

    def pick(self, rng: np.random.Generator) -> Pick:
        if self.corpus and rng.random() < self.mutate_share():
            weights = np.array([c[0] for c in self.corpus], dtype=np.float64)
            index = int(rng.choice(len(self.corpus), p=weights / weights.sum()))
            pick = Pick(tuple(self.corpus[index][1]), parent=index)
        else:
            group = self._group(rng)
            dtype = self._ucb(sorted(self.tree[group]), f"/{group}", rng, shared="dtype")
            vclass = self._ucb(
                sorted(self.tree[group][dtype]), f"/{group}/{dtype}", rng, shared="class"
            )
            pick = Pick((group, dtype, vclass))
        if self._tries(_arm_keys(pick.arm)[2]) == 0:
            self.fresh[pick.arm[0]] -= 1
            self._reweigh(pick.arm[0])
        if self._tries(_arm_keys(pick.arm)[0]) == 0:
            self.unpicked.remove(pick.arm[0])
        for key in _arm_keys(pick.arm):  # campaigns pipeline: updates come batches later
            self.inflight[key] = self.inflight.get(key, 0) + 1
        return pick

    def update(self, pick: Pick, reward: float, case: Any = None, novel: bool = False) -> None:
        group, dtype, vclass = pick.arm
        for key in _arm_keys(pick.arm):
            left = self.inflight.get(key, 0) - 1
            if left > 0:
                self.inflight[key] = left
            else:
                self.inflight.pop(key, None)
        if self.stats[f"/{group}"].n == 0:
            self.stats["*groups"].add(0.0)  # counts groups tried
        for key in (
            "",
            f"/{group}",
            f"/{group}/{dtype}",
            f"/{group}/{dtype}/{vclass}",
            "*dtype",
            f"*dtype/{dtype}",
            "*class",
            f"*class/{vclass}",
        ):
            self.stats[key].add(reward, GROUP_DECAY if key == f"/{group}" else 1.0)
        self._reweigh(group)
        counts = self.novelty["mutation" if pick.parent is not None else "fresh"]
        counts[0] += 1
        counts[1] += int(novel)
        if pick.parent is not None and pick.parent < len(self.corpus) and not novel:
            self.corpus[pick.parent][0] *= 0.5
        if case is not None and reward >= CORPUS_MIN_SCORE:
            self.corpus.append([min(reward, 2.0), list(pick.arm), case])
        self.corpus = [c for c in self.corpus if c[0] >= CORPUS_MIN_SCORE]
        if len(self.corpus) > CORPUS_SIZE:
            self.corpus.sort(key=lambda c: -c[0])
            del self.corpus[CORPUS_SIZE:]

    def corpus_case(self, index: int) -> Any:
        return self.corpus[index][2]

    def state(self) -> dict[str, Any]:
        return {
            "stats": {k: [s.n, s.total] for k, s in self.stats.items() if s.n},
            "corpus": self.corpus,
            "novelty": self.novelty,
            "inflight": self.inflight,
        }

    def load(self, state: dict[str, Any]) -> None:
        self.stats = defaultdict(_Stat, {k: _Stat(n, t) for k, (n, t) in state["stats"].items()})
        self.corpus = [list(c) for c in state["corpus"]]
        self.novelty = {k: list(v) for k, v in state["novelty"].items()}
        self.inflight = dict(state.get("inflight", {}))
        self._count_fresh()


def _arm_keys(arm: Arm) -> tuple[str, str, str]:
    group, dtype, vclass = arm
    return (f"/{group}", f"/{group}/{dtype}", f"/{group}/{dtype}/{vclass}")


Schedule = UniformSchedule | VarianceSchedule


def make_schedule(kind: str, arms: Sequence[Arm], budget: int | None = None) -> Schedule:
    """``budget``: the cases the campaign expects to run (a small one makes the variance
    schedule thrifty)."""
    if kind == "uniform":
        return UniformSchedule(arms)
    return VarianceSchedule(arms, budget=budget)
