"""Resolve API paths of one library with the worker's own resolution, calling nothing.

Run with a library environment's interpreter (``<env python> resolve_catalog.py LIB
[--catalog FILE] [PATH ...]``): it loads the library through its adapter and resolves the
given paths, and with ``--catalog`` each of the library's members' ``api``, ``callable`` and
``callables``, exactly as a worker does before a call
(:meth:`xamt.workers.server.Server.resolve`, which refuses a path that leaves the library).
Prints one JSON line: ``{"library", "paths", "refused": {path: reason}}``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# like the worker: the xamt package without running xamt/__init__ (no orchestrator imports)
_pkg = types.ModuleType("xamt")
_pkg.__path__ = [str(ROOT / "xamt")]
sys.modules.setdefault("xamt", _pkg)

from xamt.workers.server import Server, UnknownApi  # noqa: E402


def main(lib: str, catalog: str | None, given: list[str]) -> None:
    adapter = importlib.import_module(f"xamt.workers.adapters.{lib}").ADAPTER()
    adapter.load()
    server = Server(adapter, testing=False)
    paths = set(given)
    groups = json.loads(Path(catalog).read_text())["groups"] if catalog else []
    for group in groups:
        for member in group["members"]:
            if member["library"] == lib:
                paths.add(member["api"])
                paths.add(member.get("callable", member["api"]))
                paths.update(member.get("callables", {}).values())
    refused = {}
    for path in sorted(paths):
        try:
            server.resolve(path)
        except UnknownApi as exc:
            refused[path] = str(exc)
    print(json.dumps({"library": lib, "paths": len(paths), "refused": refused}), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("lib")
    parser.add_argument("--catalog")
    parser.add_argument("paths", nargs="*")
    opts = parser.parse_args()
    main(opts.lib, opts.catalog, opts.paths)
