"""Triage end to end with real libraries: minimized cases, classifications, repro scripts that
show the same disagreement in each library's own environment, dedup across campaigns."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import model
from xamt.findings import CLASSIFICATIONS
from xamt.oracle.compare import compare
from xamt.store import Store
from xamt.types import Outcome

GROUPS = r"^(log|sqrt|maximum|minimum|sign|remainder|floor_divide|argmax|mean|sinc)(\[axis\])?$"
LIBS = "numpy,torch,jax,mxnet"


def run_fuzz(out: Path, seed: int, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        sys.executable,
        "-m",
        "xamt",
        "fuzz",
        "--budget",
        "200",
        "--libs",
        LIBS,
        "--group",
        GROUPS,
        "--out",
        str(out),
        "--seed",
        str(seed),
        "--reproduce",
        "2",
        *extra,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory, pythons: dict[str, str]) -> Path:
    out = tmp_path_factory.mktemp("triage")
    result = run_fuzz(out, 11)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def findings(out: Path) -> list[dict[str, object]]:
    return json.loads((out / "findings.json").read_text())["findings"]


def test_every_finding_is_signed_minimized_classified_and_scripted(campaign: Path) -> None:
    found = findings(campaign)
    assert found
    groups = {g.id: g for g in model.load().groups}
    elementwise_after = []
    for f in found:
        assert len(str(f["signature"])) == 16 and f["key"]
        m = f["minimization"]
        assert isinstance(m, dict) and m["elements_after"] <= m["elements_before"]
        assert f["original_case"] is not None
        assert f["classification"] in CLASSIFICATIONS
        assert f["trigger"] and f["trigger"] in str(f["key"])
        repro = f["repro"]
        assert isinstance(repro, dict) and set(repro) == set(f["apis"]) | {"xamt"}  # type: ignore[arg-type]
        for path in repro.values():
            assert (campaign / path).is_file()
        if groups[str(f["group"])].family == "elementwise":
            elementwise_after.append(m["elements_after"])
    print(
        f"median elements after minimization (elementwise): {statistics.median(elementwise_after)}"
    )
    assert elementwise_after and statistics.median(elementwise_after) <= 10


def _outcome(lib: str, api: str, line: str) -> Outcome:
    result = json.loads(line.removeprefix("RESULT "))
    if result["status"] != "ok":
        return Outcome(library=lib, api=api, status="error")
    return Outcome(library=lib, api=api, status="ok", value=_array(result["value"]))


def _array(plain: dict[str, object]) -> object:
    if "seq" in plain:
        return tuple(_array(v) for v in plain["seq"])  # type: ignore[union-attr]
    special = {"nan": np.nan, "inf": np.inf, "-inf": -np.inf, "-0.0": -0.0}
    dtype = np.dtype(str(plain["dtype"]))
    data = plain["data"]
    if dtype.kind == "c":
        values = [complex(special.get(r, r), special.get(i, i)) for r, i in data]  # type: ignore[misc, union-attr]
    else:
        values = [special.get(x, x) if isinstance(x, str) else x for x in data]  # type: ignore[union-attr]
    return np.array(values, dtype=dtype).reshape(plain["shape"])  # type: ignore[arg-type]


def test_per_library_scripts_show_the_same_disagreement(
    campaign: Path, pythons: dict[str, str]
) -> None:
    checked = 0
    for f in findings(campaign):
        if f["kind"] not in ("value", "nan", "inf", "signed-zero", "status", "shape", "dtype"):
            continue
        outcomes = {}
        for lib, api in f["apis"].items():  # type: ignore[union-attr]
            script = campaign / f["repro"][lib]  # type: ignore[index]
            run = subprocess.run(
                [pythons[lib], str(script)],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert run.returncode == 0, run.stderr[-2000:]
            line = [ln for ln in run.stdout.splitlines() if ln.startswith("RESULT ")][-1]
            assert "(finding made on" in run.stdout
            outcomes[lib] = _outcome(lib, api, line)
        kinds = {d.kind for d in compare(outcomes)}
        # a departure from the standard can be shared by every library: no disagreement then
        assert f["kind"] in kinds or f["confidence"] == "reference", (f["key"], kinds)
        checked += 1
        if checked >= 6:
            break
    assert checked >= 1


def test_two_campaigns_dedup_to_one_finding_per_signature(campaign: Path, tmp_path: Path) -> None:
    out = tmp_path / "two"
    for seed in (21, 22):
        result = run_fuzz(out, seed)
        assert result.returncode == 0, result.stdout + result.stderr
    with Store(out / "xamt.sqlite") as store:
        rows = store.findings()
        signatures = [r.signature for r in rows]
        assert len(signatures) == len(set(signatures))
        both = [r for r in rows if r.campaigns == (1, 2)]
        assert both, "the same groups under two seeds share findings"
        # one occurrence per case that met the root cause, in each campaign
        assert all(r.occurrences >= 2 for r in both)


def test_repro_reports_still_present(campaign: Path) -> None:
    sig = str(findings(campaign)[0]["signature"])
    result = subprocess.run(
        [sys.executable, "-m", "xamt", "repro", sig[:8], "--out", str(campaign), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)[0]
    assert verdict["signature"] == sig and verdict["present"] is True
    with Store(campaign / "xamt.sqlite") as store:
        assert store.finding(sig).payload["verifications"][-1]["present"] is True


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["repro", "ffffffffffff"], 20, "no finding with signature"),
        (["repro"], 2, "give a SIGNATURE or --all"),
    ],
)
def test_repro_bad_input(campaign: Path, args: list[str], code: int, message: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "xamt", *args, "--out", str(campaign)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == code and message in result.stderr, result.stderr


def test_corrupted_store_and_bad_known_differences(tmp_path: Path) -> None:
    (tmp_path / "xamt.sqlite").write_bytes(b"not a database at all" * 100)
    result = subprocess.run(
        [sys.executable, "-m", "xamt", "repro", "--all", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 10 and "not an xamt store" in result.stderr
    assert "Traceback" not in result.stderr
    bad = tmp_path / "known.toml"
    bad.write_text("[[difference]]\nid = 'x'\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "xamt",
            "fuzz",
            "--known-differences",
            str(bad),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 12 and str(bad) in result.stderr


def test_documentation_is_attached_and_a_documented_dtype_list_is_a_support_gap(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """paddle.sinc's docstring lists its dtypes (bfloat16, float16, float32, float64): a
    suspected bug on int8 input is outside them, a documented difference citing them; one on
    float32 keeps its class and carries the sentences that speak of it."""
    from test_findings import finding

    from xamt.triage.pipeline import _attach_documentation, _read_code
    from xamt.workers.pool import WorkerPool

    inside = finding(signature="1" * 16, dtype="float32")
    outside = finding(signature="2" * 16, dtype="int8")
    with (
        Store(tmp_path / "xamt.sqlite") as store,
        WorkerPool({"paddle": pythons["paddle"]}) as pool,
    ):
        pool.start()
        campaign = store.start_campaign(name="docs", config={})
        for f in (inside, outside):
            store.upsert_finding(f, campaign=campaign)
        found = [inside, outside]
        # past the budget the reading still runs on a worker that is up, and skips one that
        # is not (no start-up waited for)
        assert _read_code(pool, found, running_only=True)["paddle"]["paddle.sinc"].text
        assert _attach_documentation(store, found, _read_code(pool, found)) == 1
        pool.workers["paddle"].kill()
        started = time.monotonic()
        assert _read_code(pool, found, running_only=True) == {}
        assert time.monotonic() - started < 1
        kept = store.finding(inside.signature).finding
        moved = store.finding(outside.signature).finding
    assert kept.classification == "suspected-bug" and kept.documentation
    assert any("float32" in s or "float64" in s for s in kept.documentation)
    assert moved.classification == "documented-difference"
    assert moved.known_difference is not None
    assert moved.known_difference.policy == "documented-dtypes"
    assert "int8 is outside" in moved.decided_by and "float32" in moved.decided_by


def test_a_suspected_hang_that_finishes_when_given_time_is_dropped(
    pythons: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call past the campaign's deadline is given PATIENT_SECONDS once: one that answers
    then was slow, not hung (its finding is dropped); one still running is kept."""
    from xamt.catalog.model import Group, Member
    from xamt.findings import Finding, Minimization
    from xamt.replay import Replay
    from xamt.triage import pipeline
    from xamt.types import Case
    from xamt.workers.pool import WorkerPool

    monkeypatch.setattr(pipeline, "PATIENT_SECONDS", 6.0)
    sleep = "xamt_testing.sleep"
    members = tuple(Member(library=lib, api=sleep, args=("x",)) for lib in ("numpy", "torch"))
    group = Group(
        id="sleep", op="sleep", family="other", roles=("x",), dtype="float64", members=members
    )

    def shrunk(seconds: float) -> pipeline._Shrunk:
        case = Case(
            group="sleep",
            dtype="-",
            value_class="ordinary",
            values={"x": seconds},
            apis={"numpy": sleep, "torch": sleep},
        )
        finding = Finding(
            signature="0" * 16,
            key="hang/torch/torch.sleep/-/ordinary",
            kind="hang",
            classification="suspected-bug",
            severity="critical",
            confidence="reference",
            library="torch",
            callable="torch.sleep",
            group="sleep",
            apis=dict(case.apis),
            trigger="ordinary",
            input_classes=(),
            dtype="-",
        )
        done = Minimization(
            calls=0, seconds=0, stop="skipped", accepted=0, elements_before=1, elements_after=1
        )
        return pipeline._Shrunk(finding=finding, original=case, current=case, minimization=done)

    with WorkerPool({k: pythons[k] for k in ("numpy", "torch")}, deadline=2, testing=True) as pool:
        pool.start()
        replay = Replay(pool, {"sleep": group})
        assert replay.run([shrunk(3.0).current])[0].outcomes["torch"].status == "hang"
        finished = pipeline._finished_hangs(pool, replay, [shrunk(3.0), shrunk(60.0)], print, None)
        assert finished == {0}
        assert pool.deadline == 2 and not pool.adaptive
        # with too little time left for one patient run per library, none is tried
        assert pipeline._finished_hangs(pool, replay, [shrunk(3.0)], print, 10.0) == set()
