"""Issue 14: hostile or damaged inputs neither escape the output folder nor crash xamt.

Each test reproduces one problem found by probing xamt as an attacker (a shard artifact is
untrusted input to the merge job that holds the filing token) and as an unlucky user, and
checks it now fails safely: a documented exit code, a message naming the file and the entry,
no traceback, and nothing written, changed or deleted outside the output folder (the parent
folders are listed, with each file's content, before and after).

No command here starts a worker: each refusal happens before (``xamt fuzz`` runs with
``XAMT_PYTHON_<LIB>`` pointing at this interpreter, so it needs no installed environment).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fakegithub import FakeGitHub
from typer.testing import CliRunner

from xamt.cli import app
from xamt.findings import Finding, to_json
from xamt.findings_io import findings_document, write_findings
from xamt.store import CaseRecord, Store

README = Path(__file__).resolve().parent.parent / "README.md"
A, B = "a" * 16, "b" * 16
LIBS = {"numpy": "2.4.6", "torch": "2.13.0+cpu"}
CAMPAIGN = "fuzz-0-1"
# `xamt fuzz` in these tests: two libraries whose interpreter is this one (never started)
FUZZ_ENV = {"XAMT_PYTHON_NUMPY": sys.executable, "XAMT_PYTHON_TORCH": sys.executable}
FUZZ_ARGS = ["--libs", "numpy,torch", "--budget", "1", "--group", "^sum$"]
TOKEN = "ghp_hostile_inputs_token"
# a campaign's state after its first batch (what `--resume` reads)
STATE = {
    "rng": np.random.default_rng(1).bit_generator.state,
    "schedule": {},
    "seen": {},
    "kinds": {},
    "seconds": 0.5,
    "support": {"sum": {"torch": {"float32": "ok"}}},
}
runner = CliRunner()


def documented_exit_codes() -> set[int]:
    """The exit codes of the README's table."""
    text = README.read_text(encoding="utf-8").split("## Exit codes", 1)[1]
    return {int(m) for m in re.findall(r"^\| (\d+) \|", text, flags=re.MULTILINE)}


def invoke(*args: str | Path, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``xamt ARGS``: (exit code, everything printed); fails on a traceback or an exit code
    missing from the README's table."""
    result = runner.invoke(app, [str(a) for a in args], env=env)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, text
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"xamt {args} raised {result.exception!r}") from result.exception
    assert result.exit_code in documented_exit_codes(), (result.exit_code, text)
    return result.exit_code, " ".join(text.split())


def snapshot(root: Path) -> dict[str, str]:
    """Every path under ``root``: a file's digest, a link's target, or "dir"."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            out[rel] = "link:" + os.readlink(path)
        elif path.is_dir():
            out[rel] = "dir"
        else:
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def outside(snap: dict[str, str], out: str) -> dict[str, str]:
    """``snap`` without what is under the output folder ``out`` (relative to the root)."""
    return {k: v for k, v in snap.items() if k != out and not k.startswith(out + "/")}


def record(signature: str, **changes: Any) -> Finding:
    """A triaged finding as xamt stores it (its repro path under repro/<signature>/)."""
    from test_store import finding_record

    f = finding_record(
        signature,
        kind="nan",
        reproduced=3,
        runs=3,
        case={
            "group": "sum",
            "dtype": "float32",
            "value_class": "non-finite",
            "values": {"x": {"$array": "float32", "shape": [1], "b64": "AADAfw=="}},
            "apis": {"numpy": "numpy.sum", "torch": "torch.sum"},
            "seed": 7,
        },
        outputs={
            "numpy": {"api": "numpy.sum", "status": "ok", "result": "float32[] nan"},
            "torch": {"api": "torch.sum", "status": "ok", "result": "float32[] 0.0"},
        },
        repro={"torch": f"repro/{signature}/repro_torch.py"},
        triaged=True,
    )
    return f.replace(**changes)


def output_folder(
    folder: Path, signatures: tuple[str, ...] = (A, B), *, finished: bool = True
) -> Path:
    """An output folder as `xamt fuzz` leaves it: store, findings.json and repro/."""
    folder.mkdir(parents=True)
    with Store(folder / "xamt.sqlite") as store:
        cid = store.start_campaign(name=CAMPAIGN, config={"seed": 1})
        store.commit_batch(
            cid,
            cases=[
                CaseRecord(seq=0, group="sum", dtype="float32", value_class="ordinary", score=0)
            ],
            candidates=[],
            state=STATE,
            next_seq=1,
        )
        for sig in signatures:
            store.upsert_finding(record(sig), campaign=cid)
            (folder / "repro" / sig).mkdir(parents=True)
            (folder / "repro" / sig / "repro_torch.py").write_text(f"# {sig}\n")
        info = {"name": CAMPAIGN, "seed": 1, "budget": "1 cases", "cases": 1, "seconds": 1.0}
        doc = findings_document(store, cid, libraries=LIBS, campaign_info=info)
        if finished:
            store.finish_campaign(cid, summary=info)
    write_findings(folder / "findings.json", doc)
    return folder


def sql(path: Path, statement: str, params: tuple[Any, ...] = ()) -> None:
    """Change a store behind xamt's back."""
    conn = sqlite3.connect(path)
    try:
        conn.execute(statement, params)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def victim(tmp_path: Path) -> Iterator[Path]:
    """A folder outside every output folder, with a file an attack would delete or replace."""
    folder = tmp_path / "o1" / "victim"
    folder.mkdir(parents=True)
    (folder / "precious.txt").write_text("keep me\n")
    yield folder
    assert (folder / "precious.txt").read_text() == "keep me\n"


