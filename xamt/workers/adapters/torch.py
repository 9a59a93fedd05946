"""torch: CPU tensors; numpy conversion by copy (torch rejects negative strides)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16, bf16_bits_to_f32, f32_to_bf16_bits
from .base import Adapter, pin_threads


class TorchAdapter(Adapter):
    name = "torch"
    roots = ("torch",)
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


ADAPTER = TorchAdapter
