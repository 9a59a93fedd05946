"""The pool survives whatever a library does: crashes, hangs, huge allocations, its own death."""

from __future__ import annotations

import dataclasses
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator

import numpy as np
import psutil
import pytest

from xamt.errors import WorkerError
from xamt.types import Call
from xamt.workers import protocol
from xamt.workers.pool import MIN_DEADLINE, MIN_OBSERVED, Doc, WorkerPool

ADD = Call(api="numpy.add", args=(np.ones(3, np.float32), np.ones(3, np.float32)))


@pytest.fixture()
def small_pool(pythons: dict[str, str]) -> Iterator[WorkerPool]:
    """A pool of its own (numpy and torch), so that killing workers spares the shared one."""
    with WorkerPool(
        {k: pythons[k] for k in ("numpy", "torch")}, deadline=5, testing=True, memory_cap=1 << 30
    ) as p:
        p.start()
        yield p


def worker_pid(pool: WorkerPool, lib: str) -> int:
    proc = pool.workers[lib].proc
    assert proc is not None
    return proc.pid


@pytest.mark.parametrize(
    ("api", "sig"), [("segfault", "SIGSEGV"), ("abort", "SIGABRT"), ("fpe", "SIGFPE")]
)
def test_worker_death_is_a_crash_outcome_and_the_pool_carries_on(
    small_pool: WorkerPool, api: str, sig: str
) -> None:
    before = worker_pid(small_pool, "numpy")
    out = small_pool.call("numpy", Call(api=f"xamt_testing.{api}"))
    assert out.status == "crash" and out.signal == sig, out
    assert "Fatal Python error" in out.detail or sig == "SIGABRT"  # faulthandler's report
    after = small_pool.call("numpy", ADD)
    assert after.status == "ok"
    np.testing.assert_array_equal(after.value, [2, 2, 2])
    assert worker_pid(small_pool, "numpy") != before
    assert not psutil.pid_exists(before) or psutil.Process(before).status() == "zombie"


def test_crash_inside_a_batch_is_attributed_to_the_exact_call(small_pool: WorkerPool) -> None:
    calls = [ADD, ADD, Call(api="xamt_testing.segfault"), ADD, Call(api="xamt_testing.abort"), ADD]
    outcomes = small_pool.batch(
        "torch", [Call(api=c.api.replace("numpy", "torch"), args=c.args) for c in calls]
    )
    assert [o.status for o in outcomes] == ["ok", "ok", "crash", "ok", "crash", "ok"]
    assert outcomes[2].signal == "SIGSEGV" and outcomes[4].signal == "SIGABRT"
    np.testing.assert_array_equal(outcomes[5].value, [2, 2, 2])


def test_fanout_crash_in_one_library_leaves_the_others_alone(small_pool: WorkerPool) -> None:
    torch_pid = worker_pid(small_pool, "torch")
    outs = small_pool.fanout(
        {"numpy": Call(api="xamt_testing.segfault"), "torch": Call(api="torch.add", args=ADD.args)}
    )
    assert outs["numpy"].status == "crash" and outs["torch"].status == "ok"
    assert worker_pid(small_pool, "torch") == torch_pid


def test_missed_deadline_is_a_hang_and_the_worker_is_replaced(small_pool: WorkerPool) -> None:
    small_pool.deadline = 1.0
    before = worker_pid(small_pool, "numpy")
    start = time.monotonic()
    outs = small_pool.batch("numpy", [ADD, Call(api="xamt_testing.sleep", args=(30,)), ADD])
    assert time.monotonic() - start < 25
    assert [o.status for o in outs] == ["ok", "hang", "ok"]
    assert worker_pid(small_pool, "numpy") != before


def test_submitted_runs_overlap_and_keep_their_own_results(small_pool: WorkerPool) -> None:
    """A slow library does not hold the others back across submitted runs, and a crash in
    one run leaves the run queued behind it whole."""
    sleep = Call(api="xamt_testing.sleep", args=(1.0,))
    echo = [Call(api="xamt_testing.echo", args=(i,)) for i in range(3)]
    start = time.monotonic()
    first = small_pool.submit(
        {"numpy": [sleep, sleep], "torch": [sleep, Call(api="xamt_testing.segfault")]}
    )
    second = small_pool.submit({"numpy": echo, "torch": [sleep]})
    late = small_pool.collect(second)  # collected first: the first run progresses meanwhile
    early = small_pool.collect(first)
    assert [o.status for o in early["torch"]] == ["ok", "crash"]
    assert [int(o.value) for o in late["numpy"]] == [0, 1, 2]
    assert late["torch"][0].status == "ok"
    # torch ran 1 s + crash + restart + 1 s; numpy's 2 s of sleeps overlapped with it
    assert time.monotonic() - start < 2 * 1.0 + 1.0 + 3.0
    with pytest.raises(WorkerError, match="no submitted run"):
        small_pool.collect(first)


