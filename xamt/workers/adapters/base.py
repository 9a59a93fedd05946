"""What every library adapter provides to the worker server.

An adapter is the only place that knows one library: how to import it quietly, how numpy
arrays become its tensors and back, which dtypes it really supports, and its quirks. It runs
inside that library's environment, so it imports the standard library, numpy and its library
only.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16, cotangent

# Why a gradient call has nothing to differentiate: no floating result (an index, a count, a
# comparison), or none that the library's autodiff tracks (torch's output that does not require
# grad: an operation it declares not differentiable).
NOT_DIFFERENTIABLE = "the result is not differentiable: no floating result the autodiff tracks"


class Unsupported(Exception):
    """The library cannot represent a value (a dtype it lacks): an outcome, not a failure."""


class Adapter:
    """Base class: numpy-level defaults that library adapters override.

    Subclasses set ``name`` (xamt's library name), ``roots`` (top-level module names accepted
    at the start of an API path; the first one is canonical), ``packages`` (the top-level
    packages an API path may reach, see :mod:`xamt.workers.api_paths`), ``adopted`` where the
    library re-exports another package's functions as its own, ``namespaces`` (modules listed
    by ``describe``) and implement :meth:`load`, :meth:`native_dtype`, :meth:`array_to_native`,
    :meth:`is_native` and :meth:`native_to_numpy`.
    """

    name = "base"
    roots: tuple[str, ...] = ()
    # The top-level packages whose modules and objects an API path of this library may reach:
    # every module a path passes through and the object it ends on must belong to one of them
    # (the library's own code lives under more than one name: tensorflow's high-level API in
    # ``keras``). Empty: ``roots[0]`` alone.
    packages: tuple[str, ...] = ()
    # Packages whose *functions* the library re-exports as its own public API, each with why
    # and a link that shows it: a path may end on such a function, never pass through one of
    # the package's modules.
    adopted: ClassVar[Mapping[str, str]] = MappingProxyType({})
    namespaces: tuple[str, ...] = ()
    # Namespaces whose functions take keyword arguments only (tensorflow.raw_ops).
    keyword_only_namespaces: tuple[str, ...] = ()
    device = "cpu"

    @classmethod
    def own_packages(cls) -> tuple[str, ...]:
        """The packages an API path may reach (:attr:`packages`, else the canonical root)."""
        return cls.packages or cls.roots[:1]

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

    # --- gradients -------------------------------------------------------------------------
    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        """The vector-Jacobian product of ``fn(*args, **kwargs)`` with the library's own
        automatic differentiation: one native gradient (or None where the library returns
        none) per argument ``wrt`` names (a position ``"0"`` or a keyword), for the cotangent
        :func:`cotangent` makes of each floating result leaf (``seed`` plus the leaf's place
        among the result's leaves, see :func:`leaves`)."""
        raise Unsupported(f"{self.name} has no automatic differentiation")

    # the permutation that takes a result from the member's layout to the group's (a
    # channels-last member's), set by the server for one gradient call: cotangents are made
    # in the group's layout, as the reference's are
    out_perm: tuple[int, ...] | None = None

    def jvp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], tangents: list[Any]
    ) -> Any:
        """The Jacobian-vector product (forward mode) of ``fn(*args, **kwargs)`` for the
        ``tangents`` (numpy, one per argument ``wrt`` names): the result's tangent, as the
        result is structured. Libraries without forward mode raise :class:`Unsupported`."""
        raise Unsupported(f"{self.name}: no forward-mode differentiation in xamt's adapter")

    def functional_jvp(
        self,
        jvp: Any,
        fn: Any,
        args: list[Any],
        kwargs: dict[str, Any],
        wrt: list[str],
        tangents: list[Any],
        copy: Any = None,
    ) -> Any:
        """:meth:`jvp` through a library's functional ``jvp(f, primals, tangents)`` (jax,
        torch.func, mindspore): the result's tangent."""
        primals = [argument(args, kwargs, key) for key in wrt]
        ts = [self.like(t, x) for t, x in zip(tangents, primals, strict=True)]
        _, out = jvp(differentiated(fn, args, kwargs, wrt, copy), tuple(primals), tuple(ts))
        return out

    def cotangents(self, outs: list[Any], seed: int) -> list[Any]:
        """The native cotangent of each result leaf (None for a leaf that is not a floating
        tensor of the library: an integer index, a Python number)."""
        found: list[Any] = []
        perm = self.out_perm
        for k, leaf in enumerate(outs):
            if not self.is_native(leaf) or not self.floating(leaf):
                found.append(None)
                continue
            shape = tuple(int(n) for n in leaf.shape)
            if perm is not None and len(perm) == len(shape):
                group = cotangent(tuple(shape[p] for p in perm), seed + k)
                values = np.ascontiguousarray(np.transpose(group, np.argsort(perm)))
            else:
                values = cotangent(shape, seed + k)
            found.append(self.like(values, leaf))
        return found

    def floating(self, tensor: Any) -> bool:
        """Whether a native tensor has a real floating dtype."""
        dtype = getattr(tensor, "dtype", None)
        return any(
            self.native_dtype(name) is not None and dtype == self.native_dtype(name)
            for name in ("float16", "bfloat16", "float32", "float64")
        )

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        """``values`` (float64) as a native tensor of ``tensor``'s dtype."""
        raise NotImplementedError


def argument(args: list[Any], kwargs: dict[str, Any], key: str) -> Any:
    """The argument a gradient key names: a position ("0") or a keyword."""
    return args[int(key)] if key.isdigit() else kwargs[key]


def substituted(
    args: list[Any], kwargs: dict[str, Any], wrt: list[str], values: Any
) -> tuple[list[Any], dict[str, Any]]:
    """``args`` and ``kwargs`` with the arguments ``wrt`` names replaced by ``values``."""
    new_args, new_kwargs = list(args), dict(kwargs)
    for key, value in zip(wrt, values, strict=True):
        if key.isdigit():
            new_args[int(key)] = value
        else:
            new_kwargs[key] = value
    return new_args, new_kwargs


def differentiated(
    fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], copy: Any = None
) -> Any:
    """``fn`` as a function of the arguments ``wrt`` names, the others fixed (``copy``: what
    each differentiated argument goes through first, a clone for an in-place variant)."""

    def f(*xs: Any) -> Any:
        a, k = substituted(args, kwargs, wrt, [copy(x) for x in xs] if copy else list(xs))
        return fn(*a, **k)

    return f


def leaves(out: Any) -> list[Any]:
    """A result's leaves in order: a tensor alone, or the items of (nested) tuples and lists."""
    if isinstance(out, tuple | list):
        return [leaf for item in out for leaf in leaves(item)]
    return [out]


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
