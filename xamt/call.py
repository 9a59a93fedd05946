"""One call on several libraries and the fuzzer's verdict on it: what ``xamt call`` runs.

A plain function: no Typer, no printing. The command line parses the arguments
(:mod:`xamt.callspec`), calls :func:`run_call` and prints the :class:`CallResult`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xamt import envs
from xamt.errors import UnknownApi, UsageError
from xamt.libraries import library_of_api
from xamt.oracle.verdict import Judgement, Terms, judge
from xamt.types import Call, Outcome
from xamt.workers.api_paths import FOREIGN_MODULES, foreign_component
from xamt.workers.pool import DEFAULT_DEADLINE, DEFAULT_MEMORY_CAP, WorkerPool


@dataclass(frozen=True, kw_only=True)
class CallResult:
    """What each library did (``outcomes``, by library), its version, and the verdict."""

    outcomes: dict[str, Outcome]
    versions: dict[str, str]
    verdict: Judgement


def apis_by_library(apis: Sequence[str]) -> dict[str, str]:
    """library -> API, one API per library (UsageError for two of one library; UnknownApi for
    a path through a module outside its library, ``torch.os.kill``, refused before any worker
    starts: the worker would refuse it too)."""
    by_lib: dict[str, str] = {}
    for api in apis:
        lib = library_of_api(api)
        foreign = foreign_component(api)
        if foreign is not None:
            raise UnknownApi(
                f"{api!r} refused: it reaches module {foreign!r} ({FOREIGN_MODULES[foreign]}), "
                f"outside {lib}; API paths stay inside their library"
            )
        if lib in by_lib:
            raise UsageError(f"two APIs of {lib} ({by_lib[lib]}, {api}); give one per library")
        by_lib[lib] = api
    return by_lib


def run_call(
    apis: Sequence[str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    seed: int = 0,
    variant: str = "cpu",
    deadline: float = DEFAULT_DEADLINE,
) -> CallResult:
    """Run ``api(*args, **kwargs)`` for each API in its library's worker, then judge the
    outcomes as the fuzzer does (the operation named by the first API's last part)."""
    if deadline <= 0:
        raise UsageError("--deadline must be positive")
    by_lib = apis_by_library(apis)
    pythons = {lib: envs.interpreter(lib, variant) for lib in by_lib}
    with WorkerPool(pythons, deadline=deadline, memory_cap=DEFAULT_MEMORY_CAP) as pool:
        pool.start()
        outcomes = pool.fanout(
            {lib: Call(api=api, args=args, kwargs=kwargs, seed=seed) for lib, api in by_lib.items()}
        )
        versions = {lib: h.version for lib, h in pool.hellos().items()}
    op = next(iter(by_lib.values())).rsplit(".", 1)[-1].lower()
    inputs = tuple(a for a in args if isinstance(a, np.ndarray))
    verdict = judge(outcomes, terms=Terms(op=op, inputs=inputs))
    return CallResult(outcomes=dict(outcomes), versions=versions, verdict=verdict)
