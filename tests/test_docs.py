"""Documentation as evidence: sentences about a finding, and the dtypes a docstring accepts.

The docstrings here are short ones written for the tests in the style of each library's docs.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from xamt.replay import ORDINARY, TRIGGERS
from xamt.triage.docs import TRIGGER_WORDS, documented_dtypes, sentences

PADDLE = """
Computes the reciprocal square root of ``x`` elementwise.

.. math::

    out = \\frac{1}{\\sqrt{x}}

Args:
    x (Tensor): The input Tensor. The data type should be float32, float64.
    name (str|None, optional): Name for the operation. Default is None.

Returns:
    out (Tensor), a Tensor with the same data type as ``x``, float16 when ``x`` is float16.

Examples:
    .. code-block:: python

        >>> import paddle
        >>> x = paddle.to_tensor([float('nan'), 4.0])
        >>> paddle.rsqrt(x)
        Tensor(shape=[2], dtype=float32, [nan, 0.5])
"""

MINDSPORE = """
Returns the element-wise reciprocal of the square root of the input.

.. note::
    The input of zero gives infinity; a NaN input gives NaN.

Inputs:
    - **x** (Tensor) - The input of Rsqrt, its data type must be float16 or float32.

Outputs:
    Tensor, has the same shape and dtype as `x`, int32 for a bool input.

Raises:
    TypeError: If `x` is not a Tensor.
    TypeError: If dtype of `x` is neither float16 nor float32.

Supported Platforms:
    ``Ascend`` ``GPU`` ``CPU``

Examples:
    >>> x = Tensor(np.array([0.0, -0.0]), mindspore.float32)
    >>> output = ops.rsqrt(x)
    >>> print(output)
    [inf -inf]
"""

TORCH = """
rsqrt(input, *, out=None) -> Tensor

Returns a new tensor with the reciprocal of the square-root of each of
the elements of :attr:`input`. For a negative zero the result is negative infinity,
i.e. the sign of zero is kept.

Args:
    input (Tensor): the input tensor.

Keyword args:
    out (Tensor, optional): the output tensor.

Example::

    >>> a = torch.randn(4)
    >>> torch.rsqrt(a)
    tensor([    nan,  1.8351,  0.8053,     nan])
"""

NUMPY = """
Sum of array elements over a given axis.

Parameters
----------
a : array_like
    Elements to sum.
axis : None or int or tuple of ints, optional
    Axis or axes along which a sum is performed. An axis out of range
    raises an error.
dtype : dtype, optional
    The type of the returned array. Must be float32 or float64 when given.

Returns
-------
sum_along_axis : ndarray
    An array of dtype float64 unless `a` is an integer array.

See Also
--------
mean : Average of the NaN-free elements of an empty array.

Notes
-----
The sum of an empty array is the neutral element 0.
Arithmetic is modular when using integer types, and no error is raised on overflow.