def test_withdrawn_calls_are_not_made(small_pool: WorkerPool) -> None:
    """A call taken back before it is sent is not made, whether its batch is still queued or
    is sent again after a death; calls already answered keep their outcome."""
    echo = [Call(api="xamt_testing.echo", args=(i,)) for i in range(4)]
    segfault = Call(api="xamt_testing.segfault")
    first = small_pool.submit({"torch": [echo[0], segfault, echo[1], echo[2], echo[3]]})
    queued = small_pool.submit({"torch": echo, "numpy": echo})
    small_pool.withdraw(first, "torch", 3)  # sent already: left out when the rest is resent
    for index in (0, 2):
        small_pool.withdraw(queued, "torch", index)
    small_pool.withdraw(queued, "numpy", 1)  # numpy was idle: its batch went out at once
    early = small_pool.collect(first)["torch"]
    assert [o.status for o in early] == ["ok", "crash", "ok", "withdrawn", "ok"]
    assert [int(early[i].value) for i in (0, 2, 4)] == [0, 1, 3]
    late = small_pool.collect(queued)
    assert [o.status for o in late["torch"]] == ["withdrawn", "ok", "withdrawn", "ok"]
    assert [int(late["torch"][i].value) for i in (1, 3)] == [1, 3]
    assert [int(o.value) for o in late["numpy"]] == [0, 1, 2, 3]
    # a whole queued batch withdrawn completes without a call (it waits behind a short one)
    short = small_pool.submit({"torch": [Call(api="xamt_testing.sleep", args=(0.2,))]})
    third = small_pool.submit({"torch": [Call(api="xamt_testing.sleep", args=(60,))]})
    small_pool.withdraw(third, "torch", 0)
    start = time.monotonic()
    assert small_pool.collect(third)["torch"][0].status == "withdrawn"
    assert small_pool.collect(short)["torch"][0].status == "ok"
    assert time.monotonic() - start < 2.0


def test_calls_sharing_a_time_budget_stop_once_it_is_spent(small_pool: WorkerPool) -> None:
    """The calls of a batch that name one budget key run until they have taken its seconds;
    the rest come back withdrawn, unmade. Other keys, and calls with no budget, are made."""
    slow = Call(api="xamt_testing.sleep", args=(0.3,))
    probes = [dataclasses.replace(slow, budget=("a", 0.5)) for _ in range(4)]
    other = dataclasses.replace(slow, budget=("b", 0.5))
    start = time.monotonic()
    out = small_pool.run({"numpy": [*probes[:2], other, ADD, *probes[2:]]})["numpy"]
    # two of key "a" spend 0.6 s: its third and fourth are not made
    assert [o.status for o in out] == ["ok", "ok", "ok", "ok", "withdrawn", "withdrawn"]
    assert "time budget" in out[4].detail
    assert time.monotonic() - start < 1.5  # 3 sleeps made, not 5


def test_fanout_runs_libraries_concurrently(small_pool: WorkerPool) -> None:
    start = time.monotonic()
    outs = small_pool.fanout(
        {lib: Call(api="xamt_testing.sleep", args=(1.5,)) for lib in ("numpy", "torch")}
    )
    assert all(o.status == "ok" for o in outs.values())
    assert time.monotonic() - start < 2.9  # sequential would take at least 3 s


def test_a_hang_in_one_library_does_not_hold_up_the_others_batches(
    small_pool: WorkerPool,
) -> None:
    """torch hangs in the first batch; numpy goes through its three batches meanwhile, and
    they can be collected before torch's deadline has even passed."""
    small_pool.deadline = 4.0
    echo = [Call(api="xamt_testing.echo", args=(i,)) for i in range(3)]
    start = time.monotonic()
    first = small_pool.submit(
        {"numpy": echo, "torch": [Call(api="xamt_testing.sleep", args=(60,))]}
    )
    later = [small_pool.submit({"numpy": echo}) for _ in range(2)]
    for ticket in later:
        assert [int(o.value) for o in small_pool.collect(ticket)["numpy"]] == [0, 1, 2]
    assert time.monotonic() - start < 3.0 and not small_pool.done(first)
    outs = small_pool.collect(first)
    assert outs["torch"][0].status == "hang" and [o.status for o in outs["numpy"]] == ["ok"] * 3
    assert small_pool.times["torch"].hangs == 1 and small_pool.times["numpy"].hangs == 0


