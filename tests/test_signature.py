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

# The inputs of the golden cases; the file holds what they must give.
CASES: list[dict[str, Any]] = [
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
    assert keys[0] == "value/abs/torch/float32/nan"
    assert keys[2] == "nan/log1p/mxnet+paddle/float16/boundary"
    assert keys[3] == "inf/cumsum/tensorflow/float64/empty+inf"
    assert keys[7] == "crash/sort/mxnet/float32/empty/SIGSEGV"
    assert keys[11] == "status/sum/torch/uint16/ordinary/RuntimeError"


def test_hash_form() -> None:
    digest, _ = signature_of(kind="value", group="g", odd=["a"], dtype="float32", input_class="x")
    assert len(digest) == 16 and int(digest, 16) >= 0


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("RuntimeError: bad pointer 0x7f3a2b1c0d00", "RuntimeError: bad pointer 0x55d0c0ffee00"),
        (
            "ValueError: axis 3 is out of bounds for rank 2",
            "ValueError: axis 7 is out of bounds for rank 5",
        ),
        (
            "IndexError: index 10 out of range (at /a/b/c.cc:12)",
            "IndexError: index 2 out of range (at /x/y/z.cc:99)",
        ),
        ("E: shapes [2, 3] and (4,5) differ", "E: shapes [7] and (1,) differ"),
        ("E: got tensor([1., 2.]) here", "E: got tensor([[3.]], dtype=torch.float64) here"),
        ("E: got array([1, 2]) here", "E: got array([9, 8, 7], dtype=int8) here"),
        ("E: in torch 2.13.0", "E: in torch 2.14.1"),
        ("E: eps 1e-05 vs 3.5", "E: eps 2.5E+10 vs -7"),
        ("E:   spaced\tout", "E: spaced out"),
        ('File "/home/u/x.py", line 12', 'File "/opt/venv/lib/y.py", line 999'),
        ("E: first\nsecond 1", "E: first\nthird 2"),
        ("E: expected [1.5 2. nan] got [1. 2.]", "E: expected [0.] got [3 4]"),
    ],
)
def test_run_specific_details_do_not_change_the_signature(a: str, b: str) -> None:
    facts = {"kind": "status", "group": "g", "odd": ["torch"], "dtype": "float32"}
    assert normalize_message(a) == normalize_message(b)
    assert signature_of(**facts, input_class="ordinary", error=a) == signature_of(
        **facts, input_class="ordinary", error=b
    )


def test_meaningful_words_survive_normalization() -> None:
    text = normalize_message("TypeError: conv2d got float32 on SIGSEGV path for int64")
    assert text == "TypeError: conv2d got float32 on SIGSEGV path for int64"
    assert normalize_message("ValueError: bad\nmore") == "ValueError: bad"
    assert normalize_message("x" * 1000) == "x" * MESSAGE_LIMIT
    assert normalize_message("") == ""


def test_odd_order_and_repeats_do_not_matter() -> None:
    facts: dict[str, Any] = {"kind": "nan", "group": "g", "dtype": "float32", "input_class": "nan"}
    assert signature_of(**facts, odd=["torch", "jax"]) == signature_of(
        **facts, odd=["jax", "torch", "jax"]
    )
    assert signature_of(**facts | {"input_class": ["b", "a"]}, odd=["jax"]) == signature_of(
        **facts | {"input_class": ("a", "b", "a")}, odd=["jax"]
    )


def test_different_facts_give_different_signatures() -> None:
    base: dict[str, Any] = {
        "kind": "value",
        "group": "abs",
        "odd": ["torch"],
        "dtype": "float32",
        "input_class": "nan",
        "error": "",
    }
    variants = [
        base,
        base | {"kind": "nan"},
        base | {"group": "neg"},
        base | {"odd": ["jax"]},
        base | {"odd": ["torch", "jax"]},
        base | {"dtype": "float64"},
        base | {"input_class": "ordinary"},
        base | {"error": "ValueError: x"},
        base | {"error": "TypeError: x"},
        base | {"error": "ValueError: y"},
    ]
    hashes = [signature_of(**v)[0] for v in variants]
    keys = [signature_of(**v)[1] for v in variants]
    assert len(set(hashes)) == len(variants)
    assert len(set(keys)) == len(variants) - 1  # the key names the error type, not its message


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown discrepancy kind"):
        signature_of(kind="weird", group="g", odd=["a"], dtype="float32", input_class="x")
