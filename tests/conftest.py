"""Shared fixtures. Integration tests use the real library environments (never mocks)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from xamt import envs
from xamt.libraries import library_names
from xamt.workers.pool import WorkerPool

# The misbehaving calls (xamt_testing.*) a worker started with testing=True can make: they
# live with the tests; workers, and xamt commands the tests start, inherit this.
os.environ["XAMT_TESTING_OPS"] = str(Path(__file__).with_name("support") / "testing_ops.py")


@pytest.fixture(scope="session")
def pythons() -> dict[str, str]:
    """Interpreter of every library environment; fails (not skips) when one is missing."""
    found = {}
    for lib in library_names():
        found[lib] = envs.interpreter(lib)  # raises with "run `xamt env install LIB`"
    return found


@pytest.fixture(scope="session")
def pool(pythons: dict[str, str]) -> Iterator[WorkerPool]:
    """One worker per library for the whole session, with the test-only calls enabled."""
    with WorkerPool(pythons, deadline=60, testing=True) as p:
        p.start()
        yield p