def test_standby_worker_replaces_a_dead_one_at_once(pythons: dict[str, str]) -> None:
    with WorkerPool({"torch": pythons["torch"]}, standby=True, testing=True) as pool:
        pool.start()
        spare = pool._spares["torch"]
        select.select([spare.fileno()], [], [], 60)  # its hello is written: torch is loaded
        dead = worker_pid(pool, "torch")
        assert pool.call("torch", Call(api="xamt_testing.segfault")).status == "crash"
        start = time.monotonic()
        after = pool.call("torch", Call(api="torch.add", args=ADD.args))
        took = time.monotonic() - start
        assert after.status == "ok" and worker_pid(pool, "torch") == spare.proc.pid != dead
        assert took < 1.0, f"the standby took {took:.2f} s to answer"
        times = pool.times["torch"]
        assert times.deaths == 1 and times.restarts == 1 and times.restart_seconds < 1.0
        assert "torch" in pool._spares  # a new standby is loading


def test_adaptive_deadline_ends_a_hang_long_before_the_pool_deadline(
    pythons: dict[str, str],
) -> None:
    with WorkerPool({"numpy": pythons["numpy"]}, deadline=60, adaptive=True, testing=True) as pool:
        pool.start()
        quick = [Call(api="xamt_testing.sleep", args=(0.01,))] * (MIN_OBSERVED + 1)
        start = time.monotonic()
        outs = pool.batch("numpy", [*quick, Call(api="xamt_testing.sleep", args=(120,))])
        assert [o.status for o in outs] == ["ok"] * len(quick) + ["hang"]
        assert time.monotonic() - start < MIN_DEADLINE + 5
        assert pool.times["numpy"].hangs == 1
        assert MIN_DEADLINE <= pool.times["numpy"].hang_seconds < MIN_DEADLINE + 3


def test_first_calls_of_an_input_signature_are_counted_apart(small_pool: WorkerPool) -> None:
    before = small_pool.times["numpy"]
    calls, first = before.calls, before.first_calls
    ones = np.ones(7, np.float32)
    small_pool.batch(
        "numpy",
        [
            Call(api="numpy.sin", args=(ones,)),
            Call(api="numpy.sin", args=(ones * 2,)),  # same signature: warm
            Call(api="numpy.sin", args=(ones.astype(np.float64),)),  # another dtype: first
        ],
    )
    after = small_pool.times["numpy"]
    assert after.calls - calls == 3 and after.first_calls - first == 2


@pytest.mark.parametrize(
    ("lib", "call"),
    [
        ("numpy", Call(api="numpy.ones", args=((1 << 16, 1 << 16),))),  # 32 GiB of float64
        ("torch", Call(api="torch.empty", args=(1 << 34,))),  # 64 GiB of float32
        ("numpy", Call(api="xamt_testing.allocate", args=(3 << 30,))),  # 3 GiB, over the cap
    ],
)
def test_allocation_beyond_the_cap_is_a_resource_outcome(
    small_pool: WorkerPool, lib: str, call: Call
) -> None:
    out = small_pool.call(lib, call)
    assert out.status == "resource", out
    assert small_pool.call(lib, Call(api=f"{lib}.add", args=ADD.args)).status == "ok"


def test_allocation_within_the_cap_is_fine(small_pool: WorkerPool) -> None:
    out = small_pool.call("numpy", Call(api="xamt_testing.allocate", args=(256 << 20,)))
    assert out.status == "ok" and out.value == 256 << 20


