"""The catalog's runs over the installed libraries, as plain functions: building it from the
environments (``xamt catalog build``), re-validating it (``xamt catalog check``) and checking
its members' gradients (``xamt catalog gradients``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from xamt import envs
from xamt.catalog.build import build
from xamt.catalog.check import Drift, check, sample_groups
from xamt.catalog.gradients import GroupGradients, candidates, check_gradients
from xamt.catalog.model import Catalog
from xamt.errors import UsageError
from xamt.libraries import library_names
from xamt.paths import xamt_home
from xamt.workers.pool import WorkerPool

# Seconds one call may take while building or checking (a probe that hangs is not a member).
CATALOG_DEADLINE = 20.0


def _ignore(_line: str) -> None:
    pass


def op_filter(text: str | None) -> Callable[[str], bool] | None:
    """The ``--only`` regex as a filter on operation names; None for no filter."""
    if not text:
        return None
    try:
        pattern = re.compile(text)
    except re.error as exc:
        raise UsageError(f"--only {text!r} is not a regular expression: {exc}") from None
    return lambda op: bool(pattern.search(op))


def build_from_envs(
    libraries: Sequence[str],
    *,
    variant: str = "cpu",
    only: str | None = None,
    fresh: bool = False,
    progress: Callable[[str], None] = _ignore,
) -> Catalog:
    """Build a catalog from the installed environments of ``libraries`` (at least two).

    Probe results are checkpointed under ``XAMT_HOME/catalog`` and reused unless ``fresh``.
    """
    if len(libraries) < 2:
        raise UsageError("a catalog needs at least two libraries")
    ops = op_filter(only)
    cache = xamt_home() / "catalog"
    if fresh and cache.exists():
        for stale in cache.glob("probes-*.jsonl"):
            stale.unlink()
    pythons = {lib: envs.interpreter(lib, variant) for lib in libraries}
    with WorkerPool(pythons, deadline=CATALOG_DEADLINE) as pool:
        progress(f"starting {len(libraries)} workers")
        pool.start()
        return build(pool, cache_dir=cache, ops=ops, progress=lambda line: progress(f"  {line}"))


@dataclass(frozen=True, kw_only=True)
class CheckReport:
    """What ``xamt catalog check`` found: groups checked, those that drifted, and the libraries
    whose installed version differs from the catalog's (library -> (catalog, installed))."""

    checked: int
    drifts: tuple[Drift, ...]
    version_changes: dict[str, tuple[str | None, str]]


def check_installed(
    catalog: Catalog, *, sample: int | None = None, seed: int = 0, variant: str = "cpu"
) -> CheckReport:
    """Re-validate ``catalog``'s groups (all, or a seeded sample) on the installed versions."""
    if sample is not None and sample <= 0:
        raise UsageError("--sample must be positive")
    groups = sample_groups(catalog, sample, seed)
    libs = sorted({lib for g in groups for lib in g.libraries}, key=library_names().index)
    pythons = {lib: envs.interpreter(lib, variant) for lib in libs}
    with WorkerPool(pythons, deadline=CATALOG_DEADLINE) as pool:
        versions = {lib: h.version for lib, h in pool.start().items()}
        drifts = check(pool, groups)
    changed = {
        lib: (catalog.libraries.get(lib), v)
        for lib, v in versions.items()
        if catalog.libraries.get(lib) != v
    }
    return CheckReport(checked=len(groups), drifts=tuple(drifts), version_changes=changed)


def check_gradients_installed(
    catalog: Catalog,
    *,
    variant: str = "cpu",
    only: str | None = None,
    progress: Callable[[str], None] = _ignore,
) -> dict[str, GroupGradients]:
    """Check every differentiable group's member gradients on the installed versions
    (:func:`xamt.catalog.gradients.check_gradients`), ``only`` a regex on operation names."""
    keep = op_filter(only)
    groups = [g for g in catalog.groups if keep is None or keep(g.op)]
    libs = sorted(
        {lib for g in candidates(groups) for lib in g.libraries}, key=library_names().index
    )
    if not libs:
        return {}
    from xamt.replay import Replay  # the judge sits above the catalog

    pythons = {lib: envs.interpreter(lib, variant) for lib in libs}
    with WorkerPool(pythons, deadline=CATALOG_DEADLINE) as pool:
        pool.start()
        replay = Replay(pool, groups, all_gradients=True)
        return check_gradients(replay.run, groups, progress)
