"""The shape vocabulary against fresh shapes: suspected root causes per minute, rate and each
library's participation, in real campaigns of the same seeds and time.

For each seed, the same campaign (all libraries, every group or the public artifact's twenty,
the default oracles and known differences, each library at its own pace as `xamt fuzz` runs
one) runs twice for the given time: with the shape vocabulary (xamt.inputs.draw, a quarter of
the cases fresh) and with every case fresh (VOCABULARY_FRESH = 1, the draws before the
vocabulary). It prints, per run: cases per second, the distinct suspected-bug signatures the
campaign loop met (the root-cause identity: library, callable, kind family, dtype, trigger)
and their rate per minute, the first (tracing, compiling) calls per library, and each
library's participation (the cases it took part in, of its groups' cases).

Run: ``python bench/vocabulary.py [--minutes 4] [--seeds 11,12] [--groups all|common]
[--fresh 0.25,1]``; ``--fresh`` lists the fresh shares to run, the shipped one and 1 (every
case fresh) by default.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from xamt import envs
from xamt.catalog import model
from xamt.fuzz.campaign import Budget, Campaign, CampaignConfig, select_groups
from xamt.fuzz.run import GRADIENT_SHARE
from xamt.inputs import draw
from xamt.libraries import library_names
from xamt.store import Store
from xamt.workers.pool import JAX_CACHE_ENV, WorkerPool

COMMON = (
    "abs exp log sqrt tanh sigmoid softmax relu sum mean max cumsum matmul clip divide "
    "floor_divide round erf logsumexp sort"
).split()


def run_once(groups: list, libs: list[str], seed: int, seconds: float, fresh: float) -> None:
    draw.VOCABULARY_FRESH = fresh
    pythons = {lib: envs.interpreter(lib) for lib in libs}
    with tempfile.TemporaryDirectory(prefix="xamt-vocabulary-") as tmp:
        # each run starts with an empty jax compilation cache (a machine that never ran
        # xamt): the vocabulary's gain across campaigns, where the cache is warm, comes on top
        os.environ.update(JAX_CACHE_ENV, JAX_COMPILATION_CACHE_DIR=str(Path(tmp) / "jax"))
        with (
            Store(Path(tmp) / "xamt.sqlite") as store,
            WorkerPool(pythons, adaptive=True, standby=True) as pool,
        ):
            pool.start()
            config = CampaignConfig(
                name="vocabulary",
                seed=seed,
                budget=Budget(seconds=seconds),
                libraries=tuple(libs),
                gradients=GRADIENT_SHARE,
            )
            campaign = Campaign(config, groups, pool, store)
            campaign.open(False)
            started = time.monotonic()
            progress = campaign.run()
            wall = time.monotonic() - started
            times = campaign.library_times()
    label = f"fresh share {fresh:g}"
    minutes = wall / 60
    print(
        f"seed {seed} {label}: {progress.cases} cases, {progress.cases / wall:.0f}/s; "
        f"{progress.suspected} suspected signatures = {progress.suspected / minutes:.1f}/min"
    )
    print(
        "    first calls: "
        + ", ".join(f"{lib} {times[lib].first_calls}/{times[lib].calls}" for lib in libs)
    )
    print(
        "    participation: "
        + ", ".join(
            f"{lib} {took / n:.0%}"
            for lib, (n, took) in sorted(
                campaign.state.participation.items(), key=lambda kv: libs.index(kv[0])
            )
            if n
        ),
        flush=True,
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=4.0)
    parser.add_argument("--seeds", default="11,12")
    parser.add_argument("--groups", choices=("all", "common"), default="all")
    parser.add_argument("--fresh", default=f"{draw.VOCABULARY_FRESH:g},1")
    opts = parser.parse_args()
    print("$ python bench/vocabulary.py " + " ".join(sys.argv[1:]), flush=True)
    libs = list(library_names())
    groups = select_groups(model.load(), libs)
    if opts.groups == "common":
        groups = [g for g in groups if g.id in COMMON]
    print(
        f"{len(groups)} groups; vocabulary size {draw.VOCABULARY_SIZE}, fresh share "
        f"{draw.VOCABULARY_FRESH} shipped; fresh shares {opts.fresh}; {opts.minutes:g} min each",
        flush=True,
    )
    shares = [float(x) for x in opts.fresh.split(",") if x]  # (run_once sets the module's)
    for seed in (int(s) for s in opts.seeds.split(",")):
        for fresh in shares:
            run_once(groups, libs, seed, opts.minutes * 60, fresh)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
