"""Lint, format and type checks are part of the test suite, so CI enforces them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
