"""Interrupted, concurrent and damaged campaigns, without workers: --resume continues the stored
campaign, one campaign per output folder, stored cases that do not fit their group, read-only
and full stores, and the cancellation that SIGINT and SIGTERM request.

Each test failed on the code before these rules (the resumed run took its options from the
command line, a second run on a folder went ahead, a misfit case was a KeyError traceback, a
read-only store was "not an xamt store", a signal raised wherever it landed). The campaign
itself, interrupted with real workers and compared case by case, is in
tests/integration/test_interrupt.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from test_hostile_inputs import (
    CAMPAIGN,
    FUZZ_ENV,
    invoke,
    output_folder,
    record,
    snapshot,
    sql,
)

from xamt.findings import to_json
from xamt.fuzz import Schedule
from xamt.fuzz.cancel import Cancellation, Cancelled
from xamt.fuzz.run import FuzzConfig, resumed_config, run_options
from xamt.paths import FolderBusy, folder_lock
from xamt.store import Store, StoreError, StoreUnwritable

STORED = FuzzConfig(
    budget="1m",
    seed=21,
    libraries=("numpy", "torch"),
    group="^sum$",
    schedule=Schedule.uniform,
    oracles=("values",),
    reproduce_runs=1,
)


def with_run(out: Path, run: object) -> Path:
    """``out``'s unfinished campaign, stored with these run options."""
    sql(out / "xamt.sqlite", "UPDATE campaigns SET config = ?", (json.dumps({"run": run}),))
    return out


@pytest.fixture
def unfinished(tmp_path: Path) -> Path:
    out = output_folder(tmp_path / "out", finished=False)
    return with_run(out, run_options(STORED, ["numpy", "torch"]))


# -- item 1: --resume continues the campaign that was stored ----------------------------------


def test_resume_takes_every_option_from_the_store(unfinished: Path) -> None:
    got = resumed_config(FuzzConfig(resume=True, out_dir=unfinished, given=frozenset()))
    assert (got.budget, got.seed, got.libraries, got.group) == (
        "60.0s",
        21,
        ("numpy", "torch"),
        "^sum$",
    )
    assert (got.schedule, got.oracles, got.reproduce_runs) == (Schedule.uniform, ("values",), 1)


def test_resume_accepts_the_same_options_written_otherwise(unfinished: Path) -> None:
    same = FuzzConfig(
        resume=True,
        out_dir=unfinished,
        budget="60s",
        libraries=("torch", "numpy"),
        seed=21,
        given=frozenset({"budget", "libraries", "seed"}),
    )
    assert resumed_config(same).budget == "60.0s"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--schedule", "variance"], "--schedule variance contradicts its stored --schedule"),
        (["--libs", "numpy,paddle"], "--libs numpy,paddle contradicts its stored --libs numpy,"),
        (["--budget", "2m"], "--budget 2m contradicts its stored --budget 60.0s"),
        (["--seed", "3"], "--seed 3 contradicts its stored --seed 21"),
        (["--oracles", "values,gradients"], "--oracles values,gradients contradicts"),
    ],
)  # fmt: skip
def test_resume_refuses_an_option_that_contradicts_the_store(
    unfinished: Path, args: list[str], message: str
) -> None:
    before = snapshot(unfinished)
    code, text = invoke("fuzz", "--resume", "--out", unfinished, *args, env=FUZZ_ENV)
    assert code == 2 and message in text and "drop" in text, text
    assert snapshot(unfinished) == before


