"""The worker: runs inside one library's environment and serves calls over stdin/stdout.

Started by the pool as ``<env python> -E -s .../xamt/workers/server.py --lib NAME``. It imports
the standard library, numpy and its one adapter; xamt's orchestrator dependencies (typer,
jinja2, PyGithub) are not installed in library environments and are never imported here.

Requests (``op``): ``hello``, ``describe``, ``doc`` (a callable's docstring, its qualified name
and the library functions its source calls), ``call``, ``batch``,
``shutdown``. A batch streams one reply frame per call as soon as it is done
(``{"op": "result", "index": i, ...}``) and a final ``{"op": "done"}``, so when the process dies
the orchestrator knows which call killed it. A call of a batch may carry ``budget``: [key,
seconds], a time budget the batch's calls of that key share; one reached after they spent it
is not made and answers ``withdrawn``.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

if __name__ == "__main__":  # make ``xamt.workers`` importable without running ``xamt/__init__``
    _pkg = types.ModuleType("xamt")
    _pkg.__path__ = [str(Path(__file__).resolve().parent.parent)]
    sys.modules.setdefault("xamt", _pkg)
    sys.path[:] = [p for p in sys.path if p != str(Path(__file__).resolve().parent)]

import argparse
import ast
import ctypes
import faulthandler
import importlib
import importlib.util
import inspect
import os
import resource
import signal
import textwrap
import threading
import time
import traceback
from typing import Any

import numpy as np

from xamt.workers import api_paths, protocol
from xamt.workers.adapters.base import Adapter, Unsupported
from xamt.workers.protocol import (
    RESOURCE_PATTERNS,
    ApiRef,
    BFloat16,
    DType,
    Opaque,
    ProtocolError,
)

TESTING_ROOT = "xamt_testing"
TRACEBACK_FRAMES = 6


class UnknownApi(Exception):
    """The API path does not name a callable of this library."""


class OutsideLibrary(UnknownApi):
    """The API path leads out of the library (``torch.os.kill``): refused, never called."""


# How deep :func:`_code_of` follows a call to a function of the same name (an API that hands
# its work to its backend's implementation: keras.ops.nanmedian to the tensorflow backend's).
SAME_NAME_DEPTH = 3


def _qualified(obj: Any) -> str:
    """``module.qualname`` of a function or class, "" for anything else."""
    obj = inspect.unwrap(obj) if callable(obj) else obj
    module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(qualname, str):
        return ""
    return f"{module}.{qualname}"


def _called(fn: Any) -> list[Any]:
    """The objects the Python source of ``fn`` calls, or hands to a call, by a global name or
    a dotted path from one (``flip(m, 0)``, ``ops.cast(x)``, ``_reduce(a, _nanvar)``),
    resolved in its module's globals; [] where there is no source (a builtin, a C
    extension)."""
    fn = inspect.unwrap(fn)
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, ValueError):
        return []
    names = getattr(fn, "__globals__", None)
    if names is None:
        module = sys.modules.get(getattr(fn, "__module__", None) or "")
        names = vars(module) if module is not None else {}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            handed = [*node.args, *(k.value for k in node.keywords)]
            for expr in (node.func, *handed):
                obj = _global(expr, names)
                if obj is not None:
                    found.append(obj)
    return found


def _global(expr: ast.expr, names: dict[str, Any]) -> Any:
    """The object a global name or a dotted path from one names (None for anything else)."""
    chain, head = [], expr
    while isinstance(head, ast.Attribute):
        chain.append(head.attr)
        head = head.value
    if not isinstance(head, ast.Name) or head.id not in names:
        return None
    obj = names[head.id]
    for part in reversed(chain):
        obj = inspect.getattr_static(obj, part, None)
    return obj


def _code_of(fn: Any) -> tuple[str, list[str]]:
    """The qualified name of ``fn`` and of the functions and classes of its own library that
    its source calls, following calls to a function of the same name (its implementation one
    layer down) up to :data:`SAME_NAME_DEPTH` deep. Never raises."""
    try:
        name = _qualified(fn)
        root = name.split(".", 1)[0]
        calls: dict[str, None] = {}
        todo, seen = [(fn, 0)], {name}
        while todo:
            current, depth = todo.pop()
            tail = protocol.name_tail(_qualified(current))
            for obj in _called(current):
                called = _qualified(obj)
                if not called.startswith(f"{root}.") or called == name:
                    continue
                calls[called] = None
                if depth < SAME_NAME_DEPTH and protocol.name_tail(called) == tail:
                    if called not in seen:
                        seen.add(called)
                        todo.append((obj, depth + 1))
        return name, list(calls)
    except Exception:  # noqa: BLE001 - a library's attributes may raise when read
        return "", []


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to kill this worker when the orchestrator dies; watch for it too."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:
        os._exit(0)

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:
                os._exit(0)

    threading.Thread(target=watch, daemon=True, name="xamt-parent-watch").start()


def _cap_memory(extra_bytes: int) -> None:
    """Cap this process's address space at its current size plus ``extra_bytes``.

    Note:
        Capping *additional* address space (rather than a total) is what makes one cap fit all
        libraries: tensorflow and mindspore map gigabytes of virtual memory at import.
    """
    if extra_bytes <= 0:
        return
    with open("/proc/self/statm") as fh:
        current = int(fh.read().split()[0]) * resource.getpagesize()
    limit = current + extra_bytes
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


class Server:
    """Turns decoded requests into library calls through one adapter."""

    def __init__(self, adapter: Adapter, testing: bool) -> None:
        self.adapter = adapter
        self.testing = testing
        self.cache: dict[str, Any] = {}
        # (api, input signature) of every call made: a call not in it is a *first* call, where
        # libraries that specialise on shapes and dtypes trace and compile
        self.seen: set[tuple[str, Any, Any]] = set()

    # --- API resolution --------------------------------------------------------------------
    def resolve(self, api: str) -> Any:
        """The callable ``api`` names, walked attribute by attribute from the library's root.

        Every module the walk passes through and the object it ends on must belong to the
        adapter's own packages (:mod:`xamt.workers.api_paths`): ``torch.os.kill`` is refused
        at ``torch.os`` (module ``os``) before anything is called.
        """
        fn = self.cache.get(api)
        if fn is not None:
            return fn
        parts = api.split(".")
        if not api or any(not p.isidentifier() for p in parts):
            raise UnknownApi(f"{api!r} is not a dotted API path")
        testing = parts[0] == TESTING_ROOT and self.testing
        if testing:
            obj: Any = _testing_ops()
        elif parts[0] in self.adapter.roots:
            obj = self.adapter.lib
        else:
            raise UnknownApi(
                f"{api!r} is not in {self.adapter.name} (paths start with "
                f"{' or '.join(self.adapter.roots)})"
            )
        module_path = self.adapter.roots[0] if not testing else None
        for i, part in enumerate(parts[1:], start=2):
            if part.startswith("__"):
                raise UnknownApi(f"{api!r}: private attribute {part!r}")
            nxt = getattr(obj, part, None)
            if nxt is None and module_path is not None and inspect.ismodule(obj):
                try:
                    nxt = importlib.import_module(f"{module_path}.{part}")
                except Exception:  # noqa: BLE001 - any import failure means "no such API"
                    nxt = None
            if nxt is None:
                raise UnknownApi(f"{api!r}: {self.adapter.name} has no attribute {part!r}")
            obj = nxt
            if not testing:
                self.check_inside(api, ".".join(parts[:i]), obj, last=i == len(parts))
            module_path = f"{module_path}.{part}" if module_path and inspect.ismodule(obj) else None
        if not callable(obj):
            raise UnknownApi(f"{api!r} is not callable")
        self.cache[api] = obj
        return obj

    def check_inside(self, api: str, reached: str, obj: Any, *, last: bool) -> None:
        """Refuse (:class:`OutsideLibrary`) a path whose step ``reached`` left the library."""
        packages = self.adapter.own_packages()
        module = api_paths.outside_module(obj, packages, self.adapter.adopted, last=last)
        if module is not None:
            raise OutsideLibrary(
                f"{api!r} refused: {reached} is {'module' if inspect.ismodule(obj) else 'from'} "
                f"{module!r}, outside {self.adapter.name} (API paths reach only "
                f"{', '.join(packages)})"
            )

    # --- conversion ------------------------------------------------------------------------
    def to_native(self, value: Any, api: str) -> Any:
        if isinstance(value, (np.ndarray, BFloat16)):
            return self.adapter.to_native(value, api)
        if isinstance(value, DType):
            return self.adapter.dtype_to_native(value.name)
        if isinstance(value, ApiRef):
            return self.resolve(value.path)
        if isinstance(value, tuple):
            return tuple(self.to_native(v, api) for v in value)
        if isinstance(value, list):
            return [self.to_native(v, api) for v in value]
        if isinstance(value, dict):
            return {k: self.to_native(v, api) for k, v in value.items()}
        return value

    def to_wire(self, out: Any, depth: int = 0) -> Any:
        """Convert a library's output tree to protocol values (arrays, scalars, containers)."""
        if depth > 32:
            return Opaque(type(out).__name__, "<nested too deep>")
        if out is None or isinstance(out, (bool, int, float, complex, str)):
            return out
        if isinstance(out, (np.ndarray, np.generic)):
            arr = np.asarray(out)
            if arr.dtype.name in protocol.DTYPE_NAMES:
                return arr
            return Opaque(f"ndarray[{arr.dtype}]", _short_repr(arr))
        if self.adapter.is_native(out):
            try:
                return self.adapter.native_to_numpy(out)
            except Exception as exc:  # noqa: BLE001 - e.g. a dtype numpy cannot hold
                return Opaque(type(out).__name__, f"{_short_repr(out)} ({exc})")
        if isinstance(out, tuple):  # namedtuples and torch.return_types included
            return tuple(self.to_wire(v, depth + 1) for v in out)
        if isinstance(out, list):
            return [self.to_wire(v, depth + 1) for v in out]
        if isinstance(out, dict):
            return {str(k): self.to_wire(v, depth + 1) for k, v in out.items()}
        return Opaque(type(out).__name__, _short_repr(out))

    # --- requests --------------------------------------------------------------------------
    def call(self, request: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Run one call; return (reply header, reply values). Never raises."""
        api = request.get("api", "")
        start = 0.0
        first = False
        wrt: Any = None
        try:
            if not isinstance(api, str):
                raise ProtocolError("call.api must be a string")
            fn = self.resolve(api)
            args = request.get("args", [])
            kwargs = request.get("kwargs", {})
            if not isinstance(args, list) or not isinstance(kwargs, dict):
                raise ProtocolError("call.args must be a list and call.kwargs a map")
            transpose = request.get("transpose") or {}
            if not isinstance(transpose, dict):
                raise ProtocolError("call.transpose must be a map")
            if transpose:
                args = [_transposed(a, transpose.get(str(i))) for i, a in enumerate(args)]
                kwargs = {k: _transposed(v, transpose.get(str(k))) for k, v in kwargs.items()}
            native_args = [self.to_native(a, api) for a in args]
            native_kwargs = {str(k): self.to_native(v, api) for k, v in kwargs.items()}
            seed = request.get("seed")
            if seed is not None:
                self.adapter.seed(int(seed))
            key = (api, protocol.input_signature(args), protocol.input_signature(kwargs))
            first = key not in self.seen
            self.seen.add(key)
            start, cpu_start = time.perf_counter(), time.process_time()
            out = self.adapter.materialize(fn(*native_args, **native_kwargs))
            value = self.to_wire(out)
            if transpose.get("return"):
                value = _transposed_result(value, transpose["return"])
            seconds = time.perf_counter() - start
            cpu = time.process_time() - cpu_start
            wrt = request.get("grad") or []
            if wrt:
                grad_header, grad = self.gradient(api, fn, args, kwargs, transpose, wrt, seed)
        except Unsupported as exc:
            return {"status": "unsupported", "reason": str(exc)}, {}
        except UnknownApi as exc:
            return {"status": "unknown-api", "reason": str(exc)}, {}
        except ProtocolError as exc:
            return {"status": "bad-request", "reason": str(exc)}, {}
        except MemoryError as exc:
            return {"status": "resource", "error": _error_info(exc)}, {}
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            info = _error_info(exc)
            status = "resource" if RESOURCE_PATTERNS.search(info["message"][:2000]) else "error"
            timing = {"seconds": time.perf_counter() - start, "first": first} if start else {}
            return {"status": status, "error": info, **timing}, {}
        header = {"status": "ok", "seconds": seconds, "cpu": cpu, "first": first}
        if not wrt:
            return header, {"value": value}
        grads, forward = grad if grad is not None else (None, None)
        return {**header, **grad_header}, {"value": value, "grad": grads, "tangent": forward}

    def gradient(
        self,
        api: str,
        fn: Any,
        args: list[Any],
        kwargs: dict[str, Any],
        transpose: dict[str, Any],
        wrt: Any,
        seed: Any,
    ) -> tuple[dict[str, Any], Any]:
        """The vector-Jacobian product of a call that returned (:meth:`Adapter.vjp`, on fresh
        native inputs): ``({"grad_status": "ok"}, gradients)``, each in the group's layout
        (None where the library returned none), or the status and error of a failure (the
        call's value stands either way). Never raises but for KeyboardInterrupt."""
        try:
            if not isinstance(wrt, list) or not all(isinstance(k, str) for k in wrt):
                raise ProtocolError("call.grad must be a list of argument keys")
            native_args = [self.to_native(a, api) for a in args]
            native_kwargs = {str(k): self.to_native(v, api) for k, v in kwargs.items()}
            back = transpose.get("return")
            self.adapter.out_perm = tuple(int(i) for i in back) if back else None
            try:
                grads = self.adapter.vjp(fn, native_args, native_kwargs, wrt, int(seed or 0))
            finally:
                self.adapter.out_perm = None
            out = []
            for key, g in zip(wrt, grads, strict=True):
                value = self.to_wire(self.adapter.materialize(g)) if g is not None else None
                perm = transpose.get(key)
                if perm is not None and value is not None:
                    value = _transposed(value, [int(i) for i in np.argsort(perm)])
                out.append(value)
            header, forward = self.forward_mode(api, fn, args, kwargs, transpose, wrt, seed)
            return {"grad_status": "ok", **header}, (out, forward)
        except Unsupported as exc:
            return {"grad_status": "unsupported", "grad_reason": str(exc)}, None
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"grad_status": "error", "grad_error": _error_info(exc)}, None

    def forward_mode(
        self,
        api: str,
        fn: Any,
        args: list[Any],
        kwargs: dict[str, Any],
        transpose: dict[str, Any],
        wrt: list[str],
        seed: Any,
    ) -> tuple[dict[str, Any], Any]:
        """The Jacobian-vector product of the call for the tangents :func:`protocol.tangent`
        makes (group layout, ``seed`` plus the argument's place in ``wrt``), where the
        library has forward mode: ``({"tangent_status": "ok"}, output tangent)`` in the
        group's layout, else the status. Never raises but for KeyboardInterrupt."""
        try:
            tangents = []
            for k, key in enumerate(wrt):
                value = args[int(key)] if key.isdigit() else kwargs[key]
                shape = np.shape(value.values if isinstance(value, BFloat16) else value)
                perm = transpose.get(key)
                group_shape = tuple(shape[int(i)] for i in np.argsort(perm)) if perm else shape
                t = protocol.tangent(tuple(int(n) for n in group_shape), int(seed or 0) + k)
                tangents.append(np.ascontiguousarray(np.transpose(t, perm)) if perm else t)
            native_args = [self.to_native(a, api) for a in args]
            native_kwargs = {str(k): self.to_native(v, api) for k, v in kwargs.items()}
            out = self.adapter.jvp(fn, native_args, native_kwargs, wrt, tangents)
            value = self.to_wire(self.adapter.materialize(out))
            if transpose.get("return"):
                value = _transposed_result(value, transpose["return"])
            return {"tangent_status": "ok"}, value
        except Unsupported:
            return {"tangent_status": "unsupported"}, None
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"tangent_status": "error", "tangent_error": _error_info(exc)}, None

    def doc(self, request: dict[str, Any]) -> dict[str, Any]:
        """The docstring of the callable ``request["api"]`` names, resolved as a call resolves
        its API: ``{"status": "ok", "doc": text}`` (``inspect.getdoc``, "" when it has none,
        at most :data:`~protocol.DOC_LIMIT` bytes of UTF-8), else a call's failure statuses
        (``unknown-api``, ``bad-request``, ``error``). Never raises."""
        api = request.get("api", "")
        try:
            if not isinstance(api, str):
                raise ProtocolError("doc.api must be a string")
            fn = self.resolve(api)
            text = inspect.getdoc(fn) or ""
        except UnknownApi as exc:
            return {"status": "unknown-api", "reason": str(exc)}
        except ProtocolError as exc:
            return {"status": "bad-request", "reason": str(exc)}
        except Exception as exc:  # noqa: BLE001 - a library's import or __doc__ may raise
            return {"status": "error", "error": _error_info(exc)}
        raw = text.encode("utf-8", errors="replace")[: protocol.DOC_LIMIT]
        name, calls = _code_of(fn)
        return {
            "status": "ok",
            "doc": raw.decode("utf-8", errors="ignore"),
            "name": name,
            "calls": calls[: protocol.CALLS_LIMIT],
        }

    def hello(self) -> dict[str, Any]:
        return {
            "protocol": protocol.PROTOCOL_VERSION,
            "library": self.adapter.name,
            "version": self.adapter.version(),
            "numpy": np.__version__,
            "python": sys.version.split()[0],
            "device": self.adapter.device,
            "dtypes": [d for d in protocol.DTYPE_NAMES if d in self.adapter.supported],
            "pid": os.getpid(),
        }

    def namespace(self, path: str) -> Any:
        """A namespace by dotted path: a module, or an attribute such as ``mxnet.nd``."""
        try:
            return importlib.import_module(path)
        except ImportError:
            head, _, tail = path.rpartition(".")
            if not head:
                raise
            return getattr(self.namespace(head), tail)

    def describe(self, namespaces: list[str] | None) -> dict[str, Any]:
        """List public callables of the adapter's namespaces with their parameters."""
        from xamt.workers.inventory import list_namespace

        apis: list[dict[str, Any]] = []
        errors: dict[str, str] = {}
        seen: dict[int, str] = {}
        for ns in namespaces or list(self.adapter.namespaces):
            try:
                module = self.namespace(ns)
            except Exception as exc:  # noqa: BLE001 - report and go on with other namespaces
                errors[ns] = f"{type(exc).__name__}: {exc}"
                continue
            try:
                entries = list_namespace(ns, module, seen)
                if inspect.isclass(module):  # methods, called unbound: the array comes first
                    for entry in entries:
                        params = entry["params"]
                        if params is not None and (not params or params[0]["name"] != "self"):
                            params.insert(0, {"name": "self", "kind": "positional_only"})
                if ns in self.adapter.keyword_only_namespaces:
                    for entry in entries:
                        for param in entry["params"] or ():
                            if param["kind"] in ("positional_only", "positional_or_keyword"):
                                param["kind"] = "keyword_only"
                apis.extend(entries)
            except Exception as exc:  # noqa: BLE001 - one bad namespace must not end the worker
                errors[ns] = f"{type(exc).__name__}: {exc}"
        return {"apis": apis, "errors": errors}