def test_malformed_request_gets_an_answer_and_the_worker_goes_on(small_pool: WorkerPool) -> None:
    worker = small_pool.workers["numpy"]
    worker.send(
        {"op": "call", "id": 1, "api": "numpy.add"}, {"args": [{"not": "an array"}]}
    )  # a dict argument is fine; now a broken frame:
    assert worker.proc is not None and worker.proc.stdin is not None
    header = b'{"op":"call","args":[{"$zz":1}],"$buf":[]}'
    worker.proc.stdin.write(protocol.PREFIX.pack(protocol.MAGIC, len(header), 0) + header)
    worker.proc.stdin.flush()
    deadline = time.monotonic() + 10
    replies = [small_pool._next(worker, deadline), small_pool._next(worker, deadline)]
    assert replies[0]["op"] == "result" and replies[0]["status"] == "error"
    assert replies[1]["op"] == "error" and replies[1]["status"] == "bad-request"
    assert "unknown value tag" in replies[1]["reason"]
    worker.send({"op": "frobnicate", "id": 2})
    reply = small_pool._next(worker, time.monotonic() + 10)
    assert reply["status"] == "bad-request" and "frobnicate" in reply["reason"]
    assert small_pool.call("numpy", ADD).status == "ok"


def test_worker_that_cannot_load_is_a_clear_error(tmp_path: object) -> None:
    with WorkerPool({"mxnet": sys.executable}) as pool, pytest.raises(WorkerError, match="mxnet"):
        pool.start()  # the orchestrator's interpreter has no mxnet


def test_close_leaves_no_process(pythons: dict[str, str]) -> None:
    pool = WorkerPool(pythons)
    pool.start()
    pids = [w.proc.pid for w in pool.workers.values() if w.proc is not None]
    assert len(pids) == len(pythons)
    pool.close()
    assert not [p for p in pids if psutil.pid_exists(p)]


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_orchestrator_death_takes_its_workers_along(
    pythons: dict[str, str], how: signal.Signals
) -> None:
    script = textwrap.dedent(f"""
        import signal, sys, time
        from xamt.workers.pool import MIN_DEADLINE, MIN_OBSERVED, WorkerPool
        pool = WorkerPool({ {k: pythons[k] for k in ("numpy", "torch", "jax")}!r})
        pool.start()
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
        print(" ".join(str(w.proc.pid) for w in pool.workers.values()), flush=True)
        with pool:
            time.sleep(120)
    """)
    # The orchestrator gets the default dispositions whatever this process inherited: started
    # in the background or under nohup, SIGINT is ignored here, a child would inherit that, and
    # its Python would install no KeyboardInterrupt handler.
    proc = subprocess.Popen(
        [sys.executable, "-c", script],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=_default_signals,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "True", "the orchestrator has no SIGINT handler"
    pids = [int(p) for p in proc.stdout.readline().split()]
    assert len(pids) == 3 and all(psutil.pid_exists(p) for p in pids)
    os.kill(proc.pid, how)
    proc.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if _alive(p)]


def _default_signals() -> None:
    """In the child, before exec: SIGINT and SIGTERM back to their default dispositions."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_docs_come_from_each_worker_and_a_stuck_worker_gives_empty_ones(
    small_pool: WorkerPool,
) -> None:
    pids = {lib: worker_pid(small_pool, lib) for lib in ("numpy", "torch")}
    docs = small_pool.docs(
        {"numpy": ["numpy.sinc"], "torch": ["torch.sinc", "torch.no_such_thing"]}
    )
    assert "sinc" in docs["numpy"]["numpy.sinc"].text
    assert docs["torch"]["torch.sinc"].text and docs["torch"]["torch.no_such_thing"] == Doc()
    assert all(small_pool.workers[lib].alive for lib in pids)
    assert {lib: worker_pid(small_pool, lib) for lib in pids} == pids
    # the code a callable hands its work to: numpy's cond computes singular values with svd
    code = small_pool.docs({"numpy": ["numpy.linalg.cond", "numpy.linalg.svd", "numpy.sinc"]})
    cond, svd, sinc = (
        code["numpy"][p] for p in ("numpy.linalg.cond", "numpy.linalg.svd", "numpy.sinc")
    )
    assert cond.name.endswith(".cond") and set(cond.calls) & svd.implementation()
    assert not set(sinc.calls) & svd.implementation()
    # a worker that does not answer in time gives "" and is replaced; the other answers
    small_pool.deadline = 1.0
    os.kill(pids["torch"], signal.SIGSTOP)
    docs = small_pool.docs({"numpy": ["numpy.add"], "torch": ["torch.add"]})
    assert docs["numpy"]["numpy.add"].text and docs["torch"] == {"torch.add": Doc()}
    assert worker_pid(small_pool, "torch") != pids["torch"]
    assert small_pool.call("torch", Call(api="torch.add", args=ADD.args)).status == "ok"
