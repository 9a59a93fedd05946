"""Summarized results (issue 14 item 4), without the library environments: what a worker
sends for an array beyond the result budget, and how every oracle judges it."""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import test_oracle
import test_verdict
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from xamt import memory
from xamt.errors import UsageError
from xamt.oracle import compare, divergence
from xamt.oracle import summary as summaries
from xamt.oracle.verdict import Terms, judge
from xamt.outcomes import outcome_summary, outcome_text
from xamt.serialize import from_jsonable, to_jsonable
from xamt.types import Call, Outcome
from xamt.workers import protocol
from xamt.workers.pool import WorkerPool
from xamt.workers.protocol import BFloat16, ProtocolError, Summary, sample_positions, summary_of

BIG = 1_000_000  # elements: far beyond the sample


def roundtrip(value: object, budget: int | None) -> Any:
    data = b"".join(protocol.frame({"op": "x"}, {"v": value}, budget))
    hlen, _ = protocol.parse_prefix(data[: protocol.PREFIX.size])
    start = protocol.PREFIX.size
    return protocol.decode(data[start : start + hlen], data[start + hlen :], ("v",))["v"]


def ok(lib: str, value: Any) -> Outcome:
    return Outcome(library=lib, api=f"{lib}.f", status="ok", value=value)


def outside_sample(size: int, count: int = 1) -> np.ndarray:
    """``count`` positions that no summary of ``size`` elements samples."""
    sampled = set(sample_positions(size).tolist())
    return np.array([i for i in range(size // 3, size) if i not in sampled][:count])


# --- the worker's side: encoding ------------------------------------------------------------


def test_results_beyond_the_budget_travel_summarized_and_the_rest_whole() -> None:
    small, big = np.arange(10, dtype=np.float32), np.ones(BIG, dtype=np.float64)
    assert isinstance(roundtrip(big, None), np.ndarray)  # no budget: whole
    back = roundtrip((small, big, small), 1 << 20)
    assert isinstance(back[0], np.ndarray) and isinstance(back[2], np.ndarray)
    assert isinstance(back[1], Summary) and back[1].shape == (BIG,)
    # the budget is per reply: two arrays that each fit but not together
    half = np.ones(100_000, dtype=np.float64)  # 800 kB
    back = roundtrip([half, half], 1 << 20)
    assert isinstance(back[0], np.ndarray) and isinstance(back[1], Summary)
    parts = protocol.frame({}, {"v": [big, big, big]}, 1 << 20)
    assert sum(len(p) for p in parts) < 200_000  # 24 MB of results, a few samples sent


@pytest.mark.parametrize(
    "dtype", ["bool", "int8", "uint64", "float16", "float32", "float64", "complex64", "bfloat16"]
)
def test_a_summary_holds_the_facts_of_the_whole_array(dtype: str) -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=BIG) * 100
    special = outside_sample(BIG, 7)
    if dtype in ("bool", "int8", "uint64"):
        arr = np.abs(values).astype(dtype)
        arr[special[0]] = 0
    else:
        np_dtype = np.float32 if dtype == "bfloat16" else np.dtype(dtype)
        arr = values.astype(np_dtype)
        if dtype == "complex64":
            arr = arr + 1j * arr
        arr[special[:2]] = np.nan
        arr[special[2]] = np.inf
        arr[special[3:6]] = -np.inf
        arr[special[6]] = -0.0
    sent: Any = arr
    if dtype == "bfloat16":  # values that are bfloat16 numbers
        sent = BFloat16(protocol.bf16_bits_to_f32(protocol.f32_to_bf16_bits(arr)))
    s = roundtrip(sent, 1 << 16)
    assert isinstance(s, Summary) and s.dtype == dtype and s.shape == (BIG,)
    whole = sent.values if isinstance(sent, BFloat16) else sent
    parts = whole.view(np.float32) if dtype == "complex64" else whole
    wire = protocol.f32_to_bf16_bits(whole) if dtype == "bfloat16" else whole
    assert s.digest == hashlib.blake2b(wire.tobytes(), digest_size=16).hexdigest()
    np.testing.assert_array_equal(s.sample, whole[sample_positions(BIG)])
    assert s.sample.dtype == (np.float32 if dtype == "bfloat16" else np.dtype(dtype))
    if dtype in ("bool", "int8", "uint64"):
        assert (s.nan, s.posinf, s.neginf, s.negzero) == (0, 0, 0, 0)
        assert s.zero == np.count_nonzero(whole == 0)
        assert (s.low, s.high) == (int(whole.min()), int(whole.max()))
        return
    assert (s.nan, s.posinf, s.neginf) == (2, 1, 3)  # (a complex NaN set here is nan+0j)
    assert s.nan == np.count_nonzero(np.isnan(parts))
    assert s.zero == np.count_nonzero(parts == 0)
    assert s.negzero == np.count_nonzero((parts == 0) & np.signbit(parts))
    finite = parts[np.isfinite(parts)]
    assert (s.low, s.high) == (float(finite.min()), float(finite.max()))


def test_summaries_in_chunks_equal_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    arr = np.random.default_rng(2).normal(size=50_000).astype(np.float32)
    arr[[5, 40_000]] = np.nan
    whole = summary_of(arr)
    monkeypatch.setattr(protocol, "SUMMARY_CHUNK", 999)
    chunked = summary_of(arr)
    for name in ("digest", *protocol.SUMMARY_COUNTS, "low", "high"):
        assert getattr(whole, name) == getattr(chunked, name), name


def test_sample_positions_are_fixed_for_a_size() -> None:
    """The same positions in every process and numpy version (mxnet's env has numpy 1.23):
    pinned here, so that a change shows."""
    pos = sample_positions(BIG)
    assert pos.dtype == np.int64 and len(pos) == len(np.unique(pos)) > 4000
    assert pos[0] == 0 and pos[-1] == BIG - 1 and (np.diff(pos) > 0).all()
    assert pos[:6].tolist() == [0, 488, 976, 977, 1062, 1138]
    assert int(pos.sum()) == 2040079922
    np.testing.assert_array_equal(sample_positions(10), np.arange(10))
    assert len(sample_positions(10**12)) > 4000 and sample_positions(10**12).max() < 10**12


@pytest.mark.parametrize(
    ("field", "bad", "message"),
    [
        ("nan", -1, "count"),
        ("zero", "3", "count"),
        ("dtype", "float128", "dtype"),
        ("shape", [BIG + 1], "sample"),
        ("digest", 5, "digest"),
        ("low", "x", "bound"),
    ],
)
def test_malformed_summaries_are_protocol_errors(field: str, bad: object, message: str) -> None:
    data = b"".join(protocol.frame({"op": "x"}, {"v": np.ones(BIG)}, 1 << 16))
    hlen, _ = protocol.parse_prefix(data[: protocol.PREFIX.size])
    start = protocol.PREFIX.size
    header = json.loads(data[start : start + hlen])
    header["v"]["$s"][field] = bad
    with pytest.raises(ProtocolError, match=message):
        protocol.decode(json.dumps(header).encode(), data[start + hlen :], ("v",))


def test_summaries_serialize_exactly_and_read_in_words() -> None:
    arr = np.full(BIG, -0.0, dtype=np.float32)
    arr[7] = np.nan
    s = summary_of(arr)
    back = from_jsonable(to_jsonable(s))
    assert isinstance(back, Summary) and back.digest == s.digest and back.shape == s.shape
    assert back.sample.tobytes() == s.sample.tobytes()
    assert (back.nan, back.negzero, back.low, back.high) == (1, BIG - 1, -0.0, -0.0)
    bf = summary_of(BFloat16(np.ones(BIG, np.float32)))
    assert from_jsonable(to_jsonable(bf)).sample.tobytes() == bf.sample.tobytes()
    out = ok("torch", s)
    assert outcome_summary(out)["shape"] == [BIG] and outcome_summary(out)["dtype"] == "float32"
    assert "summarized: 1 NaN" in outcome_text(out)


# --- the orchestrator's side: the oracles ---------------------------------------------------


def summarized_everywhere(value: Any) -> Any:
    if isinstance(value, BFloat16) or (
        isinstance(value, np.ndarray) and value.dtype.kind in "biufc"
    ):
        return summary_of(value)
    if isinstance(value, tuple):
        return tuple(summarized_everywhere(v) for v in value)
    if isinstance(value, list):
        return [summarized_everywhere(v) for v in value]
    return value


# Tests that assert an exact detail line (a summary adds a note to it), and those of what is
# judged on whole arrays only: the other part of a complex infinity is settled on whole
# arrays (a summary's NaN and inf counts cover positions its sample does not hold).
EXACT_TEXT = {
    "test_nan_masks",
    "test_signed_zero",
    "test_the_other_part_of_a_complex_infinity_is_asked_not_decided",
}


def _replayed_tests() -> list[tuple[str, str]]:
    found = []
    for module in (test_oracle, test_verdict):
        for name, fn in vars(module).items():
            if name.startswith("test_") and callable(fn) and name not in EXACT_TEXT:
                if not inspect.signature(fn).parameters:
                    found.append((module.__name__, name))
    return found


@pytest.mark.parametrize("mixed", [False, True], ids=["all-summarized", "some-summarized"])
@pytest.mark.parametrize(("module", "name"), _replayed_tests())
def test_every_oracle_scenario_judges_the_same_on_summaries(
    monkeypatch: pytest.MonkeyPatch, module: str, name: str, mixed: bool
) -> None:
    """The oracle and verdict tests again, each library's output summarized (or only some
    libraries'): a summary of a small array samples all of it, so every kind, odd set and
    blame must come out the same."""
    mod = sys.modules[module]
    original: Callable[[str, Any], Outcome] = mod.ok

    def summarizing_ok(lib: str, value: Any) -> Outcome:
        if mixed and lib not in ("torch", "paddle", "mxnet"):
            return original(lib, value)
        return original(lib, summarized_everywhere(value))

    monkeypatch.setattr(mod, "ok", summarizing_ok)
    getattr(mod, name)()


finite_or_special = st.one_of(
    st.floats(-1e6, 1e6, width=32), st.sampled_from([0.0, -0.0, np.nan, np.inf, -np.inf])
)


@settings(max_examples=int(os.environ.get("XAMT_SUMMARY_EXAMPLES", "150")), deadline=None)
@given(
    base=hnp.arrays(np.float32, st.integers(1, 40), elements=finite_or_special),
    edits=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 39), finite_or_special), max_size=4),
    reference=st.booleans(),
)
def test_summaries_of_small_arrays_judge_like_the_arrays(
    base: np.ndarray, edits: list[tuple[int, int, float]], reference: bool
) -> None:
    arrays = [base.copy() for _ in range(3)]
    for lib, pos, value in edits:
        arrays[lib][pos % base.size] = value
    libs = ("numpy", "torch", "jax")
    whole = {lib: ok(lib, a) for lib, a in zip(libs, arrays, strict=True)}
    summed = {lib: ok(lib, summary_of(a)) for lib, a in zip(libs, arrays, strict=True)}
    ref = ok("numpy", base.astype(np.float64)) if reference else None
    ref_s = ok("numpy", summary_of(base.astype(np.float64))) if reference else None
    expected = [(d.kind, d.odd) for d in compare(whole, reference=ref)]
    assert [(d.kind, d.odd) for d in compare(summed, reference=ref_s)] == expected
    assert (divergence(summed) == 0) == (divergence(whole) == 0)
    blames = {(b.kind, b.library, b.confidence) for b in judge(whole, ref).blames}
    assert {(b.kind, b.library, b.confidence) for b in judge(summed, ref_s).blames} == blames


