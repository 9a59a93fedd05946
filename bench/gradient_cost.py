"""What the gradient oracle costs: campaign rates with values alone and with gradients.

Runs ``xamt fuzz`` with the same seed and budget, alternately with ``--oracles values`` and
``--oracles values,gradients`` (``--rounds`` of each, so that a machine that slows down
over the run weighs on both), and prints per run the cases per second of the fuzzing phase
(findings.json's ``campaign.cases / campaign.seconds``), the gradient cases and the libraries
that returned a gradient on them, the gradient findings by classification and library, and
the ratio of the mean rates.

Run: ``python bench/gradient_cost.py [--budget 180s] [--seed 5] [--rounds 1]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def run(budget: str, seed: int, oracles: str, out: Path) -> dict[str, object]:
    command = [
        sys.executable,
        "-m",
        "xamt",
        "fuzz",
        "--budget",
        budget,
        "--seed",
        str(seed),
        "--oracles",
        oracles,
        "--reproduce",
        "1",
        "--out",
        str(out),
    ]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    data = json.loads((out / "findings.json").read_text())
    camp = data["campaign"]
    grads = [f for f in data["findings"] if f["kind"] == "gradient"]
    return {
        "rate": camp["cases"] / max(camp["seconds"], 1e-9),
        "cases": camp["cases"],
        "gradients": camp.get("gradients", {}),
        "findings": Counter((f["classification"], f["library"]) for f in grads),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", default="180s")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1)
    opts = parser.parse_args()
    rates: dict[str, list[float]] = {"values": [], "values,gradients": []}
    with tempfile.TemporaryDirectory(prefix="xamt-gradcost-") as tmp:
        for r in range(opts.rounds):
            for oracles in rates:
                out = Path(tmp) / f"{oracles.replace(',', '+')}-{r}"
                result = run(opts.budget, opts.seed, oracles, out)
                rates[oracles].append(float(result["rate"]))  # type: ignore[arg-type]
                print(
                    f"--oracles {oracles:17} round {r + 1}: {result['cases']} cases, "
                    f"{result['rate']:.1f} cases/s"
                )
                if result["gradients"]:
                    print(f"  gradient cases and gradients returned: {result['gradients']}")
                for (classification, lib), n in sorted(result["findings"].items()):  # type: ignore[union-attr]
                    print(f"  gradient findings: {classification:22} {lib:10} {n}")
    base = statistics.mean(rates["values"])
    both = statistics.mean(rates["values,gradients"])
    print(
        f"mean rate: values {base:.1f} cases/s, values+gradients {both:.1f} cases/s "
        f"(ratio {both / base:.2f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
