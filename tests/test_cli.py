"""The command line: happy paths against the real libraries, and every user mistake a clear
message with its documented exit code (never a traceback)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from xamt.cli import app

runner = CliRunner()


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, list(args), env=env)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    assert "Traceback" not in text, text
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, text


def flat(text: str) -> str:
    """``text`` with the frame of Click's error panel gone and its lines joined."""
    return " ".join(text.replace("│", " ").split())


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["env", "install", "nosuchlib"], 3, "unknown library 'nosuchlib'"),
        (["env", "install"], 2, "--all"),
        (["env", "install", "numpy", "--variant", "tpu"], 2, "'tpu' is not one of 'cpu', 'cuda'"),
        (
            ["env", "install", "numpy", "--installer", "conda"],
            2,
            "'conda' is not one of 'auto', 'uv', 'pip'",
        ),
        (["call", "nosuchlib.add"], 3, "cannot tell the library"),
        (["call", "numpy.add", "-a", "[1,"], 2, "cannot read"),
        (["call", "numpy.add", "-a", "1:float99"], 2, "unknown dtype"),
        (["call", "numpy.add", "-k", "1=2"], 2, "NAME=VALUE"),
        (["call", "numpy.add", "numpy.subtract"], 2, "two APIs of numpy"),
        (["call", "numpy.add", "--deadline", "0"], 2, "--deadline"),
    ],
)
def test_user_mistakes_are_clear_errors(args: list[str], code: int, message: str) -> None:
    exit_code, text = invoke(*args)
    assert exit_code == code, text
    assert message in flat(text)


def test_missing_environment_says_how_to_fix(tmp_path: Path) -> None:
    code, text = invoke("call", "numpy.add", "-a", "1", "-a", "2", env={"XAMT_HOME": str(tmp_path)})
    assert code == 4
    assert "xamt env install numpy" in text


def test_broken_environment_is_not_taken_for_a_healthy_one(tmp_path: Path) -> None:
    (tmp_path / "envs" / "torch-cpu" / "bin").mkdir(parents=True)  # an install that died
    code, text = invoke("env", "list", "--json", "--no-check", env={"XAMT_HOME": str(tmp_path)})
    assert code == 0
    rows = {r["library"]: r for r in json.loads(text)}
    assert rows["torch"]["state"] == "broken" and rows["torch"]["installed"] is False
    assert rows["numpy"]["state"] == "missing"
    code, text = invoke("call", "torch.add", env={"XAMT_HOME": str(tmp_path)})
    assert code == 4 and "incomplete" in text


def test_unknown_api_prints_the_table_and_exits_5(pythons: dict[str, str]) -> None:
    code, text = invoke("call", "numpy.no_such_api", "torch.add", "-a", "1:int64", "-a", "2")
    assert code == 5
    assert "no_such_api" in text and "unknown-api" in text


def test_call_across_all_libraries(pythons: dict[str, str]) -> None:
    code, text = invoke(
        "call",
        "numpy.maximum",
        "torch.maximum",
        "tensorflow.math.maximum",
        "jax.numpy.maximum",
        "paddle.maximum",
        "mindspore.ops.maximum",
        "mxnet.nd.maximum",
        "-a",
        "[1.0, -0.0, 2.0]:float32",
        "-a",
        "[0.5, 0.0, -3.0]:float32",
        "--json",
    )
    doc = json.loads(text)
    rows = doc["outcomes"]
    assert {r["library"] for r in rows} == set(pythons)
    for row in rows:
        assert row["status"] == "ok" and row["version"]
        assert "float32[3]" in row["result"] and "1." in row["result"]
        assert row["value"]["$array"] == "float32" and row["value"]["shape"] == [3]
    # maximum(-0.0, 0.0): libraries may differ on the sign of zero, and say so
    assert code == (18 if doc["verdict"] else 0), text


