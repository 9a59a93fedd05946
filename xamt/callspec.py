"""The small argument language of ``xamt call``: values written on a command line.

=======================  ==================================================
``2``, ``-0.5``, ``nan``  a Python scalar (``nan``, ``inf``, ``-inf`` allowed)
``True``, ``None``        themselves
``(0, 1)``                a tuple (lists too)
``@float64``              a dtype, by name
``2:float32``             a 0-d array
``[[1, 2], [3, nan]]:float32``  an array literal
``randn(2, 3):float32``   seeded standard normal values (also ``rand``, ``randint``)
``ones(2, 3):int64``      also ``zeros``, ``arange(6)``, ``full(2, 3, fill=-0.0)``
=======================  ==================================================

Keywords are written ``name=VALUE``.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from xamt.errors import UsageError
from xamt.inputs.values import round_to_bfloat16
from xamt.workers.protocol import DTYPE_NAMES, BFloat16, DType

CONSTANTS = {"nan": math.nan, "inf": math.inf, "True": True, "False": False, "None": None}
GENERATORS = ("randn", "rand", "randint", "ones", "zeros", "arange", "full")


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(
        node.value, (int, float, complex, bool, type(None))
    ):
        return node.value
    if isinstance(node, ast.Name) and node.id in CONSTANTS:
        return CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _literal(node.operand, text)
        if isinstance(value, (int, float, complex)) and not isinstance(value, bool):
            return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.Tuple):
        return tuple(_literal(e, text) for e in node.elts)
    if isinstance(node, ast.List):
        return [_literal(e, text) for e in node.elts]
    raise UsageError(
        f"cannot read {text!r}: {ast.unparse(node)!r} is not a number, tuple, "
        "list, nan/inf, True/False/None or a generator like randn(2, 3)"
    )


def _generate(call: ast.Call, dtype: str, rng: np.random.Generator, text: str) -> np.ndarray:
    assert isinstance(call.func, ast.Name)
    name = call.func.id
    args = [_literal(a, text) for a in call.args]
    kwargs = {k.arg: _literal(k.value, text) for k in call.keywords if k.arg}
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = list(args[0])
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    try:
        if name == "arange":
            return np.arange(*args).astype(np_dtype)
        shape = tuple(int(a) for a in args)
        out: np.ndarray
        if name == "randn":
            out = rng.standard_normal(shape)
        elif name == "rand":
            out = rng.random(shape)
        elif name == "randint":
            out = rng.integers(int(kwargs.get("low", -10)), int(kwargs.get("high", 10)), shape)
        elif name == "ones":
            out = np.ones(shape)
        elif name == "zeros":
            out = np.zeros(shape)
        else:  # full
            out = np.full(shape, kwargs.get("fill", 0))
        if np.dtype(np_dtype).kind == "c" and name in ("randn", "rand"):
            out = out + 1j * rng.standard_normal(shape)
        return out.astype(np_dtype)
    except (TypeError, ValueError, OverflowError) as exc:
        raise UsageError(f"cannot make {text!r}: {exc}") from None


def parse_value(text: str, rng: np.random.Generator) -> Any:
    """Turn one command-line value into a call argument."""
    text = text.strip()
    if text.startswith("@"):
        name = text[1:]
        if name not in DTYPE_NAMES:
            raise UsageError(f"unknown dtype {name!r} in {text!r}; known: {', '.join(DTYPE_NAMES)}")
        return DType(name)
    body, sep, dtype = text.rpartition(":")
    if not sep:
        body, dtype = text, ""
    elif dtype not in DTYPE_NAMES:
        raise UsageError(f"unknown dtype {dtype!r} in {text!r}; known: {', '.join(DTYPE_NAMES)}")
    try:
        node = ast.parse(body, mode="eval").body
    except SyntaxError:
        raise UsageError(f"cannot read {text!r}: not a value (see `xamt call --help`)") from None
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in GENERATORS
    ):
        arr = _generate(node, dtype or "float32", rng, text)
    else:
        value = _literal(node, text)
        if not dtype:
            return value
        try:
            arr = np.asarray(value, dtype="float32" if dtype == "bfloat16" else dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise UsageError(f"cannot make a {dtype} array of {text!r}: {exc}") from None
    if dtype == "bfloat16":
        return BFloat16(round_to_bfloat16(arr))
    return arr


def parse_keyword(text: str, rng: np.random.Generator) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"keyword arguments are written NAME=VALUE, got {text!r}")
    return name.strip(), parse_value(value, rng)


def parse_keywords(texts: Sequence[str], rng: np.random.Generator) -> dict[str, Any]:
    """``NAME=VALUE`` keywords, each name once (a repeated name is a usage error, not the last
    one winning)."""
    kwargs: dict[str, Any] = {}
    for text in texts:
        name, value = parse_keyword(text, rng)
        if name in kwargs:
            raise UsageError(f"keyword {name!r} given twice (-k {text!r}); give each name once")
        kwargs[name] = value
    return kwargs
