"""The argument language of `xamt call`."""

from __future__ import annotations

import math

import numpy as np
import pytest

from xamt.callspec import parse_keyword, parse_value
from xamt.errors import UsageError
from xamt.workers.protocol import BFloat16, DType


def value(text: str) -> object:
    return parse_value(text, np.random.default_rng(0))


def test_scalars_tuples_and_dtypes() -> None:
    assert value("2") == 2
    assert value("-0.5") == -0.5
    assert math.isnan(value("nan"))  # type: ignore[arg-type]
    assert value("-inf") == -math.inf
    assert value("(0, -1)") == (0, -1)
    assert value("None") is None
    assert value("@int64") == DType("int64")


def test_array_literals_and_generators() -> None:
    arr = value("[[1, 2], [3, nan]]:float32")
    assert isinstance(arr, np.ndarray) and arr.dtype == np.float32 and arr.shape == (2, 2)
    assert np.isnan(arr[1, 1])
    zero_d = value("-0.0:float64")
    assert isinstance(zero_d, np.ndarray) and zero_d.shape == () and np.signbit(zero_d)
    a = value("randn(2, 3):float64")
    b = value("randn(2, 3):float64")
    assert isinstance(a, np.ndarray) and a.shape == (2, 3)
    np.testing.assert_array_equal(a, b)  # seeded: same text, same values
    ints = value("randint(50, low=0, high=3):int8")
    assert (
        isinstance(ints, np.ndarray) and ints.dtype == np.int8 and set(ints.tolist()) <= {0, 1, 2}
    )
    assert value("arange(4):int32").tolist() == [0, 1, 2, 3]  # type: ignore[union-attr]
    c = value("randn(3):complex64")
    assert isinstance(c, np.ndarray) and c.dtype == np.complex64 and np.any(c.imag != 0)


def test_bfloat16_values_are_rounded_to_bfloat16() -> None:
    bf = value("[1.0, 3.14159, nan]:bfloat16")
    assert isinstance(bf, BFloat16)
    bits = bf.values.view(np.uint32)
    assert np.all(bits & 0xFFFF == 0)  # representable in bfloat16
    assert bf.values[1] == np.float32(3.140625)
    assert np.isnan(bf.values[2])


def test_keywords() -> None:
    name, val = parse_keyword("axis=(0, 1)", np.random.default_rng(0))
    assert name == "axis" and val == (0, 1)


@pytest.mark.parametrize(
    "text",
    [
        "[1,",
        "__import__('os')",
        "x",
        "1:float99",
        "@float8",
        "randn(-1):float32",
        "open(1)",
        "[1, 'a']:int8",
    ],
)
def test_bad_values_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        value(text)


def test_bad_keyword() -> None:
    with pytest.raises(UsageError, match="NAME=VALUE"):
        parse_keyword("1=2", np.random.default_rng(0))
