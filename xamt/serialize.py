"""Exact, JSON-able encoding of case values (arrays bit for bit, -0.0 and NaN payloads kept).

The one place that turns values into stored data and back: the store, findings.json and repro
files all use it. Arrays are base64 of their native little-endian bytes.
"""

from __future__ import annotations

import base64
import math
from dataclasses import asdict
from typing import Any

import numpy as np

from xamt.types import Case
from xamt.workers.protocol import (
    DTYPE_NAMES,
    SUMMARY_COUNTS,
    BFloat16,
    DType,
    Summary,
    bf16_bits_to_f32,
    f32_to_bf16_bits,
)

_SUMMARY_FACTS = ("digest", *SUMMARY_COUNTS)


def to_jsonable(value: Any) -> Any:
    """Encode a value tree (arrays, BFloat16, dtypes, scalars, tuples, lists, dicts)."""
    if isinstance(value, BFloat16):
        bits = f32_to_bf16_bits(value.values)
        return {"$array": "bfloat16", "shape": list(bits.shape), "b64": _b64(bits)}
    if isinstance(value, np.ndarray | np.generic):
        arr = np.asarray(value)
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)
        return {"$array": arr.dtype.name, "shape": list(arr.shape), "b64": _b64(arr)}
    if isinstance(value, DType):
        return {"$dtype": value.name}
    if isinstance(value, Summary):
        sample = BFloat16(value.sample) if value.dtype == "bfloat16" else value.sample
        return {
            "$summary": value.dtype,
            "shape": list(value.shape),
            **{name: getattr(value, name) for name in _SUMMARY_FACTS},
            "low": to_jsonable(value.low),
            "high": to_jsonable(value.high),
            "sample": to_jsonable(sample),
        }
    if isinstance(value, float) and not math.isfinite(value):
        return {"$float": repr(value)}
    if isinstance(value, complex):
        return {"$complex": [to_jsonable(value.real), to_jsonable(value.imag)]}
    if isinstance(value, tuple):
        return {"$tuple": [to_jsonable(v) for v in value]}
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {"$dict": [[to_jsonable(k), to_jsonable(v)] for k, v in value.items()]}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot serialize a {type(value).__name__}")


def from_jsonable(data: Any) -> Any:
    """Decode what :func:`to_jsonable` made, exactly."""
    if isinstance(data, list):
        return [from_jsonable(v) for v in data]
    if not isinstance(data, dict):
        return data
    if "$array" in data:
        name = data["$array"]
        if name not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {name!r}")
        raw = base64.b64decode(data["b64"])
        np_dtype = np.dtype("<u2" if name == "bfloat16" else np.dtype(name).newbyteorder("<"))
        arr = np.frombuffer(raw, dtype=np_dtype).reshape(data["shape"])
        if name == "bfloat16":
            return BFloat16(bf16_bits_to_f32(arr.astype(np.uint16)))
        return arr.astype(arr.dtype.newbyteorder("="))
    if "$dtype" in data:
        return DType(data["$dtype"])
    if "$summary" in data:
        name = data["$summary"]
        if name not in DTYPE_NAMES:
            raise ValueError(f"unknown dtype {name!r}")
        sample = from_jsonable(data["sample"])
        return Summary(
            dtype=name,
            shape=tuple(int(n) for n in data["shape"]),
            low=from_jsonable(data["low"]),
            high=from_jsonable(data["high"]),
            sample=sample.values if isinstance(sample, BFloat16) else sample,
            **{key: data[key] for key in _SUMMARY_FACTS},
        )
    if "$float" in data:
        return float(data["$float"])
    if "$complex" in data:
        re, im = data["$complex"]
        return complex(from_jsonable(re), from_jsonable(im))
    if "$tuple" in data:
        return tuple(from_jsonable(v) for v in data["$tuple"])
    if "$dict" in data:
        return {from_jsonable(k): from_jsonable(v) for k, v in data["$dict"]}
    return {k: from_jsonable(v) for k, v in data.items()}


def case_to_jsonable(case: Case) -> dict[str, Any]:
    data = asdict(case)
    data["values"] = {role: to_jsonable(v) for role, v in case.values.items()}
    if not case.grad:
        del data["grad"]  # a values-only case reads as it always has
    return data


def case_from_jsonable(data: dict[str, Any]) -> Case:
    return Case(
        group=data["group"],
        dtype=data["dtype"],
        value_class=data["value_class"],
        values={role: from_jsonable(v) for role, v in data["values"].items()},
        apis=dict(data["apis"]),
        seed=int(data.get("seed", 0)),
        grad=data.get("grad") is True,
    )


def _b64(arr: np.ndarray) -> str:
    return base64.b64encode(np.ascontiguousarray(arr).tobytes()).decode()
