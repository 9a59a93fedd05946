"""jax: CPU platform with 64-bit types on (float64 would silently become float32 otherwise)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16
from .base import Adapter, pin_threads


class JaxAdapter(Adapter):
    name = "jax"
    roots = ("jax",)
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
        if isinstance(value, BFloat16):
            return self.jnp.asarray(value.values).astype(self.jnp.bfloat16)
        return self.jnp.array(value, dtype=value.dtype, copy=True)

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.Array)

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        arr = np.asarray(obj)
        if arr.dtype.name == "bfloat16":
            return BFloat16(arr.astype(np.float32))
        return arr

    def materialize(self, out: Any) -> Any:
        # Dispatch is asynchronous: errors (and the real cost) surface only when blocked on.
        return self.lib.block_until_ready(out)


ADAPTER = JaxAdapter
