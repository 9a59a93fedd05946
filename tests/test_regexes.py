"""Issue 30 item 6: regexes from user files are refused when they can backtrack exponentially.

The check (:mod:`xamt.regexes`) reads the pattern's parse tree; these tests pin what it refuses
(the shapes behind exponential backtracking), what it must accept (every pattern of the
shipped known-differences file, and common safe idioms), and that a user's known-differences
file with a catastrophic pattern is refused at load in one line, also by ``xamt fuzz --budget
20s``, before any worker starts.
"""

from __future__ import annotations

import re
import sys
import time
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xamt.cli import app
from xamt.known import DEFAULT_PATH, KnownDifferencesError, load_known
from xamt.regexes import UnboundedPattern, compile_bounded

CATASTROPHIC = "(.+.+)+@@@"
REFUSED = [
    CATASTROPHIC,
    "(a*)*",
    "(a|a)*",
    "(a|)*",
    "(a+)+b",
    "(a|aa)*b",
    r"(\s*\w+)*x",
    r"^(\w+\s?)*$",
    "(a{1,2})*b",
    "((a+)b?)*c",
    r"(?:[a-z]+\d?)+!",
    "(.*a){12}",
    "(?=(a+)+b)",
    "(?i)(ab|AB)*c",
]
ACCEPTED = [
    r"(\w+\.)+\w+",
    r"^dtype: (\w+, )*numpy(, \w+)* returned",
    r"^(?!.*\(result dtype (bfloat16|float\d+|u?int\d+|bool)\))",
    r"(\d+\.){3}\d+",
    "(ab|cd)*",
    "(a|ab)*c",
    ".*x.*y",
    r"an? \w+ tensor",
]
ENTRY = """
[[difference]]
id = "hostile"
policy = "default-float-type"
reason = "a pattern that backtracks exponentially"
link = "https://example.org/doc"
kind = "dtype"
output = '{pattern}'
"""


@pytest.mark.parametrize("pattern", REFUSED)
def test_patterns_that_backtrack_exponentially_are_refused(pattern: str) -> None:
    with pytest.raises(UnboundedPattern):
        compile_bounded(pattern)


@pytest.mark.parametrize("pattern", ACCEPTED)
def test_safe_patterns_compile(pattern: str) -> None:
    assert compile_bounded(pattern).pattern == pattern


def test_every_shipped_known_difference_pattern_passes_and_the_file_loads() -> None:
    data = tomllib.loads(DEFAULT_PATH.read_text())
    patterns = [
        entry[field]
        for entry in data["difference"]
        for field in ("api", "op", "group", "dtype", "trigger", "error", "output")
        if field in entry
    ]
    assert len(patterns) > 100
    for pattern in patterns:
        compile_bounded(pattern)
    assert len(load_known()) == len(data["difference"])


def test_the_catastrophic_pattern_really_backtracks() -> None:
    """Why the check exists: what it refuses takes seconds on a short text."""
    text = "x" * 22
    start = time.perf_counter()
    assert re.search(CATASTROPHIC, text) is None
    assert time.perf_counter() - start > 0.05


def bad_known(tmp_path: Path) -> Path:
    path = tmp_path / "known.toml"
    path.write_text(ENTRY.format(pattern=CATASTROPHIC))
    return path


def test_a_catastrophic_known_difference_is_refused_at_load_in_one_line(tmp_path: Path) -> None:
    path = bad_known(tmp_path)
    start = time.perf_counter()
    with pytest.raises(KnownDifferencesError) as info:
        load_known(path)
    assert time.perf_counter() - start < 1
    message = str(info.value)
    assert "\n" not in message
    assert str(path) in message and "entry #0 (hostile)" in message
    assert "output" in message and repr(CATASTROPHIC) in message


def test_fuzz_with_a_catastrophic_known_difference_is_refused_quickly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the libraries' interpreter is this one: never started, the refusal comes first
    monkeypatch.setenv("XAMT_PYTHON_NUMPY", sys.executable)
    monkeypatch.setenv("XAMT_PYTHON_TORCH", sys.executable)
    start = time.perf_counter()
    result = CliRunner().invoke(
        app,
        [
            "fuzz",
            "--libs",
            "numpy,torch",
            "--budget",
            "20s",
            "--known-differences",
            str(bad_known(tmp_path)),
            "--out",
            str(tmp_path / "out"),
        ],
    )
    assert time.perf_counter() - start < 15
    assert result.exit_code == 12, result.output
    assert "Traceback" not in result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and CATASTROPHIC in lines[0]
