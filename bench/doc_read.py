#!/usr/bin/env python
"""Documentation reading: what triage's reading of docstrings and source costs, and how many
API paths of the catalog name one function (the alias joins).

Prints its figures (it is not a test):

1. the seconds ``pool.docs`` takes for the blamed callables of a campaign's suspected bugs, on
   running workers (start-up counted apart), and how many came back with text and with calls;
2. per library, over every catalog member: the qualified names two or more API paths share,
   without and with closures a factory made (``<locals>``, which triage does not join).

    python bench/doc_read.py [--findings OUT/findings.json]
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter
from pathlib import Path

from xamt import envs
from xamt.catalog import model
from xamt.libraries import library_names
from xamt.workers.pool import WorkerPool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=Path, help="a campaign's findings.json")
    args = parser.parse_args()
    members: dict[str, list[str]] = {}
    for group in model.load().groups:
        for m in group.members:
            members.setdefault(m.library, []).append(m.api)
    pythons = {lib: envs.interpreter(lib) for lib in library_names()}
    with WorkerPool(pythons, deadline=10) as pool:
        started = time.monotonic()
        pool.start()
        print(f"start-up: {time.monotonic() - started:.1f} s")
        if args.findings:
            wanted: dict[str, list[str]] = {}
            for f in json.loads(args.findings.read_text())["findings"]:
                api = f["apis"].get(f["library"])
                if f["classification"] == "suspected-bug" and api:
                    wanted.setdefault(f["library"], []).append(api)
            wanted = {lib: list(dict.fromkeys(apis)) for lib, apis in wanted.items()}
            started = time.monotonic()
            got = pool.docs(wanted)
            took = time.monotonic() - started
            docs = [d for lib in got for d in got[lib].values()]
            print(
                f"suspected bugs' callables: {len(docs)} read in {took:.2f} s; "
                f"with text {sum(bool(d.text) for d in docs)}, with calls "
                f"{sum(bool(d.calls) for d in docs)}"
            )
        got = pool.docs({lib: list(dict.fromkeys(apis)) for lib, apis in members.items()})
    for lib, docs in got.items():
        names = Counter(d.name for d in docs.values() if d.name)
        shared = [n for n, c in names.items() if c > 1]
        one = [n for n in shared if "<locals>" not in n]
        print(
            f"{lib}: {len(docs)} paths; names shared by 2+ paths {len(shared)}, joined {len(one)}"
        )


if __name__ == "__main__":
    main()
