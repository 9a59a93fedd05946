"""mindspore: PyNative mode with launch_blocking (errors raise at the call, 10x faster here)."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16
from .base import Adapter, pin_threads


class MindsporeAdapter(Adapter):
    name = "mindspore"
    roots = ("mindspore", "ms")
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


ADAPTER = MindsporeAdapter
