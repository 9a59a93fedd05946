"""torch: CPU tensors; numpy conversion by copy (torch rejects negative strides)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16, bf16_bits_to_f32, f32_to_bf16_bits
from .base import (
    NOT_DIFFERENTIABLE,
    Adapter,
    Unsupported,
    argument,
    leaves,
    pin_threads,
    substituted,
)


class TorchAdapter(Adapter):
    name = "torch"
    roots = ("torch",)
    packages = ("torch",)
    namespaces = (
        "torch",
        "torch.nn.functional",
        "torch.linalg",
        "torch.fft",
        "torch.special",
        "torch.Tensor",
    )

    def load(self) -> None:
        pin_threads()
        import torch

        torch.set_num_threads(1)
        self.lib = torch
        self.dtypes = {n: getattr(torch, n, None) for n in DTYPE_NAMES}

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.lib.manual_seed(seed)

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        if isinstance(value, BFloat16):
            # Reinterpret the bits: a float32 round trip would rewrite NaN payloads.
            bits = f32_to_bf16_bits(value.values).view(np.int16)
            return self.lib.from_numpy(bits).view(self.lib.bfloat16)
        return self.lib.from_numpy(value.copy())

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, self.lib.Tensor)

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        t = obj.detach().cpu().resolve_conj().resolve_neg()
        if t.dtype == self.lib.bfloat16:
            return BFloat16(
                bf16_bits_to_f32(t.contiguous().view(self.lib.int16).numpy().view(np.uint16))
            )
        return t.numpy()

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        return self.lib.from_numpy(values).to(tensor.dtype)

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        inputs = [argument(args, kwargs, key).requires_grad_(True) for key in wrt]
        # the call gets copies (not leaves): an in-place variant may then write to them
        a, k = substituted(args, kwargs, wrt, [x.clone() for x in inputs])
        outs = leaves(fn(*a, **k))
        pairs = [
            (o, c)
            for o, c in zip(outs, self.cotangents(outs, seed), strict=True)
            if c is not None and o.requires_grad
        ]
        if not pairs:
            raise Unsupported(NOT_DIFFERENTIABLE)
        grads = self.lib.autograd.grad(
            [o for o, _ in pairs], inputs, [c for _, c in pairs], allow_unused=True
        )
        return list(grads)

    def jvp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], tangents: list[Any]
    ) -> Any:
        return self.functional_jvp(
            self.lib.func.jvp, fn, args, kwargs, wrt, tangents, copy=lambda x: x.clone()
        )


ADAPTER = TorchAdapter
