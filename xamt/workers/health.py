"""Worker health checks for the orchestrator: does each library's worker start and import?

Runs in the orchestrator (like :mod:`xamt.workers.pool`), never inside a library environment.
"""

from __future__ import annotations

from typing import Any

from xamt.errors import WorkerError
from xamt.workers.pool import WorkerPool


def verify_env(lib: str, python: str) -> str:
    """Start the library's worker once; raise if the library does not load. Returns its version."""
    with WorkerPool({lib: python}) as pool:
        hello = pool.start()[lib]
    return hello.version


def check_imports(pythons: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Start all workers in parallel; report per library whether it loaded.

    Each library maps to ``{"imports": bool, "version", "dtypes", "numpy"}`` when it loaded,
    ``{"imports": False, "error": str, "dtypes": []}`` when it did not. Never raises for a
    worker that fails to start.
    """
    result: dict[str, dict[str, Any]] = {}
    if not pythons:
        return result
    pool = WorkerPool(pythons)
    try:
        for worker in pool.workers.values():
            try:
                worker.start()
            except WorkerError as exc:
                result[worker.library] = {"imports": False, "error": str(exc), "dtypes": []}
        for lib in pythons:
            if lib in result:
                continue
            try:
                hello = pool.ready(lib)
                result[lib] = {
                    "imports": True,
                    "version": hello.version,
                    "dtypes": list(hello.dtypes),
                    "numpy": hello.numpy,
                }
            except WorkerError as exc:
                result[lib] = {"imports": False, "error": str(exc), "dtypes": []}
    finally:
        pool.close()
    return result
