"""paddle: CPU place; numpy uint16 would become bfloat16, so bfloat16 goes through float32."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..protocol import BFloat16, bf16_bits_to_f32, f32_to_bf16_bits
from .base import (
    NOT_DIFFERENTIABLE,
    Adapter,
    Unsupported,
    argument,
    leaves,
    pin_threads,
    substituted,
)


class PaddleAdapter(Adapter):
    name = "paddle"
    roots = ("paddle",)
    packages = ("paddle",)
    namespaces = ("paddle", "paddle.nn.functional", "paddle.linalg", "paddle.fft", "paddle.Tensor")

    def load(self) -> None:
        pin_threads()
        os.environ.setdefault("GLOG_minloglevel", "3")
        os.environ.setdefault("FLAGS_call_stack_level", "1")
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import paddle

        paddle.set_device("cpu")
        self.lib = paddle
        self.dtypes = {
            n: getattr(paddle, n, None)
            for n in (
                "bool",
                "int8",
                "int16",
                "int32",
                "int64",
                "uint8",
                "float16",
                "bfloat16",
                "float32",
                "float64",
                "complex64",
                "complex128",
            )
        }

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.lib.seed(seed)

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        if isinstance(value, BFloat16):
            # paddle takes numpy uint16 as bfloat16 bit patterns: exact, NaN payloads included
            tensor = self.lib.to_tensor(f32_to_bf16_bits(value.values))
            assert tensor.dtype == self.lib.bfloat16
            return tensor
        return self.lib.to_tensor(value.copy(), dtype=self.dtypes[name])

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.Tensor)

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        if obj.dtype == self.lib.bfloat16:
            return BFloat16(bf16_bits_to_f32(np.asarray(obj.numpy()).view(np.uint16)))
        return np.asarray(obj.numpy())

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        return self.lib.to_tensor(values).astype(tensor.dtype)

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        inputs = [argument(args, kwargs, key) for key in wrt]
        for x in inputs:
            x.stop_gradient = False
        # the call gets copies (not leaves): an in-place variant may then write to them
        a, k = substituted(args, kwargs, wrt, [x.clone() for x in inputs])
        outs = leaves(fn(*a, **k))
        pairs = [
            (o, c)
            for o, c in zip(outs, self.cotangents(outs, seed), strict=True)
            if c is not None and not o.stop_gradient
        ]
        if not pairs:
            raise Unsupported(NOT_DIFFERENTIABLE)
        grads = self.lib.grad(
            [o for o, _ in pairs], inputs, [c for _, c in pairs], allow_unused=True
        )
        return list(grads)


ADAPTER = PaddleAdapter