@pytest.mark.parametrize(
    ("run", "message"),
    [
        ({"seed": "x"}, "config (corrupted)"),
        ({**run_options(STORED, ["numpy", "torch"]), "seed": "x"}, "'seed' must be"),
        ({**run_options(STORED, ["numpy", "torch"]), "budget": "soon"}, "budget 'soon'"),
        ({**run_options(STORED, ["numpy", "torch"]), "libraries": ["numpy", "cupy"]}, "cupy"),
        ({**run_options(STORED, ["numpy", "torch"]), "schedule": "random"}, "schedule"),
        ([1, 2], "must be an object"),
    ],
)
def test_a_garbled_stored_config_is_a_corrupted_store(
    tmp_path: Path, run: object, message: str
) -> None:
    out = with_run(output_folder(tmp_path / "out", finished=False), run)
    code, text = invoke("fuzz", "--resume", "--out", out, env=FUZZ_ENV)
    assert code == 10 and message in text and "corrupted" in text, text


def test_resume_without_shard_finds_the_one_unfinished_campaign(tmp_path: Path) -> None:
    out = output_folder(tmp_path / "out", finished=False)
    sql(out / "xamt.sqlite", "UPDATE campaigns SET name = 'fuzz-1-2'")
    with_run(out, {**run_options(STORED, ["numpy", "torch"]), "shard": "1/2"})
    got = resumed_config(FuzzConfig(resume=True, out_dir=out, given=frozenset()))
    assert got.shard == "1/2"


# -- item 3: one campaign per output folder ---------------------------------------------------