def test_call_names_the_library_that_departs(pythons: dict[str, str]) -> None:
    """paddle.sinc returns 1.0 for NaN and -inf where the others return NaN: the verdict
    names paddle, and the exit code says the libraries disagree."""
    code, text = invoke(
        "call",
        "numpy.sinc",
        "paddle.sinc",
        "torch.sinc",
        "-a",
        "[nan, -inf, 0.5]:float32",
        "--json",
    )
    doc = json.loads(text)
    assert code == 18, text
    assert {b["library"] for b in doc["verdict"]} == {"paddle"}
    assert doc["verdict"][0]["kind"] == "nan"


def test_call_shows_errors_side_by_side(pythons: dict[str, str]) -> None:
    code, text = invoke(
        "call", "numpy.add", "torch.add", "-a", "ones(2,3):float32", "-a", "ones(4,5):float32"
    )
    assert code == 0  # a call every library rejects is no disagreement
    assert "error" in text and "ValueError" in text and "RuntimeError" in text


def test_env_list_json_reports_each_library(pythons: dict[str, str]) -> None:
    code, text = invoke("env", "list", "--json")
    assert code == 0
    rows = {r["library"]: r for r in json.loads(text)}
    assert set(rows) == set(pythons)
    for lib, row in rows.items():
        assert row["state"] == "ready" and row["imports"] is True, row
        assert row["version"] and row["python"] == pythons[lib]
        assert "float32" in row["dtypes"]
    assert "bfloat16" not in rows["numpy"]["dtypes"]
    assert rows["mxnet"]["numpy"].startswith("1.23")


def test_external_interpreter_override(tmp_path: Path, pythons: dict[str, str]) -> None:
    env = {"XAMT_HOME": str(tmp_path), "XAMT_PYTHON_NUMPY": pythons["numpy"]}
    code, text = invoke("env", "list", "--json", env=env)
    rows = {r["library"]: r for r in json.loads(text)}
    assert rows["numpy"]["state"] == "external" and rows["numpy"]["imports"] is True
    assert rows["torch"]["state"] == "missing"
    (tmp_path / "config.toml").write_text(f'[interpreters]\ntorch = "{pythons["torch"]}"\n')
    code, text = invoke("call", "torch.add", "-a", "1:int64", "-a", "2", env=env)
    assert code == 0 and "3" in text