def _transposed(value: Any, perm: Any) -> Any:
    """An input array in the member's layout (``Call.transpose``); anything else as it is."""
    if perm is None:
        return value
    if not isinstance(perm, list | tuple) or not all(isinstance(p, int) for p in perm):
        raise ProtocolError("call.transpose values must be lists of ints")
    if isinstance(value, BFloat16) and value.values.ndim == len(perm):
        return BFloat16(np.transpose(value.values, perm))
    if isinstance(value, np.ndarray) and value.ndim == len(perm):
        return np.transpose(value, perm)
    return value


def _transposed_result(value: Any, perm: Any) -> Any:
    """A result back in the group's layout: every array of the permutation's rank in it (a
    result of another rank is left as it is, for the comparison to see)."""
    if isinstance(value, tuple | list):
        return type(value)(_transposed_result(v, perm) for v in value)
    return _transposed(value, perm)


def _testing_ops() -> types.ModuleType:
    """The test suite's misbehaving calls (``xamt_testing.*``): the module file named by
    ``XAMT_TESTING_OPS`` (the tests set it); they ship with the tests, not with xamt."""
    path = os.environ.get("XAMT_TESTING_OPS", "")
    module = sys.modules.get("xamt_testing")
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location("xamt_testing", path) if path else None
    if spec is None or spec.loader is None:
        raise UnknownApi("xamt_testing.* calls need XAMT_TESTING_OPS (set by the test suite)")
    module = importlib.util.module_from_spec(spec)
    sys.modules["xamt_testing"] = module
    spec.loader.exec_module(module)
    return module