def _as(arr: np.ndarray, dtype: str) -> Any:
    with np.errstate(all="ignore"):
        if dtype == "bfloat16":
            return BFloat16(protocol.bf16_bits_to_f32(protocol.f32_to_bf16_bits(arr)))
        if dtype.startswith(("int", "bool")):
            return np.nan_to_num(arr, posinf=7, neginf=-7).astype(dtype)
        return arr.astype(dtype)


@settings(max_examples=int(os.environ.get("XAMT_SUMMARY_EXAMPLES", "150")), deadline=None)
@given(
    base=hnp.arrays(np.float32, st.integers(1, 12), elements=finite_or_special),
    dtypes=st.lists(
        st.sampled_from(
            ["float16", "bfloat16", "float32", "float64", "complex64", "int32", "bool"]
        ),
        min_size=2,
        max_size=4,
    ),
    edits=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 11), finite_or_special), max_size=3),
    summarized=st.lists(st.booleans(), min_size=4, max_size=4),
    op=st.sampled_from(["", "log", "sqrt", "floor_divide", "atan2"]),
)
def test_summaries_of_mixed_dtypes_judge_like_the_arrays(
    base: np.ndarray,
    dtypes: list[str],
    edits: list[tuple[int, int, float]],
    summarized: list[bool],
    op: str,
) -> None:
    """Any dtypes, some libraries summarized, and the standard's special cases (on inputs
    that are not what the outputs were computed from: any blame must be the same)."""
    arrays = [base.copy() for _ in dtypes]
    for lib, pos, value in edits:
        arrays[lib % len(dtypes)][pos % base.size] = value
    libs = ["numpy", "torch", "jax", "paddle"][: len(dtypes)]
    values = [_as(a, d) for a, d in zip(arrays, dtypes, strict=True)]
    whole = {lib: ok(lib, v) for lib, v in zip(libs, values, strict=True)}
    summed = {
        lib: ok(lib, summary_of(v) if s else v)
        for lib, v, s in zip(libs, values, summarized, strict=False)
    }
    ref = ok("numpy", base.astype(np.float64))
    ref_s = ok("numpy", summary_of(base.astype(np.float64)))
    expected = [(d.kind, d.odd) for d in compare(whole, reference=ref)]
    assert [(d.kind, d.odd) for d in compare(summed, reference=ref_s)] == expected
    assert (divergence(summed) == 0) == (divergence(whole) == 0)
    inputs = [base, base[::-1]] if op in ("floor_divide", "atan2") else [base]
    got = judge(whole, ref, Terms(op=op, inputs=tuple(inputs))).blames
    blames = {(b.kind, b.library, b.confidence) for b in got}
    got = judge(summed, ref_s, Terms(op=op, inputs=tuple(inputs))).blames
    assert {(b.kind, b.library, b.confidence) for b in got} == blames


