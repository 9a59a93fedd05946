#!/usr/bin/env python
"""Standalone short-repro checks: seconds per script forked (one runner per library) vs fresh.

Prints its figures (it is not a test): the runner's start (the library's import, once), the
seconds per script in a forked child, per script in a fresh interpreter, and how many verdicts
agree. Per library, the batch of tests/support/short_batch.py
(a departing and an agreeing sqrt repro; hand-written scripts that hang, die by a signal,
raise the predicted error or another) is run through :func:`xamt.triage.standalone.run_checks`
forked (no fresh re-check) and fresh, with the hang checks left out of the per-script timing
(they take :data:`xamt.triage.short.HANG_SECONDS` either way); then whether each verdict
agrees, and last one batch of about 40 scripts of mixed libraries, hangs included, forked as
triage runs it (with re-checks).

    python bench/standalone_cost.py [--libs torch,jax] [--batch 40] [--hang-seconds 30]

Run it from /work, not the repository (mindspore writes rank_0/ into the working folder).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from short_batch import LIBRARIES, batch  # noqa: E402

from xamt import envs  # noqa: E402
from xamt.triage import short  # noqa: E402
from xamt.triage.standalone import run_checks  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--libs", default=",".join(LIBRARIES))
    parser.add_argument("--batch", type=int, default=40)
    parser.add_argument("--hang-seconds", type=float, default=short.HANG_SECONDS)
    args = parser.parse_args()
    libs = [lib for lib in args.libs.split(",") if lib]
    pythons: dict[str, str | None] = {lib: envs.interpreter(lib) for lib in libs}
    folder = Path(tempfile.mkdtemp(prefix="xamt-bench-standalone-"))
    print(
        f"{'library':<11} {'n':>2} {'runner start s':>14} {'forked s/script':>16} "
        f"{'fresh s/script':>15} agree"
    )
    for lib in libs:
        expected = [e for e in batch(folder / lib, lib) if e.check.shows != "hang"]
        checks = [e.check for e in expected]
        t0 = time.monotonic()
        forked = run_checks(checks, pythons=pythons, recheck=False)
        t1 = time.monotonic()
        fresh = run_checks(checks, pythons=pythons, forked=False)
        t2 = time.monotonic()
        agree = sum(forked[c.key].verdict == fresh[c.key].verdict for c in checks)
        n = len(checks)
        children = sum(r.forked.seconds for r in forked.values() if r.forked is not None)
        print(
            f"{lib:<11} {n:>2} {t1 - t0 - children:>14.2f} {children / n:>16.2f} "
            f"{(t2 - t1) / n:>15.2f} {agree}/{n}"
        )
    short.HANG_SECONDS = args.hang_seconds
    mixed = []
    for lib in libs:
        mixed += [e.check for e in batch(folder / "mixed" / lib, lib)]
    mixed = (mixed * (1 + args.batch // max(len(mixed), 1)))[: args.batch]
    keys = {}
    for i, c in enumerate(mixed):  # repeats get their own key
        keys[f"{i}-{c.key}"] = c
    from dataclasses import replace

    checks = [replace(c, key=k) for k, c in keys.items()]
    hangs = sum(c.shows == "hang" for c in checks)
    t0 = time.monotonic()
    got = run_checks(checks, pythons=pythons)
    took = time.monotonic() - t0
    rechecked = sum(g.fresh is not None for g in got.values())
    print(
        f"batch: {len(checks)} scripts of {len(libs)} libraries ({hangs} hangs of "
        f"{args.hang_seconds:.0f} s) in {took:.1f} s, {rechecked} re-checked fresh"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
