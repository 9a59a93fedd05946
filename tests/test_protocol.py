"""The wire protocol: values survive a round trip exactly; malformed frames are refused."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xamt.workers import protocol
from xamt.workers.protocol import BFloat16, DType, Opaque, ProtocolError

NUMPY_DTYPES = [d for d in protocol.DTYPE_NAMES if d != "bfloat16"]


def roundtrip(value: object) -> object:
    data = protocol.encode({"op": "x"}, {"v": value})
    hlen, plen = protocol.parse_prefix(data[: protocol.PREFIX.size])
    header = data[protocol.PREFIX.size : protocol.PREFIX.size + hlen]
    payload = data[protocol.PREFIX.size + hlen :]
    assert len(payload) == plen
    return protocol.decode(header, payload, ("v",))["v"]


@given(
    hnp.arrays(
        st.sampled_from(NUMPY_DTYPES),
        hnp.array_shapes(min_dims=0, max_dims=6, min_side=0, max_side=4),
    )
)
def test_arrays_round_trip_bit_exact(arr: np.ndarray) -> None:
    back = roundtrip(arr)
    assert isinstance(back, np.ndarray)
    assert back.dtype == arr.dtype and back.shape == arr.shape
    assert back.tobytes() == np.ascontiguousarray(arr).tobytes()


def test_non_contiguous_and_big_endian_arrays_are_normalized() -> None:
    arr = np.arange(12, dtype=">f8").reshape(3, 4)[:, ::-2]
    back = roundtrip(arr)
    assert isinstance(back, np.ndarray)
    assert back.dtype == np.dtype("float64") and back.dtype.isnative
    np.testing.assert_array_equal(back, arr)


def test_bfloat16_travels_as_bits_and_decodes_exactly() -> None:
    values = np.array([1.0, -2.5, 0.0, -0.0, np.inf, 3.140625], dtype=np.float32)
    back = roundtrip(BFloat16(values))
    assert isinstance(back, BFloat16)
    assert back.values.tobytes() == values.tobytes()
    zero_d = roundtrip(BFloat16(np.array(-0.0, dtype=np.float32)))
    assert isinstance(zero_d, BFloat16) and zero_d.shape == () and np.signbit(zero_d.values)
    parts = protocol.frame({}, {"v": BFloat16(values)})
    assert json.loads(bytes(parts[1]))["$buf"] == [values.size * 2]


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        0,
        -(2**70),
        1.5,
        "text",
        (1, (2.0, None)),
        [1, [2]],
        {"a": 1, 2: (3,)},
        DType("float16"),
        Opaque("function", "<fn>"),
        complex(1, -2),
    ],
)
def test_scalars_and_containers_round_trip(value: object) -> None:
    back = roundtrip(value)
    assert back == value and type(back) is type(value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_round_trip(value: float) -> None:
    back = roundtrip(value)
    assert isinstance(back, float)
    assert (math.isnan(back) and math.isnan(value)) or back == value


def test_the_sign_of_a_nan_float_survives() -> None:
    """copysign(nan, -1) returned as a numpy float64 scalar (a Python float) keeps its sign
    bit: numpy.copysign's answer is judged on it."""
    negative = math.copysign(math.nan, -1.0)
    for value in (negative, np.float64(negative)):
        back = roundtrip(value)
        assert math.isnan(back) and math.copysign(1.0, back) == -1.0
    assert math.copysign(1.0, roundtrip(math.nan)) == 1.0


def test_numpy_scalars_keep_their_dtype() -> None:
    back = roundtrip(np.float16(1.5))
    assert isinstance(back, np.ndarray) and back.dtype == np.float16 and back.shape == ()


def test_unknown_types_are_refused() -> None:
    with pytest.raises(ProtocolError):
        protocol.encode({}, {"v": object()})
    with pytest.raises(ProtocolError):
        protocol.encode({}, {"v": np.array(["a"])})
    with pytest.raises(ProtocolError):
        DType("float8")


def _frame(header: dict[str, object], payload: bytes = b"") -> tuple[bytes, bytes]:
    return json.dumps(header).encode(), payload


@pytest.mark.parametrize(
    ("header", "payload", "message"),
    [
        (
            {"v": {"$a": 0, "dtype": "float32", "shape": [2]}, "$buf": [4]},
            b"\0" * 4,
            "does not hold",
        ),
        (
            {"v": {"$a": 3, "dtype": "float32", "shape": [1]}, "$buf": [4]},
            b"\0" * 4,
            "out of range",
        ),
        ({"v": {"$a": 0, "dtype": "float99", "shape": [1]}, "$buf": [4]}, b"\0" * 4, "dtype"),
        ({"v": {"$a": 0, "dtype": "int8", "shape": [-1]}, "$buf": [1]}, b"\0", "negative"),
        ({"v": {"$zz": 1}, "$buf": []}, b"", "unknown value tag"),
        ({"v": {"$f": "1e400"}, "$buf": []}, b"", "non-finite"),
        ({"v": 1, "$buf": [8]}, b"", "adds up"),
    ],
)
def test_malformed_values_are_protocol_errors(
    header: dict[str, object], payload: bytes, message: str
) -> None:
    raw, data = _frame(header, payload)
    with pytest.raises(ProtocolError, match=message):
        protocol.decode(raw, data, ("v",))


def test_malformed_prefixes_and_headers() -> None:
    with pytest.raises(ProtocolError, match="magic"):
        protocol.parse_prefix(struct.pack(">4sIQ", b"NOPE", 1, 0))
    with pytest.raises(ProtocolError, match="truncated"):
        protocol.parse_prefix(b"XAMT")
    with pytest.raises(ProtocolError, match="too large"):
        protocol.parse_prefix(struct.pack(">4sIQ", b"XAMT", protocol.MAX_HEADER + 1, 0))
    with pytest.raises(ProtocolError, match="not JSON"):
        protocol.decode(b"{nope", b"")
    with pytest.raises(ProtocolError, match="JSON object"):
        protocol.decode(b"[1]", b"")