Examples
--------
>>> np.sum([])
0.0
>>> np.sum([0.5, 1.5])
2.0
"""


def test_paddle_style_finds_the_restriction_and_skips_math_and_doctests() -> None:
    found = sentences(PADDLE, dtype="float16", trigger="nan", params=("x",))
    assert found == (
        "Computes the reciprocal square root of `x` elementwise.",
        "x (Tensor): The input Tensor.",
        "The data type should be float32, float64.",
        "out (Tensor), a Tensor with the same data type as `x`, float16 when `x` is float16.",
    )
    assert not any("nan" in s or "frac" in s for s in found)
    assert documented_dtypes(PADDLE) == frozenset({"float32", "float64"})


def test_mindspore_style_note_bullets_and_raises() -> None:
    found = sentences(MINDSPORE, dtype="float32", trigger="nan", params=("x",), limit=3)
    assert found == (
        "The input of zero gives infinity; a NaN input gives NaN.",
        "x (Tensor) - The input of Rsqrt, its data type must be float16 or float32.",
        "TypeError: If dtype of `x` is neither float16 nor float32.",
    )
    assert documented_dtypes(MINDSPORE) == frozenset({"float16", "float32"})  # not Outputs


def test_torch_style_neg_zero_and_literal_block() -> None:
    found = sentences(TORCH, dtype="float32", trigger="neg-zero")
    assert found == (
        "For a negative zero the result is negative infinity, i.e. the sign of zero is kept.",
    )
    assert sentences(TORCH, dtype="float32", trigger="inf")[0].startswith("For a negative zero")
    assert not any("nan" in s for s in sentences(TORCH, dtype="float32", trigger="nan"))
    assert documented_dtypes(TORCH) is None


def test_numpy_style_sections_entries_and_see_also() -> None:
    found = sentences(NUMPY, dtype="int32", trigger="empty", params=("axis",), limit=10)
    assert (
        "axis (None or int or tuple of ints, optional): Axis or axes along which a sum is "
        "performed." in found
    )
    assert "The sum of an empty array is the neutral element 0." in found
    assert (
        "Arithmetic is modular when using integer types, and no error is raised on overflow."
        in found
    )
    assert not any("NaN-free" in s for s in found)  # See Also is left out
    assert not any(s.startswith(("0.0", "2.0", ">>>")) for s in found)  # doctest output too
    # the dtype parameter's choices and the Returns section are not the accepted inputs
    assert documented_dtypes(NUMPY) is None


def test_the_trigger_and_the_dtype_win_when_the_limit_bites() -> None:
    doc = """
    Adds x and y. The parameter x must be a tensor. The parameter y must be a tensor.
    The sum overflows for int8 inputs. The result is NaN when either input is NaN.
    """
    assert sentences(doc, dtype="int8", trigger="nan", params=("x", "y"), limit=2) == (
        "The sum overflows for int8 inputs.",
        "The result is NaN when either input is NaN.",
    )
    assert sentences(doc, dtype="int8", trigger="nan", limit=0) == ()


def test_dtype_words_cover_the_dtype_and_its_kind() -> None:
    doc = (
        "Works on integers. Half-precision is fine: float16 or fp16. "
        "Complex inputs are conjugated. A boolean mask is applied."
    )
    assert sentences(doc, dtype="int16", trigger=ORDINARY) == ("Works on integers.",)
    assert sentences(doc, dtype="float16", trigger=ORDINARY) == (
        "Half-precision is fine: float16 or fp16.",
    )
    assert sentences(doc, dtype="complex64", trigger=ORDINARY) == (
        "Complex inputs are conjugated.",
    )
    assert sentences(doc, dtype="bool", trigger=ORDINARY) == ("A boolean mask is applied.",)
    assert sentences(
        "Sorts the input. Supports torch.float16 only.", dtype="float16", trigger="nan"
    ) == ("Supports torch.float16 only.",)


def test_trigger_words() -> None:
    cases = {
        "inf": "Returns infinity at the pole.",
        "subnormal": "Denormal inputs are flushed to zero.",
        "scalar": "A 0-d input gives a 0-d output.",
        "zero-divisor": "Division by zero gives inf.",
        "dtype-limit": "Integer results wrap around on overflow.",
        "out-of-range-index": "An index out of range raises an IndexError.",
        "kernel-beyond-input": "The kernel may not be larger than the input.",
        "param-boundary": "The order p must be positive.",
    }
    filler = "This sentence is about something else entirely."
    for trigger, sentence in cases.items():
        doc = f"{filler} {sentence}"
        assert sentences(doc, dtype="float64", trigger=trigger) == (sentence,), trigger
    assert sentences(filler, dtype="float64", trigger="nan") == ()
    assert sentences("", dtype="float32", trigger="nan") == ()


def test_every_trigger_has_words() -> None:
    assert set(TRIGGER_WORDS) == {*TRIGGERS, ORDINARY}
    assert all(TRIGGER_WORDS[t] for t in TRIGGERS)


def test_params_match_whole_names_only() -> None:
    doc = "The axis to reduce over. The taxis is not a parameter. An x-axis label."
    assert sentences(doc, dtype="float64", trigger=ORDINARY, params=("axis",)) == (
        "The axis to reduce over.",
    )


def test_code_blocks_fenced_and_directives_are_left_out() -> None:
    doc = """
    Multiplies the inputs.

    ```python
    y = x * float('nan')
    ```

    .. code-block:: python

        z = x / 0.0  # inf

    .. versionchanged:: 2.1
        NaN inputs now propagate.
    .. _nan-label:
        NaN things referenced elsewhere.
    """
    assert sentences(doc, dtype="float32", trigger="nan") == ("NaN inputs now propagate.",)


def test_documented_dtypes_in_regular_forms() -> None:
    forms = {
        "x (Tensor): the input, data type float32 or float64.": {"float32", "float64"},
        "Supported dtypes: float32, float64, int64.": {"float32", "float64", "int64"},
        "x must be float16 or float32.": {"float16", "float32"},
        "Its data type must be one of: ``mindspore.float16``, ``mindspore.float32``.": {
            "float16",
            "float32",
        },
        "The data type of the input should be bool, int32 and int64.": {"bool", "int32", "int64"},
        "TypeError: If dtype of `x` is not float16 or float32.": {"float16", "float32"},
        "This op only supports np.bool_ inputs.": {"bool"},
        "data type: bfloat16/float16": {"bfloat16", "float16"},
    }
    for doc, dtypes in forms.items():
        assert documented_dtypes(doc) == frozenset(dtypes), doc


def test_documented_dtypes_negative_cases() -> None:
    for doc in (
        "",
        "Returns a tensor with the same data type as x.",
        "The input must be a floating point tensor.",
        "dtype (str, optional): The data type of the output, can be float32, float64.",
        "Returns:\n    Tensor, the data type is float32.",
        ">>> x = paddle.ones([2], dtype='float32')\n>>> x.dtype\npaddle.float32",
        "The inputs must be broadcastable. float32 is the default.",
        "x (Tensor): a float64 tensor, see the float16 notes.",
    ):
        assert documented_dtypes(doc) is None, doc


@given(st.text(max_size=400), st.integers(min_value=0, max_value=6))
def test_sentences_are_bounded_and_single_line(doc: str, limit: int) -> None:
    found = sentences(doc, dtype="float32", trigger="nan", params=("x",), limit=limit)
    assert len(found) <= limit
    assert all(s and s == " ".join(s.split()) for s in found)
    documented_dtypes(doc)  # never raises


def test_a_dtype_outside_a_documented_list_is_named_with_the_list() -> None:
    from xamt.triage.docs import outside_documented
    from xamt.workers.protocol import DTYPE_NAMES

    doc = "Computes it.\n\nArgs:\n    x (Tensor): The data type should be float32 or float64."
    assert outside_documented(doc, "int8", "torch", DTYPE_NAMES) == "float32, float64"
    assert outside_documented(doc, "float32", "torch", DTYPE_NAMES) == ""
    assert outside_documented("Computes it.", "int8", "torch", DTYPE_NAMES) == ""
    # paddle writes bfloat16 as uint16
    paddle = "Args:\n    x (Tensor): The data type should be uint16, float32."
    assert outside_documented(paddle, "bfloat16", "paddle", DTYPE_NAMES) == ""
    assert outside_documented(paddle, "int8", "paddle", DTYPE_NAMES) == "bfloat16, float32"


def test_a_dtype_excluded_in_words_and_a_simple_table_left_out() -> None:
    from xamt.triage.docs import documented_exclusions, outside_documented, sentences
    from xamt.workers.protocol import DTYPE_NAMES

    doc = """Computes a norm.

    =====  =========
    ord    norm
    =====  =========
    None   Frobenius
    =====  =========

    Currently, complex numbers are not supported.
    """
    assert documented_exclusions(doc) == {"complex64", "complex128"}
    assert outside_documented(doc, "complex64", "mindspore", DTYPE_NAMES) == (
        "anything but complex64"
    )
    assert outside_documented(doc, "float32", "mindspore", DTYPE_NAMES) == ""
    said = sentences(doc, dtype="complex64", trigger="nan")
    assert said == ("Currently, complex numbers are not supported.",)
    assert documented_exclusions("Supports complex numbers.") == frozenset()
