#!/usr/bin/env python
"""Worker overhead: what the pool costs per call and at start, against the library itself.

Prints its figures (it is not a test). Per library:

1. through the pool, N adds of two 4x4 float32 arrays: one ``pool.batch`` of all N calls, and N
   separate ``pool.call``;
2. in-process, in the library's own env interpreter: the same N calls with the adapter's
   conversions a worker cannot avoid (``to_native`` per input, the call, ``materialize``,
   ``native_to_numpy``); also the bare op (native tensors made once) and, for the analysis, the
   worker's ``Server.call`` and that plus the protocol's encode/decode of request and reply;
3. ratios pool / in-process against the targets (batched <= 1.25x, unbatched <= 3x);
4. cold start: ``WorkerPool(pythons).start()`` of all workers at once against the slowest bare
   ``import <lib>``, measured with all libraries importing concurrently and one at a time.

A missed target is reported (MISS), not an error: the exit code is 0 unless something failed.

    python bench/worker_overhead.py [--calls 2000] [--libs torch,jax] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from xamt import envs  # noqa: E402
from xamt.libraries import adapter_class, library_names  # noqa: E402
from xamt.types import Call, Outcome  # noqa: E402
from xamt.workers.pool import WORKER_ENV, WorkerPool  # noqa: E402

XAMT_DIR = ROOT / "xamt"
ADD_APIS = {
    "numpy": "numpy.add",
    "torch": "torch.add",
    "tensorflow": "tensorflow.math.add",
    "jax": "jax.numpy.add",
    "paddle": "paddle.add",
    "mindspore": "mindspore.ops.add",
    "mxnet": "mxnet.nd.add",
}
BATCHED_TARGET = 1.25
UNBATCHED_TARGET = 3.0
COLD_TARGET = 1.2
WARMUP_CALLS = 50
JSON_MARK = "XAMT_BENCH_JSON "

# Runs inside a library's env (``python -E -s -c INPROC LIB API N REPEAT XAMT_DIR``): bootstraps
# the adapter as server.py does (a stub ``xamt`` package, so xamt/__init__ and typer are never
# imported), then times per-call costs in that process.
INPROC = r"""
import json, statistics, sys, time, types
LIB, API, N, REPEAT, XAMT_DIR = sys.argv[1:6]
N, REPEAT = int(N), int(REPEAT)
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
pkg = types.ModuleType("xamt")
pkg.__path__ = [XAMT_DIR]
sys.modules.setdefault("xamt", pkg)
import importlib
stages = {}
t = time.perf_counter()
import numpy as np
stages["import numpy"] = time.perf_counter() - t
t = time.perf_counter()
module = importlib.import_module("xamt.workers.adapters." + LIB)
adapter = module.ADAPTER()
stages["import adapter"] = time.perf_counter() - t
t = time.perf_counter()
adapter.load()
stages["load()"] = time.perf_counter() - t
t = time.perf_counter()
adapter.supported = adapter.probe_dtypes()
stages["probe_dtypes()"] = time.perf_counter() - t
t = time.perf_counter()
from xamt.workers import protocol
from xamt.workers.server import Server
server = Server(adapter, testing=False)
fn = server.resolve(API)
stages["server+resolve"] = time.perf_counter() - t

rng = np.random.default_rng(0)
x = rng.standard_normal((4, 4), dtype=np.float32)
y = rng.standard_normal((4, 4), dtype=np.float32)
x.flags.writeable = False  # inputs arrive as read-only views on the frame
y.flags.writeable = False

def adapter_path():
    a = adapter.to_native(x, API)
    b = adapter.to_native(y, API)
    out = adapter.materialize(fn(a, b))
    return adapter.native_to_numpy(out) if adapter.is_native(out) else np.asarray(out)

na, nb = adapter.to_native(x, API), adapter.to_native(y, API)

def bare():
    return adapter.materialize(fn(na, nb))

request = {"api": API, "args": [x, y], "kwargs": {}, "seed": None}

