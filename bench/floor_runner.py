"""Make recorded calls in-process, inside one library's environment, and print the seconds.

Run by ``bench/campaign_rate.py`` with a library environment's interpreter:
``<env python> -s bench/floor_runner.py --lib jax --calls FILE``. FILE holds the calls as the
worker protocol's frames; each is made through the same adapter and conversions as a worker
makes it, but with no process boundary, no orchestrator and no other library: the floor.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_pkg = types.ModuleType("xamt")  # xamt.workers without xamt/__init__ (as the worker does)
_pkg.__path__ = [str(ROOT / "xamt")]
sys.modules.setdefault("xamt", _pkg)

import importlib  # noqa: E402

from xamt.workers import protocol  # noqa: E402
from xamt.workers.server import Server  # noqa: E402

DEADLINE = 10.0  # seconds a call may take, as in a campaign


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", required=True)
    parser.add_argument("--calls", required=True, type=Path)
    parser.add_argument("--skip", default="", help="comma-separated call indices to leave out")
    parser.add_argument("--at", type=Path, help="file that holds the index of the call made")
    opts = parser.parse_args()
    skip = {int(i) for i in opts.skip.split(",") if i}
    adapter = importlib.import_module(f"xamt.workers.adapters.{opts.lib}").ADAPTER()
    adapter.load()
    adapter.supported = adapter.probe_dtypes()
    server = Server(adapter, testing=False)
    data = opts.calls.read_bytes()
    requests = []
    at = 0
    size = protocol.PREFIX.size
    while at < len(data):
        hlen, plen = protocol.parse_prefix(data[at : at + size])
        header = data[at + size : at + size + hlen]
        payload = data[at + size + hlen : at + size + hlen + plen]
        requests.append(protocol.decode(header, payload, ("args", "kwargs")))
        at += size + hlen + plen
    at_fd = os.open(opts.at, os.O_WRONLY | os.O_CREAT) if opts.at else None
    made = 0
    started = time.perf_counter()
    for i, request in enumerate(requests):
        if i in skip:
            continue
        if at_fd is not None:  # which call killed or stalled the process, if one does
            os.pwrite(at_fd, f"{i:>10}".encode(), 0)
        signal.setitimer(signal.ITIMER_REAL, DEADLINE)  # SIGALRM ends a stalled runner
        server.call(request)
        signal.setitimer(signal.ITIMER_REAL, 0)
        made += 1
    print(f"{time.perf_counter() - started:.6f} {made}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
