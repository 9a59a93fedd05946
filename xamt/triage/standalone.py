"""Run many short repros standalone, fast: one process per library imports it once and forks.

Triage's last step runs every suspected bug's short repro (:mod:`xamt.triage.short`) on its
own, to hold back a finding whose repro does not show the departure. A fresh interpreter per
repro pays the library's import each time (torch 2-3 s, tensorflow 5 s, mindspore 8 s on two
shared cores), far past the minutes triage has. Here one runner per library
(:mod:`xamt.triage.standalone_runner`, started from the library's interpreter) imports it once
and runs each repro in a forked child, in a fresh temporary folder; the runner enforces the
time limit and reports the exit status, whether it was killed, and the stderr tail.

Note:
    A forked child is a fresh process only where the runner did nothing but import; a
    library that starts threads at import can leave a lock held in the child. So a forked
    run that ends in a way the verdict rules do not expect (a deadlock, a failure other than
    the predicted one: :func:`needs_fresh`) is re-checked in a genuine fresh interpreter
    (:func:`xamt.triage.short.run_fresh`) before its verdict holds the finding back, and a
    library whose forked runs are unreliable runs fresh always (:data:`FRESH_ALWAYS`).
"""

from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from xamt.triage.short import QUIET, Ran, Shows, limit_of, run_fresh, verdict_of

RUNNER = Path(__file__).with_name("standalone_runner.py")
# Libraries at work at once (a runner importing or running a check, or fresh runs): the
# machine has two cores. A runner left with only hang checks in flight waits (its children
# niced), and gives its turn to the next library.
MAX_BUSY = 2
HANG_AT_ONCE = 8  # hang checks in flight at once in one runner (they mostly wait, niced)
WAIT_SECONDS = 0.2  # how often a waiting check looks at the time limit
READY_SECONDS = 120.0  # a runner's import of its library, at most
# Libraries whose forked runs do not agree with fresh ones, run fresh always; the reason
# says what disagreed (measured with bench/standalone_cost.py).
FRESH_ALWAYS: Mapping[str, str] = {}


@dataclass(frozen=True, kw_only=True)
class Check:
    """One short repro to run standalone: a caller's ``key``, the blamed ``library``, the
    script's ``path``, what it shows while the bug is there and the error type it raises."""

    key: str
    library: str
    path: Path
    shows: Shows
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class Checked:
    """A check's verdict ("" where the repro showed the departure, else why not; None where it
    was not run before the time limit) and the runs behind it (``forked``, ``fresh``)."""

    verdict: str | None
    forked: Ran | None = None
    fresh: Ran | None = None


def needs_fresh(shows: Shows, error: str, ran: Ran) -> bool:
    """Whether a forked run's end must be re-checked in a fresh interpreter before it holds
    a finding back: it did not show the departure, and not because the repro simply passed
    (exit 0, or a hang's script that finished cleanly). A deadlock, a signal, an error other
    than the predicted one may be the fork's doing (a lock held by a library's thread)."""
    if not ran.forked or not verdict_of(shows, error, ran, limit_of(shows)):
        return False
    return ran.timed_out or ran.rc != 0 or bool(ran.failed)


class _Runner:
    """One library's runner process (:mod:`xamt.triage.standalone_runner`)."""

    def __init__(self, library: str, python: str) -> None:
        self.library = library
        self.folder = tempfile.mkdtemp(prefix="xamt-runner-")  # mindspore writes rank_0/
        try:
            self.proc = subprocess.Popen(
                [python, "-s", str(RUNNER), "--lib", library],
                cwd=self.folder,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env={**os.environ, **QUIET},
                start_new_session=True,
                close_fds=True,
            )
        except OSError:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        assert self.proc.stdout is not None and self.proc.stdin is not None
        self.stdin = self.proc.stdin
        self.fd = self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.fd, selectors.EVENT_READ)
        self.buffer = b""
        self.eof = False

    def send(self, message: dict) -> None:
        try:
            self.stdin.write((json.dumps(message) + "\n").encode())
            self.stdin.flush()
        except OSError:  # the runner died: read() says so
            self.eof = True

    def read(self, seconds: float) -> list[dict]:
        """The messages that arrive within ``seconds`` (none on a quiet runner)."""
        if not self.eof and self.selector.select(seconds):
            try:
                chunk = os.read(self.fd, 1 << 20)
            except BlockingIOError:
                chunk = None
            if chunk == b"":
                self.eof = True
            elif chunk:
                self.buffer += chunk
        messages = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            messages.append(json.loads(line))
        return messages

    def close(self) -> None:
        """End the runner and everything it started (its children share its session)."""
        try:
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        self.proc.wait()
        self.selector.close()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(kw_only=True)
