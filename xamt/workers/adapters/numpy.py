"""numpy: the reference present everywhere (numpy has no bfloat16 of its own)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import BFloat16
from .base import Adapter


class NumpyAdapter(Adapter):
    name = "numpy"
    roots = ("numpy", "np")
    packages = ("numpy",)
    namespaces = ("numpy", "numpy.linalg", "numpy.fft", "numpy.ndarray")

    def native_dtype(self, name: str) -> Any:
        return None if name == "bfloat16" else np.dtype(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        assert isinstance(value, np.ndarray)
        return value.copy()

    def is_native(self, obj: Any) -> bool:
        return False  # numpy outputs are already wire values

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        return np.asarray(obj)


ADAPTER = NumpyAdapter
