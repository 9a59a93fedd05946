"""The libraries xamt knows: one adapter module each under :mod:`xamt.workers.adapters`.

The list is discovered, not fixed: adding a library means adding its adapter module and its
``images/<lib>/`` folder. Adapter modules import only numpy at module level, so reading their
class attributes here imports no deep-learning library.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from xamt.errors import UnknownLibrary
from xamt.workers import adapters
from xamt.workers.adapters.base import Adapter

# The order libraries are shown in; adapters not listed here follow, sorted by name.
PREFERRED_ORDER = ("numpy", "torch", "tensorflow", "jax", "paddle", "mindspore", "mxnet")


@cache
def library_names() -> tuple[str, ...]:
    found = {m.name for m in pkgutil.iter_modules(adapters.__path__) if m.name != "base"}
    ordered = [n for n in PREFERRED_ORDER if n in found]
    return tuple(ordered + sorted(found - set(ordered)))


@cache
def adapter_class(name: str) -> type[Adapter]:
    check_library(name)
    cls: type[Adapter] = importlib.import_module(f"xamt.workers.adapters.{name}").ADAPTER
    return cls


def check_library(name: str) -> str:
    if name not in library_names():
        raise UnknownLibrary(
            f"unknown library {name!r}; known libraries: {', '.join(library_names())}"
        )
    return name


def library_of_api(api: str) -> str:
    """The library an API path belongs to, from its first component (``tf.add`` -> tensorflow)."""
    root = api.split(".", 1)[0]
    for name in library_names():
        if root in adapter_class(name).roots:
            return name
    roots = ", ".join(r for n in library_names() for r in adapter_class(n).roots)
    raise UnknownLibrary(f"cannot tell the library of {api!r}: paths start with one of {roots}")
