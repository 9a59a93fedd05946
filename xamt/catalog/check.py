"""Re-validate committed groups against the installed library versions and report drift."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.build import canonical_inputs, plan_of, role_values
from xamt.catalog.model import Catalog, Group
from xamt.catalog.results import agree, to_plain
from xamt.types import Call
from xamt.workers.pool import WorkerPool


@dataclass(frozen=True, kw_only=True)
class Drift:
    """A group whose members no longer all agree (or no longer run) on the canonical inputs."""

    group: str
    failing: dict[str, str] = field(default_factory=dict)  # api -> status
    disagreeing: tuple[str, ...] = ()


def sample_groups(catalog: Catalog, sample: int | None, seed: int) -> list[Group]:
    groups = list(catalog.groups)
    if sample is not None and sample < len(groups):
        groups = sorted(random.Random(seed).sample(groups, sample), key=lambda g: g.id)
    return groups


def canonical_values(g: Group) -> list[dict[str, object]]:
    """The role values a group was validated on."""
    if dlcore.is_dl(g.shapes):
        return dlcore.canonical_values(g)
    plan = plan_of(g.roles)
    return [role_values(plan, inp) for inp in canonical_inputs(plan, g.dtype, g.shapes)]


def check(pool: WorkerPool, groups: Sequence[Group]) -> list[Drift]:
    """Run every member of every group on its canonical inputs; return the groups that drift."""
    libs = set(pool.workers)
    calls: dict[str, list[Call]] = {lib: [] for lib in libs}
    index: list[tuple[Group, list[tuple[str, int, int]]]] = []
    for g in groups:
        slots = []
        for m in g.members:
            if m.library not in libs:
                continue
            for i, values in enumerate(canonical_values(g)):
                slots.append((m.library, len(calls[m.library]), i))
                calls[m.library].append(bind(m, values))
        index.append((g, slots))
    outcomes = pool.run({lib: c for lib, c in calls.items() if c})
    drifts = []
    for g, slots in index:
        members = [m for m in g.members if m.library in libs]
        n = len(slots) // max(1, len(members))
        failing: dict[str, str] = {}
        results: list[list[object]] = []
        for k, m in enumerate(members):
            outs = [outcomes[lib][pos] for lib, pos, _ in slots[k * n : (k + 1) * n]]
            bad = [o.status for o in outs if o.status != "ok"]
            if bad:
                failing[m.api] = bad[0]
            results.append([to_plain(o.value) if o.ok else {} for o in outs])
        ok = [k for k, m in enumerate(members) if m.api not in failing]
        # the member agreeing with the most others is the reference for reporting
        agreement = {
            k: sum(
                all(agree(a, b) for a, b in zip(results[k], results[j], strict=True)) for j in ok
            )
            for k in ok
        }
        ref = max(ok, key=lambda k: (agreement[k], -k)) if ok else None
        disagreeing = tuple(
            members[k].api
            for k in ok
            if ref is not None
            and not all(agree(a, b) for a, b in zip(results[k], results[ref], strict=True))
        )
        if failing or disagreeing:
            drifts.append(Drift(group=g.id, failing=failing, disagreeing=disagreeing))
    return drifts
