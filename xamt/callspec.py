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

A generator's input is checked before anything is allocated: its sizes must be whole numbers
of zero or more, and its bytes at most the limit of :func:`xamt.memory.call_input_limit` (a
share of the memory budget; ``XAMT_CALL_INPUT_LIMIT`` overrides it).
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from xamt import memory
from xamt.errors import UsageError
from xamt.inputs.values import round_to_bfloat16
from xamt.workers.pool import DEFAULT_MEMORY_CAP
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


def _shape(args: list[Any], text: str) -> tuple[int, ...]:
    """A generator's sizes as a shape: whole numbers of zero or more (UsageError otherwise)."""
    shape = []
    for a in args:
        whole = isinstance(a, int) or (isinstance(a, float) and a.is_integer())
        if isinstance(a, bool) or not whole:
            raise UsageError(f"cannot make {text!r}: the size {a!r} is not a whole number")
        if a < 0:
            raise UsageError(f"cannot make {text!r}: the size {int(a)} is negative")
        shape.append(int(a))
    return tuple(shape)


def _arange_count(args: list[Any], text: str) -> int:
    """How many values ``arange(*args)`` makes, computed without making them."""
    if not 1 <= len(args) <= 3 or not all(
        isinstance(a, int | float) and not isinstance(a, bool) and math.isfinite(a) for a in args
    ):
        raise UsageError(f"cannot make {text!r}: arange takes 1 to 3 finite numbers")
    start, stop, step = 0, args[0], 1
    if len(args) > 1:
        start, stop = args[0], args[1]
    if len(args) > 2:
        step = args[2]
    if step == 0:
        raise UsageError(f"cannot make {text!r}: arange's step is 0")
    if all(isinstance(a, int) for a in (start, stop, step)):
        return max(0, -((start - stop) // step))  # exact for any size: no range() needed
    return max(0, math.ceil((stop - start) / step))


def _check_size(name: str, count: int, np_dtype: str, limit: int, text: str) -> None:
    """Refuse, before allocating, a generated input of more than ``limit`` bytes."""
    size = count * np.dtype(np_dtype).itemsize
    if size > limit:
        values = f"{count:,}" if count < 10**12 else f"{count:.3g}"
        raise UsageError(
            f"cannot make {text!r}: {name} would make {values} values, "
            f"{memory.size_text(size)}, over the limit of {memory.size_text(limit)} per input "
            "(a share of xamt's memory budget; set XAMT_CALL_INPUT_LIMIT to change it)"
        )


def _generate(
    call: ast.Call, dtype: str, rng: np.random.Generator, text: str, limit: int
) -> np.ndarray:
    assert isinstance(call.func, ast.Name)
    name = call.func.id
    args = [_literal(a, text) for a in call.args]
    kwargs = {k.arg: _literal(k.value, text) for k in call.keywords if k.arg}
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = list(args[0])
    np_dtype = "float32" if dtype == "bfloat16" else dtype
    if name == "arange":
        _check_size(name, _arange_count(args, text), np_dtype, limit, text)
    else:
        shape = _shape(args, text)
        _check_size(name, math.prod(shape), np_dtype, limit, text)
    try:
        if name == "arange":
            return np.arange(*args).astype(np_dtype)
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
    except (TypeError, ValueError, OverflowError, MemoryError) as exc:
        raise UsageError(f"cannot make {text!r}: {exc}") from None


def parse_value(text: str, rng: np.random.Generator, *, limit: int | None = None) -> Any:
    """Turn one command-line value into a call argument; a generated input may take at most
    ``limit`` bytes (default :func:`xamt.memory.call_input_limit` for the worker pool's
    memory cap)."""
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
        if limit is None:
            limit = memory.call_input_limit(DEFAULT_MEMORY_CAP)
        arr = _generate(node, dtype or "float32", rng, text, limit)
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


def parse_keyword(
    text: str, rng: np.random.Generator, *, limit: int | None = None
) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise UsageError(f"keyword arguments are written NAME=VALUE, got {text!r}")
    return name.strip(), parse_value(value, rng, limit=limit)


def parse_keywords(
    texts: Sequence[str], rng: np.random.Generator, *, limit: int | None = None
) -> dict[str, Any]:
    """``NAME=VALUE`` keywords, each name once (a repeated name is a usage error, not the last
    one winning)."""
    kwargs: dict[str, Any] = {}
    for text in texts:
        name, value = parse_keyword(text, rng, limit=limit)
        if name in kwargs:
            raise UsageError(f"keyword {name!r} given twice (-k {text!r}); give each name once")
        kwargs[name] = value
    return kwargs