def server_call():
    header, values = server.call(request)
    assert header["status"] == "ok", header

PREFIX = protocol.PREFIX.size

def unframe(raw, keys):
    hlen, plen = protocol.parse_prefix(raw[:PREFIX])
    return protocol.decode(raw[PREFIX:PREFIX + hlen], raw[PREFIX + hlen:], keys)

def with_codec():  # what both ends do for one unbatched call, minus pipes and select
    raw = protocol.encode({"op": "call", "id": 1, "api": API, "seed": None},
                          {"args": [x, y], "kwargs": {}})
    req = unframe(raw, ("args", "kwargs"))
    header, values = server.call(req)
    rep = b"".join(protocol.frame({"op": "result", "id": 1, "index": 0, **header}, values))
    return unframe(rep, ("value",))

def per_call_us(f):
    for _ in range(50):
        f()
    samples = []
    for _ in range(REPEAT):
        t = time.perf_counter()
        for _ in range(N):
            f()
        samples.append((time.perf_counter() - t) / N * 1e6)
    return statistics.median(samples)

check = adapter_path()
assert np.allclose(check, np.asarray(x) + np.asarray(y)), check
result = {
    "stages": stages,
    "inproc_us": per_call_us(adapter_path),
    "bare_us": per_call_us(bare),
    "server_call_us": per_call_us(server_call),
    "with_codec_us": per_call_us(with_codec),
}
print("XAMT_BENCH_JSON " + json.dumps(result), flush=True)
"""

IMPORT_SNIPPET = (
    "import time; t = time.perf_counter(); import {module}; "
    "print(time.perf_counter() - t, time.monotonic())"
)


def worker_env() -> dict[str, str]:
    """The environment the pool gives its workers."""
    env = {**os.environ, **WORKER_ENV}
    env.pop("PYTHONPATH", None)
    return env


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per measurement")
    parser.add_argument("--libs", default=",".join(library_names()), help="comma list")
    parser.add_argument("--repeat", type=int, default=3, help="repeats; the median is reported")
    opts = parser.parse_args(argv)
    opts.libs = [lib.strip() for lib in opts.libs.split(",") if lib.strip()]
    unknown = [lib for lib in opts.libs if lib not in library_names()]
    if unknown:
        parser.error(f"unknown libraries {unknown}; known: {', '.join(library_names())}")
    missing = [lib for lib in opts.libs if lib not in ADD_APIS]
    if missing:
        parser.error(f"no add API known for {missing}")
    if opts.calls < 1 or opts.repeat < 1:
        parser.error("--calls and --repeat must be >= 1")
    return opts


def machine_facts() -> list[str]:
    model = "?"
    try:
        with open("/proc/cpuinfo") as fh:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "?"
            )
    except OSError:
        pass
    mem = "?"
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        mem = f"{pages * size / 2**30:.1f} GiB"
    except (ValueError, OSError):
        pass
    return [
        f"nproc: {len(os.sched_getaffinity(0))} (cpu_count {os.cpu_count()}), cpu: {model}, "
        f"memory: {mem}",
        f"orchestrator: python {platform.python_version()}, numpy {np.__version__}, "
        f"{platform.platform()}",
    ]


def machine_busy_s() -> float:
    """CPU-seconds the whole machine has spent busy since boot (from /proc/stat)."""
    try:
        with open("/proc/stat") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return float("nan")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu_s() -> float:
    """CPU-seconds of this process and of its reaped children (workers, env interpreters)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _proc_cpu_s(pid: int) -> float:
    """CPU-seconds of a live process (utime + stime from /proc/<pid>/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


class OtherLoad:
    """The CPU that processes other than this benchmark (and ``pids``) use from now on."""

    def __init__(self, pids: Sequence[int] = ()) -> None:
        self.pids = list(pids)
        self.wall, self.busy, self.own = time.monotonic(), machine_busy_s(), self._own()

    def _own(self) -> float:
        return own_cpu_s() + sum(_proc_cpu_s(pid) for pid in self.pids)

    def cpu_s(self) -> float:
        return max(0.0, (machine_busy_s() - self.busy) - (self._own() - self.own))

    def share(self) -> float:
        """Other processes' CPU as a fraction of one core; near 0 means clean figures."""
        return self.cpu_s() / max(time.monotonic() - self.wall, 1e-9)