def big(value: float = 1.0, dtype: Any = np.float32) -> np.ndarray:
    return np.full(BIG, value, dtype=dtype)


def test_identical_large_results_agree() -> None:
    outs = {lib: ok(lib, summary_of(big())) for lib in ("numpy", "torch", "jax")}
    assert compare(outs) == [] and divergence(outs) == 0.0
    assert judge(outs).blames == ()


def test_a_different_value_is_caught_in_the_sample() -> None:
    outs = {
        "numpy": ok("numpy", summary_of(big(1.0))),
        "torch": ok("torch", summary_of(big(1.0))),
        "jax": ok("jax", summary_of(big(0.0))),
    }
    (d,) = compare(outs)
    assert (d.kind, d.odd) == ("value", ("jax",))
    assert "summarized" in d.detail
    assert "(e.g. jax gives 0.0 where numpy, torch give 1.0; float32, relative error 1)" in d.detail
    assert divergence(outs) > 0.5
    assert {(b.kind, b.library) for b in judge(outs).blames} == {("value", "jax")}


def test_departures_outside_the_sample_are_caught_by_the_whole_array_facts() -> None:
    spots = outside_sample(BIG, 3)
    nan, large, negzero = big(), big(), big(0.0)
    nan[spots[0]] = np.nan
    large[spots[1]] = 5.0
    negzero[spots[2]] = -0.0
    cases = [
        ({"torch": nan}, big(), "nan"),
        ({"torch": large}, big(), "value"),
        ({"torch": negzero}, big(0.0), "signed-zero"),
    ]
    for odd, normal, kind in cases:
        arrays = {"numpy": normal, "jax": normal, **odd}
        outs = {lib: ok(lib, summary_of(a)) for lib, a in arrays.items()}
        (d,) = compare(outs)
        assert (d.kind, d.odd) == (kind, ("torch",)), d
        assert divergence(outs) > 0
    # integers: a digest that differs at one dtype is a value mismatch, the range equal
    ints = np.arange(BIG, dtype=np.int64) % 10
    other = ints.copy()
    other[spots[0]] = (other[spots[0]] + 1) % 10
    outs = {
        "numpy": ok("numpy", summary_of(ints)),
        "torch": ok("torch", summary_of(other)),
        "jax": ok("jax", summary_of(ints)),
    }
    (d,) = compare(outs)
    assert (d.kind, d.odd) == ("value", ("torch",)) and "digest" in d.detail
    # a NaN outside the sample is a NaN difference, not also a value one (the range moved)
    moved = big()
    moved[spots[:2]] = [np.nan, 7.0]
    outs = {lib: ok(lib, summary_of(a)) for lib, a in (("a", big()), ("b", moved), ("c", big()))}
    assert [d.kind for d in compare(outs)] == ["nan"]


