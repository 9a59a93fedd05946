"""Campaign throughput on ~20 common groups, and orchestration overhead.

A case is one input set with one call per member library (seven libraries) plus the float64
numpy reference, compared by the oracles. Cases are small float32 inputs of the ordinary
class. After a warm-up (jax and tensorflow compile per shape and dtype), the benchmark times
batches of cases end to end and reports:

* cases per second;
* each library's own execution time: the CPU time its worker measured around the call and
  the conversions (wall time would count waiting for a core);
* the critical path: the larger of the slowest library's total and the total of all libraries
  divided by the cores (the workers share the machine);
* orchestration overhead = wall time / critical path - 1.

Batches are pipelined as in a campaign (``--lookahead 1`` turns that off, for comparison).

Run: ``python bench/throughput.py [--cases 3000] [--warmup 2000] [--batch 48] [--lookahead 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter, defaultdict, deque

import numpy as np
import psutil

from xamt import envs
from xamt.catalog import model
from xamt.fuzz.campaign import BATCH, LOOKAHEAD, select_groups
from xamt.inputs.draw import draw_case, pick_apis
from xamt.libraries import library_names
from xamt.replay import Replay, Submitted
from xamt.workers.pool import WorkerPool

COMMON = (
    "abs add subtract multiply divide exp log sqrt sin cos tanh maximum minimum sum mean "
    "square floor ceil negative sign"
).split()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=BATCH)
    parser.add_argument(
        "--lookahead", type=int, default=LOOKAHEAD, help="batches submitted ahead (1: none)"
    )
    parser.add_argument("--seed", type=int, default=0)
    opts = parser.parse_args()
    print("$ python bench/throughput.py " + " ".join(sys.argv[1:]))
    libs = list(library_names())
    groups = [g for g in select_groups(model.load(), libs) if g.id in COMMON]
    by_id = {g.id: g for g in groups}
    rng = np.random.default_rng(opts.seed)
    cores = os.cpu_count() or 1
    print(f"{len(groups)} groups: {' '.join(sorted(by_id))}; {cores} cores")
    print(f"batch {opts.batch}; lookahead {opts.lookahead}")

    def cases(n: int) -> list:
        out = []
        for _ in range(n):
            g = groups[int(rng.integers(0, len(groups)))]
            out.append(draw_case(g, rng, "float32", "ordinary", pick_apis(g, libs, rng)))
        return out

    with WorkerPool({lib: envs.interpreter(lib) for lib in libs}) as pool:
        pool.start()
        replay = Replay(pool, by_id)
        warm = cases(opts.warmup)
        for i in range(0, len(warm), opts.batch):
            replay.run(warm[i : i + opts.batch])
        todo = cases(opts.cases)
        per_lib: dict[str, float] = defaultdict(float)
        statuses: Counter[str] = Counter()
        found = 0
        procs0 = process_cpu(pool)
        started = time.perf_counter()
        cpu0 = time.process_time()
        batches = [todo[i : i + opts.batch] for i in range(0, len(todo), opts.batch)]
        pending: deque[Submitted] = deque()
        for k in range(len(batches)):
            # as a campaign does: later batches queued while this one is compared
            while len(pending) < opts.lookahead and k + len(pending) < len(batches):
                pending.append(replay.submit(batches[k + len(pending)]))
            for result in pending.popleft().collect():
                found += bool(result.signed)
                for lib, o in result.outcomes.items():
                    per_lib[lib] += o.cpu or 0.0
                    statuses[o.status] += 1
                if result.reference is not None:
                    per_lib["numpy"] += result.reference.cpu or 0.0
        wall = time.perf_counter() - started
        procs = {lib: t - procs0[lib] for lib, t in process_cpu(pool).items()}
        cpu = time.process_time() - cpu0
    total = sum(per_lib.values())
    critical = max(max(per_lib.values()), total / cores)
    print(
        f"cases {len(todo)} in {wall:.2f} s: {len(todo) / wall:.0f} cases/s "
        f"(target >= 600); {found} cases with a discrepancy; outcomes {dict(statuses)}"
    )
    print(
        "library execution CPU time (s): " + ", ".join(f"{lib} {per_lib[lib]:.2f}" for lib in libs)
    )
    print(
        f"sum {total:.2f} s; critical path {critical:.2f} s "
        f"(max of slowest library, sum / {cores} cores)"
    )
    print(f"orchestrator CPU {cpu:.2f} s ({cpu / len(todo) * 1e6:.0f} us per case)")
    print(
        "worker process CPU, all threads (s): "
        + ", ".join(f"{lib} {procs[lib]:.2f}" for lib in libs)
        + f"; sum {sum(procs.values()):.2f} s of {wall * cores:.2f} core-seconds"
    )
    print(
        f"orchestration overhead: wall / critical path - 1 = {wall / critical - 1:.0%} "
        f"(target <= 25%)"
    )
    return 0


def process_cpu(pool: WorkerPool) -> dict[str, float]:
    """User + system CPU of each worker process so far (every thread, outside calls too)."""
    out = {}
    for lib, worker in pool.workers.items():
        assert worker.proc is not None
        t = psutil.Process(worker.proc.pid).cpu_times()
        out[lib] = t.user + t.system
    return out


if __name__ == "__main__":
    sys.exit(main())
