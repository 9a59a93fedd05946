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
    {"$api": "jax.lax.max"}                           a callable of the worker's library
    {"$f": "nan" | "-nan" | "inf" | "-inf"}           a non-finite Python float ("-nan": the
                                                      sign bit set, as copysign leaves it)
    {"$c": [re, im]}                                  a Python complex
    {"$map": [[key, value], ...]}                     a dict (keys are values too)
    {"$obj": "<type>", "repr": "..."}                 an output that is not data (reply only)
    {"$s": {"dtype": ..., "shape": [...], "digest": ..., "nan": n, "posinf": n, "neginf": n,
            "zero": n, "negzero": n, "low": x, "high": x, "sample": <array>}}
                                                      an array summarized (reply only)

Lists are JSON lists; None, bool, int, float and str are themselves. Arrays travel in native
byte order, C-contiguous. ``bfloat16`` has no numpy dtype without ml_dtypes: it travels as its
2-byte bit patterns and decodes to an exact float32 array tagged as ``bfloat16``.

A reply carries at most its *result budget* of array bytes (``frame(..., budget=)``): an array
that would take it past the budget travels as a :class:`Summary` instead (its shape, dtype, a
digest of its bytes, NaN/inf/zero counts, its finite range and its values at
:func:`sample_positions`, the same positions for every array of that size), so the
orchestrator never holds more than that per call, whatever a library returns.

Requests carry ``op`` and ``id``; each reply echoes the ``id`` (the kinds are listed in
``server.py``). A kind the worker does not know is answered with
``{"op": "error", "status": "bad-request"}``: a kind added later (``doc``) leaves frames,
values and :data:`PROTOCOL_VERSION` as they were.

Note:
    Never pickle: a frame from a worker is data only, so a misbehaving library cannot make the
    orchestrator execute anything.
"""

from __future__ import annotations

import hashlib
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
# UTF-8 bytes of docstring one ``doc`` reply carries (a longer one is cut at a character).
DOC_LIMIT = 64 * 1024
# Names of called functions one ``doc`` reply carries.
CALLS_LIMIT = 256
# Array bytes one reply may carry when no budget is given (the worker's ``--result-budget``).
DEFAULT_RESULT_BUDGET = 4 << 20
# Positions a summary samples (at most): half evenly spaced, half pseudo-random.
SAMPLE_SIZE = 4096
SUMMARY_CHUNK = 1 << 20  # elements per pass when summarizing (bounds the worker's temporaries)
SUMMARY_COUNTS = ("nan", "posinf", "neginf", "zero", "negzero")
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


def cotangent(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """The cotangent of one floating result of ``shape`` for a gradient call, in float64: the
    same numbers in every library and in the finite-difference reference. Its values are
    eighths from -7/8 to 7/8 (never 0, exact in float16 and bfloat16) in a pattern the seed
    shifts, so that no two neighbouring positions weigh alike."""
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    return (((index * 5 + int(seed)) % 8 - 3.5) / 4).reshape(shape)


def tangent(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """The tangent of one differentiated input for a forward-mode (Jacobian-vector) product,
    in float64: from -5/8 to 5/8 in steps of 1/4 (never 0), another pattern than
    :func:`cotangent`'s."""
    index = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64)
    return (((index * 3 + int(seed)) % 6 - 2.5) / 4).reshape(shape)


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


@dataclass(frozen=True, eq=False)
class Summary:
    """An array too large to travel whole: enough of it for every oracle to judge it.

    ``sample`` holds the values at :func:`sample_positions` of the array's size (flat, C
    order), bfloat16 as exact float32 values. Counts are over components (a complex number
    is two floats): ``nan``, ``posinf``, ``neginf``, ``zero`` and ``negzero`` (zeros with the
    sign bit set); ``low``/``high`` are the least and greatest finite component (Python ints
    for bool and integer arrays; None when no component is finite). ``digest`` is a hash of
    the array's bytes as they would have travelled. A summary made from another one (a
    reference cast to a narrower dtype, positions set to zero) leaves what it no longer knows
    as None.
    """

    dtype: str
    shape: tuple[int, ...]
    digest: str | None
    nan: int | None
    posinf: int | None
    neginf: int | None
    zero: int | None
    negzero: int | None
    low: float | int | None
    high: float | int | None
    sample: np.ndarray

    @property
    def size(self) -> int:
        return math.prod(self.shape)


def sample_positions(size: int, count: int = SAMPLE_SIZE) -> np.ndarray:
    """The flat positions a summary of an array of ``size`` elements samples, ascending.

    Every position when ``size <= count``; else the first and last, evenly spaced ones and
    pseudo-random ones (splitmix64 of the position's rank, seeded with the size: the same in
    every process and numpy version).
    """
    if size <= count:
        return np.arange(size, dtype=np.int64)
    half = count // 2
    spaced = np.arange(half, dtype=np.int64) * np.int64(size - 1) // np.int64(half - 1)
    z = np.arange(half, dtype=np.uint64) + np.uint64(size)
    z = z * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    scattered = (z % np.uint64(size)).astype(np.int64)
    return np.unique(np.concatenate([spaced, scattered]))


