"""Finding quality: a fixed campaign's findings by classification and kind, its distinct root
causes and duplicates, and classification precision and recall on the labelled corpus.

A *duplicate* is two suspected bugs with the same library, callable and trigger (one root
cause reported twice). Precision is the share of suspected bugs that the corpus labels as real
bugs; recall the share of labelled bugs classified as suspected bugs (targets: both >= 90%).

Run: ``python bench/quality.py [--budget 60s] [--seed 3] [--out DIR] [--skip-campaign]``.
The campaign is ``xamt fuzz --budget BUDGET --seed SEED`` over every library; with
``--findings FILE`` an existing findings.json is read instead (e.g. an older run, to compare).
``--corpus FILE`` scores another labelled corpus of the same format, e.g. the public reports:
``python bench/quality.py --skip-campaign --corpus tests/data/public_reports.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from xamt import envs
from xamt.catalog import model
from xamt.known import load_known
from xamt.libraries import library_names
from xamt.replay import Replay
from xamt.workers.pool import WorkerPool

BENCH = Path(__file__).resolve().parent
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))

from quality_corpus import (  # noqa: E402
    Quality,
    corpus_groups,
    evaluate,
    interpreters,
    load_corpus,
)

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "labelled_findings.json"


def campaign_figures(findings_path: Path) -> list[str]:
    doc = json.loads(findings_path.read_text())
    findings = doc["findings"]
    lines = [f"findings.json schema {doc.get('schema')}: {len(findings)} findings"]
    if doc.get("schema") != 2:
        kinds = Counter(f["kind"] for f in findings)
        classes = Counter(f.get("classification", "suspected-bug") for f in findings)
        lines.append(f"  by classification: {dict(classes)}")
        lines.append(f"  by kind: {dict(sorted(kinds.items()))}")
        return lines
    by_class = Counter(f["classification"] for f in findings)
    lines.append(f"  by classification: {dict(sorted(by_class.items()))}")
    for c in sorted(by_class):
        kinds = Counter(f["kind"] for f in findings if f["classification"] == c)
        lines.append(f"    {c}: {dict(sorted(kinds.items()))}")
    bugs = [f for f in findings if f["classification"] == "suspected-bug"]
    roots = {(f["library"], f["callable"], f["family"], f["dtype"], f["trigger"]) for f in bugs}
    dup = Counter((f["library"], f["callable"], f["trigger"]) for f in bugs)
    duplicates = {k: n for k, n in dup.items() if n > 1}
    lines.append(
        f"  distinct suspected-bug root causes: {len(roots)}; duplicates (same library, "
        f"callable, trigger): {sum(n - 1 for n in duplicates.values())}"
    )
    for (lib, call, trig), n in sorted(duplicates.items()):
        lines.append(f"    {n}x {lib} {call} {trig}")
    one_library = all("+" not in f["library"] for f in bugs)
    lines.append(f"  every suspected bug blames exactly one library: {one_library}")
    occurrences = sum(f["occurrences"] for f in findings)
    lines.append(f"  occurrences behind them: {occurrences}")
    support = doc.get("support", {})
    refused = sum(s == "refused" for g in support.values() for d in g.values() for s in d.values())
    lines.append(f"  support matrix: {len(support)} groups, {refused} refused cells")
    return lines


def documented_figures(quality: Quality) -> list[str]:
    """How the entries labelled documented-difference were classified."""
    judged = [j for j in quality.judged if j.entry.label == "documented-difference"]
    if not judged:
        return []
    counts = Counter(j.classification for j in judged)
    line = (
        f"documented-difference entries: {len(judged)}; classified documented-difference "
        f"(surfaced with a link) {counts.pop('documented-difference', 0)}, suspected-bug "
        f"{counts.pop('suspected-bug', 0)}, nothing {counts.pop('none', 0)}"
    )
    return [line + "".join(f", {c} {n}" for c, n in sorted(counts.items()))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="60s")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--findings", type=Path, default=None)
    parser.add_argument("--skip-campaign", action="store_true")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    opts = parser.parse_args()
    print("$ python bench/quality.py " + " ".join(sys.argv[1:]))
    if opts.findings:
        for line in campaign_figures(opts.findings):
            print(line)
    elif not opts.skip_campaign:
        out = opts.out or Path(tempfile.mkdtemp(prefix="xamt-quality-"))
        cmd = [
            sys.executable,
            "-m",
            "xamt",
            "fuzz",
            "--budget",
            opts.budget,
            "--seed",
            str(opts.seed),
            "--out",
            str(out),
        ]
        print("$ " + " ".join(cmd))
        started = time.monotonic()
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        print(f"campaign: exit {result.returncode}, {time.monotonic() - started:.0f} s wall")
        if result.returncode != 0:
            print(result.stdout[-3000:] + result.stderr[-3000:])
            return 1
        for line in campaign_figures(out / "findings.json"):
            print(line)
    entries = load_corpus(opts.corpus)
    groups = corpus_groups(entries, model.load())
    pythons = {lib: envs.interpreter(lib) for lib in library_names()}
    with WorkerPool(interpreters(entries, pythons)) as pool:
        pool.start()
        quality = evaluate(entries, Replay(pool, groups), load_known())
    for line in quality.lines() + documented_figures(quality):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
