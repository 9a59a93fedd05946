"""The orchestrator's worker pool: one long-lived worker process per library.

The pool starts workers in parallel, fans calls out to all libraries at once and multiplexes
their replies with ``select`` on one thread. Whatever a library does becomes an
:class:`~xamt.types.Outcome`: a death is a *crash* (with the signal) attributed to the exact
call, also inside a batch; a missed deadline is a *hang*; an allocation beyond the memory cap is
a *resource* outcome. The worker is then restarted and the rest of its batch goes on.

Note:
    Workers ask the kernel to kill them when the thread that started them dies
    (``PR_SET_PDEATHSIG``) and also watch their parent: use a pool from one long-lived thread.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import tempfile
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xamt import memory
from xamt.errors import WorkerError
from xamt.paths import xamt_home
from xamt.timing import LibraryTime
from xamt.types import WITHDRAWN, Call, ErrorInfo, Outcome
from xamt.workers import protocol
from xamt.workers.protocol import RESOURCE_PATTERNS

SERVER = Path(__file__).with_name("server.py")
DEFAULT_DEADLINE = 10.0
DEFAULT_STARTUP_TIMEOUT = 180.0
DEFAULT_MEMORY_CAP = 4 << 30
# Adaptive deadlines (campaigns): once an API has answered MIN_OBSERVED calls, a call may take
# DEADLINE_SLACK times the slowest of them (first, compiling calls included); an API seen less
# often gets DEADLINE_SLACK times its library's LIBRARY_QUANTILE call time (once the library
# has answered MIN_LIBRARY_CALLS); always at least MIN_DEADLINE seconds and at most the pool's
# deadline. A hang found this way is reproduced in fresh workers under the full deadline
# before it becomes a finding.
MIN_DEADLINE = 2.0
DEADLINE_SLACK = 10.0
MIN_OBSERVED = 3
MIN_LIBRARY_CALLS = 50
LIBRARY_QUANTILE = 0.99
RECENT_CALLS = 512  # call times kept per library for the quantile
# A standby worker (started after a library's first death, so that the next one is replaced
# at once) is kept only while the machine has this much memory available.
STANDBY_RESERVE = 4 << 30
STDERR_TAIL = 4096
READ_SIZE = 1 << 16  # a 1 MiB read buffer costs 15 µs per call in allocation alone
# Environment of every worker: one thread each, quiet logs, CPU only.
WORKER_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TF_NUM_INTRAOP_THREADS": "1",
    "TF_NUM_INTEROP_THREADS": "1",
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "GLOG_v": "3",
    "GLOG_minloglevel": "3",
    "JAX_PLATFORMS": "cpu",
    "JAX_ENABLE_X64": "1",
    "CUDA_VISIBLE_DEVICES": "",
    "PYTHONHASHSEED": "0",
    "PYTHONUNBUFFERED": "1",
    "PYTHONWARNINGS": "ignore",
}
# jax's persistent compilation cache, under XAMT_HOME: compiled kernels outlive a worker's
# restart and the campaign (every compilation is kept, however quick).
JAX_CACHE_ENV = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "-1",
}


@dataclass
class Hello:
    """What a worker says about itself when it starts."""

    library: str
    version: str
    numpy: str
    python: str
    device: str
    dtypes: tuple[str, ...]
    pid: int


class _Died(Exception):
    pass


class _TimedOut(Exception):
    pass


@dataclass
class Worker:
    """One worker process and its read buffer."""

    library: str
    python: str
    memory_cap: int
    log_dir: Path
    testing: bool = False
    result_budget: int = 0  # array bytes per reply; larger results come summarized (0: none)
    proc: subprocess.Popen[bytes] | None = None
    hello: Hello | None = None
    buffer: bytearray = field(default_factory=bytearray)
    starts: int = 0
    launched: float = 0.0  # when the process was started
    waiting_since: float | None = None  # work waits on its hello since then

    @property
    def log_path(self) -> Path:
        return self.log_dir / f"{self.library}.stderr.log"

    def start(self) -> None:
        """Launch the process and queue a hello; does not wait for it."""
        env = worker_env(self.library, os.environ)
        if self.testing:
            env["XAMT_WORKER_TESTING"] = "1"
        cmd = [
            self.python,
            "-s",
            str(SERVER),
            "--lib",
            self.library,
            "--parent",
            str(os.getpid()),
            "--memory-cap",
            str(self.memory_cap),
            "--result-budget",
            str(self.result_budget),
        ]
        with open(self.log_path, "ab") as log:
            try:
                self.proc = subprocess.Popen(
                    cmd,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=log,
                    env=env,
                    start_new_session=True,
                    close_fds=True,
                )
            except OSError as exc:
                raise WorkerError(
                    f"cannot start the {self.library} worker with {self.python}: {exc}; "
                    f"run `xamt env install {self.library}`"
                ) from None
        os.set_blocking(self.proc.stdout.fileno(), False)  # type: ignore[union-attr]
        self.buffer.clear()
        self.hello = None
        self.starts += 1
        self.launched = time.monotonic()
        self.waiting_since = None
        self.send({"op": "hello"})

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def send(self, header: dict[str, Any], values: dict[str, Any] | None = None) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        try:
            self.proc.stdin.write(protocol.encode(header, values))
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass  # it died; the read side reports the death

    def fileno(self) -> int:
        assert self.proc is not None and self.proc.stdout is not None
        return self.proc.stdout.fileno()

    def pump(self) -> bool:
        """Read what is available; False at end of file (the worker died)."""
        try:
            chunk = os.read(self.fileno(), READ_SIZE)
        except BlockingIOError:
            return True
        if not chunk:
            return False
        self.buffer += chunk
        return True

    def next_frame(self) -> dict[str, Any] | None:
        """Pop one complete frame from the buffer, decoded; None if incomplete."""
        size = protocol.PREFIX.size
        if len(self.buffer) < size:
            return None
        hlen, plen = protocol.parse_prefix(bytes(self.buffer[:size]))
        end = size + hlen + plen
        if len(self.buffer) < end:
            return None
        header = bytes(self.buffer[size : size + hlen])
        payload = bytes(self.buffer[size + hlen : end])
        del self.buffer[:end]
        return protocol.decode(header, payload, ("value", "grad", "tangent"))

    def kill(self) -> None:
        """Kill the worker and everything it started; reap it."""
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.reap()

    def reap(self) -> int | None:
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        return code

    def stderr_tail(self) -> str:
        try:
            with open(self.log_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - STDERR_TAIL))
                return fh.read().decode(errors="replace")
        except OSError:
            return ""


class WorkerPool:
    """Workers for several libraries, driven from one thread.

    Args:
        pythons: library name -> interpreter of that library's environment.
        deadline: seconds one call may take before it is a hang (with ``adaptive``, the most).
        memory_cap: extra address space a worker may allocate after loading its library.
        result_budget: array bytes one call's result may carry; a larger one comes back as a
            :class:`~xamt.workers.protocol.Summary`. Default: derived from the orchestrator's
            memory budget (:func:`xamt.memory.result_budget`); 0: never summarize.
        adaptive: per-API deadlines from the measured times of its calls (see
            :data:`MIN_DEADLINE`), for campaigns; reproduction uses the full deadline.
        standby: keep a started spare worker per library, so that a death or a hang is
            replaced at once (while memory allows).

    ``times`` holds where each library's time went (:class:`~xamt.timing.LibraryTime`).
    Standby workers are started with the pool (:meth:`start`), one per library while the
    machine has :data:`STANDBY_RESERVE` bytes available, and replaced as they are used.
    """

    def __init__(
        self,
        pythons: Mapping[str, str],
        *,
        deadline: float = DEFAULT_DEADLINE,
        startup_timeout: float = DEFAULT_STARTUP_TIMEOUT,
        memory_cap: int = DEFAULT_MEMORY_CAP,
        log_dir: Path | None = None,
        testing: bool = False,
        adaptive: bool = False,
        standby: bool = False,
        result_budget: int | None = None,
    ) -> None:
        self.deadline = deadline
        if result_budget is None:
            result_budget = memory.result_budget(len(pythons))
        self.adaptive = adaptive
        self.standby = standby
        self.times = {lib: LibraryTime() for lib in pythons}
        # (library, api) -> (calls observed, slowest seconds)
        self._api_times: dict[tuple[str, str], tuple[int, float]] = {}
        # library -> recent call times, and the quantile of them (recomputed now and then)
        self._recent: dict[str, deque[float]] = {lib: deque(maxlen=RECENT_CALLS) for lib in pythons}
        self._quantile: dict[str, float | None] = dict.fromkeys(pythons)
        self._spares: dict[str, Worker] = {}
        self.startup_timeout = startup_timeout
        self._tmp = None if log_dir else tempfile.TemporaryDirectory(prefix="xamt-workers-")
        self.log_dir = Path(log_dir or self._tmp.name)  # type: ignore[union-attr]
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.workers = {
            lib: Worker(lib, py, memory_cap, self.log_dir, testing, result_budget)
            for lib, py in pythons.items()
        }
        self._next_id = 0
        # Submitted runs (see submit/collect): each library works through its queue one batch
        # at a time, independently of the others.
        self._queues: dict[str, deque[tuple[int, list[Call]]]] = {lib: deque() for lib in pythons}
        self._inflight: dict[str, _BatchState] = {}
        self._results: dict[int, dict[str, list[Outcome | None]]] = {}
        self._open: dict[int, set[str]] = {}
        self._withdrawn: dict[tuple[int, str], set[int]] = {}  # (ticket, library) -> slots
        # Told of each call of a submitted run that crashed, hung or hit the memory cap, as
        # (ticket, library, place in the run), before the rest of its batch is sent again.
        self.on_failure: Callable[[int, str, int], None] | None = None
        self._tickets = 0

    # --- lifecycle -------------------------------------------------------------------------
    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> dict[str, Hello]:
        """Start every worker in parallel and wait until each has said hello."""
        for worker in self.workers.values():
            if not worker.alive:
                worker.start()
        deadline = time.monotonic() + self.startup_timeout
        for worker in self.workers.values():
            if worker.hello is None:
                self._await_hello(worker, deadline)
                self.times[worker.library].startup_seconds += time.monotonic() - worker.launched
        for lib in self.workers:
            self._spawn_spare(lib)
        return {lib: w.hello for lib, w in self.workers.items() if w.hello is not None}

    def close(self) -> None:
        """Ask each worker to exit, then kill whatever is left. Leaves no process behind."""
        for spare in self._spares.values():
            spare.kill()
        self._spares.clear()
        for worker in self.workers.values():
            if worker.alive:
                worker.send({"op": "shutdown"})
                try:
                    assert worker.proc is not None and worker.proc.stdin is not None
                    worker.proc.stdin.close()
                except OSError:
                    pass
        end = time.monotonic() + 2.0
        for worker in self.workers.values():
            if worker.proc is not None:
                try:
                    worker.proc.wait(timeout=max(0.0, end - time.monotonic()))
                except subprocess.TimeoutExpired:
                    pass
                worker.kill()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def detach_standby(self) -> WorkerPool | None:
        """A new pool of this pool's standby workers: fresh processes, already loading or
        loaded, that never ran a call (for reproduction after a campaign). They leave this
        pool, and so does its log folder. None unless every library has a standby."""
        if not self._spares or set(self._spares) != set(self.workers):
            return None
        spares, self._spares = self._spares, {}
        one = next(iter(spares.values()))
        pool = WorkerPool(
            {lib: w.python for lib, w in spares.items()},
            deadline=self.deadline,
            startup_timeout=self.startup_timeout,
            memory_cap=one.memory_cap,
            log_dir=self.log_dir,
            testing=one.testing,
            result_budget=one.result_budget,
        )
        pool.workers = spares
        pool._tmp, self._tmp = self._tmp, None
        return pool

    def ready(self, library: str) -> Hello:
        """Start ``library``'s worker if needed and wait for its hello."""
        worker = self._ready(library)
        assert worker.hello is not None
        return worker.hello

    def hellos(self) -> dict[str, Hello]:
        return {lib: w.hello for lib, w in self.workers.items() if w.hello is not None}

    # --- calls -----------------------------------------------------------------------------
    def call(self, library: str, call: Call) -> Outcome:
        return self.run({library: [call]})[library][0]

    def batch(self, library: str, calls: Sequence[Call]) -> list[Outcome]:
        return self.run({library: calls})[library]

    def fanout(self, calls: Mapping[str, Call]) -> dict[str, Outcome]:
        """One call per library, all libraries concurrently."""
        results = self.run({lib: [c] for lib, c in calls.items()})
        return {lib: outs[0] for lib, outs in results.items()}

    def describe(self, library: str, namespaces: Sequence[str] | None = None) -> dict[str, Any]:
        """The API inventory of a library (see :mod:`xamt.workers.inventory`)."""
        worker = self._ready(library)
        rid = self._rid()
        worker.send({"op": "describe", "id": rid, "namespaces": list(namespaces or [])})
        return self._read_until(worker, time.monotonic() + 600, "describe")

    def docs(self, paths: Mapping[str, Sequence[str]]) -> dict[str, dict[str, Doc]]:
        """The documentation and code of each API path, from its library's worker, all
        libraries at once: library -> path -> :class:`Doc`, empty where the path names nothing
        callable. A worker that dies or misses the deadline gives empty ones for its paths not
        yet answered and is restarted, as after a call. Submitted runs are finished first."""
        for lib in paths:
            if lib not in self.workers:
                raise WorkerError(f"no worker for {lib!r} in this pool")
        while self._inflight:  # a run's replies and these must not interleave
            self._advance()
        found = {lib: dict.fromkeys(apis, Doc()) for lib, apis in paths.items()}
        queries = {lib: _DocQuery(deque(found[lib])) for lib in paths if found[lib]}
        for lib in queries:
            if not self.workers[lib].alive:
                self.workers[lib].start()  # all at once; each hello is awaited below
        for lib, query in queries.items():
            self._ready(lib)
            self._ask_doc(lib, query)
        while queries:
            for lib in list(queries):  # replies already buffered: select() cannot see them
                self._take_docs(lib, queries, found)
            if not queries:
                break
            fds = {self.workers[lib].fileno(): lib for lib in queries}
            timeout = max(0.0, min(q.deadline for q in queries.values()) - time.monotonic())
            ready, _, _ = select.select(list(fds), [], [], timeout)
            for fd in ready:
                if fds[fd] in queries and not self.workers[fds[fd]].pump():
                    self._drop_docs(fds[fd], queries)
            now = time.monotonic()
            for lib in [lib for lib, q in queries.items() if now >= q.deadline]:
                self._take_docs(lib, queries, found)  # a reply read just now still counts
                if lib in queries and queries[lib].deadline <= now:
                    self._drop_docs(lib, queries)
        return found

    def run(self, batches: Mapping[str, Sequence[Call]]) -> dict[str, list[Outcome]]:
        """Run each library's calls in order, all libraries at once; one outcome per call."""
        return self.collect(self.submit(batches))

    def submit(self, batches: Mapping[str, Sequence[Call]]) -> int:
        """Queue each library's calls and return a ticket for :meth:`collect`.

        Each worker runs its queue in submission order, one batch at a time, without waiting
        for the other libraries: submit the next batch before collecting this one and a fast
        library goes on while a slow one finishes, and the caller's own work overlaps theirs.
        """
        for lib in batches:
            if lib not in self.workers:
                raise WorkerError(f"no worker for {lib!r} in this pool")
        self._tickets += 1
        ticket = self._tickets
        self._results[ticket] = {lib: [None] * len(calls) for lib, calls in batches.items()}
        self._open[ticket] = set()
        for lib, calls in batches.items():
            if calls:
                self._queues[lib].append((ticket, list(calls)))
                self._open[ticket].add(lib)
        self._feed()
        return ticket

    def collect(self, ticket: int) -> dict[str, list[Outcome]]:
        """Wait for a submitted run (working on later ones meanwhile); one outcome per call."""
        if ticket not in self._open:
            raise WorkerError(f"no submitted run {ticket}")
        while self._open[ticket]:
            self._advance()
        del self._open[ticket]
        for lib in self.workers:
            self._withdrawn.pop((ticket, lib), None)  # left in calls sent before the withdrawal
        results = self._results.pop(ticket)
        return {lib: [o for o in outs if o is not None] for lib, outs in results.items()}

    def withdraw(self, ticket: int, library: str, index: int) -> None:
        """Leave out one call of a submitted run if it has not been sent yet (nor answered):
        its outcome is then a ``withdrawn`` one. A call already sent in a batch is left out
        only if the worker dies before reaching it (the rest of the batch is sent again)."""
        results = self._results.get(ticket, {}).get(library)
        if results is not None and results[index] is None:
            self._withdrawn.setdefault((ticket, library), set()).add(index)

    def _feed(self) -> None:
        """Start the next queued batch on every worker that is free."""
        for lib, queue in self._queues.items():
            while lib not in self._inflight and queue:
                ticket, calls = queue.popleft()
                state = _BatchState(calls=calls, slots=list(range(len(calls))), ticket=ticket)
                if self._still_wanted(lib, state):
                    self._inflight[lib] = state
                    self._submit(lib, state)
                else:
                    self._open[ticket].discard(lib)

    def _still_wanted(self, lib: str, state: _BatchState) -> bool:
        """Drop the withdrawn calls from a batch about to be sent; whether any are left."""
        withdrawn = self._withdrawn.pop((state.ticket, lib), None)
        if withdrawn:
            results = self._results[state.ticket][lib]
            keep = []
            for call, slot in zip(state.calls, state.slots, strict=True):
                if slot in withdrawn and results[slot] is None:
                    results[slot] = Outcome(library=lib, api=call.api, status=WITHDRAWN)
                else:
                    keep.append((call, slot))
            state.calls = [c for c, _ in keep]
            state.slots = [s for _, s in keep]
        return bool(state.calls)

    def done(self, ticket: int) -> bool:
        """Whether every library has finished its part of a submitted run."""
        return not self._open.get(ticket, ())

    def advance(self, timeout: float) -> None:
        """Let the workers make progress for at most ``timeout`` seconds (less if any does)."""
        if self._inflight:
            self._advance(timeout)
        else:
            time.sleep(timeout)

    def backlog(self) -> dict[str, float]:
        """Each library's queued work in seconds: calls not yet answered times its mean call
        time so far (a hundredth of a second before it has answered any)."""
        out = {}
        for lib, queue in self._queues.items():
            waiting = sum(len(calls) for _, calls in queue)
            state = self._inflight.get(lib)
            if state is not None:
                waiting += len(state.calls) - state.index
            t = self.times[lib]
            mean = (t.warm_seconds + t.first_seconds) / t.calls if t.calls else 0.01
            out[lib] = waiting * mean
        return out

    def _advance(self, timeout: float | None = None) -> None:
        """Wait for any worker to make progress; close out batches that finished."""
        view = {lib: self._results[s.ticket][lib] for lib, s in self._inflight.items()}
        before = dict(self._inflight)
        self._step(self._inflight, view, timeout)
        for lib, state in before.items():
            if self._inflight.get(lib) is not state:
                self._open[state.ticket].discard(lib)
        self._feed()

    # --- internals -------------------------------------------------------------------------
    def _ask_doc(self, lib: str, query: _DocQuery) -> bool:
        """Ask ``lib``'s worker for the next docstring of ``query``; False when none is left."""
        if not query.paths:
            return False
        query.path = query.paths.popleft()
        query.rid = self._rid()
        query.deadline = time.monotonic() + self.deadline
        self.workers[lib].send({"op": "doc", "id": query.rid, "api": query.path})
        return True

    def _take_docs(
        self, lib: str, queries: dict[str, _DocQuery], found: dict[str, dict[str, Doc]]
    ) -> None:
        """Record the docstrings ``lib``'s worker has sent, asking for the next each time."""
        worker, query = self.workers[lib], queries[lib]
        while True:
            try:
                frame = worker.next_frame()
            except protocol.ProtocolError:
                self._drop_docs(lib, queries)
                return
            if frame is None:
                return
            if frame.get("id") != query.rid:
                continue
            doc, name, calls = frame.get("doc"), frame.get("name", ""), frame.get("calls", [])
            if frame.get("status") == "ok" and isinstance(doc, str):
                plain = isinstance(calls, list) and all(isinstance(c, str) for c in calls)
                found[lib][query.path] = Doc(
                    text=doc,
                    name=name if isinstance(name, str) else "",
                    calls=tuple(calls) if plain else (),
                )
            if not self._ask_doc(lib, query):
                del queries[lib]
                return

    def _drop_docs(self, lib: str, queries: dict[str, _DocQuery]) -> None:
        """Give up on ``lib``'s docstrings (its worker died or missed the deadline): kill the
        worker and restart it, as after a call."""
        self.workers[lib].kill()
        self._replace(lib)
        del queries[lib]

    def _rid(self) -> int:
        self._next_id += 1
        return self._next_id

    def _ready(self, library: str) -> Worker:
        worker = self.workers[library]
        if not worker.alive:
            worker.start()
        if worker.hello is None:
            self._await_hello(worker, time.monotonic() + self.startup_timeout)
        return worker

    def _await_hello(self, worker: Worker, deadline: float) -> None:
        while worker.hello is None:
            self._read_until(worker, deadline, "hello")

    def _read_until(self, worker: Worker, deadline: float, op: str) -> dict[str, Any]:
        """Read frames until one with ``op`` arrives; raise WorkerError on death or timeout."""
        while True:
            try:
                frame = self._next(worker, deadline)
            except _Died:
                raise WorkerError(self._startup_failure(worker)) from None
            except _TimedOut:
                worker.kill()
                raise WorkerError(
                    f"the {worker.library} worker did not answer {op!r} in time"
                ) from None
            if frame["op"] == "hello":
                worker.hello = _hello(frame)
            if frame["op"] == "fatal":
                worker.kill()
                err = frame.get("error", {})
                raise WorkerError(
                    f"the {worker.library} worker failed to load its library: "
                    f"{err.get('type')}: {err.get('message')}; check `xamt env list`"
                )
            if frame["op"] == op:
                return frame

    def _startup_failure(self, worker: Worker) -> str:
        code = worker.reap()
        tail = worker.stderr_tail().strip().splitlines()[-3:]
        return (
            f"the {worker.library} worker exited ({_describe_exit(code)}) before it was "
            f"ready: {' | '.join(tail) or 'no output'}; check `xamt env list`"
        )

    def _next(self, worker: Worker, deadline: float) -> dict[str, Any]:
        """The next frame from one worker, waiting at most until ``deadline``."""
        while True:
            try:
                frame = worker.next_frame()
            except protocol.ProtocolError as exc:
                worker.kill()
                raise WorkerError(
                    f"the {worker.library} worker broke the protocol: {exc}"
                ) from None
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _TimedOut
            ready, _, _ = select.select([worker.fileno()], [], [], remaining)
            if ready and not worker.pump():
                raise _Died

    def _submit(self, lib: str, state: _BatchState) -> None:
        worker = self.workers[lib]
        if not worker.alive:
            worker.start()
        state.rid = self._rid()
        pending = state.calls
        state.index = 0
        state.single = len(pending) == 1
        if state.single:
            c = pending[0]
            header = {"op": "call", "id": state.rid, "api": c.api, "seed": c.seed}
            if c.transpose:
                header["transpose"] = _plain_transpose(c.transpose)
            if c.grad:
                header["grad"] = list(c.grad)
            worker.send(header, {"args": list(c.args), "kwargs": dict(c.kwargs)})
        else:
            worker.send(
                {"op": "batch", "id": state.rid}, {"calls": [_call_value(c) for c in pending]}
            )
        now = time.monotonic()
        state.since = now
        if worker.hello is not None:
            state.deadline = now + self._allowance(lib, pending[0].api)
        else:
            if worker.waiting_since is None:
                worker.waiting_since = now
            state.deadline = now + self.startup_timeout + self.deadline

    def _step(
        self,
        states: dict[str, _BatchState],
        results: dict[str, list[Outcome | None]],
        limit: float | None = None,
    ) -> None:
        """Wait (at most ``limit`` seconds) for any worker to make progress and record it."""
        # Frames already buffered first: select() cannot see them.
        for lib in list(states):
            self._drain(lib, states, results)
        if not states:
            return
        now = time.monotonic()
        timeout = max(0.0, min(s.deadline for s in states.values()) - now)
        if limit is not None:
            timeout = min(timeout, limit)
        fds = {self.workers[lib].fileno(): lib for lib in states}
        ready, _, _ = select.select(list(fds), [], [], timeout)
        for fd in ready:
            lib = fds[fd]
            if not self.workers[lib].pump():
                self._on_death(lib, states, results)
            else:
                self._drain(lib, states, results)
        now = time.monotonic()
        for lib in list(states):
            state = states[lib]
            if now >= state.deadline:
                self._on_hang(lib, states, results)

    def _drain(
        self, lib: str, states: dict[str, _BatchState], results: dict[str, list[Outcome | None]]
    ) -> None:
        worker = self.workers[lib]
        while lib in states:
            state = states[lib]
            try:
                frame = worker.next_frame()
            except protocol.ProtocolError as exc:
                worker.kill()
                self._fail_current(lib, states, results, "crash", f"protocol error: {exc}")
                return
            if frame is None:
                return
            op = frame.get("op")
            if op == "hello":
                worker.hello = _hello(frame)
                now = time.monotonic()
                self._ready_after_wait(worker, now)
                state.since = now
                state.deadline = now + self._allowance(lib, state.calls[state.index].api)
            elif op == "fatal":
                worker.kill()
                err = frame.get("error", {})
                raise WorkerError(
                    f"the {lib} worker failed to load its library: "
                    f"{err.get('type')}: {err.get('message')}"
                )
            elif op == "result" and frame.get("id") == state.rid:
                call = state.calls[state.index]
                results[lib][state.slots[state.index]] = _outcome(lib, call, frame)
                self._record(lib, call.api, frame)
                state.index += 1
                now = time.monotonic()
                state.since = now
                if state.index < len(state.calls):
                    state.deadline = now + self._allowance(lib, state.calls[state.index].api)
                if state.index == len(state.calls) and state.single:
                    del states[lib]  # a single call has no "done" frame
            elif op == "done" and frame.get("id") == state.rid:
                del states[lib]
            elif op == "error":
                raise WorkerError(f"the {lib} worker rejected a request: {frame.get('reason')}")

    def _on_death(
        self, lib: str, states: dict[str, _BatchState], results: dict[str, list[Outcome | None]]
    ) -> None:
        worker = self.workers[lib]
        code = worker.reap()
        tail = worker.stderr_tail()
        if worker.hello is None:  # died while loading its library: the environment is broken
            raise WorkerError(self._startup_failure(worker))
        status = "resource" if RESOURCE_PATTERNS.search(tail[-1500:]) else "crash"
        self.times[lib].deaths += 1
        self._fail_current(lib, states, results, status, tail, code)

    def _on_hang(
        self, lib: str, states: dict[str, _BatchState], results: dict[str, list[Outcome | None]]
    ) -> None:
        worker = self.workers[lib]
        worker.kill()
        if worker.hello is None:
            raise WorkerError(f"the {lib} worker did not start within {self.startup_timeout:.0f} s")
        state = states[lib]
        waited = time.monotonic() - state.since
        self.times[lib].hangs += 1
        self.times[lib].hang_seconds += waited
        self._fail_current(
            lib, states, results, "hang", f"no answer within {waited:.3g} s; worker killed"
        )

    def _fail_current(
        self,
        lib: str,
        states: dict[str, _BatchState],
        results: dict[str, list[Outcome | None]],
        status: str,
        detail: str,
        code: int | None = None,
    ) -> None:
        """Record the in-flight call as failed, restart the worker, resubmit the rest (less
        the calls withdrawn meanwhile)."""
        state = states[lib]
        call = state.calls[state.index]
        results[lib][state.slots[state.index]] = Outcome(
            library=lib,
            api=call.api,
            status=status,
            detail=detail[-STDERR_TAIL:],
            signal=_signal_name(code),
            exit_code=code,
        )
        if self.on_failure is not None:
            self.on_failure(state.ticket, lib, state.slots[state.index])
        state.calls = state.calls[state.index + 1 :]
        state.slots = state.slots[state.index + 1 :]
        self._replace(lib)  # restart now; the hello is read with the next frames
        if self._still_wanted(lib, state):
            self._submit(lib, state)
        else:
            del states[lib]

    def _replace(self, lib: str) -> None:
        """Put a live worker in place of ``lib``'s dead one: its standby if there is one (the
        dead one becomes the next standby), else the dead one restarted."""
        self.times[lib].restarts += 1
        dead = self.workers[lib]
        spare = self._spares.pop(lib, None)
        if spare is not None and not spare.alive:
            spare.reap()
            spare = None
        if spare is not None:
            self.workers[lib] = spare
        else:
            dead.start()
        self._spawn_spare(lib, dead if spare is not None else None)

    def _spawn_spare(self, lib: str, reuse: Worker | None = None) -> None:
        """Start a standby worker for ``lib`` (reusing a dead worker's record), if the pool
        keeps standbys and the machine has the memory; under pressure, drop every standby."""
        if not self.standby or lib in self._spares:
            return
        if memory.available_memory() < STANDBY_RESERVE:
            for other in self._spares.values():
                other.kill()
            self._spares.clear()
            return
        current = self.workers[lib]
        spare = reuse or Worker(
            lib,
            current.python,
            current.memory_cap,
            current.log_dir,
            current.testing,
            current.result_budget,
        )
        spare.start()
        self._spares[lib] = spare

    def _ready_after_wait(self, worker: Worker, now: float) -> None:
        """Account a hello that work was waiting for: a restart (or a lazy first start)."""
        if worker.waiting_since is None:
            return
        waited = now - worker.waiting_since
        worker.waiting_since = None
        times = self.times[worker.library]
        if worker.starts > 1 or times.restarts:
            times.restart_seconds += waited
        else:
            times.startup_seconds += waited

    def _record(self, lib: str, api: str, frame: dict[str, Any]) -> None:
        seconds = frame.get("seconds")
        if not isinstance(seconds, int | float):
            return
        self.times[lib].record_call(float(seconds), bool(frame.get("first")))
        calls, slowest = self._api_times.get((lib, api), (0, 0.0))
        self._api_times[(lib, api)] = (calls + 1, max(slowest, float(seconds)))
        recent = self._recent[lib]
        recent.append(float(seconds))
        if len(recent) >= MIN_LIBRARY_CALLS and self.times[lib].calls % 32 == 0:
            ordered = sorted(recent)
            self._quantile[lib] = ordered[int(LIBRARY_QUANTILE * (len(ordered) - 1))]

    def _allowance(self, lib: str, api: str) -> float:
        """Seconds the next call of ``api`` may take before it is a hang."""
        if not self.adaptive:
            return self.deadline
        calls, slowest = self._api_times.get((lib, api), (0, 0.0))
        if calls < MIN_OBSERVED:
            quantile = self._quantile[lib]
            if quantile is None:
                return self.deadline
            slowest = max(slowest, quantile)
        return min(self.deadline, max(MIN_DEADLINE, DEADLINE_SLACK * slowest))


