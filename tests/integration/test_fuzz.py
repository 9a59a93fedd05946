"""Fuzz campaigns end to end with real libraries: findings, bad input, kill -9 and resume."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xamt.findings import CLASSIFICATIONS
from xamt.store import NothingToResume, Store, check_resumable

GROUPS = r"^(abs|add|divide|log|sqrt|maximum|sum|mean|floor_divide|remainder)(\[axis\])?$"
LIBS = "numpy,torch,jax"


def fuzz(out: Path, *extra: str, budget: str = "240") -> subprocess.Popen[str]:
    cmd = [
        sys.executable,
        "-m",
        "xamt",
        "fuzz",
        "--budget",
        budget,
        "--libs",
        LIBS,
        "--group",
        GROUPS,
        "--out",
        str(out),
        "--seed",
        "5",
        "--reproduce",
        "1",
        *extra,
    ]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )


def candidate_statuses(out: Path) -> dict[str, int]:
    """Candidates by status in ``out``'s store (empty while there is none yet)."""
    try:
        db = sqlite3.connect(f"file:{out / 'xamt.sqlite'}?mode=ro", uri=True, timeout=1)
        try:
            return dict(db.execute("SELECT status, COUNT(*) FROM candidates GROUP BY status"))
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def resumable(out: Path) -> bool:
    """Whether `--resume` has a campaign to continue in ``out``."""
    try:
        check_resumable(out / "xamt.sqlite", "fuzz-0-1")
    except NothingToResume:
        return False
    return True


def signatures(out: Path) -> list[str]:
    doc = json.loads((out / "findings.json").read_text())
    assert doc["schema"] == 2 and set(doc["libraries"]) == set(LIBS.split(","))
    return sorted(f["signature"] for f in doc["findings"])


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory, pythons: dict[str, str]) -> Path:
    out = tmp_path_factory.mktemp("whole")
    proc = fuzz(out)
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    return out


def test_campaign_writes_reproduced_findings(uninterrupted: Path) -> None:
    doc = json.loads((uninterrupted / "findings.json").read_text())
    assert doc["campaign"]["cases"] == 240
    findings = doc["findings"]
    assert findings, "a campaign over these groups always finds something"
    roots = set()
    for f in findings:
        assert f["reproduced"] == f["runs"] >= 1
        assert f["classification"] in CLASSIFICATIONS
        assert f["case"]["values"] and f["outputs"] and f["occurrences"] >= 1
        if f["classification"] == "split":
            assert f["confidence"] == "split" and set(f["library"].split("+")) <= set(f["apis"])
            continue
        # one library blamed, named with its callable; one root cause per finding
        assert f["library"] in f["apis"] and f["callable"].startswith(f["library"] + ".")
        assert f["trigger"] in f["key"].split("/") and f["dtype"] in f["key"].split("/")
        if f["classification"] == "suspected-bug":
            # one root cause, one finding: across dtypes, and input classes but for a dead
            # or hung process (its trigger is the missing check)
            dead = f["family"] in ("crash", "hang")
            root = (f["library"], f["callable"], f["family"], f["trigger"] if dead else "*")
            assert root not in roots, f"two suspected bugs share {root}"
            roots.add(root)
    assert doc["support"], "the support matrix is filled in"


def test_killed_campaign_resumes_losing_and_duplicating_nothing(
    uninterrupted: Path, tmp_path: Path
) -> None:
    rng = random.Random(3)
    out = tmp_path / "killed"
    kills = 0
    for _attempt in range(8):
        # --resume once the campaign exists (a kill may land before it does: then there is
        # nothing to resume, which `xamt fuzz --resume` refuses with exit 23)
        proc = fuzz(out, *(["--resume"] if resumable(out) else []))
        if kills < 3:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # "starting ..." (workers are up soon after)
            time.sleep(rng.uniform(1.0, 6.0))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                kills += 1
                continue
            del line
        text, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, text
        break
    assert kills >= 1
    assert signatures(out) == signatures(uninterrupted)
    db = sqlite3.connect(out / "xamt.sqlite")
    seqs = [s for (s,) in db.execute("SELECT seq FROM cases ORDER BY seq")]
    assert seqs == list(range(240))  # every case once
    dup = db.execute(
        "SELECT signature, COUNT(*) FROM findings GROUP BY signature HAVING COUNT(*) > 1"
    )
    assert not dup.fetchall()
    db.close()
    whole = json.loads((uninterrupted / "findings.json").read_text())["findings"]
    resumed = json.loads((out / "findings.json").read_text())["findings"]
    count = {f["signature"]: f["occurrences"] for f in whole}
    assert {f["signature"]: f["occurrences"] for f in resumed} == count  # nothing counted twice
    with Store(out / "xamt.sqlite") as store:
        assert len(store.findings()) == len(signatures(uninterrupted))