def _short_repr(obj: Any, limit: int = 300) -> str:
    try:
        text = repr(obj)
    except Exception as exc:  # noqa: BLE001
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= limit else text[:limit] + "..."


def _error_info(exc: BaseException) -> dict[str, Any]:
    frames = traceback.extract_tb(exc.__traceback__)[-TRACEBACK_FRAMES:]
    return {
        "type": type(exc).__name__,
        "module": type(exc).__module__,
        "message": str(exc)[:4000],
        "traceback": "".join(traceback.format_list(frames))[-4000:],
    }


class Channel:
    """Frames over two file descriptors."""

    def __init__(self, rfd: int, wfd: int, budget: int | None = None) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.budget = budget  # array bytes per reply; larger results travel summarized

    def _read_exact(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = os.read(self.rfd, min(n, 1 << 24))
            if not chunk:
                raise EOFError
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def read(self) -> tuple[bytes, bytes]:
        hlen, plen = protocol.parse_prefix(self._read_exact(protocol.PREFIX.size))
        return self._read_exact(hlen), self._read_exact(plen)

    def write(self, header: dict[str, Any], values: dict[str, Any] | None = None) -> None:
        try:
            parts = protocol.frame(header, values, self.budget)
        except (ProtocolError, ValueError, TypeError) as exc:  # what cannot travel: an error reply
            parts = protocol.frame(
                {
                    **header,
                    "status": "error",
                    "error": {
                        "type": "ProtocolError",
                        "module": "xamt",
                        "message": str(exc),
                        "traceback": "",
                    },
                }
            )
        data = memoryview(b"".join(parts))
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]


