"""Run short repros in forked children of one process that imported the library once.

Started by :mod:`xamt.triage.standalone` as ``<env python> -s .../standalone_runner.py --lib
NAME`` inside a library's own environment, where xamt is not installed: this file imports only
the standard library (and the library it is told to import), never xamt.

Protocol, one JSON object a line: the runner writes ``{"ready": seconds}`` once the library is
imported (or ``{"failed": "..."}`` and exits), then reads jobs ``{"id": N, "path": "...",
"timeout": seconds, "nice": bool}`` and writes, as each child ends, ``{"id": N, "rc": int,
"timed_out": bool, "stderr": "<tail>", "seconds": float}`` (``rc`` negative for a signal
death, as :mod:`subprocess` says it). Jobs are started as they arrive, so several may run at
once (hang checks); the sender decides how many. End of input: the children still running are
killed and the runner exits.

A child chdirs into a fresh temporary folder (mindspore writes ``rank_0/`` into the working
folder), sends stdout and stderr to files there, runs the script as ``__main__`` with
:func:`runpy.run_path` and exits 0, or 1 with the traceback on stderr for an exception (a
``SystemExit`` keeps its code); a signal death stays a signal death. It skips the
interpreter's shutdown (``os._exit``), as a forked child must.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":  # xamt/triage is not a folder of modules for the library to find
    sys.path[:] = [p for p in sys.path if p != str(Path(__file__).resolve().parent)]

import argparse
import importlib
import json
import os
import select
import shutil
import signal
import tempfile
import time
import traceback

STDERR_TAIL = 8000  # characters of a child's stderr sent back (the verdict reads its end)
POLL_SECONDS = 0.01  # how often running children are looked at
# The module each library's short repros import (the runner imports it once, before forking).
MODULES = {
    "numpy": "numpy",
    "torch": "torch",
    "tensorflow": "tensorflow",
    "jax": "jax",
    "paddle": "paddle",
    "mindspore": "mindspore",
    "mxnet": "mxnet",
}


def _child(path: str, folder: str, nice: bool, keep: tuple[int, ...]) -> None:
    """In the forked child: run ``path`` in ``folder`` and exit; never returns."""
    code = 1
    try:
        for fd in keep:  # the protocol pipes are the runner's, not the script's
            os.close(fd)
        if nice:
            os.nice(10)  # a spinning hang yields the cores to the checks that finish
        os.chdir(folder)
        null = os.open(os.devnull, os.O_RDONLY)
        out = os.open(os.path.join(folder, "stdout"), os.O_WRONLY | os.O_CREAT, 0o600)
        err = os.open(os.path.join(folder, "stderr"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        sys.argv = [path]
        sys.path[0:0] = [str(Path(path).resolve().parent)]  # as ``python path`` would
        import runpy

        try:
            runpy.run_path(path, run_name="__main__")
            code = 0
        except SystemExit as exc:
            if exc.code is None or isinstance(exc.code, int):
                code = exc.code or 0
            else:
                print(exc.code, file=sys.stderr)
                code = 1
        except BaseException:  # noqa: BLE001 - the script's exception is the verdict's input
            traceback.print_exc()
            code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _tail(folder: str) -> str:
    try:
        with open(os.path.join(folder, "stderr"), "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - STDERR_TAIL))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True, choices=sorted(MODULES))
    args = parser.parse_args()
    # the protocol goes on a copy of stdout; what the library prints goes to stderr
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    requests = sys.stdin.buffer.raw if hasattr(sys.stdin.buffer, "raw") else sys.stdin.buffer
    keep = (proto.fileno(), requests.fileno())

    def say(message: dict) -> None:
        proto.write(json.dumps(message) + "\n")

    started = time.monotonic()
    try:
        importlib.import_module(MODULES[args.lib])
    except BaseException as exc:  # noqa: BLE001 - said to the sender, one line
        say({"failed": f"import {MODULES[args.lib]}: {type(exc).__name__}: {exc}"[:500]})
        return 1
    say({"ready": time.monotonic() - started})

    running: dict[int, dict] = {}  # pid -> the job, its folder, its deadline, its start
    buffer = b""
    open_input = True
    while open_input or running:
        if open_input:
            ready, _, _ = select.select([requests], [], [], POLL_SECONDS if running else None)
            if ready:
                chunk = os.read(requests.fileno(), 65536)
                if not chunk:
                    open_input = False
                    for pid in running:  # the sender is gone: nobody reads the verdicts
                        os.kill(pid, signal.SIGKILL)
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    job = json.loads(line)
                    folder = tempfile.mkdtemp(prefix="xamt-short-")
                    sys.stdout.flush()
                    sys.stderr.flush()
                    pid = os.fork()
                    if pid == 0:
                        _child(job["path"], folder, bool(job.get("nice")), keep)
                    now = time.monotonic()
                    running[pid] = {
                        "job": job,
                        "folder": folder,
                        "deadline": now + float(job["timeout"]),
                        "started": now,
                    }
        else:
            time.sleep(POLL_SECONDS)
        for pid in list(running):
            done, status = os.waitpid(pid, os.WNOHANG)
            run = running[pid]
            timed_out = False
            if not done:
                if time.monotonic() < run["deadline"]:
                    continue
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                timed_out = True
            del running[pid]
            rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            if open_input:
                say(
                    {
                        "id": run["job"]["id"],
                        "rc": rc,
                        "timed_out": timed_out,
                        "stderr": _tail(run["folder"]),
                        "seconds": time.monotonic() - run["started"],
                    }
                )
            shutil.rmtree(run["folder"], ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
