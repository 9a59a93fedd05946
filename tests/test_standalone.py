"""xamt/triage/standalone.py without the library environments: which forked ends are
re-checked fresh (:func:`needs_fresh`), and the time limit (nothing run, nothing held back)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from xamt.findings import Finding
from xamt.store import Store
from xamt.triage.pipeline import Moves, _check_standalone
from xamt.triage.short import Ran, ShortRepro, Shows
from xamt.triage.standalone import Check, needs_fresh, run_checks

TRACEBACK = "Traceback (most recent call last):\n  ...\n"


@pytest.mark.parametrize(
    ("shows", "error", "ran", "again"),
    [
        # showed the departure: nothing to re-check
        ("assertion", "", Ran(rc=1, stderr=TRACEBACK + "AssertionError: x", forked=True), False),
        ("signal", "", Ran(rc=-11, forked=True), False),
        ("hang", "", Ran(rc=-9, timed_out=True, forked=True), False),
        ("error", "ValueError", Ran(rc=1, stderr=TRACEBACK + "ValueError: x", forked=True), False),
        # passed cleanly: the library gives the expected result, forked or not
        ("assertion", "", Ran(rc=0, forked=True), False),
        ("signal", "", Ran(rc=0, forked=True), False),
        ("hang", "", Ran(rc=0, forked=True), False),
        # an end the verdict does not expect: maybe the fork's doing
        ("assertion", "", Ran(rc=-9, timed_out=True, forked=True), True),  # a deadlock
        ("assertion", "", Ran(rc=-11, forked=True), True),  # a signal instead
        ("assertion", "", Ran(rc=1, stderr=TRACEBACK + "RuntimeError: x", forked=True), True),
        ("error", "ValueError", Ran(rc=1, stderr=TRACEBACK + "TypeError: x", forked=True), True),
        ("signal", "", Ran(rc=1, stderr=TRACEBACK + "RuntimeError: x", forked=True), True),
        ("hang", "", Ran(rc=1, stderr=TRACEBACK + "RuntimeError: x", forked=True), True),
        # a fresh run is never re-checked
        ("assertion", "", Ran(rc=-9, timed_out=True), False),
        ("assertion", "", Ran(rc=1, stderr=TRACEBACK + "RuntimeError: x"), False),
    ],
)
def test_only_an_unexpected_forked_end_is_rechecked_fresh(
    shows: Shows, error: str, ran: Ran, again: bool
) -> None:
    assert needs_fresh(shows, error, ran) is again


def test_past_the_time_limit_nothing_runs_and_the_verdict_is_none(tmp_path: Path) -> None:
    path = tmp_path / "short_numpy.py"
    path.write_text("raise AssertionError\n")
    checks = [Check(key="k", library="numpy", path=path, shows="assertion")]
    got = run_checks(checks, pythons={"numpy": sys.executable}, late=lambda: True)
    assert got["k"].verdict is None and got["k"].forked is None and got["k"].fresh is None


def _stored(tmp_path: Path) -> tuple[Store, Finding]:
    store = Store(tmp_path / "xamt.sqlite")
    campaign = store.start_campaign(name="t", config={})
    f = Finding(
        signature="0123456789abcdef",
        key="value/numpy/numpy.sqrt/float32/ordinary",
        kind="value",
        classification="suspected-bug",
        severity="high",
        confidence="majority",
        library="numpy",
        callable="numpy.sqrt",
        group="sqrt",
        apis={},
        trigger="ordinary",
        input_classes=(),
        dtype="float32",
    )
    store.upsert_finding(f, campaign=campaign)
    return store, f


def test_a_finding_whose_repro_did_not_run_in_time_is_not_held_back(tmp_path: Path) -> None:
    store, f = _stored(tmp_path)
    path = tmp_path / "short_numpy.py"
    path.write_text("pass\n")  # would pass: held back, had it run
    short = ShortRepro(text="pass\n", arrays={}, shows="assertion", error="")
    said: list[str] = []
    _check_standalone(store, Moves(store), [(f.signature, path, short)], said.append, lambda: True)
    assert store.finding(f.signature).finding.held_back == ""
    assert said == [f"{f.key}: short repro not run standalone: time budget"]


@pytest.mark.libs
def test_a_finding_whose_repro_ran_and_passed_is_held_back(tmp_path: Path) -> None:
    store, f = _stored(tmp_path)
    path = tmp_path / "short_numpy.py"
    path.write_text("import numpy\n")  # the real numpy environment gives what was expected
    short = ShortRepro(text="", arrays={}, shows="assertion", error="")
    _check_standalone(store, Moves(store), [(f.signature, path, short)], print, lambda: False)
    assert "did not show the departure: it passed" in store.finding(f.signature).finding.held_back


def test_the_checks_of_a_runner_that_died_run_fresh(tmp_path: Path) -> None:
    """A script that kills its forked child's parent (the runner) stands for a runner lost
    mid-batch: its checks, the one running and those not sent yet, run fresh instead."""
    killer = tmp_path / "killer.py"
    killer.write_text(
        "import os, signal\n"
        "if b'standalone_runner' in open(f'/proc/{os.getppid()}/cmdline', 'rb').read():\n"
        "    os.kill(os.getppid(), signal.SIGKILL)\n"
        "raise AssertionError('the departure')\n"
    )
    later = tmp_path / "later.py"
    later.write_text("raise AssertionError('the departure')\n")
    checks = [
        Check(key="killer", library="numpy", path=killer, shows="assertion"),
        Check(key="later", library="numpy", path=later, shows="assertion"),
    ]
    got = run_checks(checks, pythons={"numpy": sys.executable})
    for key in ("killer", "later"):
        assert got[key].verdict == "", got[key]
        assert got[key].fresh is not None and got[key].forked is not None
        assert got[key].forked.failed == "the runner died"
