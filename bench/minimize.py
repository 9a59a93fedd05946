"""Minimization: median element count of minimized vs original cases, from a campaign.

Reads a campaign's findings.json (``--out`` of ``xamt fuzz``) and prints, for elementwise
groups and for all groups, the median number of array elements before and after
minimization, with the calls it took. Target: median <= 10 elements for elementwise groups.

Run: ``python bench/minimize.py xamt-out``.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from xamt.catalog import model


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "xamt-out")
    print(f"$ python bench/minimize.py {folder}")
    families = {g.id: g.family for g in model.load().groups}
    findings = json.loads((folder / "findings.json").read_text())["findings"]
    rows = [f for f in findings if f.get("minimization")]
    for label, chosen in (
        ("elementwise", [f for f in rows if families.get(f["group"]) == "elementwise"]),
        ("all groups", rows),
    ):
        if not chosen:
            print(f"{label}: no minimized findings")
            continue
        before = [f["minimization"]["elements_before"] for f in chosen]
        after = [f["minimization"]["elements_after"] for f in chosen]
        calls = [f["minimization"]["calls"] for f in chosen]
        print(
            f"{label}: {len(chosen)} findings; median elements {statistics.median(before)} -> "
            f"{statistics.median(after)} (target <= 10 for elementwise); median calls "
            f"{statistics.median(calls)}; max after {max(after)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
