"""The argument language of `xamt call`."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xamt import memory
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


# Issue 30 item 8: a generator's input is bounded by a share of the memory budget, checked
# before anything is allocated.
HUGE = "randn(15000, 15000)"  # 858 MiB of float32, made in float64 first: 2.7 GB before


def test_the_input_limit_is_a_share_of_the_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XAMT_CALL_INPUT_LIMIT", raising=False)
    assert memory.call_input_limit(4 << 30, budget=80 << 20) == 10 << 20
    assert memory.call_input_limit(4 << 30, budget=64 << 30) == 512 << 20  # the worker's cap
    monkeypatch.setenv("XAMT_CALL_INPUT_LIMIT", "2M")
    assert memory.call_input_limit(4 << 30) == 2 << 20


def test_a_generator_over_the_limit_is_refused_in_one_line() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(UsageError) as info:
        parse_value(HUGE, rng, limit=512 << 20)
    message = str(info.value)
    assert "\n" not in message and HUGE in message
    assert "858.3 MiB" in message and "512.0 MiB" in message
    # the limit follows the budget: under 10 MiB, 4 MiB passes and 16 MiB does not
    assert parse_value("randn(1000, 1000):float32", rng, limit=10 << 20).shape == (1000, 1000)
    with pytest.raises(UsageError, match=r"over the limit of 10\.0 MiB"):
        parse_value("ones(2000, 2000):float32", rng, limit=10 << 20)
    with pytest.raises(UsageError, match="over the limit"):
        parse_value("arange(0, 10000000, 1):float64", rng, limit=10 << 20)
    with pytest.raises(UsageError, match="over the limit"):
        parse_keyword(f"x={HUGE}", rng, limit=10 << 20)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("ones(10000000000000000000000, 100000000000000)", "over the limit"),
        ("zeros(4611686018427387904, 4)", "over the limit"),
        ("randn(100000, 100000, 100000):complex128", "over the limit"),
        ("arange(100000000000000000000000)", "over the limit"),
        ("zeros(-1, 3)", "negative"),
        ("randn(2.5, 3)", "not a whole number"),
        ("arange(0, 1, 0)", "step is 0"),
        ("arange(0, inf)", "finite"),
    ],
)
def test_absurd_shapes_are_refused_in_one_line(text: str, why: str) -> None:
    with pytest.raises(UsageError, match=why) as info:
        parse_value(text, np.random.default_rng(0))
    assert "\n" not in str(info.value)


RSS_PROBE = """
import resource, sys
from xamt.cli import app
try:
    app(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print("PEAK_RSS_KB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)
sys.exit(code)
"""


def test_call_with_a_huge_generator_is_refused_before_allocating(tmp_path: Path) -> None:
    """``xamt call`` in a fresh process: one line, exit 2, and its peak RSS stays small
    (it was 2.7 GB before the limit). No worker starts: the refusal comes first."""
    env = {k: v for k, v in os.environ.items() if k != "XAMT_CALL_INPUT_LIMIT"}
    done = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, "call", "numpy.add", "torch.add", "-a", HUGE, "-a", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("PEAK_RSS_KB")]
    assert len(lines) == 1 and HUGE in lines[0] and "over the limit" in lines[0], done.stderr
    assert "Traceback" not in done.stderr
    peak_kb = int(done.stderr.split("PEAK_RSS_KB")[1].split()[0])
    assert peak_kb < 400_000, f"peak RSS {peak_kb} KiB"
