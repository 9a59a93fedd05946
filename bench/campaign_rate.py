"""The rate of a real campaign, where its time goes, and the floor it could reach.

For each seed, a campaign over the chosen groups runs for the given time exactly as
``xamt fuzz`` runs one (adaptive deadlines, standby workers, each library at its own pace;
``--no-pace`` turns all three off, for comparison; ``--participation`` sets the share of its
groups' cases a library that falls behind still takes, 0.8 as in ``xamt fuzz``), and the
bench prints:

* cases per second, and each library's calls per second;
* where each library's time went (warm calls, first calls that compile, hangs, restarts) and
  the share of the wall time lost to hangs and restarts (worst library);
* the orchestrator's own time (drawing, waiting, judging, committing);
* coverage, so that speed does not come from testing less: distinct (group, dtype, input
  class) arms, and the dtypes drawn.

Then the *floor*: cases drawn the same way, their calls made in-process in each library's own
environment (``bench/floor_runner.py``), one library at a time: the cases per second a single
core reaches with no process boundary and no orchestrator, and the campaign's ratio to it.

Run: ``python bench/campaign_rate.py [--minutes 10] [--seeds 1,2] [--groups all|common]
[--libs numpy,jax] [--floor-cases 600] [--no-pace] [--participation 0.8]``.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from xamt import envs
from xamt.catalog import model
from xamt.catalog.bind import bind
from xamt.fuzz import PARTICIPATION
from xamt.fuzz.campaign import Budget, Campaign, CampaignConfig, select_groups
from xamt.fuzz.schedule import make_schedule
from xamt.inputs.draw import draw_case, fuzz_dtypes, pick_apis
from xamt.libraries import library_names
from xamt.replay import needs_reference, upcast
from xamt.store import Store
from xamt.timing import table_lines
from xamt.types import VALUE_CLASSES
from xamt.workers import protocol
from xamt.workers.pool import JAX_CACHE_ENV, WORKER_ENV, WorkerPool, jax_cache_dir

# The twenty operations of the public artifact's own example.
COMMON = (
    "abs exp log sqrt tanh sigmoid softmax relu sum mean max cumsum matmul clip divide "
    "floor_divide round erf logsumexp sort"
).split()
FLOOR_TIMEOUT = 900.0  # the runner stops a call after 10 s itself
RUNNER = Path(__file__).with_name("floor_runner.py")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--seeds", default="1,2")
    parser.add_argument("--groups", choices=("all", "common"), default="all")
    parser.add_argument("--libs", default=",".join(library_names()))
    parser.add_argument("--floor-cases", type=int, default=600)
    parser.add_argument("--no-pace", action="store_true", help="one deadline, no standby")
    parser.add_argument("--participation", type=float, default=PARTICIPATION)
    opts = parser.parse_args()
    print("$ python bench/campaign_rate.py " + " ".join(sys.argv[1:]), flush=True)
    libs = [x for x in opts.libs.split(",") if x]
    groups = select_groups(model.load(), libs)
    if opts.groups == "common":
        groups = [g for g in groups if g.id in COMMON]
    pythons = {lib: envs.interpreter(lib) for lib in libs}
    print(f"{len(groups)} groups, libraries {', '.join(libs)}", flush=True)
    for seed in (int(s) for s in opts.seeds.split(",")):
        campaign_once(
            groups,
            libs,
            pythons,
            seed,
            opts.minutes * 60,
            pace=not opts.no_pace,
            participation=opts.participation,
        )
    if opts.floor_cases:
        floor(groups, libs, pythons, opts.floor_cases)
    return 0


def campaign_once(
    groups: list,
    libs: list[str],
    pythons: dict[str, str],
    seed: int,
    seconds: float,
    pace: bool,
    participation: float = PARTICIPATION,
) -> float:
    with tempfile.TemporaryDirectory(prefix="xamt-rate-") as tmp:
        db = Path(tmp) / "xamt.sqlite"
        with Store(db) as store, WorkerPool(pythons, adaptive=pace, standby=pace) as pool:
            pool.start()
            config = CampaignConfig(
                name="rate",
                seed=seed,
                budget=Budget(seconds=seconds),
                libraries=tuple(libs),
                pace=pace,
                participation=participation,
            )
            campaign = Campaign(config, groups, pool, store, known=[])
            campaign.open(False)
            started = time.monotonic()
            progress = campaign.run()
            wall = time.monotonic() - started
            times = campaign.library_times()
            phases = campaign.state.phases.as_dict()
        con = sqlite3.connect(db)
        arms = con.execute(
            "SELECT COUNT(*) FROM (SELECT DISTINCT grp, dtype, value_class FROM cases)"
        ).fetchone()[0]
        dtypes = sorted(d for (d,) in con.execute("SELECT DISTINCT dtype FROM cases"))
        con.close()
    rate = progress.cases / wall
    lost = max((t.lost_seconds / wall for t in times.values()), default=0.0)
    print(f"\nseed {seed}: {progress.cases} cases in {wall:.0f} s = {rate:.1f} cases/s")
    print(
        "  calls/s by library: "
        + ", ".join(f"{lib} {t.calls / wall:.0f}" for lib, t in sorted(times.items()))
    )
    print(f"  lost to hangs and restarts: {lost:.1%} of the wall time (worst library)")
    print("  orchestrator: " + ", ".join(f"{k} {v:.1f} s" for k, v in phases.items()))
    print(
        "  participation (cases taken part in, of its groups' cases): "
        + ", ".join(
            f"{lib} {took / n:.0%}" for lib, (n, took) in campaign.state.participation.items() if n
        )
    )
    print(f"  left out while saturated: {dict(campaign.state.paced)}")
    print(f"  not called again after dying twice: {dict(campaign.state.skipped)}")
    print(f"  coverage: {arms} (group, dtype, input class) arms; {len(dtypes)} dtypes: {dtypes}")
    for line in table_lines(times, wall):
        print("  " + line)
    sys.stdout.flush()
    return rate


def floor(groups: list, libs: list[str], pythons: dict[str, str], n: int) -> None:
    """Cases drawn as a campaign draws them, made in-process one library at a time."""
    by_id = {g.id: g for g in groups}
    members = {(g.id, m.api): m for g in groups for m in g.members}
    arms = [(g.id, d, v) for g in groups for d in fuzz_dtypes(g) for v in VALUE_CLASSES]
    schedule = make_schedule("uniform", arms)
    rng = np.random.default_rng(0)
    frames: dict[str, list[bytes]] = defaultdict(list)
    for _ in range(n):
        group_id, dtype, value_class = schedule.pick(rng).arm
        group = by_id[group_id]
        apis = pick_apis(group, libs, rng, dtype)
        seed = int(rng.integers(0, 2**31))
        case = draw_case(group, rng, dtype, value_class, apis, seed)
        for lib, api in case.apis.items():
            call = bind(members[(group_id, api)], case.values, seed=seed)
            frames[lib].append(_frame(call))
        if "numpy" in case.apis and needs_reference(case, group):
            call = bind(members[(group_id, case.apis["numpy"])], upcast(case.values))
            frames["numpy"].append(_frame(call))
    total = 0.0
    print(f"\nfloor: {n} cases drawn as a campaign draws them, calls made in-process")
    for lib in libs:
        seconds, made, skipped = _run_floor(lib, pythons[lib], frames[lib])
        total += seconds
        note = f" ({skipped} calls that kill or stall the process left out)" if skipped else ""
        print(f"  {lib}: {made} calls in {seconds:.2f} s{note}", flush=True)
    print(f"  floor: {n / total:.1f} cases/s, one library after another on one core")


def _frame(call: object) -> bytes:
    c = call  # a Call: api, args, kwargs, seed
    return protocol.encode(
        {"op": "call", "api": c.api, "seed": c.seed},  # type: ignore[attr-defined]
        {"args": list(c.args), "kwargs": dict(c.kwargs)},  # type: ignore[attr-defined]
    )


def _run_floor(lib: str, python: str, frames: list[bytes]) -> tuple[float, int, int]:
    """Seconds and calls made; a call that kills or stalls the runner is left out, and the
    runner made again (the library's import is not timed)."""
    skip: list[int] = []
    with tempfile.TemporaryDirectory(prefix="xamt-floor-") as tmp:
        calls = Path(tmp) / "calls.bin"
        calls.write_bytes(b"".join(frames))
        at = Path(tmp) / "at"
        while True:
            cmd = [python, "-s", str(RUNNER), "--lib", lib, "--calls", str(calls)]
            cmd += ["--at", str(at), "--skip", ",".join(map(str, skip))]
            env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
            env.update(WORKER_ENV)  # as the worker runs: one thread, jax's compilation cache
            env.update(JAX_CACHE_ENV, JAX_COMPILATION_CACHE_DIR=str(jax_cache_dir()))
            try:
                out = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=FLOOR_TIMEOUT, check=False, env=env
                )
                if out.returncode == 0:
                    seconds, made = out.stdout.split()[-2:]
                    return float(seconds), int(made), len(skip)
            except subprocess.TimeoutExpired:
                pass
            index = int(at.read_text().strip())
            if index in skip:
                raise SystemExit(f"the {lib} floor runner keeps failing at call {index}")
            skip.append(index)


if __name__ == "__main__":
    sys.exit(main())