# --- 1. through the pool -------------------------------------------------------------------
def _check(lib: str, outs: Sequence[Outcome], expected: np.ndarray) -> None:
    bad = [o for o in outs if o.status != "ok"]
    if bad:
        o = bad[0]
        raise RuntimeError(
            f"{lib}: {len(bad)} calls not ok, first: {o.status} {o.error} {o.detail[-300:]}"
        )
    if not np.allclose(np.asarray(outs[-1].value), expected):
        raise RuntimeError(f"{lib}: wrong result {outs[-1].value!r}")


def measure_pool(pool: WorkerPool, lib: str, n: int, repeat: int) -> dict[str, float]:
    """Median µs per call, batched and unbatched."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 4), dtype=np.float32)
    y = rng.standard_normal((4, 4), dtype=np.float32)
    call = Call(api=ADD_APIS[lib], args=(x, y))
    calls = [call] * n
    _check(lib, [pool.call(lib, call) for _ in range(WARMUP_CALLS)], x + y)
    _check(lib, pool.batch(lib, calls[:WARMUP_CALLS]), x + y)
    batched, unbatched = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        outs = pool.batch(lib, calls)
        batched.append((time.perf_counter() - t) / n * 1e6)
        _check(lib, outs, x + y)
        t = time.perf_counter()
        outs = [pool.call(lib, c) for c in calls]
        unbatched.append((time.perf_counter() - t) / n * 1e6)
        _check(lib, outs, x + y)
    return {"batched_us": statistics.median(batched), "unbatched_us": statistics.median(unbatched)}


# --- 2. in-process -------------------------------------------------------------------------
def measure_inproc(python: str, lib: str, n: int, repeat: int) -> dict[str, Any]:
    cmd = [python, "-E", "-s", "-c", INPROC, lib, ADD_APIS[lib], str(n), str(repeat), str(XAMT_DIR)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=worker_env(), timeout=1800)
    for line in proc.stdout.splitlines():
        if line.startswith(JSON_MARK):
            result: dict[str, Any] = json.loads(line[len(JSON_MARK) :])
            return result
    raise RuntimeError(
        f"{lib}: in-process run failed (exit {proc.returncode}): {proc.stderr.strip()[-1500:]}"
    )


# --- 4. cold start -------------------------------------------------------------------------
def cold_start(pythons: Mapping[str, str]) -> float:
    """Seconds from the first Popen to every worker's hello."""
    pool = WorkerPool(pythons)
    try:
        t = time.monotonic()
        pool.start()
        return time.monotonic() - t
    finally:
        pool.close()


def _spawn_import(python: str, lib: str) -> tuple[subprocess.Popen[str], float]:
    module = adapter_class(lib).roots[0]
    cmd = [python, "-E", "-s", "-c", IMPORT_SNIPPET.format(module=module)]
    start = time.monotonic()
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env()
    )
    return proc, start


def _finish_import(lib: str, proc: subprocess.Popen[str], start: float) -> dict[str, float]:
    out, err = proc.communicate(timeout=600)
    exited = time.monotonic()
    try:
        import_s, done_at = (float(v) for v in out.strip().splitlines()[-1].split())
    except (ValueError, IndexError):
        raise RuntimeError(f"{lib}: bare import failed: {err.strip()[-800:]}") from None
    # time.monotonic is CLOCK_MONOTONIC on Linux: comparable across processes.
    return {"import": import_s, "ready": done_at - start, "wall": exited - start}