VALUE_KEYS = ("args", "kwargs", "calls")


OVER_BUDGET = "not made: the calls sharing its time budget had spent it"


def _budget(call: dict[str, Any]) -> tuple[str | None, float]:
    """A call's shared time budget (``budget``: [key, seconds]); (None, 0) where it has none
    or it is malformed (the call is then made)."""
    budget = call.get("budget")
    if (
        isinstance(budget, list)
        and len(budget) == 2
        and isinstance(budget[0], str)
        and isinstance(budget[1], int | float)
    ):
        return budget[0], float(budget[1])
    return None, 0.0


def serve(server: Server, channel: Channel) -> None:
    while True:
        try:
            raw_header, payload = channel.read()
        except EOFError:
            return
        try:
            request = protocol.decode(raw_header, payload, VALUE_KEYS)
        except ProtocolError as exc:
            channel.write({"op": "error", "status": "bad-request", "reason": str(exc)})
            continue
        op = request.get("op")
        rid = request.get("id")
        if op == "call":
            header, values = server.call(request)
            channel.write({"op": "result", "id": rid, "index": 0, **header}, values)
        elif op == "batch":
            calls = request.get("calls")
            if not isinstance(calls, list) or not all(isinstance(c, dict) for c in calls):
                channel.write(
                    {
                        "op": "error",
                        "id": rid,
                        "status": "bad-request",
                        "reason": "batch.calls must be a list of calls",
                    }
                )
                continue
            spent: dict[str, float] = {}  # seconds taken by the calls of each budget key
            for index, call in enumerate(calls):
                key, seconds = _budget(call)
                if key is not None and spent.get(key, 0.0) >= seconds:
                    header, values = {"status": "withdrawn", "reason": OVER_BUDGET}, {}
                else:
                    started = time.perf_counter()
                    header, values = server.call(call)
                    if key is not None:
                        spent[key] = spent.get(key, 0.0) + time.perf_counter() - started
                channel.write({"op": "result", "id": rid, "index": index, **header}, values)
            channel.write({"op": "done", "id": rid, "count": len(calls)})
        elif op == "hello":
            channel.write({"op": "hello", "id": rid, **server.hello()})
        elif op == "describe":
            namespaces = request.get("namespaces")
            channel.write({"op": "describe", "id": rid, **server.describe(namespaces)})
        elif op == "doc":
            channel.write({"op": "doc", "id": rid, **server.doc(request)})
        elif op == "shutdown":
            channel.write({"op": "bye", "id": rid})
            return
        else:
            channel.write(
                {"op": "error", "id": rid, "status": "bad-request", "reason": f"unknown op {op!r}"}
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lib", required=True)
    parser.add_argument("--parent", type=int, default=0)
    parser.add_argument("--memory-cap", type=int, default=0, help="extra address space, bytes")
    parser.add_argument(
        "--result-budget",
        type=int,
        default=protocol.DEFAULT_RESULT_BUDGET,
        help="array bytes one reply may carry; larger results are summarized (0: no limit)",
    )
    opts = parser.parse_args(argv)

    # The protocol owns the real stdout; anything a library prints goes to stderr.
    wfd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    faulthandler.enable(sys.stderr)
    if opts.parent:
        _die_with_parent(opts.parent)
    channel = Channel(0, wfd, opts.result_budget if opts.result_budget > 0 else None)
    try:
        module = importlib.import_module(f"xamt.workers.adapters.{opts.lib}")
        adapter: Adapter = module.ADAPTER()
        adapter.load()
        adapter.supported = adapter.probe_dtypes()
    except Exception as exc:  # noqa: BLE001 - report why the library cannot load, then exit
        channel.write({"op": "fatal", "status": "load-failed", "error": _error_info(exc)})
        return 3
    _cap_memory(opts.memory_cap)
    serve(Server(adapter, testing=os.environ.get("XAMT_WORKER_TESTING") == "1"), channel)
    # no interpreter teardown: the libraries' exit handlers take seconds and keep nothing
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
