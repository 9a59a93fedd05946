"""Short repros run as one batch (xamt/triage/standalone.py) in every library's real
environment: forked children of one runner per library give the verdicts fresh interpreters
give; a hang is shown and killed, a crash is a signal death, a passing repro "it passed"; a
fork-only failure is re-checked fresh before it holds anything back."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import model
from xamt.findings import Finding
from xamt.triage import short as short_module
from xamt.triage.short import short_script
from xamt.triage.standalone import FRESH_ALWAYS, Check, run_checks
from xamt.types import Case

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from short_batch import LIBRARIES, batch

HANG_SECONDS = 4.0  # a test's hang check: long enough for the scripts' own work to finish


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_batch_gets_the_same_verdicts_forked_as_fresh(
    library: str, pythons: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(short_module, "HANG_SECONDS", HANG_SECONDS)
    expected = batch(tmp_path, library)
    checks = [e.check for e in expected]
    forked = run_checks(checks, pythons=pythons, recheck=False)
    fresh = run_checks(checks, pythons=pythons, forked=False)
    for e in expected:
        got, again = forked[e.check.key], fresh[e.check.key]
        assert got.verdict is not None and again.verdict is not None
        assert got.verdict.startswith(e.verdict) and bool(got.verdict) == bool(e.verdict), (
            e.check.key,
            got,
        )
        assert again.verdict.startswith(e.verdict) and bool(again.verdict) == bool(e.verdict)
        assert got.verdict == again.verdict
        assert again.fresh is not None and again.forked is None
        if library not in FRESH_ALWAYS:
            assert got.forked is not None and got.forked.forked and got.fresh is None
            if e.check.shows != "hang":  # the same exit status (mxnet's own SIGSEGV handler
                assert got.forked.rc == again.fresh.rc  # exits 255; the others die by it)
    hang = forked[f"{library}-hang"].forked
    if hang is not None:  # the hang was killed at its limit, and is gone
        assert hang.timed_out and hang.rc == -9
        pid = int((tmp_path / f"{library}-hang" / "pid").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    signal = fresh[f"{library}-signal"].fresh
    assert signal is not None and signal.rc in (-11, 255)  # a signal death (mxnet: its handler)


def test_a_failure_only_a_forked_child_sees_is_rechecked_fresh_before_holding_back(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """A forked child keeps the runner's command line: a script that fails only there stands
    for a library whose forked children break; the fresh re-check shows the departure."""
    path = tmp_path / "short_numpy.py"
    path.write_text(
        "import numpy\n"
        "if b'standalone_runner' in open('/proc/self/cmdline', 'rb').read():\n"
        "    raise RuntimeError('a lock the fork left held')\n"
        "assert numpy.sqrt(numpy.float32(4)) == 3, 'the departure'\n"
    )
    check = Check(key="k", library="numpy", path=path, shows="assertion")
    unchecked = run_checks([check], pythons=pythons, recheck=False)["k"]
    assert unchecked.verdict is not None and unchecked.verdict.startswith("it failed otherwise")
    checked = run_checks([check], pythons=pythons)["k"]
    assert checked.verdict == ""
    assert checked.forked is not None and checked.forked.rc == 1
    assert checked.fresh is not None and "AssertionError" in checked.fresh.stderr


def test_the_mxnet_sigfpe_repro_dies_by_a_signal_in_a_forked_child(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """mxnet.np.inner of two 0-d int32 arrays dies with SIGFPE (test_short_repro.py)."""
    a = np.array(2, np.int32)
    case = Case(
        group="inner", dtype="int32", value_class="ordinary", values={"x1": a, "x2": a}, apis={}
    )
    f = Finding(
        signature="0123456789abcdef",
        key="crash/mxnet/mxnet.inner/int32/ordinary",
        kind="crash",
        classification="suspected-bug",
        severity="high",
        confidence="majority",
        library="mxnet",
        callable="mxnet.inner",
        group="inner",
        apis={},
        trigger="ordinary",
        input_classes=(),
        dtype="int32",
        error="SIGFPE",
    )
    member = next(m for m in model.load().group("inner").members if m.library == "mxnet")
    short = short_script(
        finding=f, member=member, case=case, outcomes={}, reference=None, version="test"
    )
    assert short is not None and short.shows == "signal"
    path = tmp_path / "short_mxnet.py"
    path.write_text(short.text)
    check = Check(key="k", library="mxnet", path=path, shows="signal")
    got = run_checks([check], pythons=pythons, recheck=False)["k"]
    assert got.verdict == ""
    ran = got.forked if "mxnet" not in FRESH_ALWAYS else got.fresh
    assert ran is not None and ran.rc == -8  # SIGFPE
