"""Peak RSS of an orchestrator whose libraries return large results (issue 14 item 4).

Run as a script, in a fresh process, so that nothing the caller did before counts::

    python tests/integration/peak_rss.py --rows 2000 --memory-budget 576M
    python tests/integration/peak_rss.py --rows 2000 --result-budget 0   # never summarize

numpy, torch and jax each return ``ones((rows, rows))`` in float64, three times: all alike,
one of them ``zeros`` instead, one of them float32. Each round is judged by the oracles
(:func:`xamt.oracle.compare`, :func:`xamt.oracle.verdict.judge`) and dropped before the next.
Prints one JSON line: RSS before the calls, the peak after them, what came back and what the
oracles said.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
from typing import Any

import psutil

from xamt import envs, memory
from xamt.oracle import compare
from xamt.oracle.verdict import judge
from xamt.types import Call, Outcome
from xamt.workers.pool import WorkerPool
from xamt.workers.protocol import DType

LIBS = ("numpy", "torch", "jax")
API = {"numpy": "numpy", "torch": "torch", "jax": "jax.numpy"}


def fill(lib: str, rows: int, name: str = "ones", dtype: str = "float64") -> Call:
    return Call(api=f"{API[lib]}.{name}", args=((rows, rows),), kwargs={"dtype": DType(dtype)})


def verdict(outcomes: dict[str, Outcome]) -> dict[str, Any]:
    return {
        "types": {lib: type(o.value).__name__ for lib, o in outcomes.items()},
        "status": {lib: o.status for lib, o in outcomes.items()},
        "compare": [[d.kind, list(d.odd), d.detail] for d in compare(outcomes)],
        "blames": [[b.kind, b.library, b.confidence] for b in judge(outcomes).blames],
    }


def peak() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--memory-budget", default="", help="bytes, or with K/M/G")
    parser.add_argument("--result-budget", type=int, default=-1, help="-1: from the budget")
    opts = parser.parse_args(argv)
    budget = memory.parse_size(opts.memory_budget) if opts.memory_budget else memory.memory_budget()
    result_budget = (
        memory.result_budget(len(LIBS), budget) if opts.result_budget < 0 else opts.result_budget
    )
    rows = opts.rows
    rounds = {
        "alike": {lib: fill(lib, rows) for lib in LIBS},
        "one-differs": {
            **{lib: fill(lib, rows) for lib in LIBS},
            "torch": fill("torch", rows, "zeros"),
        },
        "one-dtype": {
            **{lib: fill(lib, rows) for lib in LIBS},
            "jax": fill("jax", rows, dtype="float32"),
        },
    }
    report: dict[str, Any] = {"memory_budget": budget, "result_budget": result_budget}
    pythons = {lib: envs.interpreter(lib) for lib in LIBS}
    with WorkerPool(pythons, deadline=300, result_budget=result_budget) as pool:
        pool.start()
        gc.collect()
        report["rss_before"] = psutil.Process().memory_info().rss
        report["peak_before"] = peak()
        for name, calls in rounds.items():
            outcomes = pool.fanout(calls)
            report[name] = verdict(outcomes)
            del outcomes
            gc.collect()
        report["peak_after"] = peak()
    # what the rounds added to the peak: a transient peak before them (while the workers
    # started) is not theirs, and the budget check above covers it
    report["growth"] = report["peak_after"] - max(report["rss_before"], report["peak_before"])
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
