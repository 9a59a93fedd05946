"""xamt.merge: shard output folders into one store and one findings.json, one finding per
signature.

The overlap cases use stores written with :class:`xamt.store.Store` (signatures chosen to
overlap); the ``libs`` test merges the outputs of three real shards of a small campaign.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from xamt.errors import OutputError, UsageError
from xamt.fuzz.output import findings_document, write_findings
from xamt.merge import NotAnOutputFolder, campaign_info, merge, merge_command
from xamt.store import CandidateRecord, CaseRecord, Store, StoreError

LIBS = {"numpy": "2.4.6", "torch": "2.13.0+cpu"}


def payload(signature: str, group: str, note: str) -> dict[str, Any]:
    """A finding payload shaped as triage stores it (what findings.json is made from)."""
    return {
        "kind": "value",
        "group": group,
        "dtype": "float32",
        "odd": ["torch"],
        "input_classes": ["nan"],
        "reproduced": 1,
        "runs": 1,
        "detail": note,
        "case": {
            "apis": {"numpy": f"numpy.{group}", "torch": f"torch.{group}"},
            "value_class": "non-finite",
            "seed": 7,
            "values": {"x": 1.0},
        },
        "outputs": {"numpy": {"status": "ok"}, "torch": {"status": "ok"}},
        "repro": {"numpy": f"repro/{signature}/repro_numpy.py"},
    }


def write_shard(
    folder: Path,
    *,
    shard: str,
    findings: dict[str, int],
    libraries: dict[str, str] = LIBS,
    cases: int = 5,
) -> None:
    """An output folder as `xamt fuzz` leaves it: a store with one campaign (cases, candidates,
    findings seen ``findings[sig]`` times), findings.json and repro/<sig>/."""
    folder.mkdir(parents=True)
    with Store(folder / "xamt.sqlite") as store:
        cid = store.start_campaign(name=f"fuzz-{shard.replace('/', '-')}", config={"s": shard})
        store.commit_batch(
            cid,
            cases=[
                CaseRecord(seq=i, group="sum", dtype="float32", value_class="ordinary", score=0.5)
                for i in range(cases)
            ],
            candidates=[
                CandidateRecord(
                    seq=0,
                    signature=sig,
                    kind="value",
                    group="g",
                    dtype="float32",
                    payload={"sig": sig},
                )
                for sig in findings
            ],
            state={"seq": cases},
            next_seq=cases,
        )
        for sig, times in findings.items():
            for _ in range(times):
                store.upsert_finding(
                    signature=sig, campaign=cid, payload=payload(sig, f"g{sig}", f"from {shard}")
                )
            (folder / "repro" / sig).mkdir(parents=True)
            (folder / "repro" / sig / "repro_numpy.py").write_text(f"# {sig} from {shard}\n")
        info = {"name": "x", "seed": 1, "budget": "60 cases", "shard": shard, "cases": cases}
        info["seconds"] = 2.0
        doc = findings_document(store, cid, libraries=libraries, campaign_info=info)
        store.finish_campaign(cid, summary=info)
    write_findings(folder / "findings.json", doc)
    time.sleep(0.002)  # distinct last_seen times between shards


@pytest.fixture
def shards(tmp_path: Path) -> list[Path]:
    """Three shards whose findings overlap: A in all three, B in two, C and D in one."""
    folders = [tmp_path / f"shard{i}" for i in range(3)]
    write_shard(folders[0], shard="0/3", findings={"A": 1, "B": 2})
    write_shard(folders[1], shard="1/3", findings={"A": 2, "C": 1}, cases=7)
    write_shard(
        folders[2],
        shard="2/3",
        findings={"A": 1, "B": 1, "D": 1},
        libraries={**LIBS, "jax": "0.10.2"},
    )
    return folders


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def test_overlapping_shards_merge_into_one_finding_per_signature(
    shards: list[Path], tmp_path: Path
) -> None:
    before = [tree_digest(s) for s in shards]
    out = tmp_path / "merged"
    summary = merge(shards, out)

    assert (summary.inputs, summary.campaigns, summary.cases) == (3, 3, 17)
    assert (summary.findings, summary.shared, summary.occurrences) == (4, 2, 9)
    doc = json.loads((out / "findings.json").read_text())
    assert doc["schema"] == 1
    sigs = [f["signature"] for f in doc["findings"]]
    assert sorted(sigs) == ["A", "B", "C", "D"]
    by_sig = {f["signature"]: f for f in doc["findings"]}
    assert {s: f["occurrences"] for s, f in by_sig.items()} == {"A": 4, "B": 3, "C": 1, "D": 1}
    # the newest payload wins: A and B were last seen by shard 2/3
    assert by_sig["A"]["detail"] == "from 2/3"
    assert by_sig["B"]["detail"] == "from 2/3"
    assert by_sig["C"]["detail"] == "from 1/3"
    assert doc["libraries"] == {**LIBS, "jax": "0.10.2"}
    camp = doc["campaign"]
    assert camp["cases"] == 17 and camp["seconds"] == 6.0 and camp["wall_seconds"] == 2.0
    assert camp["shard"] == "0/3, 1/3, 2/3" and camp["seed"] == 1
    assert camp["budget"] == "60 cases" and len(camp["merged"]) == 3

    with Store(out / "xamt.sqlite") as store:
        rows = {r.signature: r for r in store.findings()}
        assert set(rows) == {"A", "B", "C", "D"}
        assert rows["A"].occurrences == 4 and len(rows["A"].campaigns) == 3
        assert len(rows["B"].campaigns) == 2 and len(rows["D"].campaigns) == 1
        assert rows["A"].first_seen < rows["A"].last_seen
        counts = [store.counts(c) for c in sorted({c for r in rows.values() for c in r.campaigns})]
        assert [c["cases"] for c in counts] == [5, 7, 5]
        assert [c["findings"] for c in counts] == [2, 2, 3]
        assert sum(c["candidates"] for c in counts) == 7
    # repro scripts come from the input whose payload was kept
    assert (out / "repro" / "A" / "repro_numpy.py").read_text() == "# A from 2/3\n"
    assert (out / "repro" / "C" / "repro_numpy.py").read_text() == "# C from 1/3\n"
    assert not (out / ".xamt.sqlite.partial").exists()
    assert [tree_digest(s) for s in shards] == before  # inputs untouched


def test_merged_output_merges_again_with_new_shards(shards: list[Path], tmp_path: Path) -> None:
    first = merge(shards[:2], tmp_path / "day1")
    assert first.findings == 3
    again = merge([tmp_path / "day1", shards[2]], tmp_path / "day2")
    direct = merge(shards, tmp_path / "direct")
    assert (again.findings, again.occurrences, again.campaigns) == (4, 9, 3)
    a = json.loads((tmp_path / "day2" / "findings.json").read_text())["findings"]
    b = json.loads((tmp_path / "direct" / "findings.json").read_text())["findings"]
    assert [(f["signature"], f["occurrences"]) for f in a] == [
        (f["signature"], f["occurrences"]) for f in b
    ]
    assert direct.findings == 4


def test_the_same_campaign_twice_is_refused(shards: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(shards[0], copy)
    with pytest.raises(UsageError, match="count its findings twice"):
        merge([shards[0], copy], tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    with pytest.raises(UsageError, match="named twice"):
        merge([shards[0], shards[0]], tmp_path / "out")


@pytest.mark.parametrize("problem", ["missing", "file", "no-store", "no-findings", "schema"])
def test_inputs_that_are_not_outputs_are_refused(
    shards: list[Path], tmp_path: Path, problem: str
) -> None:
    bad = tmp_path / "bad"
    error: type[Exception] = NotAnOutputFolder
    if problem == "missing":
        error = UsageError
    elif problem == "file":
        bad.write_text("")
        error = UsageError
    elif problem == "no-store":
        bad.mkdir()
        (bad / "findings.json").write_text('{"schema": 1}')
    elif problem == "no-findings":
        shutil.copytree(shards[1], bad)
        (bad / "findings.json").unlink()
    else:
        shutil.copytree(shards[1], bad)
        (bad / "findings.json").write_text('{"schema": 2, "findings": []}')
    with pytest.raises(error) as info:
        merge([shards[0], bad], tmp_path / "out")
    assert str(bad) in str(info.value)
    assert not (tmp_path / "out" / "findings.json").exists()


def test_foreign_store_is_refused_with_exit_code_10(shards: list[Path], tmp_path: Path) -> None:
    bad = tmp_path / "foreign"
    shutil.copytree(shards[1], bad)
    (bad / "xamt.sqlite").unlink()
    with sqlite3.connect(bad / "xamt.sqlite") as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError) as info:
        merge([shards[0], bad], tmp_path / "out")
    assert info.value.exit_code == 10
    assert NotAnOutputFolder("x").exit_code == 10


def test_output_folder_problems(shards: list[Path], tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="also an input"):
        merge(shards, shards[0])
    merge(shards[:1], tmp_path / "out")
    with pytest.raises(OutputError, match="already holds"):
        merge(shards[1:], tmp_path / "out")
    with pytest.raises(UsageError):
        merge([], tmp_path / "other")


def test_campaign_info_of_disagreeing_inputs() -> None:
    info = campaign_info(
        [
            {"seed": 1, "budget": "10m", "shard": "1/4", "cases": 3, "seconds": 1.0},
            {"seed": 2, "budget": "10m", "shard": "0/4", "cases": 4, "seconds": 5.0},
        ]
    )
    assert info["seed"] == "1, 2" and info["budget"] == "10m" and info["shard"] == "0/4, 1/4"
    assert (info["cases"], info["seconds"], info["wall_seconds"]) == (7, 6.0, 5.0)


def test_merge_command_exit_codes_and_message(shards: list[Path], tmp_path: Path) -> None:
    app = typer.Typer()
    app.command()(merge_command)
    runner = CliRunner()
    ok = runner.invoke(app, [*map(str, shards), "--out", str(tmp_path / "m")])
    assert ok.exit_code == 0, ok.output
    assert "4 findings, 2 seen in more than one folder" in ok.output
    missing = runner.invoke(app, [str(shards[0]), str(tmp_path / "nope"), "--out", "x"])
    assert missing.exit_code == 2 and "no such folder" in missing.output
    (tmp_path / "empty").mkdir()
    bad = runner.invoke(app, [str(tmp_path / "empty"), "--out", str(tmp_path / "m2")])
    assert bad.exit_code == 10 and "not an xamt output folder" in bad.output
    again = runner.invoke(app, [str(shards[0]), "--out", str(tmp_path / "m")])
    assert again.exit_code == 11


@pytest.mark.libs
def test_real_shards_of_a_campaign_merge(tmp_path: Path) -> None:
    """Three real shards (numpy vs torch, 60 cases each) plus a rerun of shard 0 with another
    seed, so that signatures overlap; the merge has one finding per signature."""
    runs = [("0/3", 1), ("1/3", 1), ("2/3", 1), ("0/3", 2)]
    folders = []
    for i, (shard, seed) in enumerate(runs):
        folder = tmp_path / f"shard{i}"
        cmd = [sys.executable, "-m", "xamt", "fuzz", "--budget", "60", "--libs", "numpy,torch"]
        cmd += ["--shard", shard, "--seed", str(seed), "--out", str(folder), "--reproduce", "1"]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        folders.append(folder)
    docs = [json.loads((f / "findings.json").read_text()) for f in folders]
    occurrences: Counter[str] = Counter()
    for doc in docs:
        for f in doc["findings"]:
            occurrences[f["signature"]] += f["occurrences"]

    summary = merge(folders, tmp_path / "merged")
    merged = json.loads((tmp_path / "merged" / "findings.json").read_text())
    sigs = [f["signature"] for f in merged["findings"]]
    assert len(sigs) == len(set(sigs)) == len(occurrences) == summary.findings
    assert {f["signature"]: f["occurrences"] for f in merged["findings"]} == dict(occurrences)
    assert set(merged["libraries"]) == {"numpy", "torch"}
    assert merged["campaign"]["cases"] == sum(d["campaign"]["cases"] for d in docs) == 240
    assert summary.shared == sum(
        1
        for sig in occurrences
        if sum(sig in {f["signature"] for f in d["findings"]} for d in docs) > 1
    )
    for f in merged["findings"]:
        for path in f["repro"].values():
            assert (tmp_path / "merged" / path).is_file(), path
    with Store(tmp_path / "merged" / "xamt.sqlite") as store:
        assert len(store.findings()) == summary.findings
        assert summary.campaigns == 4


def test_a_finding_payload_of_another_shape_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "odd"
    write_shard(folder, shard="0/1", findings={})
    with Store(folder / "xamt.sqlite") as store:
        cid = store.start_campaign(name="other", config={})
        store.upsert_finding(
            signature="Z", campaign=cid, payload={"kind": "value", "group": "g", "dtype": "f4"}
        )
    with pytest.raises(NotAnOutputFolder, match="finding Z"):
        merge([folder], tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
