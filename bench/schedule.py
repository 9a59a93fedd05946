"""Variance-guided schedule against the uniform baseline, on the same budget and seeds.

Both schedules run campaigns over the whole catalog and all seven libraries with the same
budget (cases) and seeds, through the same workers; the benchmark counts the distinct
suspected-bug root causes each found (signatures of one blamed library, callable, kind family,
dtype and trigger that no known difference explains; candidates before reproduction:
reproduction confirms them for both alike), and all signatures beside them, and prints both
and the ratio. Target: variance / uniform >= 1.3 on suspected-bug root causes.

Run: ``python bench/schedule.py [--cases 1500] [--seeds 1,2,3]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from xamt import envs
from xamt.catalog import model
from xamt.fuzz.campaign import Budget, Campaign, CampaignConfig, select_groups
from xamt.libraries import library_names
from xamt.store import Store
from xamt.workers.pool import WorkerPool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1500)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--group", default=None, help="regex on group ids (default: all)")
    parser.add_argument("--schedules", default="variance,uniform")
    opts = parser.parse_args()
    print("$ python bench/schedule.py " + " ".join(sys.argv[1:]))
    libs = tuple(library_names())
    groups = select_groups(model.load(), libs, opts.group)
    seeds = [int(s) for s in opts.seeds.split(",")]
    print(f"{len(groups)} groups, {len(libs)} libraries, {opts.cases} cases per campaign")
    totals = {"variance": 0, "uniform": 0}
    all_sigs = {"variance": 0, "uniform": 0}
    with (
        WorkerPool({lib: envs.interpreter(lib) for lib in libs}) as pool,
        tempfile.TemporaryDirectory() as tmp,
    ):
        pool.start()
        for seed in seeds:
            row = {}
            for kind in opts.schedules.split(","):
                with Store(Path(tmp) / f"{kind}-{seed}.sqlite") as store:
                    config = CampaignConfig(
                        name=kind,
                        seed=seed,
                        budget=Budget(cases=opts.cases),
                        libraries=libs,
                        schedule=kind,
                    )
                    campaign = Campaign(config, groups, pool, store)
                    campaign.open(resume=False)
                    started = time.monotonic()
                    progress = campaign.run()
                    row[kind] = progress.suspected
                    totals[kind] += progress.suspected
                    all_sigs[kind] += progress.signatures
                    print(
                        f"seed {seed} {kind:8}: {progress.suspected:4} suspected-bug root causes, "
                        f"{progress.signatures:4} signatures in all "
                        f"in {progress.cases} cases, {time.monotonic() - started:.0f} s; "
                        f"by kind {dict(sorted(progress.candidates.items()))}"
                    )
            if len(row) == 2:
                print(f"seed {seed}: ratio {row['variance'] / max(1, row['uniform']):.2f}")
    ratio = totals["variance"] / max(1, totals["uniform"])
    print(
        f"total suspected-bug root causes: variance {totals['variance']}, uniform "
        f"{totals['uniform']}, ratio {ratio:.2f} (target >= 1.3); all signatures: "
        f"variance {all_sigs['variance']}, uniform {all_sigs['uniform']}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