def test_a_second_fuzz_on_a_held_folder_exits_24_naming_the_holder(tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    with folder_lock(out, "xamt fuzz") as lock:
        lock.announce()
        code, text = invoke("fuzz", "--out", out, "--libs", "numpy,torch", env=FUZZ_ENV)
        assert code == 24, text
        assert f"in use by process {os.getpid()} (xamt fuzz" in text, text
        code, text = invoke("fuzz", "--resume", "--out", out, env=FUZZ_ENV)
        assert code == 24, text
    with folder_lock(out, "again"):  # released with the block
        pass
    assert not (out / ".xamt.holder").exists()


def test_the_lock_is_refused_without_waiting(tmp_path: Path) -> None:
    with folder_lock(tmp_path, "first"), pytest.raises(FolderBusy) as info:
        with folder_lock(tmp_path, "second"):
            pass
    assert info.value.exit_code == 24 and "another xamt process" in str(info.value)


# -- item 5: a stored case that does not fit its group ----------------------------------------


MISFITS = [
    ({"apis": {"numpy": "numpy.sum", "torch": "torch.mean"}}, "API 'torch.mean' is not a member"),
    ({"values": {}}, "lacks the input x"),
    ({"group": "mean"}, "group 'mean'"),
    ({"values": {"x": {"$array": "float32", "shape": [1], "b64": "AADAfw=="}, "k": 1}}, "gives k"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "message"), MISFITS)
def test_xamt_repro_refuses_a_stored_case_that_does_not_fit(
    tmp_path: Path, change: dict[str, object], message: str
) -> None:
    out = output_folder(tmp_path / "run", (("c" * 16),))
    finding = record("c" * 16)
    bad = finding.replace(case={**finding.case, **change})
    sql(out / "xamt.sqlite", "UPDATE findings SET payload = ?", (json.dumps(to_json(bad)),))
    code, text = invoke("repro", "--all", "--out", out, env=FUZZ_ENV)
    assert code == 10 and "does not fit" in text and message in text, text


@pytest.mark.parametrize(("change", "message"), MISFITS)
def test_resume_refuses_a_pending_candidate_that_does_not_fit(
    unfinished: Path, change: dict[str, object], message: str
) -> None:
    finding = record("d" * 16)
    bad = finding.replace(case={**finding.case, **change})
    sql(
        unfinished / "xamt.sqlite",
        "INSERT INTO candidates (campaign, seq, signature, kind, grp, dtype, payload) "
        "VALUES (1, 0, ?, 'nan', 'sum', 'float32', ?)",
        ("d" * 16, json.dumps(to_json(bad))),
    )
    code, text = invoke("fuzz", "--resume", "--out", unfinished, env=FUZZ_ENV)
    assert code == 10 and "does not fit" in text and message in text, text


# -- item 7: cannot write is not corrupted ----------------------------------------------------


def read_only(folder: Path, *args: str | Path) -> tuple[int, str]:
    """``xamt ARGS`` in a child that sees ``folder`` on a read-only mount (a user and mount
    namespace of its own, so that root, who writes through file modes, meets a real read-only
    file system, as on a downloaded shard or a write-protected volume)."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare is not installed")
    script = (
        f'mount --bind "{folder}" "{folder}" && mount -o remount,bind,ro "{folder}" && '
        f'exec "{sys.executable}" -m xamt ' + " ".join(f'"{a}"' for a in args)
    )
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("no user namespaces here")
    done = subprocess.run(
        ["unshare", "-rm", "sh", "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **FUZZ_ENV},
    )
    text = done.stdout + done.stderr
    assert "Traceback" not in text, text
    return done.returncode, " ".join(text.split())


def test_a_read_only_store_is_exit_11_before_any_work(tmp_path: Path) -> None:
    out = output_folder(tmp_path / "run")
    before = snapshot(out)
    code, text = read_only(out, "repro", "--all", "--out", out)
    assert code == 11 and "read-only" in text and str(out / "xamt.sqlite") in text, text
    code, text = read_only(out, "fuzz", "--resume", "--out", out)
    assert code == 11, text
    code, text = read_only(out, "merge", out, "--out", tmp_path / "merged")
    assert code == 0, text  # merging only reads
    assert (tmp_path / "merged" / "findings.json").exists()
    assert snapshot(out) == before


def test_sqlite_write_failures_are_unwritable_not_corrupted(tmp_path: Path) -> None:
    """What SQLite says on a full disk or a read-only medium is exit 11 (the failures are
    provoked through SQLite itself: a database opened read-only, and one whose page count is
    capped, which SQLite reports as a full disk)."""
    path = tmp_path / "xamt.sqlite"
    with Store(path) as store:
        store.start_campaign(name=CAMPAIGN, config={})
    with Store(path) as store:
        store._conn.execute(
            "PRAGMA max_page_count = 1"
        )  # the next page: "database or disk is full"
        with pytest.raises(StoreUnwritable) as info:
            store.start_campaign(name=CAMPAIGN, config={"x": "y" * 100_000})
    assert info.value.exit_code == 11 and "cannot write the store" in str(info.value)
    assert "full" in str(info.value)
    with Store(path, readonly=True) as store:  # nothing written beside it
        assert store.unfinished_campaigns() == [CAMPAIGN]
        with pytest.raises(StoreError) as info2:
            store.start_campaign(name="x", config={})
    assert info2.value.exit_code == 11
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xamt.sqlite"]


# -- item 2: the cancellation SIGINT and SIGTERM request --------------------------------------


def test_a_signal_is_deferred_outside_interruptible_blocks_and_raised_inside() -> None:
    cancel = Cancellation()
    with cancel.installed():
        os.kill(os.getpid(), signal.SIGTERM)  # outside: only recorded
        assert cancel.requested and cancel.name == "SIGTERM"
        with pytest.raises(Cancelled) as info, cancel.interruptible():
            pass  # a stop requested before the block: raised at once
        assert info.value.exit_code == 143
        os.kill(os.getpid(), signal.SIGINT)  # a second signal changes nothing
        assert cancel.name == "SIGTERM"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # handlers restored


def test_a_signal_inside_an_interruptible_block_breaks_it_off() -> None:
    cancel = Cancellation()
    with cancel.installed(), pytest.raises(Cancelled) as info, cancel.interruptible():
        os.kill(os.getpid(), signal.SIGINT)
        signal.sigtimedwait([], 0) if hasattr(signal, "sigtimedwait") else None
        raise AssertionError("not interrupted")
    assert info.value.exit_code == 130 and isinstance(info.value, KeyboardInterrupt)
