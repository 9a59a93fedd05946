"""A fuzz corpus for xamt's own inputs (issue 14): Hypothesis mutates stores, findings.json
files, catalogs, known-differences files, config.toml and command-line arguments, and feeds
them to the commands that read them. Whatever it makes, each command must:

- print no traceback and raise nothing but its exit;
- exit with a code of the README's table;
- write, change or delete nothing outside its output folder (the sandbox holding inputs and
  outputs is listed, with file digests, before and after; the folder around it too).

No command here starts a worker: ``XAMT_HOME`` is an empty folder (no library environment)
and every ``XAMT_PYTHON_<LIB>`` names a missing interpreter, so a command that gets as far as
running cases stops with exit 4 or 22 instead. ``GITHUB_TOKEN``, ``GITHUB_STEP_SUMMARY`` and
``XAMT_LIBS`` are unset for every run.

Bounded in CI (:data:`EXAMPLES` per test); a longer local run:
``XAMT_FUZZ_EXAMPLES=2000 python -m pytest tests/test_input_fuzz.py``.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_inputs import (
    FUZZ_ARGS,
    documented_exit_codes,
    output_folder,
    snapshot,
)
from typer.testing import CliRunner

from xamt.catalog import model
from xamt.cli import app
from xamt.known import DEFAULT_PATH
from xamt.libraries import library_names

EXAMPLES = int(os.environ.get("XAMT_FUZZ_EXAMPLES", "0")) or 20
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
CODES = documented_exit_codes()
MISSING_PYTHON = "/nonexistent/xamt-fuzz/python"
HOSTILE = (
    "",
    "..",
    "../../x",
    "../../../ESCAPED",
    "/etc/passwd",
    "repro/../../secret.txt",
    "a\x00b",
    "\x1b[31mred",
    "x" * 5000,
    "@someone #12 GH-3",
    "<script>alert(1)</script>",
    "0123456789abcdef",
    "NaN",
    "-1",
    "1e309",
    "ü\u202e",
)
KEYS = (
    "signature", "kind", "library", "group", "outputs", "case", "values", "apis", "campaign",
    "findings", "support", "schema", "repro", "$array", "shape", "b64", "$float", "$dict",
    "$tuple", "$complex", "$dtype", "rng", "schedule", "seen", "kinds", "seconds", "pending",
    "minimization", "known_difference", "verifications", "odd", "difference", "id", "link",
    "interpreters", "members", "roles", "dtype",
)  # fmt: skip
runner = CliRunner()

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(HOSTILE)
)
json_values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


# -- mutations ------------------------------------------------------------------------------


def _places(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every place in a JSON tree, the root first."""
    yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _places(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _places(value, (*path, i))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


@st.composite
def mutated_json(draw: st.DrawFn, base: Any) -> Any:
    """``base`` with one to three mutations: a node replaced (by a random value, a hostile
    string, its own text, a list around it), removed, or given an extra key."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(1, 3))):
        places = list(_places(doc))
        path = draw(st.sampled_from(places))
        op = draw(st.sampled_from(["replace", "hostile", "stringify", "wrap", "remove", "add"]))
        old = _get(doc, path)
        if op == "add" and isinstance(old, dict):
            old[draw(st.sampled_from(KEYS) | st.text(max_size=6))] = draw(json_values)
            continue
        if op == "remove" and path:
            parent = _get(doc, path[:-1])
            del parent[path[-1]]
            continue
        if op == "hostile":
            new = draw(st.sampled_from(HOSTILE))
        elif op == "stringify":
            new = json.dumps(old)
        elif op == "wrap":
            new = [old]
        else:
            new = draw(json_values)
        if not path:
            doc = new
        else:
            _get(doc, path[:-1])[path[-1]] = new
    return doc


@st.composite
def mutated_text(draw: st.DrawFn, text: str) -> str:
    """``text`` cut short, with bytes flipped, or with a random slice repeated."""
    op = draw(st.sampled_from(["cut", "flip", "repeat", "empty"]))
    if op == "empty" or not text:
        return ""
    i = draw(st.integers(0, len(text) - 1))
    if op == "cut":
        return text[:i]
    if op == "flip":
        return text[:i] + draw(st.characters(codec="utf-8")) + text[i + 1 :]
    j = draw(st.integers(i, min(len(text), i + 40)))
    return text[:j] + text[i:j] * draw(st.integers(1, 4)) + text[j:]


def toml_dumps(data: Any) -> str:
    """A small TOML writer for known-differences and config documents (whatever it cannot
    write comes out as something TOML cannot read, which is an input too)."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v) if v == v and abs(v) != float("inf") else "nan"
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) + "}"
        return json.dumps(str(v))

    if not isinstance(data, dict):
        return value(data)
    lines = []
    for key, v in data.items():
        if isinstance(v, list) and v and all(isinstance(x, dict) for x in v):
            for table in v:
                lines.append(f"[[{json.dumps(str(key))}]]")
                lines += [f"{json.dumps(str(k))} = {value(x)}" for k, x in table.items()]
        elif isinstance(v, dict):
            lines.append(f"[{json.dumps(str(key))}]")
            lines += [f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()]
        else:
            lines.insert(0, f"{json.dumps(str(key))} = {value(v)}")
    return "\n".join(lines) + "\n"


