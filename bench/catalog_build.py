"""A full catalog build from scratch: time and counts.

Runs inventory, candidates and every validation call in fresh workers, with an empty
checkpoint folder (inventories and probes are not reused), and prints the wall time and the
catalog's counts next to the targets (<= 10 minutes; >= 800 groups, >= 3,500 matched APIs,
every library in >= 150 groups). The catalog is written to a temporary file, not over the
committed one.

Run: ``python bench/catalog_build.py``.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from xamt import envs
from xamt.catalog.build import build
from xamt.catalog.model import save
from xamt.libraries import library_names
from xamt.workers.pool import WorkerPool


def main() -> int:
    print("$ python bench/catalog_build.py")
    libs = library_names()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.monotonic()
        with WorkerPool({lib: envs.interpreter(lib) for lib in libs}, deadline=20) as pool:
            pool.start()
            catalog = build(pool, cache_dir=Path(tmp) / "cache", progress=lambda m: None)
        seconds = time.monotonic() - started
        save(catalog, Path(tmp) / "catalog.json")
    s = catalog.stats()
    print(f"build time        {seconds:7.0f} s   (target <= 600 s)")
    print(f"groups            {s['groups']:7d}     (target >= 800)")
    print(f"matched APIs      {s['matched_apis']:7d}     (target >= 3500)")
    print(f"distinct callables{s['distinct_callables']:7d}")
    print(f"operations        {s['operations']:7d}")
    for lib, n in s["groups_per_library"].items():
        print(f"  {lib:<11} {n:5d} groups (target >= 150)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
