"""Short, human-readable summaries of outcomes (the terminal, findings.json and reports)."""

from __future__ import annotations

from typing import Any

import numpy as np

from xamt.oracle.signature import headline
from xamt.types import Outcome
from xamt.workers.protocol import BFloat16, DType, Opaque, Summary


def summarize(value: Any, limit: int = 160) -> str:
    """A short human summary of an output value: dtype, shape and leading elements."""
    if isinstance(value, BFloat16):
        return "bfloat16" + summarize(value.values, limit).removeprefix("float32")
    if isinstance(value, np.ndarray):
        body = np.array2string(
            value, threshold=12, edgeitems=2, precision=6, separator=", ", max_line_width=10_000
        ).replace("\n", "")
        text = f"{value.dtype}{list(value.shape)} {body}"
    elif isinstance(value, Summary):
        text = f"{value.dtype}{list(value.shape)} {summary_text(value)}"
    elif isinstance(value, tuple):
        text = "(" + ", ".join(summarize(v, limit) for v in value) + ")"
    elif isinstance(value, list):
        text = "[" + ", ".join(summarize(v, limit) for v in value) + "]"
    elif isinstance(value, Opaque):
        text = f"<{value.type}> {value.repr}"
    elif isinstance(value, DType):
        text = f"@{value.name}"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summary_text(s: Summary) -> str:
    """What a summarized result says about itself: counts, finite range, digest, sample."""
    facts = [
        f"{getattr(s, name)} {label}"
        for name, label in (("nan", "NaN"), ("posinf", "+inf"), ("neginf", "-inf"))
        if getattr(s, name)
    ]
    facts.append(f"range [{s.low}, {s.high}]")
    if s.digest:
        facts.append(f"digest {s.digest[:12]}")
    sample = np.array2string(
        s.sample, threshold=6, edgeitems=2, precision=6, separator=", ", max_line_width=10_000
    ).replace("\n", "")
    return f"(summarized: {', '.join(facts)}; sample {sample})"


def outcome_text(o: Outcome) -> str:
    """One line: the value, the exception, or how the worker died."""
    if o.status == "ok":
        return summarize(o.value)
    if o.error is not None:
        return f"{o.error.type}: {headline(o.error.message)}"[:200]
    if o.signal:
        return f"killed by {o.signal}"
    return (o.detail.strip().splitlines() or [""])[-1][:200]


def outcome_summary(o: Outcome) -> dict[str, Any]:
    """What findings.json says a library returned or raised."""
    summary: dict[str, Any] = {"api": o.api, "status": o.status, "result": outcome_text(o)}
    if o.status == "ok":
        leaf = o.value.values if isinstance(o.value, BFloat16) else o.value
        if isinstance(leaf, Summary):
            summary["dtype"] = leaf.dtype
            summary["shape"] = list(leaf.shape)
        elif isinstance(leaf, np.ndarray):
            summary["dtype"] = "bfloat16" if isinstance(o.value, BFloat16) else leaf.dtype.name
            summary["shape"] = list(leaf.shape)
    if o.error is not None:
        summary["error"] = {"type": o.error.type, "message": o.error.message[:2000]}
    if o.signal:
        summary["signal"] = o.signal
    return summary