def kill_half_way_through_reproduction(out: Path) -> dict[str, int]:
    """Run the campaign into ``out`` and SIGKILL it once the store holds some verdicts and
    candidates still pending; the candidates by status after the kill.

    Verdicts are committed one candidate at a time, a few milliseconds apart, so a poller
    that merely sleeps can miss the whole window on a loaded machine: the campaign's process
    group is stopped (SIGSTOP) while the store is read, and continued only if the moment has
    not come yet.
    """
    proc = fuzz(out)
    try:
        while proc.poll() is None:
            os.killpg(proc.pid, signal.SIGSTOP)
            statuses = candidate_statuses(out)
            if statuses.get("pending") and len(statuses) > 1:
                break
            os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(0.005 if statuses else 0.05)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    return candidate_statuses(out)


def test_kill_during_reproduction_then_resume_loses_and_repeats_no_verdict(
    uninterrupted: Path, tmp_path: Path
) -> None:
    # a try whose kill came too late (all verdicts in) proves nothing: another campaign
    for attempt in range(3):
        out = tmp_path / f"killed-in-repro-{attempt}"
        statuses = kill_half_way_through_reproduction(out)
        if statuses.get("pending") and len(statuses) > 1:
            break
    assert statuses.get("pending") and len(statuses) > 1, statuses  # killed half-way
    resumed = fuzz(out, "--resume")
    text, _ = resumed.communicate(timeout=600)
    assert resumed.returncode == 0, text
    assert signatures(out) == signatures(uninterrupted)
    whole = json.loads((uninterrupted / "findings.json").read_text())["findings"]
    again = json.loads((out / "findings.json").read_text())["findings"]
    count = {f["signature"]: f["occurrences"] for f in whole}
    assert {f["signature"]: f["occurrences"] for f in again} == count  # nothing counted twice
    db = sqlite3.connect(out / "xamt.sqlite")
    assert not db.execute("SELECT COUNT(*) FROM candidates WHERE status = 'pending'").fetchone()[0]
    db.close()


def test_xamt_minimize_takes_the_suspected_bugs_the_budget_left(tmp_path: Path) -> None:
    """A campaign whose triage had no time leaves its suspected bugs unminimized; `xamt
    minimize` takes the most severe ones to fewer elements, redoes their scripts and short
    repro, and rewrites findings.json (no finding lost)."""
    out = tmp_path / "left"
    proc = fuzz(out, "--triage-budget", "0")
    text, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, text
    before = json.loads((out / "findings.json").read_text())["findings"]
    skipped = [
        f
        for f in before
        if f["classification"] == "suspected-bug" and f["minimization"]["stop"] == "skipped"
    ]
    assert len(skipped) >= 2, "a campaign over these groups finds suspected bugs"
    done = subprocess.run(
        [sys.executable, "-m", "xamt", "minimize", "--out", str(out), "--budget", "60s",
         "--max", "2"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "minimized 2 of" in done.stdout, done.stdout
    after = json.loads((out / "findings.json").read_text())["findings"]
    assert len(after) == len(before)  # nothing lost (a signature may change with its dtype)
    redone = [
        f
        for f in after
        if f["classification"] == "suspected-bug" and f["minimization"]["stop"] != "skipped"
    ]
    assert len(redone) >= 2
    for f in redone:
        assert f["minimization"]["elements_after"] <= f["minimization"]["elements_before"]
        assert f["dtype"] in f["key"].split("/")  # the key describes the minimized case
        if f["kind"] != "gradient" and f["short_repro"]:
            assert (out / f["short_repro"]).is_file()


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--group", "^no-such-group$"], 2, "no group matches"),
        (["--group", "(["], 2, "not a regular expression"),
        (["--libs", "numpy,cupy"], 3, "unknown library 'cupy'"),
        (["--libs", "numpy"], 2, "at least two libraries"),
        (["--shard", "3/2"], 2, "shard '3/2'"),
        (["--shard", "x"], 2, "shard 'x'"),
        (["--budget", "0"], 2, "must be positive"),
        (["--budget", "-5"], 2, "budget '-5'"),
        (["--budget", "soon"], 2, "budget 'soon'"),
        (["--budget", "0.5"], 2, "a number of cases is a whole number"),
        (["--schedule", "random"], 2, "'random' is not one of"),
        (["--out", "/proc/xamt-cannot-write-here"], 11, "cannot write to the output folder"),
    ],
)
def test_bad_input_is_a_clear_error(
    args: list[str], code: int, message: str, tmp_path: Path
) -> None:
    cmd = [sys.executable, "-m", "xamt", "fuzz", "--out", str(tmp_path / "o"), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == code, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
