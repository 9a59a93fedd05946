"""Interrupt a campaign, resume it, and compare it case by case with the uninterrupted one.

Each scenario starts `xamt fuzz` (three libraries, a budget in cases, the uniform schedule, so
that two uninterrupted runs are identical), waits until the store holds a number of cases,
stops it (SIGINT, SIGINT to the process group, SIGTERM, SIGINT then SIGTERM 7.5 s later as
GitHub Actions cancels, or kill -9), measures the wind-down (signal to exit), checks the exit
code and the partial findings.json, then runs `xamt fuzz --resume --out DIR` with no other
option and compares the stored cases (seq, group, dtype, value class, score, kinds) and the
findings' signatures with the uninterrupted run.

    python bench/interrupt.py                 # every scenario, a table
    python bench/interrupt.py --only sigint   # the scenarios whose name starts so
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

LIBS = "numpy,torch,paddle"
CASES = 1500
SEED = 21
ACTIONS_GRACE = 7.5  # seconds between GitHub Actions' SIGINT and its SIGTERM


def command(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "xamt", "fuzz", "--out", str(out), *extra]


def start_args(out: Path, libs: str = LIBS) -> list[str]:
    return command(
        out,
        "--libs",
        libs,
        "--budget",
        str(CASES),
        "--schedule",
        "uniform",
        "--seed",
        str(SEED),
        "--oracles",
        "values",
        "--reproduce",
        "1",
        "--triage-budget",
        "5",
    )


def launch(cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as sink:
        return subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)


def stored_cases(out: Path) -> int:
    try:
        db = sqlite3.connect(f"file:{out / 'xamt.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return int(db.execute("SELECT COUNT(*) FROM cases").fetchone()[0])
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def case_rows(out: Path) -> list[tuple[object, ...]]:
    db = sqlite3.connect(f"file:{out / 'xamt.sqlite'}?mode=ro", uri=True)
    try:
        return list(
            db.execute(
                "SELECT seq, grp, dtype, value_class, round(score, 9), kinds FROM cases "
                "ORDER BY seq"
            )
        )
    finally:
        db.close()


def candidate_signatures(out: Path) -> list[tuple[object, ...]]:
    db = sqlite3.connect(f"file:{out / 'xamt.sqlite'}?mode=ro", uri=True)
    try:
        return list(db.execute("SELECT seq, signature FROM candidates ORDER BY seq, signature"))
    finally:
        db.close()


@dataclass
class Outcome:
    scenario: str
    at: int  # cases in the store when the signal went
    code: int | None  # exit code of the stopped run
    wind_down: float  # seconds from the first signal to exit
    partial: bool | None  # findings.json says partial (None: no findings.json)
    stopped_cases: int  # cases findings.json counted
    stored: int  # cases the store held after the stop
    resumed_code: int
    identical: bool  # cases and candidates equal the uninterrupted run's
    detail: str = ""


SCENARIOS: dict[str, tuple[int, str]] = {
    # name -> (cases in the store before stopping, how)
    "sigint-early": (300, "int"),
    "sigint-middle": (700, "int"),
    "sigint-late": (1100, "int"),
    "sigint-group": (700, "int-group"),
    "sigterm": (700, "term"),
    "sigint-then-sigterm": (700, "int-term"),
    "sigint-then-sigterm-fast": (700, "int-term-fast"),  # SIGTERM during the wind-down
    "kill-9": (700, "kill"),
}


def stop(proc: subprocess.Popen[bytes], how: str) -> tuple[int | None, float]:
    t0 = time.monotonic()
    if how == "int":
        proc.send_signal(signal.SIGINT)
    elif how == "int-group":
        os.killpg(proc.pid, signal.SIGINT)
    elif how == "term":
        proc.send_signal(signal.SIGTERM)
    elif how == "kill":
        os.killpg(proc.pid, signal.SIGKILL)
    elif how in ("int-term", "int-term-fast"):
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=ACTIONS_GRACE if how == "int-term" else 0.2)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGTERM)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        code = proc.wait()
    return code, time.monotonic() - t0


def run_scenario(name: str, folder: Path, reference: Path, libs: str = LIBS) -> Outcome:
    at, how = SCENARIOS[name]
    out = folder / name
    log = folder / f"{name}.log"
    proc = launch(start_args(out, libs), log)
    while proc.poll() is None and stored_cases(out) < at:
        time.sleep(0.01)
    reached = stored_cases(out)
    code, wind_down = stop(proc, how)
    stored = stored_cases(out)
    partial, counted = None, 0
    findings = out / "findings.json"
    if findings.exists():
        campaign = json.loads(findings.read_text())["campaign"]
        partial, counted = bool(campaign.get("partial")), int(campaign["cases"])
    resumed = launch(command(out, "--resume"), log)
    resumed_code = resumed.wait(timeout=900)
    same_cases = case_rows(out) == case_rows(reference)
    same_candidates = candidate_signatures(out) == candidate_signatures(reference)
    detail = "" if same_cases else f"cases differ ({len(case_rows(out))} stored)"
    if not same_candidates:
        detail += " candidates differ"
    return Outcome(
        scenario=name,
        at=reached,
        code=code,
        wind_down=wind_down,
        partial=partial,
        stopped_cases=counted,
        stored=stored,
        resumed_code=resumed_code,
        identical=same_cases and same_candidates,
        detail=detail.strip(),
    )


def reference_run(folder: Path, libs: str = LIBS) -> Path:
    out = folder / "uninterrupted"
    code = launch(start_args(out, libs), folder / "uninterrupted.log").wait(timeout=900)
    if code != 0:
        raise SystemExit(f"the uninterrupted run exited {code}: see {folder}/uninterrupted.log")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="scenarios whose name starts with this")
    parser.add_argument("--keep", type=Path, help="keep the runs in this folder")
    parser.add_argument("--libs", default=LIBS, help=f"libraries (default {LIBS})")
    args = parser.parse_args()
    names = [n for n in SCENARIOS if n.startswith(args.only)]
    with tempfile.TemporaryDirectory(prefix="xamt-interrupt-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        reference = reference_run(folder, args.libs)
        print(
            f"{CASES} cases, {args.libs}, --schedule uniform --seed {SEED}; each row: stop, then "
            "`xamt fuzz --resume --out DIR`"
        )
        print(
            "| scenario | at case | exit | wind-down s | findings.json | resumed exit | "
            "identical to the uninterrupted run |"
        )
        print("|---|---|---|---|---|---|---|")
        for name in names:
            o = run_scenario(name, folder, reference, args.libs)
            doc = (
                "none"
                if o.partial is None
                else (
                    f"partial, {o.stopped_cases} cases" if o.partial else f"{o.stopped_cases} cases"
                )
            )
            print(
                f"| {o.scenario} | {o.at} | {o.code} | {o.wind_down:.1f} | {doc} | "
                f"{o.resumed_code} | {'yes' if o.identical else 'NO ' + o.detail} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
