"""The worker wire protocol: length-prefixed frames of a JSON header plus raw array buffers.

This module is imported both by the orchestrator (as ``xamt.workers.protocol``) and by a
worker running inside a library's own environment (as ``protocol``), so it depends on the
standard library and numpy only.

Frame layout (all integers big-endian)::

    magic  b"XAMT"  (4 bytes)
    header length   (uint32)   -- UTF-8 JSON
    payload length  (uint64)   -- concatenated raw array buffers
    header bytes
    payload bytes

Values are JSON trees in which non-JSON values are tagged objects:

    {"$a": i, "dtype": "float32", "shape": [2, 3]}   array; buffer i of the frame's payload
    {"$t": [...]}                                     tuple
    {"$d": "float64"}                                 a dtype given by name
    {"$f": "nan" | "inf" | "-inf"}                    a non-finite Python float
    {"$c": [re, im]}                                  a Python complex
    {"$map": [[key, value], ...]}                     a dict (keys are values too)
    {"$obj": "<type>", "repr": "..."}                 an output that is not data (reply only)

Lists are JSON lists; None, bool, int, float and str are themselves. Arrays travel in native
byte order, C-contiguous. ``bfloat16`` has no numpy dtype without ml_dtypes: it travels as its
2-byte bit patterns and decodes to an exact float32 array tagged as ``bfloat16``.

Note:
    Never pickle: a frame from a worker is data only, so a misbehaving library cannot make the
    orchestrator execute anything.
"""

from __future__ import annotations

import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

PROTOCOL_VERSION = 1
MAGIC = b"XAMT"
PREFIX = struct.Struct(">4sIQ")
MAX_HEADER = 64 * 1024 * 1024
# Messages by which libraries report a failed allocation instead of raising MemoryError.
RESOURCE_PATTERNS = re.compile(
    r"can't allocate memory|cannot allocate memory|out of memory|bad_alloc|"
    r"failed to allocate|allocation.*failed|ResourceExhausted|Unable to allocate|"
    r"memory allocation|OOM when allocating|MemoryError",
    re.IGNORECASE,
)

# Every dtype name xamt knows, in a stable order. The wire carries these names.
DTYPE_NAMES: tuple[str, ...] = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex64",
    "complex128",
)


# numpy computes dtype.name in Python (~2 µs); these tables make the hot path a dict lookup.
WIRE_DTYPES = {n: np.dtype(np.uint16 if n == "bfloat16" else n) for n in DTYPE_NAMES}
DTYPE_NAME_OF = {np.dtype(n): n for n in DTYPE_NAMES if n != "bfloat16"}


class ProtocolError(Exception):
    """A frame or value that does not follow the protocol."""


