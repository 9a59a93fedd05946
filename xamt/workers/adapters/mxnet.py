"""mxnet 1.9: legacy ``mx.nd`` arrays, or ``mx.np`` arrays for ``mxnet.np``/``npx`` APIs.

numpy semantics for shapes (0 is a size, not "unknown") are switched on for both.
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

import numpy as np

from ..protocol import BFloat16
from .base import NOT_DIFFERENTIABLE, Adapter, Unsupported, argument, leaves, pin_threads

NUMPY_NAMESPACES = ("mxnet.np.", "mxnet.numpy.", "mxnet.npx.", "mx.np.", "mx.npx.")


class MxnetAdapter(Adapter):
    name = "mxnet"
    roots = ("mxnet", "mx")
    packages = ("mxnet",)
    adopted = MappingProxyType(
        {
            "numpy": (
                "mxnet.np's fallback re-exports the numpy functions it does not implement "
                "(mxnet.np.allclose, mxnet.np.linalg.cond): "
                "https://github.com/apache/mxnet/blob/v1.9.1/python/mxnet/numpy/fallback.py"
            )
        }
    )
    namespaces = (
        "mxnet.nd",
        "mxnet.np",
        "mxnet.np.linalg",
        "mxnet.npx",
        "mxnet.nd.NDArray",
        "mxnet.np.ndarray",
    )

    def load(self) -> None:
        pin_threads()
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import mxnet

        mxnet.util.set_np_shape(True)
        self.lib = mxnet
        self.dtypes = {
            n: np.dtype(n)
            for n in ("bool", "int8", "int32", "int64", "uint8", "float16", "float32", "float64")
        }

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.lib.random.seed(seed)

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        assert isinstance(value, np.ndarray)
        if api.startswith(NUMPY_NAMESPACES):
            return self.lib.np.array(value, dtype=value.dtype)
        return self.lib.nd.array(value, dtype=value.dtype)

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.nd.NDArray)  # mx.np.ndarray is a subclass

    def materialize(self, out: Any) -> Any:
        # mxnet runs asynchronously: an operator's error surfaces when its result is read.
        if isinstance(out, tuple | list):
            for item in out:
                self.materialize(item)
        elif self.is_native(out):
            out.wait_to_read()
        return out

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        return np.asarray(obj.asnumpy())

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        if isinstance(tensor, self.lib.np.ndarray):
            return self.lib.np.array(values, dtype=tensor.dtype)
        return self.lib.nd.array(values, dtype=tensor.dtype)

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        autograd = self.lib.autograd
        inputs = [argument(args, kwargs, key) for key in wrt]
        for x in inputs:
            x.attach_grad()
        with autograd.record():
            outs = leaves(fn(*args, **kwargs))
        pairs = [
            (o, c) for o, c in zip(outs, self.cotangents(outs, seed), strict=True) if c is not None
        ]
        if not pairs:
            raise Unsupported(NOT_DIFFERENTIABLE)
        autograd.backward([o for o, _ in pairs], head_grads=[c for _, c in pairs])
        return [self.materialize(x.grad) for x in inputs]


ADAPTER = MxnetAdapter