# -- paths built from untrusted data -----------------------------------------------------------


@pytest.mark.parametrize("where", ["store", "findings.json"])
def test_merge_of_a_traversal_signature_touches_nothing_outside_out(
    tmp_path: Path, victim: Path, where: str
) -> None:
    """`xamt merge in2 --out o1/o2/out` with a signature `../../../victim` deleted o1/victim
    and copied a folder from outside the input into its place."""
    evil = "../../../victim"
    shard = output_folder(tmp_path / "in2")
    if where == "store":
        for table in ("findings", "finding_campaigns"):
            sql(
                shard / "xamt.sqlite",
                f"UPDATE {table} SET signature = ? WHERE signature = ?",
                (evil, A),
            )
    else:
        (shard / "xamt.sqlite").unlink()
        data = json.loads((shard / "findings.json").read_text())
        data["findings"][0]["signature"] = evil
        (shard / "findings.json").write_text(json.dumps(data))
    (tmp_path / "victim").mkdir()  # what in2/repro/../../../victim would copy from
    (tmp_path / "victim" / "planted.py").write_text("import os\n")
    before = snapshot(tmp_path)
    code, text = invoke("merge", shard, "--out", tmp_path / "o1" / "o2" / "out")
    assert code == (10 if where == "store" else 17), text
    assert "'../../../victim'" in text and "16 hexadecimal digits" in text
    assert outside(snapshot(tmp_path), "o1/o2/out") == before
    assert not (tmp_path / "o1" / "o2" / "out" / "xamt.sqlite").exists()


def test_merge_does_not_write_through_links_planted_in_the_output(tmp_path: Path) -> None:
    shard = output_folder(tmp_path / "in")
    target = tmp_path / "out"
    (target / "repro").mkdir(parents=True)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", target / "repro" / A)  # out/repro/<sig> leads outside
    before = snapshot(tmp_path)
    code, text = invoke("merge", shard, "--out", target)
    assert code == 11 and "leads outside" in text, text
    assert outside(snapshot(tmp_path), "out") == outside(before, "out")
    os.unlink(target / "repro" / A)
    (target / "repro" / A).mkdir()
    os.symlink(tmp_path / "elsewhere" / "bashrc", target / "repro" / A / "repro_torch.py")
    os.symlink(tmp_path / "elsewhere" / "findings", target / "findings.json.tmp")
    code, text = invoke("merge", shard, "--out", target)
    assert code == 0, text
    assert not (tmp_path / "elsewhere" / "bashrc").exists()  # the link was replaced
    assert not (tmp_path / "elsewhere" / "findings").exists()
    assert (target / "repro" / A / "repro_torch.py").read_text() == f"# {A}\n"


