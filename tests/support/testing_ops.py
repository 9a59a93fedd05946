"""Calls that misbehave on purpose, for the pool's tests (``xamt_testing.*`` API paths).

Reachable only when the worker runs with ``XAMT_WORKER_TESTING=1`` and ``XAMT_TESTING_OPS``
names this file (``tests/conftest.py`` sets it).
"""

from __future__ import annotations

import ctypes
import os
import signal
import time
from typing import Any


def segfault() -> None:
    """Read address 0: the worker dies with SIGSEGV."""
    ctypes.string_at(0)


def abort() -> None:
    """The worker dies with SIGABRT, as a failed C++ assertion would make it."""
    os.abort()


def fpe() -> None:
    """The worker dies with SIGFPE, as an integer division by zero in C would make it."""
    os.kill(os.getpid(), signal.SIGFPE)


def sleep(seconds: float) -> float:
    """Block for ``seconds``: past the deadline this is a hang."""
    time.sleep(seconds)
    return seconds


def allocate(nbytes: int) -> int:
    """Allocate and touch ``nbytes``: beyond the memory cap this is a resource outcome."""
    block = bytearray(nbytes)
    return len(block)


def echo(*args: Any, **kwargs: Any) -> Any:
    """Return the native values as given: a round trip numpy -> library -> numpy."""
    return (args, kwargs) if kwargs else (args[0] if len(args) == 1 else args)


def pid() -> int:
    return os.getpid()


def loaded_modules() -> list[str]:
    """Top-level modules imported in this worker (to check the import rule)."""
    import sys

    return sorted({name.split(".")[0] for name in sys.modules})
