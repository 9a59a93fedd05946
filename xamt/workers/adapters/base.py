"""What every library adapter provides to the worker server.

An adapter is the only place that knows one library: how to import it quietly, how numpy
arrays become its tensors and back, which dtypes it really supports, and its quirks. It runs
inside that library's environment, so it imports the standard library, numpy and its library
only.
"""

from __future__ import annotations

import importlib
import os
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16


class Unsupported(Exception):
    """The library cannot represent a value (a dtype it lacks): an outcome, not a failure."""


class Adapter:
    """Base class: numpy-level defaults that library adapters override.

    Subclasses set ``name`` (xamt's library name), ``roots`` (top-level module names accepted
    at the start of an API path; the first one is canonical), ``namespaces`` (modules listed by
    ``describe``) and implement :meth:`load`, :meth:`native_dtype`, :meth:`array_to_native`,
    :meth:`is_native` and :meth:`native_to_numpy`.
    """

    name = "base"
    roots: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    # Namespaces whose functions take keyword arguments only (tensorflow.raw_ops).
    keyword_only_namespaces: tuple[str, ...] = ()
    device = "cpu"

    def __init__(self) -> None:
        self.lib: Any = None
        self.supported: frozenset[str] = frozenset()

    # --- lifecycle -------------------------------------------------------------------------
    def load(self) -> None:
        """Import the library (quirks, log levels and thread counts set first)."""
        self.lib = importlib.import_module(self.roots[0])

    def version(self) -> str:
        return str(getattr(self.lib, "__version__", "unknown"))

    def seed(self, seed: int) -> None:
        """Seed the library's global random state (numpy's as well)."""
        np.random.seed(seed % 2**32)

    def probe_dtypes(self) -> frozenset[str]:
        """The dtypes that round-trip numpy -> native -> numpy unchanged, found by trying."""
        found = []
        for name in DTYPE_NAMES:
            try:
                if self.native_dtype(name) is None:
                    continue
                if name == "bfloat16":
                    sample: Any = BFloat16(np.array([1.0, -2.5, 0.0], dtype=np.float32))
                else:
                    sample = np.array([1, 0, 1], dtype=name)
                back = self.native_to_numpy(self.array_to_native(sample, name, ""))
            except Exception:  # noqa: BLE001 - a dtype the library cannot take is just absent
                continue
            if isinstance(sample, BFloat16):
                ok = isinstance(back, BFloat16) and np.array_equal(back.values, sample.values)
            else:
                ok = (
                    isinstance(back, np.ndarray)
                    and back.dtype == sample.dtype
                    and np.array_equal(back, sample)
                )
            if ok:
                found.append(name)
        return frozenset(found)

    # --- conversion ------------------------------------------------------------------------
    def native_dtype(self, name: str) -> Any:
        """The library's dtype object for an xamt dtype name, or None if it has none."""
        raise NotImplementedError

    def dtype_to_native(self, name: str) -> Any:
        if name not in self.supported:
            raise Unsupported(f"{self.name} does not support dtype {name}")
        return self.native_dtype(name)

    def to_native(self, value: np.ndarray | BFloat16, api: str) -> Any:
        """Convert one input array, refusing dtypes the library does not support."""
        name = "bfloat16" if isinstance(value, BFloat16) else value.dtype.name
        if name not in self.supported:
            raise Unsupported(f"{self.name} does not support dtype {name}")
        return self.array_to_native(value, name, api)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        """Make a native tensor that owns a copy of ``value`` (inputs are read-only views)."""
        raise NotImplementedError

    def is_native(self, obj: Any) -> bool:
        """Whether ``obj`` is one of the library's tensor types."""
        raise NotImplementedError

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        """Convert a native tensor back to numpy (bfloat16 as :class:`BFloat16`)."""
        raise NotImplementedError

    def materialize(self, out: Any) -> Any:
        """Force lazy or asynchronous results so that errors surface inside the call."""
        return out


def pin_threads() -> None:
    """One thread per library: workers share a small machine with six others."""
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "TF_NUM_INTRAOP_THREADS",
        "TF_NUM_INTEROP_THREADS",
    ):
        os.environ.setdefault(var, "1")
