"""Issue 30 item 4: API paths resolve only to objects of the library's own packages.

In each real library environment, with the worker's own resolution
(:meth:`xamt.workers.server.Server.resolve`, through ``tests/support/resolve_catalog.py``):
every path of the shipped catalog still resolves, legitimate deep paths resolve, and paths
that reach the standard library through a library attribute (``torch.os.kill``) are refused
naming the path and the module reached. Then through a real worker over the protocol: a call
of such a path is refused (``unknown-api``) and nothing is called.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from xamt.catalog.model import CATALOG_PATH
from xamt.libraries import library_names
from xamt.types import Call
from xamt.workers.pool import WorkerPool

RESOLVE = Path(__file__).resolve().parents[1] / "support" / "resolve_catalog.py"
# One legitimate deep path per library (a submodule's function, a class's method).
DEEP_PATHS = {
    "numpy": ["numpy.linalg.norm", "numpy.ndarray.sum", "np.add"],
    "torch": ["torch.nn.functional.relu", "torch.Tensor.abs", "torch.linalg.norm"],
    "tensorflow": ["tensorflow.math.add", "tensorflow.keras.ops.abs", "tf.raw_ops.Abs"],
    "jax": ["jax.numpy.add", "jax.lax.abs", "jax.numpy.linalg.norm"],
    "paddle": ["paddle.add", "paddle.nn.functional.relu", "paddle.Tensor.abs"],
    "mindspore": ["mindspore.ops.add", "mindspore.Tensor.abs", "mindspore.mint.add"],
    "mxnet": ["mxnet.np.add", "mxnet.nd.BatchNorm", "mxnet.np.linalg.cond"],
}
# Paths through a standard-library module a library holds as an attribute: path -> the
# module the walk reaches.
HOSTILE = {
    "torch": {
        "torch.os.fspath": "os",
        "torch.os.kill": "os",
        "torch.builtins.eval": "builtins",
        "torch.sys.exit": "sys",
        "torch.ctypes.CDLL": "ctypes",
        "torch.importlib.import_module": "importlib",
        "torch.serialization.pickle.loads": "pickle",
    },
    "numpy": {"numpy.ctypeslib.ctypes.CDLL": "ctypes"},
}


def resolve(python: str, lib: str, paths: list[str], catalog: Path | None = None) -> dict[str, str]:
    """``{path: why}`` for the paths the worker's resolution refused (run from /tmp: a
    mindspore worker writes rank_0/ into its working folder)."""
    done = subprocess.run(
        [python, str(RESOLVE), *(["--catalog", str(catalog)] if catalog else []), lib, *paths],
        capture_output=True,
        text=True,
        timeout=240,
        cwd="/tmp",
        check=True,
    )
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["paths"] > 0
    refused: dict[str, str] = report["refused"]
    return refused


@pytest.mark.parametrize("lib", library_names())
def test_every_shipped_catalog_path_and_deep_paths_resolve(
    pythons: dict[str, str], lib: str
) -> None:
    refused = resolve(pythons[lib], lib, DEEP_PATHS[lib], CATALOG_PATH)
    assert refused == {}


@pytest.mark.parametrize("lib", sorted(HOSTILE))
def test_paths_through_stdlib_modules_are_refused_naming_the_module(
    pythons: dict[str, str], lib: str
) -> None:
    refused = resolve(pythons[lib], lib, list(HOSTILE[lib]))
    assert set(refused) == set(HOSTILE[lib])
    for path, module in HOSTILE[lib].items():
        assert path in refused[path] and f"module {module!r}, outside {lib}" in refused[path]


def test_a_worker_refuses_os_kill_and_calls_nothing(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """``torch.os.kill(pid, 9)`` aimed at a live process: refused, the process lives on."""
    victim = subprocess.Popen(["sleep", "60"])
    try:
        with WorkerPool({"torch": pythons["torch"]}, deadline=60) as pool:
            pool.start()
            kill = pool.call("torch", Call(api="torch.os.kill", args=(victim.pid, 9)))
            eval_ = pool.call("torch", Call(api="torch.builtins.eval", args=("1+1",)))
            relu = pool.call("torch", Call(api="torch.nn.functional.relu", args=()))
        assert kill.status == "unknown-api" and "module 'os'" in kill.detail
        assert eval_.status == "unknown-api" and "module 'builtins'" in eval_.detail
        assert relu.status == "error"  # resolved and called: a TypeError for no arguments
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()