def summarize_array(arr: np.ndarray, name: str) -> Summary:
    """Summarize a C-contiguous, native-order array of xamt dtype ``name`` (bfloat16 as its
    uint16 bit patterns, as it travels). Works in chunks: a few MiB of temporaries at most."""
    flat = arr.reshape(-1)
    digest = hashlib.blake2b(digest_size=16)
    counts = dict.fromkeys(SUMMARY_COUNTS, 0)
    low: Any = None
    high: Any = None
    floating = name == "bfloat16" or arr.dtype.kind in "fc"
    for start in range(0, flat.size, SUMMARY_CHUNK):
        part = flat[start : start + SUMMARY_CHUNK]
        digest.update(memoryview(part).cast("B"))  # type: ignore[arg-type]
        values = _components(part, name)
        if not floating:
            counts["zero"] += int(np.count_nonzero(values == 0))
            lo, hi = values.min(), values.max()
            low = int(lo) if low is None else min(low, int(lo))
            high = int(hi) if high is None else max(high, int(hi))
            continue
        with np.errstate(all="ignore"):
            counts["nan"] += int(np.count_nonzero(np.isnan(values)))
            counts["posinf"] += int(np.count_nonzero(values == np.inf))
            counts["neginf"] += int(np.count_nonzero(values == -np.inf))
            zero = values == 0
            counts["zero"] += int(np.count_nonzero(zero))
            counts["negzero"] += int(np.count_nonzero(zero & np.signbit(values)))
            finite = np.isfinite(values)
            if finite.any():
                lo = float(np.min(values, where=finite, initial=np.inf))
                hi = float(np.max(values, where=finite, initial=-np.inf))
                low = lo if low is None else min(low, lo)
                high = hi if high is None else max(high, hi)
    sample = flat[sample_positions(flat.size)]
    if name == "bfloat16":
        sample = bf16_bits_to_f32(sample)
    return Summary(
        dtype=name,
        shape=tuple(int(n) for n in arr.shape),
        digest=digest.hexdigest(),
        low=low,
        high=high,
        sample=sample,
        **counts,
    )


def summary_of(value: np.ndarray | BFloat16) -> Summary:
    """The summary a worker would have sent for ``value`` (the orchestrator's side, to
    compare a whole array with summarized ones)."""
    if isinstance(value, BFloat16):
        return summarize_array(f32_to_bf16_bits(value.values), "bfloat16")
    arr = np.asarray(value)
    name = DTYPE_NAME_OF.get(arr.dtype) or arr.dtype.name
    if name not in DTYPE_NAMES:
        raise ProtocolError(f"unsupported dtype {arr.dtype!s} in an array")
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not arr.flags.c_contiguous:
        arr = arr.copy(order="C")
    return summarize_array(arr, name)


def _components(part: np.ndarray, name: str) -> np.ndarray:
    """A chunk's values as numpy can count them: bfloat16 widened, complex as (re, im)."""
    if name == "bfloat16":
        return bf16_bits_to_f32(part)
    if part.dtype.kind == "c":
        return part.view(np.float32 if part.dtype.itemsize == 8 else np.float64)
    if part.dtype.kind == "b":
        return part.view(np.uint8)
    return part


class _Encoder:
    def __init__(self, budget: int | None = None) -> None:
        self.buffers: list[bytes | memoryview] = []
        self.size = 0
        self.budget = budget

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
        if self.budget is not None and self.size + arr.nbytes > self.budget:
            return self.summary(summarize_array(arr, name))
        data = memoryview(arr).cast("B") if arr.size else b""  # type: ignore[arg-type]
        index = self.add_buffer(data, arr.nbytes)
        return {"$a": index, "dtype": name, "shape": list(arr.shape)}

    def summary(self, s: Summary) -> dict[str, Any]:
        budget, self.budget = self.budget, None  # the sample itself always travels whole
        try:
            sample = self.array(s.sample, s.dtype)
        finally:
            self.budget = budget
        fields = {name: getattr(s, name) for name in SUMMARY_COUNTS}
        return {
            "$s": {
                "dtype": s.dtype,
                "shape": list(s.shape),
                "digest": s.digest,
                **fields,
                "low": self.value(s.low),
                "high": self.value(s.high),
                "sample": sample,
            }
        }

    def value(self, obj: Any) -> Any:
        if obj is None or isinstance(obj, (bool, str)):
            return obj
        if isinstance(obj, int):
            return int(obj)
        if isinstance(obj, float):
            if math.isfinite(obj):
                return obj
            if math.isnan(obj):
                return {"$f": "-nan" if math.copysign(1.0, obj) < 0 else "nan"}
            return {"$f": "inf" if obj > 0 else "-inf"}
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
        if isinstance(obj, ApiRef):
            return {"$api": obj.path}
        if isinstance(obj, tuple):
            return {"$t": [self.value(v) for v in obj]}
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if isinstance(obj, dict):
            return {"$map": [[self.value(k), self.value(v)] for k, v in obj.items()]}
        if isinstance(obj, Opaque):
            return {"$obj": obj.type, "repr": obj.repr}
        if isinstance(obj, Summary):
            return self.summary(obj)
        raise ProtocolError(f"cannot encode a value of type {type(obj).__name__}")


