"""Lint, format and type checks are part of the test suite, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *cmd],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_ruff_check() -> None:
    result = run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format() -> None:
    result = run("ruff", "format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy() -> None:
    result = run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_xamt_imports_no_deep_learning_library() -> None:
    code = (
        "import sys, xamt, xamt.cli, xamt.workers.pool, xamt.libraries;"
        "[xamt.libraries.adapter_class(n) for n in xamt.libraries.library_names()];"
        "bad = {'torch','tensorflow','jax','paddle','mindspore','mxnet'} & set(sys.modules);"
        "print(sorted(bad)); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


RUFF_STDIN = ("--no-respect-gitignore", "--force-exclude", "--stdin-filename")
GENERATED = ("xamt-out", "xamt-report", "xamt-filing", "xamt-shards", "xamt-merged")


def ruff_on(filename: str, source: str, *cmd: str) -> subprocess.CompletedProcess[str]:
    """ruff on ``source`` as if it were the file ``filename`` of the checkout (``.gitignore``
    not read, so only the project's own exclusions count)."""
    return subprocess.run(
        [sys.executable, "-m", "ruff", *cmd, *RUFF_STDIN, filename, "-"],
        cwd=ROOT,
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.mark.parametrize("folder", GENERATED)
def test_generated_output_is_ignored_by_ruff_and_git(folder: str) -> None:
    """README command 1 writes xamt-out/ (repro scripts included) into the checkout; command 2
    lints the checkout: only the project's own files are read."""
    bad = "import os\nx=1;y  =  2\n"  # unused import, two statements, spacing
    generated = f"{folder}/repro/0123456789abcdef/repro_torch.py"
    for cmd in (("check",), ("format", "--check")):
        assert ruff_on("xamt/not_generated.py", bad, *cmd).returncode == 1  # the control
        result = ruff_on(generated, bad, *cmd)
        assert result.returncode == 0, result.stdout + result.stderr
    if (ROOT / ".git").exists():
        ignored = subprocess.run(
            ["git", "check-ignore", "-q", "--no-index", f"{folder}/findings.json"],
            cwd=ROOT,
            check=False,
        )
        assert ignored.returncode == 0, f"{folder}/ is not in .gitignore"