def worker_env(library: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The environment of ``library``'s worker: the orchestrator's without its PYTHON*
    variables (PYTHONPATH would expose its packages), with the worker's own ones
    (:data:`WORKER_ENV`); jax's persistent compilation cache in :func:`jax_cache_dir` unless
    the user named another folder, and, either way, the thresholds that make jax keep every
    compiled kernel (:data:`JAX_CACHE_ENV`; by default only those that took a second to
    compile are kept, which is none of a fuzzing campaign's eager calls) unless the user set
    them too."""
    env = {k: v for k, v in environ.items() if not k.startswith("PYTHON")}
    env.update(WORKER_ENV)
    if library == "jax":
        env.setdefault("JAX_COMPILATION_CACHE_DIR", str(jax_cache_dir()))
        for name, value in JAX_CACHE_ENV.items():
            env.setdefault(name, value)
    return env


def jax_cache_dir() -> Path:
    """Where jax workers keep compiled kernels: ``$XAMT_HOME/cache/jax``."""
    return xamt_home() / "cache" / "jax"


@dataclass
class _BatchState:
    calls: list[Call]  # those not yet sent, or sent in the current request
    slots: list[int]  # each call's place in its run's results
    ticket: int = 0
    index: int = 0
    rid: int = 0
    single: bool = False
    deadline: float = 0.0
    since: float = 0.0  # when the current call began waiting


@dataclass(frozen=True)
class Doc:
    """What a worker says of a callable: its docstring, its qualified name
    (``module.qualname``) and the functions and classes of its own library that its Python
    source calls or hands to a call (following its implementations of the same name down to
    the worker's ``SAME_NAME_DEPTH``)."""

    text: str = ""
    name: str = ""
    calls: tuple[str, ...] = ()

    def implementation(self) -> frozenset[str]:
        """Its own name and the same-named functions it hands its work to (``_nanvar`` is
        ``nanvar``'s): what a caller that delegates to it calls."""
        tail = protocol.name_tail(self.name)
        same = (c for c in self.calls if protocol.name_tail(c) == tail)
        return frozenset({self.name, *same} - {""})


@dataclass
class _DocQuery:
    """One library's part of :meth:`WorkerPool.docs`."""

    paths: deque[str]  # not yet asked
    path: str = ""  # the one asked
    rid: int = 0
    deadline: float = 0.0


def _call_value(call: Call) -> dict[str, Any]:
    value = {
        "api": call.api,
        "args": list(call.args),
        "kwargs": dict(call.kwargs),
        "seed": call.seed,
    }
    if call.transpose:
        value["transpose"] = _plain_transpose(call.transpose)
    if call.grad:
        value["grad"] = list(call.grad)
    if call.budget is not None:
        value["budget"] = [call.budget[0], float(call.budget[1])]
    return value


def _plain_transpose(transpose: dict[str, tuple[int, ...]]) -> dict[str, list[int]]:
    return {k: [int(p) for p in perm] for k, perm in transpose.items()}


def _hello(frame: dict[str, Any]) -> Hello:
    if frame.get("protocol") != protocol.PROTOCOL_VERSION:
        raise WorkerError(
            f"worker speaks protocol {frame.get('protocol')}, "
            f"xamt speaks {protocol.PROTOCOL_VERSION}"
        )
    return Hello(
        library=frame["library"],
        version=frame["version"],
        numpy=frame["numpy"],
        python=frame["python"],
        device=frame["device"],
        dtypes=tuple(frame["dtypes"]),
        pid=frame["pid"],
    )


def _outcome(lib: str, call: Call, frame: dict[str, Any]) -> Outcome:
    err = frame.get("error")
    return Outcome(
        library=lib,
        api=call.api,
        status=frame["status"],
        value=frame.get("value"),
        error=ErrorInfo(**err) if err else None,
        seconds=frame.get("seconds"),
        cpu=frame.get("cpu"),
        detail=frame.get("reason", frame.get("grad_reason", "")),
        grad=tuple(frame["grad"]) if isinstance(frame.get("grad"), list) else None,
        grad_status=str(frame.get("grad_status", "")),
        grad_error=ErrorInfo(**frame["grad_error"]) if frame.get("grad_error") else None,
        tangent=frame.get("tangent"),
        tangent_status=str(frame.get("tangent_status", "")),
    )


def _signal_name(code: int | None) -> str | None:
    if code is None or code >= 0:
        return None
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"SIG{-code}"


def _describe_exit(code: int | None) -> str:
    name = _signal_name(code)
    return f"signal {name}" if name else f"exit code {code}"