# -- running a command in a sandbox ----------------------------------------------------------


class Sandbox:
    """A fresh folder per example: ``in/`` (inputs), ``home/`` (XAMT_HOME, no environment)
    and ``out/`` (outputs, and the working directory). What a command may change is only
    what it was given as its output."""

    def __init__(self) -> None:
        self.parent = Path(tempfile.mkdtemp(prefix="xamt-fuzz-"))
        self.root = self.parent / "box"
        for name in ("in", "home", "out"):
            (self.root / name).mkdir(parents=True)

    def close(self) -> None:
        shutil.rmtree(self.parent, ignore_errors=True)

    def env(self) -> dict[str, str | None]:
        env: dict[str, str | None] = {
            "XAMT_HOME": str(self.root / "home"),
            "GITHUB_TOKEN": None,
            "GITHUB_STEP_SUMMARY": None,
            "GITHUB_API_URL": None,
            "XAMT_LIBS": None,
        }
        for lib in library_names():
            env[f"XAMT_PYTHON_{lib.upper()}"] = MISSING_PYTHON
        return env

    def run(self, args: list[str | Path], *, writes: tuple[Path, ...] = ()) -> int:
        """Run ``xamt ARGS`` in ``out/``; check the contract; return the exit code. ``writes``:
        what the command may change besides ``out/`` (the store it updates)."""
        before = snapshot(self.parent)
        cwd = os.getcwd()
        os.chdir(self.root / "out")
        try:
            result = runner.invoke(app, [str(a) for a in args], env=self.env())
        finally:
            os.chdir(cwd)
        text = result.output + (result.stderr if result.stderr_bytes is not None else "")
        shown = f"xamt {' '.join(map(str, args))!r}\n{text[-3000:]}"
        assert "Traceback" not in text, shown
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            raise AssertionError(f"{shown}\nraised {result.exception!r}") from result.exception
        assert result.exit_code in CODES, (result.exit_code, shown)
        allowed = ["box/out", *(p.relative_to(self.parent).as_posix() for p in writes)]
        after = snapshot(self.parent)
        for snap in (before, after):
            for key in [k for k in snap if any(k == a or k.startswith(a + "/") for a in allowed)]:
                del snap[key]
            for key in [k for k in snap if any(k.startswith(f"{a}-") for a in allowed)]:
                del snap[key]  # a store's -wal and -shm beside it
        assert after == before, shown
        return result.exit_code


@contextlib.contextmanager
def sandbox() -> Iterator[Sandbox]:
    box = Sandbox()
    try:
        yield box
    finally:
        box.close()