@dataclass(frozen=True)
class BFloat16:
    """A bfloat16 array carried as exact float32 values (numpy has no bfloat16 of its own)."""

    values: np.ndarray

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.values.shape)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    """Widen bfloat16 bit patterns (uint16) to the float32 values they denote, exactly."""
    wide = np.array(bits, dtype=np.uint32)  # an array even when 0-d (scalars would promote)
    wide <<= np.uint32(16)
    return wide.view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Narrow float32 values that are exact bfloat16 numbers to their bit patterns."""
    bits = np.array(values, dtype=np.float32, order="C").view(np.uint32)  # a copy, 0-d kept
    bits >>= np.uint32(16)
    return bits.astype(np.uint16)


class _Encoder:
    def __init__(self) -> None:
        self.buffers: list[bytes | memoryview] = []
        self.size = 0

    def add_buffer(self, data: bytes | memoryview, nbytes: int) -> int:
        self.buffers.append(data)
        self.size += nbytes
        return len(self.buffers) - 1

    def array(self, arr: np.ndarray, name: str | None = None) -> dict[str, Any]:
        name = name or DTYPE_NAME_OF.get(arr.dtype) or arr.dtype.name
        if name == "bfloat16" and arr.dtype != np.uint16:
            if arr.dtype.itemsize == 2:  # ml_dtypes.bfloat16 already holds the bit patterns
                arr = arr.view(np.uint16)
            else:
                arr = f32_to_bf16_bits(arr)
        if name not in DTYPE_NAMES:
            raise ProtocolError(f"unsupported dtype {arr.dtype!s} in an array")
        if not arr.dtype.isnative:
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if not arr.flags.c_contiguous:  # (np.ascontiguousarray would make 0-d arrays 1-d)
            arr = arr.copy(order="C")
        data = memoryview(arr).cast("B") if arr.size else b""  # type: ignore[arg-type]
        index = self.add_buffer(data, arr.nbytes)
        return {"$a": index, "dtype": name, "shape": list(arr.shape)}

    def value(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            return {"$f": "nan" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")}
        if isinstance(obj, complex):
            return {"$c": [self.value(obj.real), self.value(obj.imag)]}
        if isinstance(obj, np.ndarray):
            return self.array(obj)
        if isinstance(obj, np.generic):
            return self.array(np.asarray(obj))
        if isinstance(obj, BFloat16):
            return self.array(obj.values, "bfloat16")
        if isinstance(obj, DType):
            return {"$d": obj.name}
        if isinstance(obj, tuple):
            return {"$t": [self.value(v) for v in obj]}
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if isinstance(obj, dict):
            return {"$map": [[self.value(k), self.value(v)] for k, v in obj.items()]}
        if isinstance(obj, Opaque):
            return {"$obj": obj.type, "repr": obj.repr}
        raise ProtocolError(f"cannot encode a value of type {type(obj).__name__}")


@dataclass(frozen=True)
class DType:
    """A dtype given by name as an argument (the worker turns it into the library's dtype)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in DTYPE_NAMES:
            raise ProtocolError(f"unknown dtype name {self.name!r}")


@dataclass(frozen=True)
class Opaque:
    """An output that is not data (a function, a module, a string-typed tensor...): its repr."""

    type: str
    repr: str


def encode(header: dict[str, Any], values: dict[str, Any] | None = None) -> bytes:
    """Encode one frame as bytes (see :func:`frame`)."""
    return b"".join(frame(header, values))


def parse_prefix(prefix: bytes) -> tuple[int, int]:
    """Return (header length, payload length) of a frame prefix, or raise ProtocolError."""
    if len(prefix) != PREFIX.size:
        raise ProtocolError("truncated frame prefix")
    magic, hlen, plen = PREFIX.unpack(prefix)
    if magic != MAGIC:
        raise ProtocolError(f"bad frame magic {magic!r}")
    if hlen > MAX_HEADER:
        raise ProtocolError(f"frame header too large ({hlen} bytes)")
    return hlen, plen


class _Decoder:
    def __init__(self, payload: memoryview, offsets: list[int]) -> None:
        self.payload = payload
        self.offsets = offsets

    def array(self, node: dict[str, Any]) -> np.ndarray | BFloat16:
        name = node.get("dtype")
        if name not in DTYPE_NAMES:
            raise ProtocolError(f"unknown dtype name {name!r}")
        index = node["$a"]
        if not isinstance(index, int) or not 0 <= index < len(self.offsets) - 1:
            raise ProtocolError(f"array buffer index {index!r} out of range")
        shape = tuple(int(n) for n in node["shape"])
        if any(n < 0 for n in shape):
            raise ProtocolError(f"negative dimension in shape {shape}")
        raw = self.payload[self.offsets[index] : self.offsets[index + 1]]
        np_dtype = WIRE_DTYPES[name]
        count = math.prod(shape)
        if count * np_dtype.itemsize != len(raw):
            raise ProtocolError(f"array buffer of {len(raw)} bytes does not hold {shape} {name}")
        arr = np.frombuffer(raw, dtype=np_dtype, count=count).reshape(shape)
        if name == "bfloat16":
            return BFloat16(bf16_bits_to_f32(arr))
        return arr

    def value(self, node: Any) -> Any:
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.value(v) for v in node]
        if not isinstance(node, dict) or len(node) == 0:
            raise ProtocolError(f"malformed value {node!r:.80}")
        if "$a" in node:
            return self.array(node)
        if "$t" in node:
            return tuple(self.value(v) for v in node["$t"])
        if "$d" in node:
            return DType(node["$d"])
        if "$f" in node:
            text = node["$f"]
            if text not in ("nan", "inf", "-inf"):
                raise ProtocolError(f"bad non-finite float {text!r}")
            return float(text)
        if "$c" in node:
            re, im = node["$c"]
            return complex(self.value(re), self.value(im))
        if "$map" in node:
            return {self.value(k): self.value(v) for k, v in node["$map"]}
        if "$obj" in node:
            return Opaque(str(node["$obj"]), str(node.get("repr", "")))
        raise ProtocolError(f"unknown value tag in {node!r:.80}")


def decode(
    header_bytes: bytes, payload: bytes | memoryview, keys: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Decode a frame's header; the values under ``keys`` are decoded into Python/numpy values.

    Arrays are zero-copy, read-only views on ``payload``.
    """
    try:
        header = json.loads(header_bytes)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"frame header is not JSON: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("frame header is not a JSON object")
    sizes = header.get("$buf", [])
    if not isinstance(sizes, list):
        raise ProtocolError("bad buffer table")
    offsets = [0]
    for n in sizes:
        offsets.append(offsets[-1] + int(n))
    if offsets[-1] != len(payload):
        raise ProtocolError(
            f"buffer table adds up to {offsets[-1]} bytes, payload has {len(payload)}"
        )
    dec = _Decoder(memoryview(payload), offsets)
    try:
        for key in keys:
            if key in header:
                header[key] = dec.value(header[key])
    except (KeyError, TypeError, ValueError) as exc:
        raise ProtocolError(f"malformed value: {exc}") from None
    return header


def frame(header: dict[str, Any], values: dict[str, Any] | None = None) -> list[bytes | memoryview]:
    """Build one frame's parts: the header gets a ``$buf`` table of buffer sizes."""
    enc = _Encoder()
    body = dict(header)
    for key, val in (values or {}).items():
        body[key] = enc.value(val)
    body["$buf"] = [b.nbytes if isinstance(b, memoryview) else len(b) for b in enc.buffers]
    raw = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return [PREFIX.pack(MAGIC, len(raw), enc.size), raw, *enc.buffers]