@pytest.mark.parametrize("row", ["finding", "candidate"])
def test_resume_with_a_traversal_signature_touches_nothing_outside_out(
    tmp_path: Path, row: str
) -> None:
    """`xamt fuzz --resume --out trav-store/out` on a store with signature
    `../../../ESCAPED_TRIAGE` wrote case.json and four scripts three levels up."""
    evil = "../../../ESCAPED_TRIAGE"
    out = output_folder(tmp_path / "trav-store" / "out", finished=False)
    store = out / "xamt.sqlite"
    if row == "finding":
        sql(store, "UPDATE findings SET signature = ? WHERE signature = ?", (evil, A))
    else:
        payload = json.dumps(to_json(record(A, triaged=False, repro={})))
        sql(
            store,
            "INSERT INTO candidates (campaign, seq, signature, kind, grp, dtype, payload) "
            "VALUES (1, 0, ?, 'nan', 'sum', 'float32', ?)",
            (evil, payload),
        )
    before = snapshot(tmp_path)
    code, text = invoke("fuzz", "--resume", "--out", out, *FUZZ_ARGS, env=FUZZ_ENV)
    assert code == 10, text
    assert "ESCAPED_TRIAGE" in text and str(store) in text
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.rglob("ESCAPED_TRIAGE*"))


def test_repro_with_a_traversal_signature_touches_nothing(tmp_path: Path) -> None:
    out = output_folder(tmp_path / "run" / "out")
    sql(
        out / "xamt.sqlite",
        "UPDATE findings SET signature = '../../../x' WHERE signature = ?",
        (A,),
    )
    before = snapshot(tmp_path)
    for args in (["--all"], ["../"]):
        code, text = invoke("repro", *args, "--out", out)
        assert code == 10 and "'../../../x' is malformed" in text, text
        assert snapshot(tmp_path) == before


