"""tensorflow: eager tensors on the CPU, logs silenced before import."""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..protocol import DTYPE_NAMES, BFloat16
from .base import NOT_DIFFERENTIABLE, Adapter, Unsupported, argument, leaves, pin_threads


class TensorflowAdapter(Adapter):
    name = "tensorflow"
    roots = ("tensorflow", "tf")
    packages = ("tensorflow", "keras")
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

    def like(self, values: np.ndarray, tensor: Any) -> Any:
        return self.lib.cast(self.lib.constant(values), tensor.dtype)

    def vjp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], seed: int
    ) -> list[Any]:
        inputs = [argument(args, kwargs, key) for key in wrt]
        with self.lib.GradientTape() as tape:
            for x in inputs:
                tape.watch(x)
            outs = leaves(fn(*args, **kwargs))
        pairs = [
            (o, c) for o, c in zip(outs, self.cotangents(outs, seed), strict=True) if c is not None
        ]
        if not pairs:
            raise Unsupported(NOT_DIFFERENTIABLE)
        grads = tape.gradient([o for o, _ in pairs], inputs, output_gradients=[c for _, c in pairs])
        # a sparse gradient (an IndexedSlices of a gather) as the dense array it stands for
        return [self.lib.convert_to_tensor(g) if g is not None else None for g in grads]

    def jvp(
        self, fn: Any, args: list[Any], kwargs: dict[str, Any], wrt: list[str], tangents: list[Any]
    ) -> Any:
        primals = [argument(args, kwargs, key) for key in wrt]
        ts = [self.like(t, x) for t, x in zip(tangents, primals, strict=True)]
        with self.lib.autodiff.ForwardAccumulator(primals, ts) as acc:
            out = fn(*args, **kwargs)
        found = [acc.jvp(o) for o in leaves(out)]
        if any(t is None for t in found):
            raise Unsupported("tensorflow's forward accumulator returned no tangent")
        return found[0] if not isinstance(out, tuple | list) else type(out)(found)


ADAPTER = TensorflowAdapter