# -- what the mutations start from -----------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Valid inputs: an output folder with a resumable campaign (its state, a pending
    candidate) and two findings; its findings.json; a small catalog; the shipped known
    differences; a config.toml."""
    root = tmp_path_factory.mktemp("base")
    run = output_folder(root / "run", finished=False)
    conn = sqlite3.connect(run / "xamt.sqlite")
    payload = conn.execute("SELECT payload FROM findings LIMIT 1").fetchone()[0]
    conn.execute(
        "INSERT INTO candidates (campaign, seq, signature, kind, grp, dtype, payload) "
        "VALUES (1, 0, ?, 'nan', 'sum', 'float32', ?)",
        ("c" * 16, payload),
    )
    conn.commit()
    conn.close()
    catalog = json.loads(model.CATALOG_PATH.read_text())
    catalog["groups"] = [g for g in catalog["groups"] if g["id"] in ("sum", "abs", "add")]
    return {
        "run": run,
        "findings": json.loads((run / "findings.json").read_text()),
        "catalog": catalog,
        "known": DEFAULT_PATH.read_text(),
        "config": {"interpreters": {"numpy": MISSING_PYTHON, "torch": MISSING_PYTHON}},
    }


def _folder(box: Sandbox, base: dict[str, Any], name: str = "run") -> Path:
    folder = box.root / "in" / name
    shutil.copytree(base["run"], folder, symlinks=True)
    return folder


STORE_COLUMNS = (
    ("campaigns", "state"),
    ("campaigns", "config"),
    ("campaigns", "name"),
    ("campaigns", "next_seq"),
    ("campaigns", "finished"),
    ("candidates", "payload"),
    ("candidates", "signature"),
    ("candidates", "seq"),
    ("findings", "payload"),
    ("findings", "signature"),
    ("findings", "occurrences"),
    ("findings", "first_seen"),
    ("finding_campaigns", "campaign"),
    ("cases", "kinds"),
)


@st.composite
def store_mutations(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """What to do to a store: set a column of every row (to a mutation of its JSON, a hostile
    or random value), or damage the file."""
    steps: list[tuple[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["column", "column", "column", "file"]))
        if kind == "file":
            steps.append(("file", draw(st.sampled_from(["empty", "cut", "flip", "text"]))))
            steps.append(("at", draw(st.floats(0, 1))))
            continue
        table, column = draw(st.sampled_from(STORE_COLUMNS))
        how = draw(st.sampled_from(["json", "value", "hostile"]))
        steps.append(("column", (table, column, how, draw(st.randoms(use_true_random=False)))))
    return steps


def _apply(store: Path, steps: list[tuple[str, Any]], draw_json: Callable[[Any], Any]) -> None:
    it = iter(steps)
    for kind, arg in it:
        if kind == "file":
            _, at = next(it)
            data = store.read_bytes()
            cut = int(len(data) * at)
            if arg == "empty":
                store.write_bytes(b"")
            elif arg == "cut":
                store.write_bytes(data[:cut])
            elif arg == "flip" and data:
                i = min(cut, len(data) - 1)
                store.write_bytes(data[:i] + bytes([data[i] ^ 0x5A]) + data[i + 1 :])
            else:
                store.write_text("not a database\n")
            return
        table, column, how, rnd = arg
        conn = sqlite3.connect(store)
        try:
            rows = conn.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
            for rowid, old in rows:
                if how == "json":
                    try:
                        new: Any = json.dumps(draw_json(json.loads(old)))
                    except (TypeError, ValueError):
                        new = json.dumps(draw_json(old))
                elif how == "hostile":
                    new = rnd.choice(HOSTILE)
                else:
                    new = rnd.choice([None, -1, 0, 2**62, 1.5, "x", b"\x00\xff", "[]", "{}"])
                conn.execute(f"UPDATE {table} SET {column} = ? WHERE rowid = ?", (new, rowid))
            conn.commit()
        except sqlite3.Error:
            conn.rollback()
        finally:
            conn.close()


# -- the corpus ----------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_mutated_findings_json_in_report_file_and_merge(
    base: dict[str, Any], data: st.DataObject
) -> None:
    with sandbox() as box:
        folder = _folder(box, base)
        (folder / "xamt.sqlite").unlink()  # merge then reads findings.json
        if data.draw(st.booleans(), label="text-level"):
            text = json.dumps(base["findings"])
            content = data.draw(mutated_text(text), label="findings.json text")
        else:
            doc = data.draw(mutated_json(base["findings"]), label="findings.json")
            content = json.dumps(doc)
        (folder / "findings.json").write_text(content)
        findings = folder / "findings.json"
        out = box.root / "out"
        codes = [
            box.run(["report", findings, "--out", out / "rep", "--no-step-summary"]),
            box.run(["file", findings, "--repo", "octo/fuzz", "--out", out / "fil"]),
            box.run(["merge", folder, "--out", out / "merged"]),
        ]
        assert set(codes) <= {0, 17}, codes


@FUZZ
@given(data=st.data())
def test_mutated_stores_in_repro_merge_and_resume(
    base: dict[str, Any], data: st.DataObject
) -> None:
    with sandbox() as box:
        folder = _folder(box, base)
        steps = data.draw(store_mutations(), label="store mutations")
        _apply(folder / "xamt.sqlite", steps, lambda v: data.draw(mutated_json(v)))
        out = box.root / "out"
        fuzz = ["fuzz", "--resume", "--out", folder, *FUZZ_ARGS]
        box.run(["repro", "--all", "--out", folder], writes=(folder,))
        box.run(["merge", folder, "--out", out / "merged"])  # an input: left as it was
        box.run(fuzz, writes=(folder,))


@FUZZ
@given(data=st.data())
def test_mutated_catalogs_known_differences_and_config(
    base: dict[str, Any], data: st.DataObject
) -> None:
    with sandbox() as box:
        folder = _folder(box, base)
        catalog = box.root / "in" / "catalog.json"
        catalog.write_text(json.dumps(data.draw(mutated_json(base["catalog"]), label="catalog")))
        known = box.root / "in" / "known.toml"
        if data.draw(st.booleans(), label="known as text"):
            known.write_text(data.draw(mutated_text(base["known"]), label="known text"))
        else:
            import tomllib

            parsed = tomllib.loads(base["known"])
            known.write_text(toml_dumps(data.draw(mutated_json(parsed), label="known")))
        config = box.root / "home" / "config.toml"
        config.write_text(toml_dumps(data.draw(mutated_json(base["config"]), label="config")))
        out = box.root / "out"
        findings = folder / "findings.json"
        codes = [
            box.run(["report", findings, "--catalog", catalog, "--out", out / "rep"]),
            box.run(["fuzz", "--out", out / "run", "--known-differences", known, *FUZZ_ARGS]),
            box.run(["fuzz", "--out", out / "run2", "--catalog", catalog, *FUZZ_ARGS]),
        ]
        assert codes[0] in (0, 8), codes


OPTION_VALUES = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(max_size=10),
    st.integers(-5, 10**6).map(str),
    st.floats(allow_nan=True).map(str),
    st.sampled_from(["1/0", "0/0", "2/1", "-1/3", "1h", "0", "99999999999999999999", "nan"]),
)
COMMANDS = {
    "report": ["--catalog", "--out", "--step-summary", "--no-step-summary"],
    "file": ["--repo", "--max-new", "--close-after", "--write-delay", "--max-wait",
             "--verifications", "--state-file", "--out", "--base-url", "--post"],
    "merge": ["--out"],
    "repro": ["--all", "--runs", "--out", "--json", "--variant"],
    "fuzz": ["--budget", "--seed", "--libs", "--group", "--shard", "--schedule", "--resume",
             "--reproduce", "--deadline", "--known-differences", "--triage-budget",
             "--catalog", "--variant", "--out"],
}  # fmt: skip
FLAGS = {"--step-summary", "--no-step-summary", "--post", "--all", "--json", "--resume"}
PATH_OPTIONS = {"--catalog", "--verifications", "--state-file", "--known-differences"}


@FUZZ
@given(data=st.data())
def test_mutated_command_lines(base: dict[str, Any], data: st.DataObject) -> None:
    """Commands with random options and values; paths point at the inputs (valid, missing,
    a folder, the store, garbage) and outputs into ``out/``."""
    with sandbox() as box:
        folder = _folder(box, base)
        (box.root / "in" / "garbage").write_bytes(b"\x00\xff{not json")
        inputs = [
            folder / "findings.json",
            folder / "xamt.sqlite",
            folder,
            box.root / "in" / "garbage",
            box.root / "in" / "missing.json",
        ]
        command = data.draw(st.sampled_from(sorted(COMMANDS)), label="command")
        args: list[str | Path] = [command]
        if command in ("report", "file"):
            args.append(data.draw(st.sampled_from(inputs), label="findings"))
        elif command == "merge":
            args += data.draw(st.lists(st.sampled_from(inputs), min_size=0, max_size=3))
        elif command == "repro" and data.draw(st.booleans()):
            args.append(data.draw(OPTION_VALUES, label="signature"))
        options = data.draw(st.lists(st.sampled_from(COMMANDS[command]), max_size=4))
        if command in ("repro", "fuzz") and "--out" not in options:
            options.append("--out")
        for option in options:
            args.append(option)
            if option in FLAGS:
                continue
            if option == "--out":
                name = data.draw(st.sampled_from(["a", "b/c", "x"]))
                target = folder if command in ("repro", "fuzz") else box.root / "out" / name
                args.append(target)
            elif option in PATH_OPTIONS:
                args.append(data.draw(st.sampled_from(inputs), label=option))
            elif option == "--base-url":
                args.append("http://127.0.0.1:9")  # nothing listens: never reached without --post
            else:
                args.append(data.draw(OPTION_VALUES, label=option))
        if command in ("repro", "fuzz"):
            box.run(args, writes=(folder,))  # their output folder
        else:
            box.run(args)


# -- a campaign's state, restored ------------------------------------------------------------


def _campaign(store: Any) -> Any:
    """A campaign over `sum` and `abs` with numpy and torch whose pool is never started."""
    from xamt.fuzz.campaign import Campaign, CampaignConfig, parse_budget, select_groups
    from xamt.workers.pool import WorkerPool

    groups = select_groups(model.load(), ["numpy", "torch"], "^(sum|abs)$")
    config = CampaignConfig(
        name="fuzz-0-1", seed=1, budget=parse_budget("10"), libraries=("numpy", "torch")
    )
    return Campaign(config, groups, WorkerPool({}), store, known=[])


@pytest.fixture(scope="module")
def saved_state(base: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The state a campaign saves after a batch, with a corpus entry and a batch in flight."""
    from xamt.store import Store

    with Store(tmp_path_factory.mktemp("state") / "xamt.sqlite") as store:
        campaign = _campaign(store)
        campaign.open(resume=False)
        state = json.loads(json.dumps(campaign._saved_state()))
    case = base["findings"]["findings"][0]["case"]
    arm = [case["group"], case["dtype"], case["value_class"]]
    state["schedule"]["corpus"] = [[1.0, arm, case]]
    state["schedule"]["stats"] = {"/sum": [2, 0.5]}
    state["pending"] = [{"picks": [[arm, 0]], "cases": [case]}]
    state["seen"] = {"a" * 16: 2}
    state["suspected"] = ["a" * 16]
    return state


