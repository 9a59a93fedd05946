"""xamt.merge: shard output folders into one store and one findings.json (schema 2), one
finding per signature.

The overlap cases use stores written with :class:`xamt.store.Store` holding
:class:`xamt.findings.Finding` records (signatures chosen to overlap); the ``libs`` test merges
the outputs of real shards of a small campaign.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from xamt.cli import app as xamt_app
from xamt.errors import OutputError, UsageError
from xamt.findings import Finding, FindingsError, load_document
from xamt.findings_io import findings_document, write_findings
from xamt.merge import NotAnOutputFolder, campaign_info, merge
from xamt.store import CaseRecord, Store, StoreError

LIBS = {"numpy": "2.4.6", "torch": "2.13.0+cpu"}
A, B, C, D = ("a" * 16, "b" * 16, "c" * 16, "d" * 16)
SUPPORT = {
    "0/3": {"gA": {"torch": {"float16": "refused", "float32": "ok"}}},
    "1/3": {
        "gA": {"torch": {"float16": "ok"}},
        "gC": {"numpy": {"bool": "refused"}, "torch": {"bool": "ok"}},
    },
    "2/3": {},
}


def record(signature: str, note: str) -> Finding:
    """A finding record as triage stores it."""
    name = f"g{signature[0].upper()}"
    return Finding(
        signature=signature,
        key=f"value/torch/torch.{name}/float32/nan",
        kind="nan",
        classification="suspected-bug",
        severity="high",
        confidence="majority",
        library="torch",
        callable=f"torch.{name}",
        group=name,
        apis={"numpy": f"numpy.{name}", "torch": f"torch.{name}"},
        trigger="nan",
        input_classes=("nan",),
        dtype="float32",
        detail=note,
        reproduced=1,
        runs=1,
        case={
            "group": name,
            "dtype": "float32",
            "value_class": "non-finite",
            "values": {"x": {"$float": "nan"}},
            "apis": {"numpy": f"numpy.{name}", "torch": f"torch.{name}"},
            "seed": 7,
        },
        outputs={"numpy": {"status": "ok"}, "torch": {"status": "ok"}},
        repro={"torch": f"repro/{signature}/repro_torch.py"},
        triaged=True,
    )


def write_shard(
    folder: Path,
    *,
    shard: str,
    findings: dict[str, int],
    libraries: dict[str, str] = LIBS,
    cases: int = 5,
) -> None:
    """An output folder as `xamt fuzz` leaves it: a store with one campaign (cases, the support
    matrix, findings seen ``findings[sig]`` times), findings.json and repro/<sig>/."""
    folder.mkdir(parents=True)
    with Store(folder / "xamt.sqlite") as store:
        cid = store.start_campaign(name=f"fuzz-{shard.replace('/', '-')}", config={"s": shard})
        store.commit_batch(
            cid,
            cases=[
                CaseRecord(seq=i, group="sum", dtype="float32", value_class="ordinary", score=0.5)
                for i in range(cases)
            ],
            candidates=[],
            state={"seq": cases, "support": SUPPORT.get(shard, {})},
            next_seq=cases,
        )
        for sig, times in findings.items():
            for _ in range(times):
                store.upsert_finding(record(sig, f"from {shard}"), campaign=cid)
                time.sleep(0.002)  # distinct first and last sightings
            (folder / "repro" / sig).mkdir(parents=True)
            (folder / "repro" / sig / "repro_torch.py").write_text(f"# {sig} from {shard}\n")
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
    write_shard(folders[0], shard="0/3", findings={A: 1, B: 2})
    write_shard(folders[1], shard="1/3", findings={A: 2, C: 1}, cases=7)
    write_shard(
        folders[2],
        shard="2/3",
        findings={A: 1, B: 1, D: 1},
        libraries={**LIBS, "jax": "0.10.2"},
    )
    return folders


def tree_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            digest.update(path.relative_to(folder).as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def listing(root: Path) -> list[str]:
    """Every path under ``root`` (to check nothing was written)."""
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_overlapping_shards_merge_into_one_finding_per_signature(
    shards: list[Path], tmp_path: Path
) -> None:
    before = [tree_digest(s) for s in shards]
    inputs = [load_document(s / "findings.json") for s in shards]
    out = tmp_path / "merged"
    summary = merge(shards, out)

    assert (summary.inputs, summary.campaigns, summary.cases) == (3, 3, 17)
    assert (summary.findings, summary.shared, summary.occurrences) == (4, 2, 9)
    assert json.loads((out / "findings.json").read_text())["schema"] == 2
    doc = load_document(out / "findings.json")
    by_sig = {f.signature: f for f in doc.findings}
    assert sorted(by_sig) == [A, B, C, D]
    assert {s: f.occurrences for s, f in by_sig.items()} == {A: 4, B: 3, C: 1, D: 1}
    # the newest record wins: A and B were last seen by shard 2/3
    assert by_sig[A].detail == "from 2/3" and by_sig[B].detail == "from 2/3"
    assert by_sig[C].detail == "from 1/3"
    # the first and the last sightings over all inputs
    first = {f.signature: f for f in inputs[0].findings}
    last = {f.signature: f for f in inputs[2].findings}
    assert by_sig[A].first_seen == first[A].first_seen
    assert by_sig[A].last_seen == last[A].last_seen
    assert by_sig[A].first_seen < by_sig[A].last_seen
    assert doc.libraries == {**LIBS, "jax": "0.10.2"}
    # support: a dtype that worked in one shard is "ok"; a refusal seen alone stays
    assert doc.support == {
        "gA": {"torch": {"float16": "ok", "float32": "ok"}},
        "gC": {"numpy": {"bool": "refused"}, "torch": {"bool": "ok"}},
    }
    camp = doc.campaign
    assert camp["cases"] == 17 and camp["seconds"] == 6.0 and camp["wall_seconds"] == 2.0
    assert camp["shard"] == "0/3, 1/3, 2/3" and camp["seed"] == 1
    assert camp["budget"] == "60 cases" and len(camp["merged"]) == 3

    with Store(out / "xamt.sqlite") as store:
        rows = {r.signature: r for r in store.findings()}
        assert set(rows) == {A, B, C, D}
        assert rows[A].occurrences == 4 and len(rows[A].campaigns) == 3
        assert len(rows[B].campaigns) == 2 and len(rows[D].campaigns) == 1
        assert rows[A].finding.detail == "from 2/3"
        campaigns = sorted({c for r in rows.values() for c in r.campaigns})
        assert [store.counts(c)["findings"] for c in campaigns] == [2, 2, 3]
        assert store.campaign_state(campaigns[1])["support"] == SUPPORT["1/3"]
        assert store.resumable_campaign("x") is None  # every merged campaign is finished
    # repro files come from the input whose record was kept
    assert (out / "repro" / A / "repro_torch.py").read_text() == f"# {A} from 2/3\n"
    assert (out / "repro" / C / "repro_torch.py").read_text() == f"# {C} from 1/3\n"
    assert not (out / ".xamt.sqlite.partial").exists()
    assert [tree_digest(s) for s in shards] == before  # inputs untouched


def test_merged_output_merges_again_with_new_shards(shards: list[Path], tmp_path: Path) -> None:
    first = merge(shards[:2], tmp_path / "day1")
    assert first.findings == 3
    again = merge([tmp_path / "day1", shards[2]], tmp_path / "day2")
    direct = merge(shards, tmp_path / "direct")
    assert (again.findings, again.occurrences, again.campaigns) == (4, 9, 3)
    assert direct.findings == 4

    def facts(folder: str) -> list[tuple[Any, ...]]:
        doc = load_document(tmp_path / folder / "findings.json")
        return [(f.signature, f.occurrences, f.first_seen, f.last_seen) for f in doc.findings]

    assert facts("day2") == facts("direct")  # dates survive a merge of a merged folder
    day2 = load_document(tmp_path / "day2" / "findings.json")
    assert day2.campaign["cases"] == 17 and len(day2.campaign["merged"]) == 3


def test_a_folder_with_only_findings_json_is_merged(shards: list[Path], tmp_path: Path) -> None:
    bare = tmp_path / "bare"
    shutil.copytree(shards[1], bare)
    (bare / "xamt.sqlite").unlink()
    summary = merge([shards[0], bare], tmp_path / "out")
    assert (summary.findings, summary.occurrences) == (3, 6)
    doc = load_document(tmp_path / "out" / "findings.json")
    assert {f.signature: f.occurrences for f in doc.findings} == {A: 3, B: 2, C: 1}


def test_the_same_campaign_twice_is_refused(shards: list[Path], tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(shards[0], copy)
    with pytest.raises(UsageError, match="count its findings twice"):
        merge([shards[0], copy], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    with pytest.raises(UsageError, match="named twice"):
        merge([shards[0], shards[0]], tmp_path / "out")
    merge(shards[:2], tmp_path / "day1")
    with pytest.raises(UsageError, match="count its findings twice"):
        merge([tmp_path / "day1", shards[1]], tmp_path / "out")


@pytest.mark.parametrize("problem", ["missing", "file", "empty", "no-findings"])
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
    elif problem == "empty":
        bad.mkdir()
    else:
        shutil.copytree(shards[1], bad)
        (bad / "findings.json").unlink()
    with pytest.raises(error) as info:
        merge([shards[0], bad], tmp_path / "out")
    assert str(bad) in str(info.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("problem", ["schema-1", "outputs-a-string", "schema-9"])
def test_unreadable_findings_json_is_refused_with_exit_17(
    shards: list[Path], tmp_path: Path, problem: str
) -> None:
    bad = tmp_path / "bad"
    shutil.copytree(shards[1], bad)
    data = json.loads((bad / "findings.json").read_text())
    if problem == "schema-1":
        data = {"schema": 1, "findings": [{"signature": "x", "odd": ["torch"]}]}
    elif problem == "outputs-a-string":
        data["findings"][0]["outputs"] = "oops"
    else:
        data["schema"] = 9
    (bad / "findings.json").write_text(json.dumps(data))
    with pytest.raises(FindingsError) as info:
        merge([shards[0], bad], tmp_path / "out")
    assert info.value.exit_code == 17
    message = {"schema-1": "schema 1", "outputs-a-string": "'outputs'", "schema-9": "schema 9"}
    assert message[problem] in str(info.value) and str(bad) in str(info.value)
    assert not (tmp_path / "out").exists()


def test_foreign_or_corrupted_stores_are_refused_with_exit_code_10(
    shards: list[Path], tmp_path: Path
) -> None:
    bad = tmp_path / "foreign"
    shutil.copytree(shards[1], bad)
    (bad / "xamt.sqlite").unlink()
    with sqlite3.connect(bad / "xamt.sqlite") as conn:
        conn.execute("CREATE TABLE t (x)")
    with pytest.raises(StoreError) as info:
        merge([shards[0], bad], tmp_path / "out")
    assert info.value.exit_code == 10
    assert NotAnOutputFolder("x").exit_code == 10
    odd = tmp_path / "odd"
    write_shard(odd, shard="0/1", findings={})
    with Store(odd / "xamt.sqlite") as store:
        cid = store.start_campaign(name="other", config={})
        store.upsert_finding(record(A, "odd"), campaign=cid)
    # a payload this xamt did not write (the store writes only Finding records)
    with sqlite3.connect(odd / "xamt.sqlite") as conn:
        odd_payload = {"kind": "value", "group": "g", "dtype": "f4"}
        conn.execute("UPDATE findings SET payload = ?", (json.dumps(odd_payload),))
    with pytest.raises(StoreError, match="corrupted or from another xamt"):
        merge([odd], tmp_path / "out")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("where", ["store", "findings.json", "findings.json-beside-a-store"])
def test_a_malicious_signature_is_refused_and_nothing_written(
    shards: list[Path], tmp_path: Path, where: str
) -> None:
    evil = tmp_path / "evil"
    shutil.copytree(shards[1], evil)
    bad = "../../x"
    if where == "store":
        with Store(evil / "xamt.sqlite") as store:
            cid = store.start_campaign(name="evil", config={})
            store.upsert_finding(record(A, "evil").replace(signature=bad), campaign=cid)
        (evil / "repro" / "x").mkdir()
        (evil / "repro" / "x" / "payload.py").write_text("evil\n")
    else:
        data = json.loads((evil / "findings.json").read_text())
        data["findings"][0]["signature"] = bad
        (evil / "findings.json").write_text(json.dumps(data))
        if where == "findings.json":
            (evil / "xamt.sqlite").unlink()
    before = listing(tmp_path)
    error = StoreError if where == "store" else FindingsError
    with pytest.raises(error, match=r"'\.\./\.\./x'") as info:
        merge([shards[0], evil], tmp_path / "out" / "merged")
    assert "16 hexadecimal digits" in str(info.value)
    assert listing(tmp_path) == before  # nothing written, in --out or outside it
    assert not (tmp_path / "x").exists() and not (tmp_path / "out").exists()


def test_repro_folders_that_lead_outside_are_refused(shards: list[Path], tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("token=abc\n")
    evil = tmp_path / "evil"
    shutil.copytree(shards[1], evil)
    shutil.rmtree(evil / "repro" / C)
    os.symlink(outside, evil / "repro" / C)
    with pytest.raises(NotAnOutputFolder, match="leads outside"):
        merge([evil], tmp_path / "out")
    assert not (tmp_path / "out").exists()
    # A link among the files of a repro folder is not followed.
    os.unlink(evil / "repro" / C)
    (evil / "repro" / C).mkdir()
    (evil / "repro" / C / "repro_torch.py").write_text("print(1)\n")
    os.symlink(outside / "secret.txt", evil / "repro" / C / "leak.py")
    merge([evil], tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out" / "repro" / C).iterdir()) == ["repro_torch.py"]


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
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(xamt_app, ["merge", *args])

    ok = run(*map(str, shards), "--out", str(tmp_path / "m"))
    assert ok.exit_code == 0, ok.output
    assert "4 findings, 2 seen in more than one folder" in ok.output
    missing = run(str(shards[0]), str(tmp_path / "nope"), "--out", "x")
    assert missing.exit_code == 2 and "no such folder" in missing.output
    (tmp_path / "empty").mkdir()
    bad = run(str(tmp_path / "empty"), "--out", str(tmp_path / "m2"))
    assert bad.exit_code == 10 and "not an xamt output folder" in bad.output
    again = run(str(shards[0]), "--out", str(tmp_path / "m"))
    assert again.exit_code == 11
    old = tmp_path / "old"
    old.mkdir()
    (old / "findings.json").write_text(json.dumps({"schema": 1, "findings": []}))
    refused = run(str(old), "--out", str(tmp_path / "m3"))
    assert refused.exit_code == 17 and "schema 1" in refused.output
    assert refused.exception is None or isinstance(refused.exception, SystemExit)
    assert "Traceback" not in refused.output


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
    docs = [load_document(f / "findings.json") for f in folders]
    occurrences: Counter[str] = Counter()
    for doc in docs:
        for f in doc.findings:
            occurrences[f.signature] += f.occurrences

    summary = merge(folders, tmp_path / "merged")
    merged = load_document(tmp_path / "merged" / "findings.json")
    sigs = [f.signature for f in merged.findings]
    assert len(sigs) == len(set(sigs)) == len(occurrences) == summary.findings
    assert {f.signature: f.occurrences for f in merged.findings} == dict(occurrences)
    assert set(merged.libraries) == {"numpy", "torch"}
    assert merged.campaign["cases"] == sum(d.campaign["cases"] for d in docs) == 240
    assert summary.shared == sum(
        1 for sig in occurrences if sum(sig in {f.signature for f in d.findings} for d in docs) > 1
    )
    for f in merged.findings:
        for path in f.repro.values():
            assert (tmp_path / "merged" / path).is_file(), path
    with Store(tmp_path / "merged" / "xamt.sqlite") as store:
        assert len(store.findings()) == summary.findings
        assert summary.campaigns == 4
