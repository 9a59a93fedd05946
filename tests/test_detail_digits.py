"""The value detail line shows the difference: digits that tell the values apart, the dtype,
the distance and the reference (xamt/oracle/compare.py)."""

from __future__ import annotations

import numpy as np

from xamt.oracle.compare import compare
from xamt.types import Outcome


def ok(library: str, value: np.ndarray) -> Outcome:
    return Outcome(library=library, api=f"{library}.f", status="ok", value=value)


def test_the_detail_line_tells_the_values_apart() -> None:
    """Two float64 values beyond tolerance that agree at seven significant digits (the old
    line said "-0.7456596 vs -0.7456596")."""
    good, bad = -0.74565964, -0.74565955
    (d,) = compare(
        {
            "mxnet": ok("mxnet", np.array([1.0, bad])),
            "torch": ok("torch", np.array([1.0, good])),
            "paddle": ok("paddle", np.array([1.0, good])),
        },
        reference=ok("numpy", np.array([1.0, -0.745659641])),
    )
    assert d.odd == ("mxnet",)
    assert d.detail.startswith("value: mxnet differs from torch, paddle at 1 position")
    assert "mxnet gives -0.74565955 where torch, paddle give -0.74565964" in d.detail
    assert "float64, relative error 1.2e-07" in d.detail  # (810,647,933 ULP: too many to say)
    assert "float64 reference -0.745659641" in d.detail


def test_float32_values_are_shown_at_their_own_shortest_digits() -> None:
    x = np.float32(-0.7456596)
    odd = x * np.float32(1.001)
    (d,) = compare(
        {
            "jax": ok("jax", np.array([odd])),
            "torch": ok("torch", np.array([x])),
            "numpy": ok("numpy", np.array([x])),
        }
    )
    assert "jax gives -0.7464053 where torch, numpy give -0.7456596; float32" in d.detail
    assert str(odd) == "-0.7464053" and "ULP" in d.detail
