"""Signatures: golden hashes and keys, and what normalization keeps and drops.

Regenerate the golden file after an intended change (and bump SIGNATURE_VERSION):
``XAMT_UPDATE_GOLDEN=1 python -m pytest tests/test_signature.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from xamt.oracle.signature import (
    MESSAGE_LIMIT,
    SIGNATURE_VERSION,
    canonical_callable,
    error_type,
    normalize_message,
    signature_of,
)

GOLDEN = Path(__file__).parent / "golden" / "signatures.json"
UPDATE = os.environ.get("XAMT_UPDATE_GOLDEN") == "1"

MXNET_MESSAGE = (
    "Traceback (most recent call last):\n"
    '  File "../include/mxnet/./tuple.h", line 405\n'
    "MXNetError: Check failed: dim_size >= -1 (-2 vs. -1) : shape dim size must be >= -1"
)

# The facts of the golden cases (written as v1-style discrepancies, turned into v2 facts by
# :func:`v2`); the file holds what they must give.
RAW_CASES: list[dict[str, Any]] = [
    {"kind": "value", "group": "abs", "odd": ["torch"], "dtype": "float32", "input_class": "nan"},
    {
        "kind": "value",
        "group": "exp",
        "odd": ["jax"],
        "dtype": "complex128",
        "input_class": "ordinary",
    },
    {
        "kind": "nan",
        "group": "log1p",
        "odd": ["paddle", "mxnet"],
        "dtype": "float16",
        "input_class": "boundary",
    },
    {
        "kind": "inf",
        "group": "cumsum",
        "odd": ["tensorflow"],
        "dtype": "float64",
        "input_class": ["inf", "empty"],
    },
    {
        "kind": "signed-zero",
        "group": "round",
        "odd": ["mindspore"],
        "dtype": "float32",
        "input_class": "boundary",
    },
    {
        "kind": "dtype",
        "group": "add",
        "odd": ["mxnet"],
        "dtype": "bfloat16",
        "input_class": "ordinary",
    },
    {
        "kind": "shape",
        "group": "squeeze",
        "odd": ["paddle"],
        "dtype": "int64",
        "input_class": "size-1",
    },
    {
        "kind": "crash",
        "group": "sort",
        "odd": ["mxnet"],
        "dtype": "float32",
        "input_class": "empty",
        "error": "SIGSEGV",
    },
    {
        "kind": "crash",
        "group": "max",
        "odd": ["paddle"],
        "dtype": "int8",
        "input_class": "empty",
        "error": "exit 134",
    },
    {
        "kind": "hang",
        "group": "arange",
        "odd": ["mindspore"],
        "dtype": "int64",
        "input_class": "boundary",
    },
    {
        "kind": "resource",
        "group": "ones",
        "odd": ["jax"],
        "dtype": "float64",
        "input_class": "boundary",
    },
    {
        "kind": "status",
        "group": "sum",
        "odd": ["torch"],
        "dtype": "uint16",
        "input_class": "ordinary",
        "error": "RuntimeError: \"sum_cpu\" not implemented for 'UInt16' at 0x7f3a2b1c0d00",
    },
    {
        "kind": "status",
        "group": "mean",
        "odd": ["paddle"],
        "dtype": "float32",
        "input_class": "ordinary",
        "error": "ValueError: (InvalidArgument) The axis is expected to be in range of [-2, 2), "
        "but got 3 (at /paddle/paddle/phi/kernels/funcs/axis.h:45)",
    },
    {
        "kind": "status",
        "group": "matmul",
        "odd": ["numpy", "jax"],
        "dtype": "float32",
        "input_class": "ordinary",
        "error": "ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0 "
        "(size 3 is different from 4)",
    },
    {
        "kind": "status",
        "group": "sqrt",
        "odd": ["tensorflow"],
        "dtype": "float32",
        "input_class": "ordinary",
        "error": "TypeError: could not convert tensor([1., 2., nan]) to float in "
        "/usr/lib/python3.11/site-packages/x.py, line 12",
    },
    {
        "kind": "status",
        "group": "reshape",
        "odd": ["mxnet"],
        "dtype": "float32",
        "input_class": "ordinary",
        "error": "MXNetError: " + MXNET_MESSAGE,
    },
]


FAMILY = {"nan": "value", "inf": "value", "signed-zero": "value"}


def v2(raw: dict[str, Any]) -> dict[str, Any]:
    """Version 2 facts: one library (the first odd one), its callable, one trigger."""
    lib = raw["odd"][0]
    trigger = raw["input_class"]
    return {
        "family": FAMILY.get(raw["kind"], raw["kind"]),
        "library": lib,
        "callable": f"{lib}.{raw['group']}",
        "dtype": raw["dtype"],
        "trigger": trigger if isinstance(trigger, str) else sorted(trigger)[0],
        "error": raw.get("error", ""),
    }


CASES = [v2(raw) for raw in RAW_CASES]


def computed(case: dict[str, Any]) -> dict[str, Any]:
    digest, key = signature_of(**case)
    return {
        "inputs": case,
        "normalized_error": normalize_message(case.get("error", "")),
        "hash": digest,
        "key": key,
    }


def test_golden_signatures() -> None:
    now = {"version": SIGNATURE_VERSION, "cases": [computed(case) for case in CASES]}
    if UPDATE:
        GOLDEN.parent.mkdir(parents=True, exist_ok=True)
        GOLDEN.write_text(json.dumps(now, indent=2, ensure_ascii=False) + "\n")
    stored = json.loads(GOLDEN.read_text())
    hint = (
        "signatures changed: if intended, bump SIGNATURE_VERSION and run "
        "XAMT_UPDATE_GOLDEN=1 python -m pytest tests/test_signature.py"
    )
    assert stored["version"] == SIGNATURE_VERSION, hint
    assert len(stored["cases"]) == len(now["cases"]), hint
    for old, new in zip(stored["cases"], now["cases"], strict=True):
        assert old == json.loads(json.dumps(new)), f"{hint}\n{old}\n!=\n{new}"


def test_golden_keys_read_well() -> None:
    keys = [signature_of(**case)[1] for case in CASES]
    assert keys[0] == "value/torch/torch.abs/float32/nan"
    assert keys[2] == "value/paddle/paddle.log1p/float16/boundary"
    assert keys[7] == "crash/mxnet/mxnet.sort/float32/empty/SIGSEGV"
    assert keys[11] == "status/torch/torch.sum/uint16/ordinary/RuntimeError"


BASE: dict[str, Any] = {
    "family": "value",
    "library": "torch",
    "callable": "torch.abs",
    "dtype": "float32",
    "trigger": "nan",
    "error": "",
}


def test_hash_form() -> None:
    digest, _ = signature_of(**BASE)
    assert len(digest) == 16 and set(digest) <= set("0123456789abcdef")


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("RuntimeError: bad pointer 0x7f3a2b1c0d00", "RuntimeError: bad pointer 0x55d0c0ffee00"),
        ("ValueError: axis 3 is out of bounds", "ValueError: something else entirely"),
        ("IndexError: index 10 out of range (at /a/b/c.cc:12)", "IndexError: other"),
        ('File "/home/u/x.py", line 12\nE: first', 'File "/opt/venv/lib/y.py", line 9\nE: 2'),
    ],
)
def test_only_the_error_type_is_in_the_signature(a: str, b: str) -> None:
    """The same root cause raises with run-specific or differently worded messages: the
    signature keeps the normalized error type only."""
    assert signature_of(**BASE | {"error": a}) == signature_of(**BASE | {"error": b})
    assert error_type(a) == error_type(b) != ""


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("E: shapes [2, 3] and (4,5) differ", "E: shapes [7] and (1,) differ"),
        ("E: got tensor([1., 2.]) here", "E: got tensor([[3.]], dtype=torch.float64) here"),
        ("E: got array([1, 2]) here", "E: got array([9, 8, 7], dtype=int8) here"),
        ("E: in torch 2.13.0", "E: in torch 2.14.1"),
        ("E: eps 1e-05 vs 3.5", "E: eps 2.5E+10 vs -7"),
        ("E:   spaced\tout", "E: spaced out"),
        ("E: first\nsecond 1", "E: first\nthird 2"),
        ("E: expected [1.5 2. nan] got [1. 2.]", "E: expected [0.] got [3 4]"),
    ],
)
def test_run_specific_details_are_normalized(a: str, b: str) -> None:
    assert normalize_message(a) == normalize_message(b)


def test_meaningful_words_survive_normalization() -> None:
    text = normalize_message("TypeError: conv2d got float32 on SIGSEGV path for int64")
    assert text == "TypeError: conv2d got float32 on SIGSEGV path for int64"
    assert normalize_message("ValueError: bad\nmore") == "ValueError: bad"
    assert normalize_message("x" * 1000) == "x" * MESSAGE_LIMIT
    assert normalize_message("") == ""
    assert error_type("numpy.exceptions.AxisError: axis 2") == "AxisError"
    assert error_type("SIGSEGV") == "SIGSEGV"


def test_aliases_methods_and_inplace_variants_are_one_callable() -> None:
    assert canonical_callable("torch", "acos") == "torch.acos"
    assert signature_of(**BASE | {"callable": canonical_callable("torch", "abs")}) == signature_of(
        **BASE
    )


def test_different_facts_give_different_signatures() -> None:
    variants = [
        BASE,
        BASE | {"family": "status"},
        BASE | {"library": "jax"},
        BASE | {"callable": "torch.neg"},
        BASE | {"dtype": "float64"},
        BASE | {"trigger": "ordinary"},
        BASE | {"error": "ValueError: x"},
        BASE | {"error": "TypeError: x"},
    ]
    hashes = [signature_of(**v)[0] for v in variants]
    keys = [signature_of(**v)[1] for v in variants]
    assert len(set(hashes)) == len(variants)
    assert len(set(keys)) == len(variants)


def test_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown kind family"):
        signature_of(**BASE | {"family": "nan"})