class _Library:
    """One library's checks as they are run (mutable bookkeeping of one thread)."""

    library: str
    checks: list[Check]
    python: str | None
    late: Callable[[], bool]
    busy: threading.Semaphore
    results: dict[str, Checked] = field(default_factory=dict)
    working: bool = False

    def work(self) -> None:
        """Take one of the :data:`MAX_BUSY` turns (waits for it)."""
        if not self.working:
            self.busy.acquire()
            self.working = True

    def idle(self) -> None:
        """Give the turn back: what is left only waits."""
        if self.working:
            self.busy.release()
            self.working = False

    def fresh(self, check: Check, forked: Ran | None = None) -> None:
        if self.late():
            self.results[check.key] = Checked(verdict=None, forked=forked)
            return
        assert self.python is not None
        limit = limit_of(check.shows)
        ran = run_fresh(check.path, python=self.python, limit=limit)
        verdict = verdict_of(check.shows, check.error, ran, limit)
        self.results[check.key] = Checked(verdict=verdict, forked=forked, fresh=ran)

    def run_fresh_all(self) -> None:
        """Every check in a fresh interpreter: the hang checks concurrently, the rest one at a
        time beside them."""
        hangs = [c for c in self.checks if c.shows == "hang"]
        rest = [c for c in self.checks if c.shows != "hang"]
        with ThreadPoolExecutor(max_workers=HANG_AT_ONCE) as pool:
            waiting = [pool.submit(self.fresh, c) for c in hangs]
            for c in rest:
                self.fresh(c)
            self.idle()  # only hangs waiting out their limit
            for w in waiting:
                w.result()

    def run_forked_all(self, recheck: bool) -> None:
        """Every check in a forked child of one runner; the unexpected ends re-checked fresh
        once the runner is gone (``recheck``)."""
        assert self.python is not None
        try:
            runner = _Runner(self.library, self.python)
        except OSError:
            self.run_fresh_all()
            return
        again: list[tuple[Check, Ran]] = []
        try:
            if not self._ready(runner):
                if not self.late():
                    runner.close()
                    self.run_fresh_all()  # the runner could not import: fresh says why
                return
            by_id = {i: c for i, c in enumerate(self.checks)}
            hangs = [i for i, c in by_id.items() if c.shows == "hang"]
            rest = [i for i, c in by_id.items() if c.shows != "hang"]
            in_flight: set[int] = set()
            while hangs or rest or in_flight:
                if self.late():
                    break
                while hangs and sum(by_id[i].shows == "hang" for i in in_flight) < HANG_AT_ONCE:
                    self._send(runner, hangs.pop(0), in_flight)
                if rest and not any(by_id[i].shows != "hang" for i in in_flight):
                    self._send(runner, rest.pop(0), in_flight)
                if not rest and all(by_id[i].shows == "hang" for i in in_flight):
                    self.idle()  # only hangs waiting out their limit
                for message in runner.read(WAIT_SECONDS):
                    i = message["id"]
                    in_flight.discard(i)
                    check = by_id[i]
                    ran = Ran(
                        rc=message["rc"],
                        timed_out=message["timed_out"],
                        stderr=message["stderr"],
                        seconds=message["seconds"],
                        forked=True,
                    )
                    if recheck and needs_fresh(check.shows, check.error, ran):
                        again.append((check, ran))
                    else:
                        verdict = verdict_of(check.shows, check.error, ran, limit_of(check.shows))
                        self.results[check.key] = Checked(verdict=verdict, forked=ran)
                if runner.eof:  # the runner died: its checks not done go fresh
                    died = Ran(failed="the runner died")
                    again.extend((by_id[i], died) for i in [*in_flight, *hangs, *rest])
                    break
        finally:
            runner.close()
        if again:
            self.work()
        for check, ran in again:
            self.fresh(check, forked=ran)

    def _ready(self, runner: _Runner) -> bool:
        waited = time.monotonic()
        while not self.late() and time.monotonic() - waited < READY_SECONDS:
            for message in runner.read(WAIT_SECONDS):
                return "ready" in message
            if runner.eof:
                return False
        return False

    def _send(self, runner: _Runner, i: int, in_flight: set[int]) -> None:
        check = self.checks[i]
        runner.send(
            {
                "id": i,
                "path": str(Path(check.path).resolve()),
                "timeout": limit_of(check.shows),
                "nice": check.shows == "hang",
            }
        )
        in_flight.add(i)


def run_checks(
    checks: Sequence[Check],
    *,
    pythons: Mapping[str, str | None],
    late: Callable[[], bool] = lambda: False,
    forked: bool = True,
    recheck: bool = True,
) -> dict[str, Checked]:
    """Run every check standalone, as one batch, before ``late()`` says the time is up; the
    verdict of a check by ``key``. ``pythons`` is each library's interpreter (None or absent
    where it has no usable environment: the verdict says so). One process per library, at
    most :data:`MAX_BUSY` of them at work at once (one left with only hangs waiting is not);
    ``forked=False`` runs every check in a fresh interpreter, ``recheck=False`` keeps the
    forked verdicts as they are (both for measuring)."""
    results: dict[str, Checked] = {}
    busy = threading.Semaphore(MAX_BUSY)
    by_library: dict[str, list[Check]] = {}
    for check in checks:
        if not check.shows:
            results[check.key] = Checked(verdict="")
            continue
        by_library.setdefault(check.library, []).append(check)
    work = []
    for library, mine in by_library.items():
        python = pythons.get(library)
        if python is None:
            verdict = f"it was not run: no usable {library} environment"
            results.update((c.key, Checked(verdict=verdict)) for c in mine)
            continue
        work.append(_Library(library=library, checks=mine, python=python, late=late, busy=busy))
    work.sort(key=lambda w: -len(w.checks))  # the longest queues start first
    order = threading.Lock()  # the libraries take their turns in that order

    def run(w: _Library) -> dict[str, Checked]:
        with order:
            w.work()
        try:
            if forked and w.library not in FRESH_ALWAYS:
                w.run_forked_all(recheck)
            else:
                w.run_fresh_all()
        finally:
            w.idle()
        for c in w.checks:  # what the time limit stopped
            w.results.setdefault(c.key, Checked(verdict=None))
        return w.results

    with ThreadPoolExecutor(max_workers=max(len(work), 1)) as pool:
        for done in pool.map(run, work):
            results.update(done)
    return results