def test_report_and_file_read_nothing_outside_and_write_only_into_out(tmp_path: Path) -> None:
    """A findings.json's repro paths may name any file: only files inside its folder are
    read (and shown in an issue body); the commands write only into --out."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN-VALUE\n")
    run = output_folder(tmp_path / "run")
    os.symlink(secret, run / "repro" / B / "leak.py")
    data = json.loads((run / "findings.json").read_text())
    by_sig = {f["signature"]: f for f in data["findings"]}
    by_sig[A]["repro"] = {"torch": "../secret.txt", "numpy": str(secret), "xamt": "a\x00b"}
    by_sig[B]["repro"] = {"torch": f"repro/{B}/leak.py", "xamt": "repro/../../secret.txt"}
    (run / "findings.json").write_text(json.dumps(data))
    before = snapshot(tmp_path)
    code, text = invoke("report", run / "findings.json", "--out", run / "rep", "--no-step-summary")
    assert code == 0, text
    code, text = invoke("file", run / "findings.json", "--repo", "octo/fuzz", "--out", run / "fil")
    assert code == 0, text
    assert outside(outside(snapshot(tmp_path), "run/rep"), "run/fil") == before
    for path in [*(run / "rep").rglob("*"), *(run / "fil").rglob("*")]:
        if path.is_file():
            assert "SECRET-TOKEN-VALUE" not in path.read_text(), path


def test_file_with_a_token_refuses_a_traversal_signature_before_any_request(
    tmp_path: Path,
) -> None:
    run = output_folder(tmp_path / "run")
    data = json.loads((run / "findings.json").read_text())
    data["findings"][0]["signature"] = "../../x"
    (run / "findings.json").write_text(json.dumps(data))
    with FakeGitHub(token=TOKEN, repos={"octo/fuzz": "write"}) as fake:
        code, text = invoke(
            "file", run / "findings.json", "--repo", "octo/fuzz", "--post", "--out", run / "fil",
            env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": fake.base_url},
        )  # fmt: skip
        assert code == 17 and "'../../x' is malformed" in text, text
        assert fake.requests() == []
    assert TOKEN not in text


# -- garbled store contents ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE campaigns SET state = '{\"rng\": '", "campaign 1 state: not valid JSON"),
        ("UPDATE campaigns SET state = '[1, 2]'", "state is not an object"),
        ("UPDATE campaigns SET state = '{\"seen\": 3}'", "field 'seen' must be an object"),
        ("UPDATE campaigns SET state = json_set(state, '$.rng', 'x')", "'rng' must be an object"),
        ("UPDATE campaigns SET state = json_remove(state, '$.kinds')", "'kinds' is required"),
        (
            "UPDATE campaigns SET state = json_set(state, '$.pending', json('[{\"picks\": [], "
            '"cases": [{"group": "sum"}]}]\'))',
            "'dtype', 'value_class', 'values', 'apis' are required",
        ),
        (
            "INSERT INTO candidates (campaign, seq, signature, kind, grp, dtype, payload) "
            f"VALUES (1, 0, '{A}', 'nan', 'sum', 'float32', '{{not json')",
            "candidate 1: not valid JSON",
        ),
        (
            "INSERT INTO candidates (campaign, seq, signature, kind, grp, dtype, payload) "
            f"VALUES (1, 0, '{A}', 'nan', 'sum', 'float32', '[]')",
            "candidate 1: a finding must be an object",
        ),
        ("UPDATE findings SET payload = '{\"kind\": '", "not valid JSON"),
        ("UPDATE findings SET payload = json_set(payload, '$.outputs', 'x')", "'outputs' must be"),
    ],
)
def test_garbled_json_columns_exit_10_on_resume(
    tmp_path: Path, statement: str, message: str
) -> None:
    out = output_folder(tmp_path / "out", finished=False)
    sql(out / "xamt.sqlite", statement)
    before = snapshot(tmp_path)
    code, text = invoke("fuzz", "--resume", "--out", out, *FUZZ_ARGS, env=FUZZ_ENV)
    assert code == 10, text
    assert message in text and str(out / "xamt.sqlite") in text, text
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize(
    ("statement", "merged"),
    [
        ("UPDATE findings SET payload = 'not json'", 10),
        ("UPDATE findings SET payload = '[]'", 10),
        ("UPDATE findings SET payload = json_set(payload, '$.minimization', json('{\"calls\": 1}'))", 10),  # noqa: E501
        ("UPDATE findings SET payload = json_set(payload, '$.case.values.x.shape', 'x')", 10),
        ("UPDATE findings SET payload = json_set(payload, '$.case.values.x.b64', '!!')", 10),
        ("UPDATE findings SET payload = json_set(payload, '$.case.values.x.shape', json('[9]'))", 0),  # noqa: E501
        ("UPDATE findings SET payload = json_set(payload, '$.case', json('{}'))", 0),
        ("UPDATE findings SET occurrences = 'many'", 10),
        ("UPDATE finding_campaigns SET campaign = 'x'", 10),
        (f"UPDATE findings SET signature = 7 WHERE signature = '{A}'", 10),
    ],
)  # fmt: skip
def test_garbled_finding_payloads_exit_10_in_repro_and_merge(
    tmp_path: Path, statement: str, merged: int
) -> None:
    """Every one is refused where its case is decoded (`xamt repro`); `xamt merge`, which
    carries cases without decoding them, refuses what breaks the schema."""
    out = output_folder(tmp_path / "run")
    sql(out / "xamt.sqlite", statement)
    before = snapshot(tmp_path)
    env = {"XAMT_PYTHON_NUMPY": "/nonexistent/python", "XAMT_PYTHON_TORCH": "/nonexistent/python"}
    code, text = invoke("repro", "--all", "--out", out, env=env)
    assert code == 10, text
    assert str(out / "xamt.sqlite") in text
    code, text = invoke("merge", out, "--out", tmp_path / "merged")
    assert code == merged, text
    assert outside(snapshot(tmp_path), "merged") == before


# -- wrong-typed fields in findings.json -------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("findings", 0, "outputs"), "text", "findings[0]: field 'outputs' must be an object"),
        (("findings", 0, "outputs", "torch"), 3, "field 'outputs.torch' must be an object"),
        (("campaign",), "fuzz-0-1", "field 'campaign' must be an object, not a string"),
        (("campaign", "cases"), "many", "field 'campaign.cases' must be an integer"),
        (("findings", 0, "occurrences"), "3", "field 'occurrences' must be an integer"),
        (("findings", 0, "known_difference"), {"id": 1, "policy": "p", "reason": "r", "link": "l"},
         "field 'known_difference.id' must be a string"),
        (("findings", 0, "minimization"), {"calls": "x"}, "field 'minimization"),
        (("findings", 0, "verifications"), [{"at": 1, "versions": {}, "present": True}],
         "field 'verifications[0].at' must be a string"),
        (("findings", 0, "library"), "../torch", "'../torch' is malformed"),
        (("findings", 0, "apis"), {"torch": 5}, "field 'apis.torch' must be a string"),
        (("findings", 0, "input_classes"), "nan", "field 'input_classes' must be a list"),
        (("findings", 0, "case", "values"), [], "field 'case.values' must be an object"),
        (("findings", 0), 7, "findings[0]: a finding must be an object"),
        (("findings",), {"x": 1}, "field 'findings' must be a list"),
        (("support",), {"sum": {"torch": {"float32": 1}}}, "field 'support.sum.torch.float32'"),
        (("libraries",), ["torch"], "field 'libraries' must be an object"),
        (("schema",), 1, "schema 1 (made by an older xamt) cannot be read"),
    ],
)  # fmt: skip
def test_wrong_typed_findings_fields_exit_17(
    tmp_path: Path, path: tuple[str | int, ...], value: Any, message: str
) -> None:
    run = output_folder(tmp_path / "run")
    data = json.loads((run / "findings.json").read_text())
    node = data
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    (run / "findings.json").write_text(json.dumps(data))
    before = snapshot(tmp_path)
    for args in (
        ["report", run / "findings.json", "--out", run / "rep", "--no-step-summary"],
        ["file", run / "findings.json", "--repo", "octo/fuzz", "--out", run / "fil"],
        ["merge", run, "--out", tmp_path / "merged"],
    ):
        if args[0] == "merge":
            (run / "xamt.sqlite").rename(run / "kept.sqlite")  # merge reads findings.json
        code, text = invoke(*args)
        assert code == 17, (args, text)
        assert str(run / "findings.json") in text and message in text, text
    assert outside(snapshot(tmp_path), "run") == outside(before, "run")


# -- empty, foreign and missing stores ---------------------------------------------------------


def test_a_zero_byte_store_is_refused_and_never_rewritten(tmp_path: Path) -> None:
    """`xamt repro --all` rewrote a zero-byte store as an empty one although findings.json
    beside it listed 155 findings; `xamt fuzz --resume` silently started a new campaign."""
    run = output_folder(tmp_path / "run")
    (run / "xamt.sqlite").write_bytes(b"")
    before = snapshot(tmp_path)
    runs: list[list[str | Path]] = [
        ["repro", "--all", "--out", run],
        ["fuzz", "--resume", "--out", run, *FUZZ_ARGS],
        ["fuzz", "--out", run, *FUZZ_ARGS],
        ["merge", run, "--out", tmp_path / "merged"],
    ]
    for args in runs:
        code, text = invoke(*args, env=FUZZ_ENV)
        assert code == 10, (args, text)
        assert "an empty file (0 bytes), not an xamt store" in text, text
        assert (run / "xamt.sqlite").stat().st_size == 0
        assert outside(snapshot(tmp_path), "merged") == before


@pytest.mark.parametrize("kind", ["text", "foreign-sqlite", "empty-sqlite", "folder"])
def test_a_foreign_store_is_refused_and_left_as_it_was(tmp_path: Path, kind: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = out / "xamt.sqlite"
    if kind == "text":
        store.write_text("my notes\n")
    elif kind == "folder":
        store.mkdir()
    else:
        conn = sqlite3.connect(store)
        conn.execute("CREATE TABLE notes (x)" if kind == "foreign-sqlite" else "VACUUM")
        conn.commit()
        conn.close()
    before = snapshot(tmp_path)
    for resume in ([], ["--resume"]):
        code, text = invoke("fuzz", *resume, "--out", out, *FUZZ_ARGS, env=FUZZ_ENV)
        assert (code == 10 and "not an xamt store" in text) or "folder" in text, text
        assert snapshot(tmp_path) == before


def test_resume_with_nothing_to_resume_says_so(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    code, text = invoke("fuzz", "--resume", "--out", missing, *FUZZ_ARGS, env=FUZZ_ENV)
    assert code == 23 and "nothing to resume" in text and "no store" in text, text
    assert not missing.exists()
    done = output_folder(tmp_path / "done")  # its campaign finished
    before = snapshot(tmp_path)
    code, text = invoke("fuzz", "--resume", "--out", done, *FUZZ_ARGS, env=FUZZ_ENV)
    assert code == 23 and f"campaign '{CAMPAIGN}' finished" in text, text
    code, text = invoke(
        "fuzz", "--resume", "--out", done, *FUZZ_ARGS, "--shard", "1/2", env=FUZZ_ENV
    )
    assert code == 23 and "campaign 'fuzz-1-2' is not in it" in text, text
    sql(done / "xamt.sqlite", "UPDATE campaigns SET finished = NULL")
    code, text = invoke(
        "fuzz", "--resume", "--out", done, *FUZZ_ARGS, "--shard", "1/2", env=FUZZ_ENV
    )
    assert code == 23 and "unfinished there: fuzz-0-1 (another --shard?)" in text, text
    assert outside(snapshot(tmp_path), "done") == outside(before, "done")
