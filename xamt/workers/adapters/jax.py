"""jax: CPU platform with 64-bit types on (float64 would silently become float32 otherwise)."""

from __future__ import annotations

import os
from types import MappingProxyType
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16
from .base import (
    NOT_DIFFERENTIABLE,
    Adapter,
    Unsupported,
    argument,
    differentiated,
    leaves,
    pin_threads,
)


class JaxAdapter(Adapter):
    name = "jax"
    roots = ("jax",)
    packages = ("jax", "jaxlib")
    adopted = MappingProxyType(
        {
            "numpy": (
                "jax.numpy re-exports numpy.iterable as its own: "
                "https://github.com/jax-ml/jax/blob/main/jax/numpy/__init__.py"
            )
        }
    )
    namespaces = (
        "jax.numpy",
        "jax.numpy.linalg",
        "jax.numpy.fft",
        "jax.nn",
        "jax.lax",
        "jax.scipy.special",
    )

    def load(self) -> None:
        pin_threads()
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
        os.environ.setdefault("JAX_ENABLE_X64", "1")
        os.environ.setdefault(
            "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        )
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_platforms", "cpu")
        import jax.numpy as jnp

        self.lib = jax
        self.jnp = jnp
        self.dtypes = {n: getattr(jnp, n) for n in DTYPE_NAMES}

    def seed(self, seed: int) -> None:
        super().seed(seed)  # jax itself has no global random state: keys are arguments

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        # device_put of a private copy, not jnp.array/jnp.asarray: those compile a conversion
        # for every new shape and dtype (13 ms against 0.19 ms, bench/jax_first_call.py); the
        # array is the same, bit for bit, dtype and weak type included
        if isinstance(value, BFloat16):
            return self.lib.device_put(np.asarray(value.values, dtype=self.jnp.bfloat16))
        return self.lib.device_put(np.array(value, copy=True))

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.Array)

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        arr = np.asarray(obj)
        if arr.dtype.name == "bfloat16":
            return BFloat16(arr.astype(np.float32))
        return arr

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        return self.lib.device_put(np.asarray(values, dtype=tensor.dtype))

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        f = differentiated(fn, args, kwargs, wrt)
        out, pullback = self.lib.vjp(f, *[argument(args, kwargs, key) for key in wrt])
        tree = self.lib.tree_util
        flat, structure = tree.tree_flatten(out)
        made = self.cotangents(leaves(flat), seed)
        if all(c is None for c in made):
            raise Unsupported(NOT_DIFFERENTIABLE)
        cots = [
            c if c is not None else self.lib.numpy.zeros_like(o)
            for o, c in zip(flat, made, strict=True)
        ]
        # an integer result takes a float0 cotangent in jax: none of it flows back
        cots = [
            c if self.floating(o) else np.zeros(o.shape, dtype=self.lib.dtypes.float0)
            for o, c in zip(flat, cots, strict=True)
        ]
        return list(pullback(tree.tree_unflatten(structure, cots)))

    def jvp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], tangents: list[Any]
    ) -> Any:
        return self.functional_jvp(self.lib.jvp, fn, args, kwargs, wrt, tangents)

    def materialize(self, out: Any) -> Any:
        # Dispatch is asynchronous: errors (and the real cost) surface only when blocked on.
        return self.lib.block_until_ready(out)


ADAPTER = JaxAdapter
