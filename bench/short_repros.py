"""The short repros of a campaign, as a maintainer would meet them.

From a campaign's output folder (``xamt fuzz --out DIR``): a random sample of its suspected
bugs (``random.Random(SAMPLE_SEED).sample`` of the suspected bugs sorted by signature, the
draw of ``bench/audit_sample.py``), each with its short repro's non-blank line count and
input element count, run standalone in a fresh interpreter of the blamed library's
environment (the script alone, in an empty folder), and whether the run shows the departure
(an AssertionError for a compared kind, the predicted error, a signal death for a crash, still
running after 30 s for a hang). Then, over every suspected bug of the campaign, the input
elements before and after minimization (median and 90th percentile), and how many are held
back from filing and why.

Run: ``python bench/short_repros.py DIR SAMPLE_SEED [--count 20]``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from xamt import envs
from xamt.triage.short import run_standalone


def elements(case: dict[str, Any] | None) -> int:
    """Array elements of a serialized case (its ``$array`` values, sequences included)."""

    def count(value: Any) -> int:
        if isinstance(value, dict) and "$array" in value:
            n = 1
            for d in value.get("shape", []):
                n *= int(d)
            return n
        if isinstance(value, dict):
            return sum(count(v) for v in value.values())
        if isinstance(value, list):
            return sum(count(v) for v in value)
        return 0

    return count((case or {}).get("values", {}))


def shows_of(text: str, kind: str) -> str:
    if kind == "crash":
        return "signal"
    if kind == "hang":
        return "hang"
    if kind == "status" and "raise AssertionError" not in text:
        return "error"
    return "assertion"


def percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else 0.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("seed", type=int)
    parser.add_argument("--count", type=int, default=20)
    opts = parser.parse_args()
    print(f"$ python bench/short_repros.py {opts.folder} {opts.seed} --count {opts.count}")
    doc = json.loads((opts.folder / "findings.json").read_text())
    suspected = sorted(
        (f for f in doc["findings"] if f["classification"] == "suspected-bug"),
        key=lambda f: f["signature"],
    )
    drawn = random.Random(opts.seed).sample(suspected, min(opts.count, len(suspected)))
    print("| # | key | lines | elements | standalone | shows |")
    print("|---:|---|---:|---:|---|---|")
    shown = 0
    for i, f in enumerate(drawn):
        path = opts.folder / f["short_repro"] if f.get("short_repro") else None
        if path is None and f["kind"] == "gradient":
            path = opts.folder / f["repro"].get(f["library"], "")
        if path is None or not path.is_file():
            print(f"| {i} | {f['key']} | - | {elements(f['case'])} | no short repro | no |")
            continue
        text = path.read_text()
        lines = sum(1 for line in text.splitlines() if line.strip())
        python = envs.interpreter(f["library"])
        error = ""
        if f["kind"] == "status":
            error = f.get("error", "").split(":", 1)[0].strip()
        verdict = run_standalone(path, python=python, shows=shows_of(text, f["kind"]), error=error)
        shown += not verdict
        print(
            f"| {i} | {f['key']} | {lines} | {elements(f['case'])} | "
            f"{'shows it' if not verdict else verdict} | {'yes' if not verdict else 'no'} |",
            flush=True,
        )
    print(f"\n{shown} of {len(drawn)} short repros show the departure standalone")
    before = [elements(f.get("original_case") or f["case"]) for f in suspected]
    after = [elements(f["case"]) for f in suspected]
    print(
        f"minimization over the {len(suspected)} suspected bugs: input elements median "
        f"{statistics.median(before):g} -> {statistics.median(after):g}, 90th percentile "
        f"{percentile(before, 0.9):g} -> {percentile(after, 0.9):g}"
    )
    held = Counter(f["held_back"].split(": ", 1)[-1][:80] for f in suspected if f.get("held_back"))
    print(f"held back from filing: {sum(held.values())} of {len(suspected)}")
    for why, n in held.most_common(8):
        print(f"  {n} x {why}")
    without = sum(1 for f in suspected if not f.get("short_repro") and f["kind"] != "gradient")
    print(f"suspected bugs without a short repro: {without}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