def test_a_summarized_reference_breaks_a_tie() -> None:
    right, wrong = big(1.0), big(1.5)
    outs = {
        "numpy": ok("numpy", summary_of(right)),
        "torch": ok("torch", right[:10]),  # a shape apart: left out of the value vote
        "jax": ok("jax", summary_of(wrong)),
        "paddle": ok("paddle", right),  # under the budget: whole, summarized here
        "mxnet": ok("mxnet", summary_of(wrong)),
    }
    ref = ok("numpy", summary_of(right.astype(np.float64)))
    blamed = {(b.kind, b.library, b.confidence) for b in judge(outs, ref).blames}
    assert ("value", "jax", "reference") in blamed and ("value", "mxnet", "reference") in blamed
    assert not any(lib in ("numpy", "paddle") for _, lib, _ in blamed)


def test_the_standard_judges_summarized_results_on_sampled_inputs() -> None:
    """log(+0) must be -inf: a library returning 0 there is blamed by the standard, though
    its result travelled summarized, and judged exactly as the whole arrays would be."""
    x = np.linspace(-1, 3, BIG, dtype=np.float32)
    x[::97] = 0.0
    with np.errstate(all="ignore"):
        right = np.log(x)
    wrong = right.copy()
    wrong[x == 0] = 0.0
    outs = {"numpy": right, "torch": right, "jax": wrong}
    whole = judge({k: ok(k, v) for k, v in outs.items()}, terms=Terms(op="log", inputs=(x,)))
    summed = judge(
        {k: ok(k, summary_of(v)) for k, v in outs.items()}, terms=Terms(op="log", inputs=(x,))
    )
    key = {(b.kind, b.library, b.confidence) for b in whole.blames}
    assert key == {(b.kind, b.library, b.confidence) for b in summed.blames}
    assert ("inf", "jax", "reference") in key
    assert "sampled positions" in summed.blames[0].detail


