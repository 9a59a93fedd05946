"""tensorflow: eager tensors on the CPU, logs silenced before import."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16
from .base import Adapter, pin_threads


class TensorflowAdapter(Adapter):
    name = "tensorflow"
    roots = ("tensorflow", "tf")
    namespaces = (
        "tensorflow",
        "tensorflow.math",
        "tensorflow.nn",
        "tensorflow.linalg",
        "tensorflow.signal",
        "tensorflow.image",
        "tensorflow.bitwise",
        "tensorflow.math.special",
        "tensorflow.experimental.numpy",
        "tensorflow.raw_ops",
        "tensorflow.keras.ops",
    )
    keyword_only_namespaces = ("tensorflow.raw_ops",)

    def load(self) -> None:
        pin_threads()
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        os.environ.setdefault("CUDA_VISIBLE_DEVICES", "-1")
        import tensorflow as tf

        tf.get_logger().setLevel("ERROR")
        self.lib = tf
        self.dtypes = {n: getattr(tf, n) for n in DTYPE_NAMES}

    def seed(self, seed: int) -> None:
        super().seed(seed)
        self.lib.random.set_seed(seed)

    def native_dtype(self, name: str) -> Any:
        return self.dtypes.get(name)

    def array_to_native(self, value: np.ndarray | BFloat16, name: str, api: str) -> Any:
        tf = self.lib
        if isinstance(value, BFloat16):
            return tf.cast(tf.constant(value.values), tf.bfloat16)
        return tf.constant(value, dtype=self.dtypes[name])

    def is_native(self, obj: Any) -> bool:
        return isinstance(obj, (self.lib.Tensor, self.lib.Variable))

    def native_to_numpy(self, obj: Any) -> np.ndarray | BFloat16:
        tf = self.lib
        if obj.dtype == tf.bfloat16:
            return BFloat16(tf.cast(obj, tf.float32).numpy())
        return np.asarray(obj.numpy())


ADAPTER = TensorflowAdapter