@dataclass(frozen=True)
class DType:
    """A dtype given by name as an argument (the worker turns it into the library's dtype)."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in DTYPE_NAMES:
            raise ProtocolError(f"unknown dtype name {self.name!r}")


@dataclass(frozen=True)
class ApiRef:
    """A callable of the worker's library given as an argument (``jax.lax.reduce_window``'s
    ``computation=jax.lax.max``): the worker resolves the path as it resolves an API."""

    path: str


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

    def summary(self, node: dict[str, Any]) -> Summary:
        name = node.get("dtype")
        if name not in DTYPE_NAMES:
            raise ProtocolError(f"unknown dtype name {name!r}")
        shape = tuple(int(n) for n in node["shape"])
        if any(n < 0 for n in shape):
            raise ProtocolError(f"negative dimension in shape {shape}")
        sample = self.value(node["sample"])
        if isinstance(sample, BFloat16):
            sample = sample.values
        count = len(sample_positions(math.prod(shape)))
        if not isinstance(sample, np.ndarray) or sample.shape != (count,):
            raise ProtocolError(f"a summary of {shape} needs a sample of {count} values")
        if name != "bfloat16" and DTYPE_NAME_OF.get(sample.dtype) != name:
            raise ProtocolError(f"a summary of {name} with a {sample.dtype} sample")
        counts = {}
        for key in SUMMARY_COUNTS:
            n = node[key]
            if not isinstance(n, int) or isinstance(n, bool) or n < 0:
                raise ProtocolError(f"bad summary count {key}={n!r}")
            counts[key] = n
        low, high = self.value(node["low"]), self.value(node["high"])
        for bound in (low, high):
            if bound is not None and (
                isinstance(bound, bool) or not isinstance(bound, (int, float))
            ):
                raise ProtocolError(f"bad summary bound {bound!r}")
        digest = node["digest"]
        if not isinstance(digest, str):
            raise ProtocolError("a summary's digest must be a string")
        return Summary(
            dtype=name,
            shape=shape,
            digest=digest,
            low=low,
            high=high,
            sample=sample,
            **counts,
        )

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
        if "$api" in node:
            return ApiRef(str(node["$api"]))
        if "$f" in node:
            text = node["$f"]
            if text not in ("nan", "-nan", "inf", "-inf"):
                raise ProtocolError(f"bad non-finite float {text!r}")
            return math.copysign(math.nan, -1.0) if text == "-nan" else float(text)
        if "$c" in node:
            re, im = node["$c"]
            return complex(self.value(re), self.value(im))
        if "$map" in node:
            return {self.value(k): self.value(v) for k, v in node["$map"]}
        if "$obj" in node:
            return Opaque(str(node["$obj"]), str(node.get("repr", "")))
        if "$s" in node:
            return self.summary(node["$s"])
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


def frame(
    header: dict[str, Any], values: dict[str, Any] | None = None, budget: int | None = None
) -> list[bytes | memoryview]:
    """Build one frame's parts: the header gets a ``$buf`` table of buffer sizes.

    ``budget``: the array bytes the frame may carry; an array that would take it past the
    budget is sent as a :class:`Summary` (None: every array whole).
    """
    enc = _Encoder(budget)
    body = dict(header)
    for key, val in (values or {}).items():
        body[key] = enc.value(val)
    body["$buf"] = [b.nbytes if isinstance(b, memoryview) else len(b) for b in enc.buffers]
    raw = json.dumps(body, separators=(",", ":"), allow_nan=False).encode()
    return [PREFIX.pack(MAGIC, len(raw), enc.size), raw, *enc.buffers]


def name_tail(qualified: str) -> str:
    """A qualified name's last part without leading underscores: ``m._nanvar`` and
    ``m.nanvar`` are both ``nanvar`` (an implementation and the callable it is named for)."""
    return qualified.rsplit(".", 1)[-1].lstrip("_")


def input_signature(value: Any) -> Any:
    """What a compiling library specialises a call on: array dtypes and shapes, the types of
    floats (traced as values), and every other value (static parameters) as it is."""
    if isinstance(value, np.ndarray):
        return ("array", value.dtype.str, value.shape)
    if isinstance(value, BFloat16):
        return ("bfloat16", value.values.shape)
    if isinstance(value, list | tuple):
        return tuple(input_signature(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), input_signature(v)) for k, v in value.items()))
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str)
    if isinstance(value, float | complex):
        return type(value).__name__
    try:
        hash(value)
    except TypeError:
        return repr(value)[:100]
    return value