def test_an_integer_result_against_a_summarized_float64_reference() -> None:
    """sum of int32 with a wrapping library: the reference, rounded to int32 on the sample,
    decides against the majority as it does on whole arrays."""
    exact = (np.arange(BIG, dtype=np.int64) % 1000).astype(np.int32)
    off = exact.copy()
    off[sample_positions(BIG)[5]] += 1
    outs = {"numpy": exact, "torch": off, "jax": off}
    ref = exact.astype(np.float64)
    whole = judge({k: ok(k, v) for k, v in outs.items()}, ok("numpy", ref))
    summed = judge({k: ok(k, summary_of(v)) for k, v in outs.items()}, ok("numpy", summary_of(ref)))
    assert (
        {(b.kind, b.library, b.confidence) for b in whole.blames}
        == {(b.kind, b.library, b.confidence) for b in summed.blames}
        == {("value", "torch", "reference"), ("value", "jax", "reference")}
    )


# --- budgets --------------------------------------------------------------------------------


def test_the_result_budget_follows_the_memory_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("XAMT_RESULT_BUDGET", raising=False)
    monkeypatch.delenv("XAMT_MEMORY_BUDGET", raising=False)
    per_call = memory.result_budget(7, 6 << 30)
    held = (7 + 1) * (memory.IN_FLIGHT_CASES + memory.WORKING) * per_call
    assert 1 << 20 < per_call and memory.BASELINE + held <= 6 << 30
    assert memory.result_budget(3, 6 << 30) > per_call  # fewer libraries, more each
    assert memory.result_budget(7, 100 << 20) == memory.MIN_RESULT_BUDGET
    assert memory.result_budget(1, 1 << 50) == memory.MAX_RESULT_BUDGET
    assert 0 < memory.memory_budget() < memory.machine_memory()
    monkeypatch.setenv("XAMT_MEMORY_BUDGET", "2G")
    assert memory.memory_budget() == 2 << 30
    assert memory.result_budget(7) == memory.result_budget(7, 2 << 30)
    monkeypatch.setenv("XAMT_RESULT_BUDGET", "1.5M")
    assert memory.result_budget(7) == 3 << 19
    monkeypatch.setenv("XAMT_RESULT_BUDGET", "lots")
    with pytest.raises(UsageError, match="XAMT_RESULT_BUDGET"):
        memory.result_budget(7)


def test_in_flight_cases_cover_the_campaign_pipeline() -> None:
    from xamt.fuzz import campaign

    assert memory.IN_FLIGHT_CASES >= campaign.LOOKAHEAD * campaign.BATCH


def test_the_pool_passes_its_result_budget_to_the_worker() -> None:
    """A numpy worker on this interpreter: its replies are summarized beyond the budget."""
    with WorkerPool({"numpy": sys.executable}, result_budget=1 << 16) as pool:
        assert pool.workers["numpy"].result_budget == 1 << 16
        small = pool.call("numpy", Call(api="numpy.ones", args=((10, 10),)))
        large = pool.call("numpy", Call(api="numpy.ones", args=((1000, 1000),)))
    assert isinstance(small.value, np.ndarray)
    assert isinstance(large.value, Summary) and large.value.shape == (1000, 1000)
    assert summaries.as_summary(np.ones((1000, 1000))).digest == large.value.digest