def bare_imports(pythons: Mapping[str, str], concurrent: bool) -> dict[str, dict[str, float]]:
    """Per library: import seconds (in the process), Popen->imported, Popen->exited."""
    results: dict[str, dict[str, float]] = {}
    if not concurrent:
        for lib, py in pythons.items():
            results[lib] = _finish_import(lib, *_spawn_import(py, lib))
        return results
    spawned = {lib: _spawn_import(py, lib) for lib, py in pythons.items()}
    errors: list[BaseException] = []

    def finish(lib: str) -> None:
        try:
            results[lib] = _finish_import(lib, *spawned[lib])
        except BaseException as exc:  # noqa: BLE001 - re-raised below, on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=finish, args=(lib,)) for lib in spawned]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    if errors:
        raise errors[0]
    return {lib: results[lib] for lib in pythons}


def median_of(runs: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {
        lib: {k: statistics.median(r[lib][k] for r in runs) for k in runs[0][lib]}
        for lib in runs[0]
    }


# --- printing ------------------------------------------------------------------------------
def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def timed(label: str, fn: Callable[[], Any]) -> Any:
    t = time.monotonic()
    value = fn()
    print(f"  ({label}: {time.monotonic() - t:.1f} s)", file=sys.stderr, flush=True)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    opts = parse_args(argv)
    args = sys.argv[1:] if argv is None else list(argv)
    print("$ " + shlex.join(["python", "bench/worker_overhead.py", *args]))
    for line in machine_facts():
        print(line)
    print(
        f"calls per measurement: {opts.calls}; repeats: {opts.repeat} (medians); "
        f"worker env: {' '.join(f'{k}={v}' for k, v in WORKER_ENV.items() if 'THREADS' in k)}"
    )
    pythons = {lib: envs.interpreter(lib) for lib in opts.libs}
    whole_run = OtherLoad()
    noise: dict[str, float] = {}
    n, repeat = opts.calls, opts.repeat

    # 2 first: nothing else runs while the in-process figures are taken.
    inproc: dict[str, dict[str, Any]] = {}
    for lib, py in pythons.items():
        load = OtherLoad()
        inproc[lib] = timed(f"in-process {lib}", partial(measure_inproc, py, lib, n, repeat))
        noise[lib] = load.share()
    # 1.
    pool_figs: dict[str, dict[str, float]] = {}
    with WorkerPool(pythons) as pool:
        hellos = pool.start()
        pids = [w.proc.pid for w in pool.workers.values() if w.proc is not None]
        for lib in pythons:
            load = OtherLoad(pids)
            pool_figs[lib] = timed(f"pool {lib}", partial(measure_pool, pool, lib, n, repeat))
            noise[lib] = max(noise[lib], load.share())

    print()
    print(
        "versions: "
        + ", ".join(
            f"{lib} {h.version} (numpy {h.numpy}, python {h.python})" for lib, h in hellos.items()
        )
    )
    print()
    print(f"Per-call cost, µs per call, add of two 4x4 float32 arrays, N={n}")
    print("  in-proc = to_native x2 + call + materialize + native_to_numpy, in the env itself")
    print("  bare = call + materialize on ready native tensors; server = worker's Server.call;")
    print("  +codec = server + protocol encode/decode of request and reply (no pipes)")
    print("  other = CPU of other processes meanwhile, as a share of one core (~0%: clean figures)")
    head = (
        f"{'library':<11}{'bare':>8}{'in-proc':>9}{'server':>8}{'+codec':>8}"
        f"{'batched':>9}{'unbatch':>9}{'b/in':>7}  {'<=1.25':<6}{'u/in':>7}  {'<=3':<5}{'other':>6}"
    )
    print(head)
    print("-" * len(head))
    misses = 0
    for lib in pythons:
        ip, pf = inproc[lib], pool_figs[lib]
        rb = pf["batched_us"] / ip["inproc_us"]
        ru = pf["unbatched_us"] / ip["inproc_us"]
        misses += (rb > BATCHED_TARGET) + (ru > UNBATCHED_TARGET)
        print(
            f"{lib:<11}{ip['bare_us']:>8.1f}{ip['inproc_us']:>9.1f}{ip['server_call_us']:>8.1f}"
            f"{ip['with_codec_us']:>8.1f}{pf['batched_us']:>9.1f}{pf['unbatched_us']:>9.1f}"
            f"{rb:>6.2f}x  {verdict(rb <= BATCHED_TARGET):<6}{ru:>6.2f}x  "
            f"{verdict(ru <= UNBATCHED_TARGET):<5}{noise[lib]:>6.0%}"
        )
    print(
        "Overhead over in-proc, µs per call (batched-in, unbatched-in):  "
        + ", ".join(
            f"{lib} {pool_figs[lib]['batched_us'] - inproc[lib]['inproc_us']:.0f}/"
            f"{pool_figs[lib]['unbatched_us'] - inproc[lib]['inproc_us']:.0f}"
            for lib in pythons
        )
    )

    print()
    print("Worker start stages, s, one process alone (from the in-process run):")
    stage_names = list(next(iter(inproc.values()))["stages"])
    width = max(len(s) for s in stage_names) + 2
    print(f"{'library':<11}" + "".join(f"{s:>{width}}" for s in stage_names))
    for lib in pythons:
        print(
            f"{lib:<11}" + "".join(f"{inproc[lib]['stages'][s]:>{width}.3f}" for s in stage_names)
        )

    # 4. Prime the page cache once (untimed) so that the first repeat is not the only cold one.
    timed("priming imports", lambda: bare_imports(pythons, concurrent=True))
    cold_load = OtherLoad()
    colds: list[float] = []
    conc_runs: list[dict[str, dict[str, float]]] = []
    seq_runs: list[dict[str, dict[str, float]]] = []
    for i in range(repeat):
        colds.append(timed(f"cold start {i + 1}", lambda: cold_start(pythons)))
        conc_runs.append(
            timed(f"concurrent imports {i + 1}", lambda: bare_imports(pythons, concurrent=True))
        )
        seq_runs.append(
            timed(f"sequential imports {i + 1}", lambda: bare_imports(pythons, concurrent=False))
        )
    cold_noise = cold_load.share()
    conc, seq = median_of(conc_runs), median_of(seq_runs)
    cold = statistics.median(colds)
    print()
    print(
        f"Cold start of {len(pythons)} workers in parallel (Popen -> every hello), "
        f"median of {repeat}: {cold:.2f} s  (runs: {', '.join(f'{c:.2f}' for c in colds)})"
    )
    print(
        "Bare `import <lib>` (python -E -s, worker env), s, medians; import = timed inside, "
        "ready = Popen -> imported, wall = Popen -> exited"
    )
    print(
        f"{'library':<11}{'conc import':>12}{'conc ready':>11}{'conc wall':>10}"
        f"{'seq import':>11}{'seq ready':>10}{'seq wall':>9}"
    )
    for lib in pythons:
        c, s = conc[lib], seq[lib]
        print(
            f"{lib:<11}{c['import']:>12.2f}{c['ready']:>11.2f}{c['wall']:>10.2f}"
            f"{s['import']:>11.2f}{s['ready']:>10.2f}{s['wall']:>9.2f}"
        )
    rows = [
        ("slowest concurrent import", max(c["import"] for c in conc.values())),
        ("slowest concurrent ready", max(c["ready"] for c in conc.values())),
        ("slowest sequential import", max(s["import"] for s in seq.values())),
        ("slowest sequential ready", max(s["ready"] for s in seq.values())),
    ]
    for label, ref in rows:
        ratio = cold / ref
        headline = label == "slowest concurrent import"
        misses += headline and ratio > COLD_TARGET
        mark = f"  {verdict(ratio <= COLD_TARGET)} (target <= {COLD_TARGET}x)"
        print(f"cold start / {label} ({ref:.2f} s): {ratio:.2f}x" + (mark if headline else ""))
    print()
    print(
        f"other processes used ~{whole_run.cpu_s():.1f} CPU-s during the whole run "
        f"({whole_run.share():.0%} of one core; cold-start part {cold_noise:.0%})"
    )
    print(f"{misses} target(s) missed" if misses else "all targets met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
