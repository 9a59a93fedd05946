"""mindspore: PyNative mode with launch_blocking (errors raise at the call, 10x faster here)."""

from __future__ import annotations

import os
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


class MindsporeAdapter(Adapter):
    name = "mindspore"
    roots = ("mindspore", "ms")
    packages = ("mindspore",)
    namespaces = (
        "mindspore.ops",
        "mindspore.mint",
        "mindspore.mint.nn.functional",
        "mindspore.mint.special",
        "mindspore.mint.linalg",
        "mindspore.numpy",
        "mindspore.Tensor",
    )

    def load(self) -> None:
        pin_threads()
        os.environ.setdefault("GLOG_v", "3")
        os.environ.setdefault("GLOG_logtostderr", "1")
        import mindspore

        mindspore.set_context(mode=mindspore.PYNATIVE_MODE)
        mindspore.set_device("CPU")
        mindspore.runtime.launch_blocking()
        self.lib = mindspore
        self.dtypes = {n: getattr(mindspore, n, None) for n in DTYPE_NAMES}
        self.dtypes["bool"] = mindspore.bool_

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.lib.set_seed(seed)

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        ms = self.lib
        if isinstance(value, BFloat16):
            return ms.Tensor(value.values.copy()).astype(ms.bfloat16)
        return ms.Tensor(value.copy(), dtype=self.dtypes[name])

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.Tensor)

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        if obj.dtype == self.lib.bfloat16:
            return BFloat16(obj.astype(self.lib.float32).asnumpy())
        return np.asarray(obj.asnumpy())

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        return self.lib.Tensor(values).astype(tensor.dtype)

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        f = differentiated(fn, args, kwargs, wrt)
        out, pullback = self.lib.vjp(f, *[argument(args, kwargs, key) for key in wrt])
        outs = leaves(out)
        made = self.cotangents(outs, seed)
        if all(c is None for c in made):
            raise Unsupported(NOT_DIFFERENTIABLE)
        cots = [
            c if c is not None else self.lib.ops.zeros_like(o)
            for o, c in zip(outs, made, strict=True)
        ]
        if isinstance(out, tuple | list):
            grads = pullback(type(out)(cots))
        else:
            grads = pullback(cots[0])
        return list(grads) if isinstance(grads, tuple | list) else [grads]

    def jvp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], tangents: list[Any]
    ) -> Any:
        return self.functional_jvp(self.lib.jvp, fn, args, kwargs, wrt, tangents)


ADAPTER = MindsporeAdapter
