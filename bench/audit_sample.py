"""Draw a blind audit's sample from a campaign's findings.json.

Run: ``python bench/audit_sample.py FINDINGS.json SAMPLE_SEED [--count 30] [--kind K]``
(``--kind gradient``: only gradient suspected bugs). Prints the drawn
suspected bugs (index, signature, key), the same draw as every audit in ``bench/audits.md``:
``random.Random(SAMPLE_SEED).sample(suspected bugs sorted by signature, count)``. Give each
reviewer ``bench/audit_brief.md`` and a part of the list (one library's findings to one
reviewer, so that duplicates are seen), and record the table before changing anything.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("findings", type=Path)
    parser.add_argument("seed", type=int)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--kind", default=None, help="only suspected bugs of this kind")
    opts = parser.parse_args()
    try:
        data = json.loads(opts.findings.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        print(f"error: {opts.findings}: not a readable findings.json: {exc}", file=sys.stderr)
        return 2
    suspected = sorted(
        (
            f
            for f in data.get("findings", [])
            if f.get("classification") == "suspected-bug" and opts.kind in (None, f.get("kind"))
        ),
        key=lambda f: f["signature"],
    )
    drawn = random.Random(opts.seed).sample(suspected, min(opts.count, len(suspected)))
    print(f"{len(suspected)} suspected bugs; {len(drawn)} drawn with sample seed {opts.seed}")
    for i, f in enumerate(drawn):
        print(f"{i}\t{f['signature']}\t{f['library']}\t{f['key']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