def test_the_saved_state_resumes(saved_state: Any, tmp_path: Path) -> None:
    """The base of the next test is a state that resumes (else it would test nothing)."""
    from xamt.store import Store

    with Store(tmp_path / "xamt.sqlite") as store:
        cid = store.start_campaign(name="fuzz-0-1", config={})
        store.commit_batch(cid, cases=[], candidates=[], state=saved_state, next_seq=3)
        campaign = _campaign(store)
        assert campaign.open(resume=True)
        assert campaign.state.seq == 3 and len(campaign._resumed) == 1


@FUZZ
@given(data=st.data())
def test_a_mutated_campaign_state_resumes_or_is_refused(
    saved_state: Any, data: st.DataObject
) -> None:
    """Whatever a store holds as the state to resume, `Campaign.open` restores it or refuses
    it as a corrupted store (10) or a usage error (another --group: 2): never another error."""
    from xamt.errors import UsageError
    from xamt.store import Store, StoreError

    state = data.draw(mutated_json(saved_state), label="state")
    with sandbox() as box, Store(box.root / "out" / "xamt.sqlite") as store:
        cid = store.start_campaign(name="fuzz-0-1", config={})
        conn = sqlite3.connect(store.path)
        conn.execute(
            "UPDATE campaigns SET state = ?, next_seq = 3 WHERE id = ?",
            (json.dumps(state), cid),
        )
        conn.commit()
        conn.close()
        with contextlib.suppress(StoreError, UsageError):
            _campaign(store).open(resume=True)