def test_bad_config_file_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[interpreters\n")
    code, text = invoke("env", "list", env={"XAMT_HOME": str(tmp_path)})
    assert code == 2 and "config.toml" in text


def test_catalog_show_names_the_traits_and_the_code_members_share() -> None:
    """What the judge reads about a group, with its links: the operation's traits and the
    shared-code records of its members (paddle's argmin runs one kernel with argmax)."""
    code, text = invoke("catalog", "show", "argmin")
    assert code == 0, text
    assert "trait nan-position-of-arg-extremum: opens value when nan-input" in text
    assert "shared code arg-min-max-kernel: paddle.argmin runs phi::ArgMinMaxKernel" in text
    code, text = invoke("catalog", "show", "argmin", "--json")
    shown = json.loads(text)
    assert [c["name"] for c in shown["shared_code"]] == ["arg-min-max-kernel"]
    assert all(t["link"].startswith("https://") for t in shown["traits"])


def test_version() -> None:
    code, text = invoke("--version")
    assert code == 0 and text.startswith("xamt ")


# -- the bad-input table: each mistake its own documented code, a message naming it ----------


def test_unknown_group_is_its_own_code() -> None:
    code, text = invoke("catalog", "show", "no_such_group[axis]")
    assert code == 19, text
    assert "no group 'no_such_group[axis]' in the catalog" in text


def test_unknown_signature_is_its_own_code(tmp_path: Path) -> None:
    from xamt.store import Store

    with Store(tmp_path / "xamt.sqlite"):
        pass  # an empty, healthy store
    code, text = invoke("repro", "deadbeef", "--out", str(tmp_path))
    assert code == 20, text
    assert "no finding with signature 'deadbeef'" in text


def test_missing_store_is_its_own_code(tmp_path: Path) -> None:
    code, text = invoke("repro", "--all", "--out", str(tmp_path / "nothing-here"))
    assert code == 21, text
    assert f"no store at {tmp_path / 'nothing-here' / 'xamt.sqlite'}" in text
    assert "--out" in text


@pytest.mark.parametrize("where", ["variable", "config"])
def test_configured_interpreter_that_does_not_exist(tmp_path: Path, where: str) -> None:
    env = {"XAMT_HOME": str(tmp_path)}
    if where == "variable":
        env["XAMT_PYTHON_TORCH"] = "/nonexistent/python"
    else:
        (tmp_path / "config.toml").write_text('[interpreters]\ntorch = "/nonexistent/python"\n')
    code, text = invoke("call", "torch.add", "-a", "1", "-a", "2", env=env)
    assert code == 22, text
    assert "the torch interpreter configured by" in text and "/nonexistent/python" in text
    assert ("XAMT_PYTHON_TORCH" if where == "variable" else "config.toml") in text
    assert "install did not finish" not in text


@pytest.mark.parametrize("budget", ["0.5", "2.5c", "0.5 c"])
def test_fractional_case_budget_is_a_usage_error(budget: str) -> None:
    code, text = invoke("fuzz", "--budget", budget, "--libs", "numpy,torch")
    assert code == 2, text
    assert "a number of cases is a whole number" in text


def test_fractional_time_budget_is_fine() -> None:
    from xamt.fuzz.campaign import parse_budget

    assert parse_budget("0.5m").seconds == 30 and parse_budget("12").cases == 12


def test_repeated_keyword_is_a_usage_error() -> None:
    code, text = invoke("call", "numpy.sum", "-a", "[1, 2]", "-k", "axis=0", "-k", "axis=-1")
    assert code == 2, text
    assert "keyword 'axis' given twice" in text


def test_every_error_code_is_in_the_readme_table() -> None:
    import re

    import xamt.catalog.model
    import xamt.envs
    import xamt.findings
    import xamt.known
    import xamt.merge
    import xamt.report.github
    import xamt.store  # noqa: F401  (each defines its own errors)
    from xamt.errors import XamtError

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    table = readme.split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.M)}
    seen, todo = set(), [XamtError]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls is not XamtError:
            seen.add((cls.__name__, cls.exit_code))
    assert {code for _, code in seen} <= documented, sorted(seen)
    assert {
        ("UnknownGroup", 19),
        ("UnknownSignature", 20),
        ("StoreMissing", 21),
        ("InterpreterMissing", 22),
    } <= seen


def test_help_answers_h_with_an_example_for_every_command() -> None:
    import typer.main

    from xamt.cli import app as root

    def walk(cmd: Any, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        if hasattr(cmd, "commands"):  # a group
            return [p for name, sub in cmd.commands.items() for p in walk(sub, (*path, name))]
        return [path]

    commands = walk(typer.main.get_command(root), ())
    assert len(commands) >= 13 and ("catalog", "build") in commands
    for path in commands:
        code, text = invoke(*path, "-h")
        assert code == 0, (path, text)
        assert "Example:" in text, path
    code, text = invoke("-h")
    assert code == 0 and "--install-completion" in text and "Example:" in text


def test_choices_are_checked_by_the_parser() -> None:
    code, text = invoke("fuzz", "--schedule", "random")
    assert code == 2 and "'random' is not one of 'variance', 'uniform'" in flat(text)
    code, text = invoke("catalog", "list", "--family", "nope")
    assert code == 2 and "'nope' is not one of" in flat(text)
    code, text = invoke("catalog", "list", "--family", "fft")
    assert code == 0 and "fft" in text


def test_catalog_build_takes_out_and_the_old_output_spelling(tmp_path: Path) -> None:
    code, text = invoke("catalog", "build", "numpy", "--out", str(tmp_path / "c.toml"))
    assert code == 2 and "at least two libraries" in text  # --out parsed
    code, text = invoke(
        "catalog", "build", "numpy", "torch", "--out", "a.toml", "--output", "b.toml"
    )
    assert code == 2 and "give --out only" in text
    code, text = invoke("catalog", "build", "-h")
    assert "--output" not in text
