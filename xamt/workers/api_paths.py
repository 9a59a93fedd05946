"""What an API path may reach: only objects of its library's own packages.

An API path (``torch.nn.functional.relu``) is walked attribute by attribute in the worker. A
library module also holds the modules it imported (``torch.os``, ``torch.sys``,
``numpy.ctypeslib``'s ``ctypes``), so a path from an untrusted catalog or from ``xamt call``
could reach ``os.kill`` through it. Two checks keep paths inside the library:

- in the worker, before any call (:func:`home_of`, :func:`is_inside`): every module the walk
  passes through and the object it ends on must come from one of the adapter's ``packages``;
- at catalog load and in ``xamt call``, without importing any library
  (:func:`foreign_component`): no component of a path may be one of :data:`FOREIGN_MODULES`,
  the standard-library modules that give process, file, code or network access. This one only
  says early what the worker would refuse anyway.

Standard library only: the worker imports this module.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from typing import Any

# Standard-library (and common serialization) modules no API path may name as a component:
# each gives a caller process, file, code or network access. The reason is the access; the
# link is the module's documentation (https://docs.python.org/3/library/<name>.html, and
# the project page for cloudpickle and dill). Names a library also uses for its own
# functions or submodules (``signal``, ``io``, ``copy``, ``trace``, ``select``, ``math``)
# are not here: the worker's package check refuses those when they lead outside the library.
FOREIGN_MODULES: dict[str, str] = {
    "os": "processes, signals and files (os.kill, os.system, os.remove)",
    "posix": "the C layer under os: the same process and file calls",
    "nt": "the C layer under os on Windows",
    "sys": "interpreter state (sys.exit, sys.modules, sys.settrace)",
    "builtins": "eval, exec, open, __import__",
    "ctypes": "arbitrary native calls and memory writes",
    "importlib": "imports any module by name",
    "runpy": "runs any module or file as code",
    "code": "an interactive interpreter over arbitrary source",
    "codeop": "compiles arbitrary source",
    "subprocess": "starts processes",
    "pty": "starts processes on a pseudo-terminal",
    "multiprocessing": "starts processes",
    "shutil": "copies and deletes file trees",
    "pathlib": "reads, writes and deletes files",
    "tempfile": "creates files",
    "glob": "lists the file system",
    "zipfile": "reads and writes archives on disk",
    "tarfile": "reads and writes archives on disk (and extracts anywhere)",
    "pickle": "unpickling runs arbitrary code",
    "marshal": "loads code objects",
    "shelve": "pickle-backed files",
    "cloudpickle": "unpickling runs arbitrary code (https://github.com/cloudpipe/cloudpickle)",
    "dill": "unpickling runs arbitrary code (https://github.com/uqfoundation/dill)",
    "socket": "network access",
    "ssl": "network access",
    "http": "network access",
    "urllib": "network access",
    "ftplib": "network access",
    "smtplib": "network access",
    "webbrowser": "starts a browser",
    "resource": "changes this process's limits (the worker's memory cap)",
    "faulthandler": "changes this process's crash handling",
    "atexit": "registers code to run at exit",
    "gc": "reaches every live object",
    "inspect": "reaches frames and their globals",
    "threading": "starts threads",
    "_thread": "starts threads",
    "mmap": "maps files into memory",
    "fcntl": "file descriptor control",
}


def doc_link(module: str) -> str:
    """Where the access :data:`FOREIGN_MODULES` names for ``module`` is documented."""
    return f"https://docs.python.org/3/library/{module}.html"


def foreign_component(api: str) -> str | None:
    """The first component of ``api`` after its root that names a module of
    :data:`FOREIGN_MODULES` (``torch.os.kill`` -> ``os``), or None."""
    for part in api.split(".")[1:]:
        if part in FOREIGN_MODULES:
            return part
    return None


def homes_of(obj: Any) -> tuple[str, ...]:
    """The dotted names of the modules ``obj`` may be said to belong to, most telling first:
    a module's own name; else the module its ``__module__`` names (a C method's class's, an
    instance's class's when the object has none), then, for a Python function, the module
    whose namespace it was defined in (mxnet's generated operators say ``__module__ =
    "ndarray"`` but live in ``mxnet.ndarray.register``). Empty when none can be told.

    Note:
        ``__module__`` is read from the object first: numpy ufuncs, torch builtins and jax's
        ufunc objects set it to their public module; a C method of a class has none, and its
        ``__objclass__`` tells the class.
    """
    if inspect.ismodule(obj):
        return (str(obj.__name__),)
    found: list[str] = []
    for owner in (obj, getattr(obj, "__objclass__", None)):
        module = getattr(owner, "__module__", None) if owner is not None else None
        if isinstance(module, str) and module:
            found.append(module)
            break
    else:
        bound = getattr(obj, "__self__", None)
        if inspect.ismodule(bound):
            found.append(str(bound.__name__))
        elif inspect.isclass(bound) and isinstance(getattr(bound, "__module__", None), str):
            found.append(bound.__module__)
        elif isinstance(getattr(type(obj), "__module__", None), str):
            found.append(type(obj).__module__)
    defined_in = getattr(obj, "__globals__", None)
    if inspect.isfunction(obj) and isinstance(defined_in, dict):
        name = defined_in.get("__name__")
        if isinstance(name, str) and name not in found:
            found.append(name)
    return tuple(found)


def is_inside(module: str, packages: Iterable[str]) -> bool:
    """Whether the dotted module name ``module`` is one of ``packages`` or a submodule."""
    return any(module == p or module.startswith(f"{p}.") for p in packages)


def outside_module(
    obj: Any, packages: tuple[str, ...], adopted: Iterable[str] = (), *, last: bool
) -> str | None:
    """The module ``obj`` reached on an API path belongs to when that is outside
    ``packages`` (None when it is inside): a module must be one of the packages' own; the
    object a path ends on (``last``) may also be a function of an ``adopted`` package (one
    the library re-exports as its own), never a module of one."""
    homes = homes_of(obj)
    if any(is_inside(h, packages) for h in homes):
        return None
    if last and not inspect.ismodule(obj) and any(is_inside(h, adopted) for h in homes):
        return None
    return homes[0] if homes else f"<unknown module of a {type(obj).__name__}>"
