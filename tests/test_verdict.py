"""The verdict: one library blamed per root cause, by reference before majority; splits,
support refusals, malformed calls and overflow artefacts."""

from __future__ import annotations

import numpy as np

from xamt.catalog.ops import Trait
from xamt.oracle.verdict import Judgement, Terms, internal, judge, refused
from xamt.types import ErrorInfo, Outcome
from xamt.workers.protocol import BFloat16

F32 = np.float32


def ok(lib: str, value: object) -> Outcome:
    return Outcome(library=lib, api=f"{lib}.f", status="ok", value=value)


def err(lib: str, type_: str, message: str) -> Outcome:
    return Outcome(
        library=lib, api=f"{lib}.f", status="error", error=ErrorInfo(type=type_, message=message)
    )


def terms(**kw: object) -> Terms:
    """Terms from keywords, sequences as the tuples (and sets) the record holds."""
    fixed = {
        k: (frozenset(v) if k == "exclude" else tuple(v)) if isinstance(v, list | set) else v
        for k, v in kw.items()
    }
    return Terms(**fixed)  # type: ignore[arg-type]


def opening(*kinds: str, **fields: object) -> Trait:
    """A trait opening ``kinds`` (fields: scope, floating_results, ...)."""
    return Trait(
        name=str(fields.pop("name", "a-trait")),
        reason="a reason",
        link=str(fields.pop("link", "https://example.org/doc")),
        opens=kinds,
        when="always",
        question=str(fields.pop("question", "a question nothing decides")),
        **fields,  # type: ignore[arg-type]
    )


def judged(outcomes: list[Outcome], reference: Outcome | None = None, **kw: object) -> Judgement:
    return judge({o.library: o for o in outcomes}, reference, terms(**kw))


def blamed(outcomes: list[Outcome], reference: Outcome | None = None, **kw: object) -> set:
    """The blames something decides: (kind, library, confidence)."""
    j = judged(outcomes, reference, **kw)
    return {(b.kind, b.library, b.confidence) for b in j.blames if not b.question}


def unsettled(outcomes: list[Outcome], reference: Outcome | None = None, **kw: object) -> set:
    """The blames no document decides: (kind, library)."""
    j = judged(outcomes, reference, **kw)
    return {(b.kind, b.library) for b in j.blames if b.question}


def test_the_reference_decides_against_the_majority() -> None:
    """Three libraries agree on a wrong value, two with the float64 reference: the three are
    blamed, each on its own, by reference."""
    right, wrong = np.array([1.0], F32), np.array([2.0], F32)
    outs = [
        ok("numpy", right),
        ok("torch", right),
        ok("jax", wrong),
        ok("paddle", wrong),
        ok("mxnet", wrong),
    ]
    ref = ok("numpy", np.array([1.0]))
    assert blamed(outs, ref) == {
        ("value", "jax", "reference"),
        ("value", "paddle", "reference"),
        ("value", "mxnet", "reference"),
    }


def test_the_reference_decides_even_when_only_numpy_agrees() -> None:
    """average of int32 [1, 1, 1, 1.5]: the float64 reference agrees with numpy's exact
    1.125, so the two libraries that truncate are blamed, though they are the majority."""
    outs = [
        ok("numpy", np.array(1.125)),
        ok("mindspore", np.array(1, np.int32)),
        ok("mxnet", np.array(1, np.int32)),
    ]
    got = blamed(outs, ok("numpy", np.array(1.125)))
    assert ("value", "mindspore", "reference") in got and ("value", "mxnet", "reference") in got
    assert not any(lib == "numpy" and kind == "value" for kind, lib, _ in got)


def test_an_even_split_without_reference_is_a_split() -> None:
    outs = [ok("torch", np.array([1.0], F32)), ok("paddle", np.array([2.0], F32))]
    j = judge({o.library: o for o in outs})
    assert [(b.kind, b.library, b.confidence) for b in j.blames] == [
        ("value", "paddle+torch", "split")
    ]


def test_every_answer_an_overflow_artefact_blames_nobody() -> None:
    """std of float32 max: the true result is finite, every library overflows to inf or NaN."""
    outs = [
        ok("numpy", np.array(np.inf, F32)),
        ok("torch", np.array(np.nan, F32)),
        ok("jax", np.array(np.inf, F32)),
    ]
    ref = ok("numpy", np.array(1e38))
    assert blamed(outs, ref) == set()


def test_a_true_overflow_in_the_output_dtype_is_right() -> None:
    """The float64 reference beyond float32's range rounds to inf: the library returning inf
    is right, the one returning float32 max is blamed."""
    outs = [
        ok("numpy", np.array([np.inf], F32)),
        ok("torch", np.array([np.inf], F32)),
        ok("paddle", np.array([3.4e38], F32)),
    ]
    ref = ok("numpy", np.array([1e39]))
    assert blamed(outs, ref) == {("inf", "paddle", "reference")}


def test_the_standard_blames_a_special_case_departure() -> None:
    """acos(NaN) must be NaN (array API special cases): the library returning a number is
    blamed by reference, even when it is in the majority."""
    x = np.array([np.nan, 0.5], F32)
    good = np.arccos(x)
    bad = np.array([0.0, good[1]], F32)
    outs = [ok("numpy", good), ok("torch", bad), ok("paddle", bad)]
    got = blamed(outs, op="acos", inputs=[x])
    assert ("nan", "torch", "reference") in got and ("nan", "paddle", "reference") in got
    assert not any(lib == "numpy" for _, lib, _ in got)


def test_one_blame_per_library_and_family() -> None:
    """NaN and value departures of one library in one case are one wrong result."""
    outs = [
        ok("numpy", np.array([np.nan, 1.0], F32)),
        ok("torch", np.array([np.nan, 1.0], F32)),
        ok("jax", np.array([0.0, 5.0], F32)),
    ]
    got = blamed(outs)
    assert got == {("nan", "jax", "majority")}


def test_refusals_go_to_the_support_matrix() -> None:
    outs = [
        ok("numpy", np.array([1.0])),
        ok("torch", np.array([1.0], F32)),
        err(
            "tensorflow",
            "InvalidArgumentError",
            "Value for attr 'T' of int32 is not in the list of allowed values: half, float",
        ),
        err("mindspore", "TypeError", "- Kernel select failed: Unsupported data type!"),
    ]
    j = judge({o.library: o for o in outs})
    assert j.support == {
        "numpy": "ok",
        "torch": "ok",
        "tensorflow": "refused",
        "mindspore": "refused",
    }
    assert not any(b.kind == "status" for b in j.blames)


def test_dtype_lists_in_mindspore_and_mxnet_errors_are_refusals() -> None:
    """Seen in an audit of ten fresh suspected bugs: three were these support gaps."""
    outs = [
        ok("numpy", np.array([1.0], F32)),
        ok("torch", np.array([1.0], F32)),
        err(
            "mindspore", "TypeError", "For 'LeftShift', the dtype of input should be one of [Int8]"
        ),
        err("mxnet", "MXNetError", "This operation does not support float16"),
    ]
    j = judge({o.library: o for o in outs})
    assert j.support["mindspore"] == j.support["mxnet"] == "refused" and not j.blames
    spelt = err("mindspore", "TypeError", "For 'diff', 'input' do not support complex64/float64")
    assert judge({o.library: o for o in [*outs[:2], spelt]}).support["mindspore"] == "refused"
    # a legacy mxnet.nd operator given a 0-d array under numpy shape semantics: a C++ check,
    # but one that names the input kind the operator has no support for
    scalar = err(
        "mxnet",
        "MXNetError",
        "Check failed: lshape.ndim() > 0 (0 vs. 0) : scalar tensor is not supported by this "
        "operator.",
    )
    assert judge({o.library: o for o in [*outs[:2], scalar]}).support["mxnet"] == "refused"
    # mshadow's TBlob type checks: a float32-only kernel (mxnet.nd.LRN) given float64, and a
    # linear-algebra operator with float outputs given int32 (mxnet.np.linalg.tensorinv)
    for message in (
        "Check failed: mshadow::DataType<DType>::kFlag == type_flag_: TBlob.get_with_shape: "
        "data type do not match specified type.Expected: float32 v.s. given float64",
        "Check failed: inv_a_tblob.type_flag_ == a_tblob.type_flag_ (1 vs. 4) : Binary "
        "function only support input/output with the same type",
    ):
        got = judge({o.library: o for o in [*outs[:2], err("mxnet", "MXNetError", message)]})
        assert got.support["mxnet"] == "refused" and not got.blames, message


def test_a_deliberate_check_refuses_an_input_kind_and_is_no_status_finding() -> None:
    """paddle's own message says why it refuses the input ('only support N-D (1<=N<=2)'): that
    is its contract for the input kind (support matrix), not a bug."""
    celu = err("paddle", "ZeroDivisionError", "alpha cannot be 0 for celu")
    assert not judge(
        {x.library: x for x in [ok("numpy", np.array([1.0])), ok("jax", np.array([1.0])), celu]}
    ).blames
    o = err("paddle", "ValueError", "Input(x) only support N-D (1<=N<=2) tensor in corrcoef")
    assert not refused(o)  # not a dtype refusal ...
    outs = [ok("numpy", np.array([1.0])), ok("torch", np.array([1.0])), o]
    j = judge({x.library: x for x in outs})
    assert not j.blames and j.support["paddle"] == "refused"  # ... but an input-kind one


def test_a_failure_inside_the_library_is_a_status_finding() -> None:
    """An AttributeError in its Python code, a C++ 'Check failed' assertion, an internal dtype
    mismatch or a bare assertion: the library broke on an input the others handle."""
    broken = [
        err("tensorflow", "AttributeError", "'EagerTensor' object has no attribute 'astype'"),
        err("mxnet", "MXNetError", "Check failed: i >= 0 && i < ndim(): index = -1"),
        err("tensorflow", "InvalidArgumentError", "TensorArray dtype is int32 but Op is trying"),
        err("paddle", "AssertionError", ""),
        err("mindspore", "ZeroDivisionError", "float division by zero"),
    ]
    for o in broken:
        outs = [ok("numpy", np.array([1.0])), ok("torch", np.array([1.0])), o]
        assert ("status", o.library, "majority") in blamed(outs), o.error


def test_a_bare_assertion_on_the_dtype_is_a_refusal() -> None:
    """paddle.nan_to_num guards its dtypes with ``assert x.dtype in [...]`` (no message): a
    deliberate check, so a support gap; a bare assertion on anything else is internal."""

    def asserted(line: str) -> Outcome:
        tb = f'  File "math.py", line 1741, in nan_to_num\n    {line}\n    ^^^^^^^^^^^^\n'
        return Outcome(
            library="paddle",
            api="paddle.nan_to_num",
            status="error",
            error=ErrorInfo(type="AssertionError", message="", traceback=tb),
        )

    check = asserted("assert x.dtype in [paddle.float32, paddle.float64]")
    assert not internal(check)
    outs = [ok("torch", np.array([1.0])), ok("jax", np.array([1.0])), check]
    assert blamed(outs) == set()
    assert internal(asserted("assert len(shape) == ndim"))
    assert ("status", "paddle", "majority") in blamed([*outs[:2], asserted("assert n > 0")])


def test_a_check_stating_a_limit_of_the_input_is_a_refusal() -> None:
    """mxnet's CHECK macro with a message of its own about the input ("ndim of input cannot
    larger than 5") refuses that input deliberately; one whose message states no limit
    ("Shape size mismatch" from an empty reduction) is a failure inside."""

    def check(message: str) -> Outcome:
        return err("mxnet", "MXNetError", message)

    stated = check(
        "Check failed: in.shape().ndim() <= 5 (6 vs. 5) : ndim of input cannot larger than 5"
    )
    assert not internal(stated)
    assert not internal(check("Check failed: x (2 vs. 0) : This layer requires uniform type"))
    outs = [ok("numpy", np.array([1.0])), ok("torch", np.array([1.0])), stated]
    assert blamed(outs) == set()
    mismatch = check("Check failed: lhs.Size() == rhs.Size() (0 vs. 1) : Shape size mismatch")
    assert internal(mismatch)
    assert internal(check("Check failed: i >= 0 && i < ndim(): index = -1"))


def test_a_plurality_is_no_majority() -> None:
    """int8 against int32, int32 and int64: two of four agree, which blames nobody."""
    outs = [
        ok("numpy", np.array([0], np.int8)),
        ok("torch", np.array([0], np.int64)),
        ok("tensorflow", np.array([0], np.int32)),
        ok("jax", np.array([0], np.int32)),
    ]
    assert {(k, c) for k, _, c in blamed(outs)} == {("dtype", "split")}
    outs.append(ok("mindspore", np.array([0], np.int32)))  # three of five is a majority
    outs.append(ok("paddle", np.array([0], np.int16)))
    # ... of widths: int16 against int32 is paddle's promotion policy, and numpy's int8
    # defines the numpy API: neither is outvoted
    assert {(k, c) for k, _, c in blamed(outs)} == {("dtype", "split")}


def test_a_majority_outvotes_a_narrower_result_kind_only() -> None:
    """A vote cannot call a dtype policy wrong (float16 kept, integers made float), but a
    result of a narrower kind than the majority's loses values (bool sums)."""
    outs = [
        ok("numpy", np.array([1, 2])),
        ok("torch", np.array([1, 2])),
        ok("paddle", np.array([1, 2])),
        ok("mindspore", np.array([True, True])),
    ]
    assert ("dtype", "mindspore", "majority") in blamed(outs) or (
        "value",
        "mindspore",
        "majority",
    ) in blamed(outs)
    wider = [
        ok("numpy", np.array([1], np.int32)),
        ok("torch", np.array([1], np.int32)),
        ok("paddle", np.array([1], np.int32)),
        ok("mxnet", np.array([1.0], np.float64)),
    ]
    assert {(k, c) for k, _, c in blamed(wider)} == {("dtype", "split")}
    wider[0] = ok("numpy", np.array([1.0], np.float64))
    wider[3] = ok("mxnet", np.array([1], np.int32))  # numpy on the odd side: not outvoted
    assert {(k, c) for k, _, c in blamed(wider)} == {("dtype", "split")}


def test_complex_zero_signs_are_not_judged_away_from_special_values() -> None:
    """1/(-0-0.69j): numpy's formula gives real part -0.0, Smith's algorithm +0.0; C99
    Annex G leaves it open, so no library is blamed for the sign."""
    x = np.array([complex(-0.0, -0.6878)], np.complex64)
    with np.errstate(all="ignore"):
        a = np.reciprocal(x)
    b = np.array([complex(0.0, a[0].imag)], np.complex64)
    outs = [ok("numpy", a), ok("torch", b), ok("paddle", b), ok("tensorflow", b)]
    ref = ok("numpy", np.reciprocal(x.astype(np.complex128)))
    assert not blamed(outs, ref, op="reciprocal", inputs=[x])


def test_a_kernel_without_a_dtype_family_is_a_refusal() -> None:
    for o in (
        err("torch", "RuntimeError", "nansum on CPU does not support complex inputs"),
        err("torch", "NotImplementedError", "clamp is not supported for complex types"),
        err(
            "mindspore", "RuntimeError", "For 'ReduceMean', unsupported reduce operation for bool."
        ),
        err("mxnet", "MXNetError", "Check failed: out.type_flag_ == kFloat32 || x"),
    ):
        assert refused(o), o.error


def test_a_call_numpy_rejects_as_malformed_is_no_case() -> None:
    outs = [
        err("numpy", "AxisError", "axis 3 is out of bounds"),
        ok("jax", np.array([1.0])),
        err("torch", "IndexError", "Dimension out of range"),
    ]
    j = judge({o.library: o for o in outs})
    assert j.malformed and j.blames == ()


def test_a_domain_error_is_judged_by_the_majority_of_libraries() -> None:
    """reduce_min over an empty axis: numpy and most libraries raise (a domain error, not a
    malformed call); the one that returns a value instead is blamed. A library that raises
    where numpy returns with a domain error of its own ('not positive-definite': a numerical
    threshold of its own) refuses that input; one that fails inside is blamed."""
    outs = [
        err(
            "numpy",
            "ValueError",
            "zero-size array to reduction operation minimum which has no identity",
        ),
        err("torch", "IndexError", "Expected reduction dim"),
        err("jax", "ValueError", "zero-size array to reduction operation min"),
        ok("mindspore", np.array(-303324928, np.int32)),
    ]
    assert blamed(outs) == {("status", "mindspore", "majority")}
    outs = [
        ok("numpy", np.array([1.0])),
        ok("jax", np.array([1.0])),
        err("torch", "LinAlgError", "not positive-definite"),
    ]
    assert blamed(outs) == set()
    outs[2] = err("torch", "RuntimeError", "tuple index out of range")
    assert blamed(outs) == {("status", "torch", "majority")}


def test_integer_results_against_the_exact_reference() -> None:
    """clip of int32 through float32: the float64 reference, rounded to int32, is exact and
    agrees with numpy; where the exact result overflows int32 nobody is judged."""
    x = np.array([2147483646, 5], np.int32)
    outs = [ok("numpy", x), ok("paddle", np.array([2147483519, 5], np.int32))]
    assert blamed(outs, ok("numpy", x.astype(np.float64))) == {("value", "paddle", "reference")}
    wrapped = np.array([-4, 5], np.int32)
    saturated = np.array([-2147483648, 5], np.int32)
    exact = np.array([2.0**32 - 4, 5.0])  # beyond int32: every answer is an overflow
    assert blamed([ok("numpy", wrapped), ok("paddle", saturated)], ok("numpy", exact)) == set()


def test_integers_a_float_cannot_hold_excuse_that_float() -> None:
    """cos(2**31 - 1) computed in float32 is cos(2**31): not blamed; a float32 result that
    is wrong for an integer float32 holds exactly (2**40) is."""
    big = np.array([2147483647], np.int32)
    outs = [
        ok("numpy", np.cos(big.astype(np.float64))),
        ok("paddle", np.cos(big.astype(np.float32))),
    ]
    got = blamed(outs, ok("numpy", np.cos(big.astype(np.float64))), int_inputs=[big])
    assert {kind for kind, _, _ in got} <= {"dtype"}  # float32 against float64, nothing else
    exact = np.array([2**40], np.int64)
    outs = [
        ok("numpy", np.array([2.0**40])),
        ok("jax", np.array([2.0**40])),
        ok("paddle", np.array([1.0], np.float32)),
    ]
    assert ("value", "paddle", "majority") in blamed(outs, int_inputs=[exact])


def test_unfit_bindings_are_left_out_unless_they_die() -> None:
    outs = [
        ok("numpy", np.array([1.0])),
        ok("jax", np.array([1.0])),
        err("torch", "RuntimeError", "something unrelated"),
    ]
    assert blamed(outs, exclude={"torch"}) == set()
    hang = Outcome(library="paddle", api="paddle.gcd_", status="hang")
    assert blamed(
        [ok("numpy", np.array([1])), ok("jax", np.array([1])), hang], exclude={"paddle"}
    ) == {("hang", "paddle", "reference")}


def test_results_the_standard_leaves_open_are_not_judged() -> None:
    """floor_divide(-inf, 4.0) is unspecified by the standard: no library is blamed there."""
    x1, x2 = np.array([-np.inf], np.float32), np.array([4.0], np.float32)
    outs = [
        ok("numpy", np.array([np.nan], np.float32)),
        ok("torch", np.array([np.nan], np.float32)),
        ok("tensorflow", np.array([-np.inf], np.float32)),
    ]
    assert blamed(outs, op="floor_divide", inputs=[x1, x2]) == set()


def test_signed_zeros_of_reductions_are_not_judged() -> None:
    outs = [
        ok("numpy", np.array([-0.0])),
        ok("jax", np.array([-0.0])),
        ok("paddle", np.array([0.0])),
    ]
    assert blamed(outs) == {("signed-zero", "paddle", "majority")}
    assert blamed(outs, openings=[opening("signed-zero")]) == set()
    # not dropped: asked as the opening's question
    assert unsettled(outs, openings=[opening("signed-zero")]) == {("signed-zero", "paddle")}
    assert unsettled(outs, openings=[opening("nan", "value")]) == set()


def test_integer_accumulators_of_other_widths_are_a_dtype_difference_only() -> None:
    """prod of int32 max: numpy accumulates in int64, tensorflow in int32 (wraps): one dtype
    finding, no value finding."""
    big = np.array(2**31 - 1, np.int64) * 3
    outs = [
        ok("numpy", np.array(big)),
        ok("jax", np.array(big)),
        ok("tensorflow", np.array(big).astype(np.int32)),
    ]
    assert {kind for kind, _, _ in blamed(outs)} == {"dtype"}


def test_crashes_blame_the_library_but_memory_everywhere_is_too_large() -> None:
    crash = Outcome(library="mxnet", api="mxnet.f", status="crash", signal="SIGFPE")
    outs = [ok("numpy", np.array([1])), ok("torch", np.array([1])), crash]
    assert ("crash", "mxnet", "reference") in blamed(outs)
    mem = [Outcome(library=lib, api="f", status="resource") for lib in ("numpy", "torch")]
    assert blamed(mem) == set()


def test_an_input_too_large_for_two_libraries_is_no_finding() -> None:
    """logspace(num=2**31-1): one library hits the memory cap, another raises its own
    MemoryError, a third hangs allocating: the input is too large, nobody is blamed."""
    outs = [
        Outcome(library="jax", api="jax.f", status="resource"),
        err("paddle", "MemoryError", "(ResourceExhausted) Fail to alloc memory of 17179869184"),
        Outcome(library="tensorflow", api="tf.f", status="hang"),
        ok("numpy", np.zeros(3)),
    ]
    assert blamed(outs) == set()
    alone = [
        Outcome(library="jax", api="jax.f", status="resource"),
        ok("numpy", np.zeros(3)),
        ok("torch", np.zeros(3)),
    ]
    assert blamed(alone) == {("resource", "jax", "reference")}


def test_results_are_held_to_their_input_precision() -> None:
    """A float16 input computed in float32 by some libraries: a difference within float16's
    precision is no value finding, a larger one is."""
    a = np.array([0.999105], F32)
    b = np.array([0.999349], F32)  # 2.4e-4 relative: beyond float32's table, within float16's
    outs = [ok("numpy", a), ok("jax", b), ok("mindspore", b)]
    assert blamed(outs, input_dtype="float16") == set()
    assert blamed(outs, input_dtype="float32") == {("value", "numpy", "majority")}


def test_a_wrong_dtype_and_the_wrong_values_it_causes_are_one_blame() -> None:
    """mxnet.np.sqrt of int32 stays int32 (truncated): one value blame naming the dtype."""
    x = np.array([2.0, 3.0, 8.0])
    outs = [
        ok("numpy", np.sqrt(x)),
        ok("torch", np.sqrt(x).astype(F32)),
        ok("jax", np.sqrt(x)),
        ok("mxnet", np.sqrt(x).astype(np.int32)),
    ]
    j = judge({o.library: o for o in outs})
    mine = [b for b in j.blames if b.library == "mxnet"]
    assert [b.family for b in mine] == ["value"] and "dtype" in mine[0].detail


def test_structured_outputs_of_different_shapes_are_judged() -> None:
    """histogram returns (counts, edges) of different lengths and dtypes."""
    a = (np.array([0, 1], np.int64), np.array([0.0, 0.5, 1.0]))
    b = (np.array([0.0, 1.0], F32), np.array([0.0, 0.5, 1.0], F32))
    c = (np.array([1.0, 0.0], F32), np.array([0.0, 0.5, 1.0], F32))
    got = blamed([ok("numpy", a), ok("mindspore", b), ok("mxnet", b), ok("jax", c)])
    assert ("value", "jax", "majority") in got


def test_integer_results_do_not_vote_on_nan_but_are_wrong_where_nan_is_agreed() -> None:
    """erfinv of int32 [0, 2]: torch says NaN at 2 (right), paddle inf, mxnet keeps int32 0.
    mxnet has no NaN to vote with, so torch against paddle is a split, not torch's fault. The
    variance of nothing: numpy and torch agree on NaN; mindspore's int32 -2**31 is wrong."""
    outs = [
        ok("torch", np.array([0.0, np.nan], F32)),
        ok("paddle", np.array([0.0, np.inf], F32)),
        ok("mxnet", np.array([0, 0], np.int32)),
    ]
    got = blamed(outs)
    assert not any(lib == "torch" for _, lib, _ in got)
    assert not any(kind == "nan" and lib == "mxnet" for kind, lib, _ in got)
    outs = [
        ok("numpy", np.array(np.nan)),
        ok("torch", np.array(np.nan, F32)),
        ok("mindspore", np.array(-(2**31), np.int32)),
    ]
    assert ("nan", "mindspore", "majority") in blamed(outs)
    assert ("nan", "mindspore", "reference") in blamed(outs, ok("numpy", np.array(np.nan)))


def test_a_numpy_scalar_nan_is_floating_not_an_integer() -> None:
    """numpy.var of an empty array returns the scalar np.float64(nan): no integer result."""
    outs = [
        ok("numpy", np.float64("nan")),
        ok("mindspore", np.array(np.nan)),
        ok("mxnet", np.array(np.nan)),
    ]
    assert not blamed(outs)


def test_integer_results_beyond_their_dtype_are_overflow_not_wrong_values() -> None:
    """int32 correlate whose exact sum is below -2**31: numpy wraps in int32, tensorflow
    computes in float32; the reference says the int32 result cannot be right or wrong."""
    outs = [
        ok("numpy", np.array([2147483446], np.int32)),
        ok("mxnet", np.array([2147483446], np.int32)),
        ok("tensorflow", np.array([-2.147484e09], F32)),
        ok("mindspore", np.array([-2.147484e09], F32)),
    ]
    ref = ok("numpy", np.array([-2147483850.0]))
    assert not any(kind == "value" for kind, _, _ in blamed(outs, ref))


def test_a_complex_input_returned_real_is_one_departure() -> None:
    """keras correlate of complex64 returns float32 (the imaginary part dropped): one value
    blame naming the dtype, not a dtype finding and a value finding."""
    z = np.array([1.6 + 7.5j], np.complex64)
    outs = [
        ok("numpy", z),
        ok("jax", z),
        ok("mindspore", z),
        ok("tensorflow", np.array([-0.54], F32)),
    ]
    mine = [(k, c) for k, lib, c in blamed(outs, ok("numpy", z.astype(np.complex128)))]
    assert [k for k, _ in mine if k in ("dtype", "value")] == ["value"]


def test_a_scalar_result_that_overflows_everywhere_is_an_artefact() -> None:
    """std of float32 data holding -FLT_MAX: the true 1.1e38 fits float32, but numpy's
    scalar result is inf (the square overflows) and mxnet's NaN: every answer is an
    artefact, nobody is blamed, numpy scalars included."""
    outs = [ok("numpy", np.float32(np.inf)), ok("mxnet", np.array(np.nan, F32))]
    assert not blamed(outs, ok("numpy", np.float64(1.125378e38)))


def test_nan_or_nothing_for_an_empty_reduction_is_a_policy_not_a_made_up_value() -> None:
    """nanmin over nothing: numpy, jax and mxnet raise; keras answers NaN and fftfreq(0) an
    empty array: no value invented. paddle's -1.6e13 for amin of nothing is one."""
    domain = "zero-size array to reduction operation fmin which has no identity"
    raised = [err(lib, "ValueError", domain) for lib in ("numpy", "jax", "mxnet")]
    assert not blamed([*raised, ok("tensorflow", np.array([[np.nan]], F32))])
    assert not blamed([*raised, ok("torch", np.zeros(0, F32))])
    assert blamed([*raised, ok("paddle", np.array(-1.6e13, F32))]) == {
        ("status", "paddle", "majority")
    }


def test_an_overflow_on_the_way_to_a_representable_result_is_an_artefact() -> None:
    """norm of float32 data holding FLT_MAX: the true 3.40282e38 fits float32, numpy and
    torch square on the way and return inf, mxnet rescales and returns it. Which of them
    overflows is the question's condition, not a bug: nobody is blamed."""
    top = float(np.finfo(F32).max)
    outs = [
        ok("numpy", np.array([np.inf, 1.0], F32)),
        ok("torch", np.array([np.inf, 1.0], F32)),
        ok("mxnet", np.array([top, 1.0], F32)),
    ]
    assert not blamed(outs, ok("numpy", np.array([top, 1.0])))


def test_the_reference_decides_a_difference_in_result_kind() -> None:
    """matrix_norm of complex64: numpy returns float32 like the reference, paddle and
    mindspore complex64 (a majority of two): they are blamed, not numpy."""
    outs = [
        ok("numpy", np.array([2.73], F32)),
        ok("paddle", np.array([1.19 + 1.9j], np.complex64)),
        ok("mindspore", np.array([2.73 + 0j], np.complex64)),
    ]
    got = blamed(outs, ok("numpy", np.array([2.73])), input_dtype="complex64")
    assert ("dtype", "mindspore", "reference") in got
    assert not any(lib == "numpy" for _, lib, _ in got)


def test_a_wider_result_answers_for_its_own_dtype() -> None:
    """float_power of float32: numpy returns float64 2.09e93 (its documented dtype), mindspore
    float32 inf. Rounded to float32 the reference is inf, but numpy's float64 answer is the
    reference itself: numpy is not blamed for the value."""
    outs = [
        ok("numpy", np.array([2.085925e93, 1.0])),
        ok("mxnet", np.array([2.085925e93, 1.0])),
        ok("mindspore", np.array([np.inf, 1.0], F32)),
    ]
    got = blamed(outs, ok("numpy", np.array([2.085925e93, 1.0])), input_dtype="float32")
    assert not any(lib in ("numpy", "mxnet") and kind != "dtype" for kind, lib, _ in got)


def test_integer_results_of_a_floating_operation_are_one_value_departure() -> None:
    """paddle's deg2rad of bools returns bools: True for 0.01745 is a value blame (the dtype
    departure shows as the wrong value, one finding), while a case whose results are all
    numbers a bool holds (False for 0.0, torch's heaviside of bools) loses nothing and blames
    nobody: that dtype is the library's policy."""
    outs = [
        ok("torch", np.array([0.0, 0.01745], F32)),
        ok("tensorflow", np.array([0.0, 0.01745], F32)),
        ok("mindspore", np.array([0.0, 0.01745], F32)),
        ok("paddle", np.array([False, True])),
    ]
    assert blamed(outs) == {("value", "paddle", "majority")}
    exact = [*(ok(o.library, np.array([0.0, 1.0], F32)) for o in outs[:3]), outs[3]]
    assert blamed(exact) == set()
    zeros = [*(ok(o.library, np.array(0.0, F32)) for o in outs[:3]), ok("paddle", np.array(False))]
    assert blamed(zeros) == set()
    # a float result where the others keep integers is a promotion policy (mindspore.numpy's
    # fix of int32 as numpy 1 did): no vote calls it wrong, a split
    outs = [ok(lib, np.array(3, np.int32)) for lib in ("numpy", "torch", "paddle")]
    assert blamed([*outs, ok("mindspore", np.array(3.0, F32))]) == {
        ("dtype", "mindspore+numpy+paddle+torch", "split")
    }


def test_arithmetic_as_numpy_does_it_in_the_input_dtype_is_not_blamed() -> None:
    """sinc of float16 -65504 (or float32 -FLT_MAX): numpy (and tensorflow) compute pi * x in
    the input dtype, which overflows, and return NaN; torch agrees with the float64 reference.
    Answering as numpy does in that dtype is its arithmetic, not a bug; for float64 input
    numpy's answer is the reference itself, and the same split blames tensorflow."""
    ref = ok("numpy", np.array([0.0]))
    for dtype, excused in ((np.float16, True), (F32, True), (np.float64, False)):
        nan, zero = np.array([np.nan], dtype), np.array([0.0], dtype)
        outs = [ok("numpy", nan), ok("tensorflow", nan), ok("torch", zero)]
        got = blamed(outs, ref, input_dtype=np.dtype(dtype).name)
        assert (got == set()) is excused
        assert (("nan", "tensorflow", "reference") in got) is not excused


def test_nan_propagation_from_a_nan_input_is_not_outvoted() -> None:
    """torch's margin_ranking_loss is NaN for an input holding NaN, paddle's and mindspore's
    inf: without a reference, propagating the NaN is not a bug by vote (a split). A library
    that drops the NaN the others propagate is still outvoted, a reference still decides,
    and without NaN in the input the vote stands."""
    nan, inf = np.array(np.nan), np.array(np.inf)
    outs = [ok("torch", nan), ok("paddle", inf), ok("mindspore", inf)]
    assert blamed(outs, nan_input=True) == {("nan", "mindspore+paddle+torch", "split")}
    assert blamed(outs) == {("nan", "torch", "majority")}
    assert blamed(outs, ok("numpy", np.array(np.inf)), nan_input=True) == {
        ("nan", "torch", "reference")
    }
    drops = [ok("torch", np.array(1.0)), ok("paddle", nan), ok("mindspore", nan)]
    assert blamed(drops, nan_input=True) == {("nan", "torch", "majority")}


def test_a_check_failure_among_refusals_is_a_refusal() -> None:
    """conv2d with a kernel larger than the input: torch and mindspore refuse, mxnet's
    CHECK macro says "Check failed: ... kernel size exceeds input". Where most libraries
    refuse (and numpy has no member), mxnet's words are a refusal too; alone against
    libraries that answer, the same words still state a limit of the input (two blind audits
    judged such a CHECK a deliberate refusal), while a CHECK stating none is a failure."""
    returned = [ok("paddle", np.zeros((1, 6, 0, 0))), ok("tensorflow", np.zeros((1, 4, 2, 1)))]
    mxnet = err(
        "mxnet",
        "MXNetError",
        "Check failed: dilated_ksize_y <= 2 (3 vs. 2) : kernel size exceeds input",
    )
    refusing = [
        err("torch", "RuntimeError", "Kernel size can't be greater than actual input size"),
        err("mindspore", "ValueError", "input shape's h and w after padding must be greater"),
    ]
    assert not any(lib == "mxnet" for _, lib, _ in blamed([*returned, *refusing, mxnet]))
    assert not any(lib == "mxnet" for _, lib, _ in blamed([*returned, mxnet]))
    failing = err("mxnet", "MXNetError", "Check failed: dilated_ksize_y <= 2 (3 vs. 2)")
    assert ("status", "mxnet", "majority") in blamed([*returned, failing])


def test_an_empty_result_of_another_kind_loses_nothing() -> None:
    """cov of an empty complex64 matrix: numpy returns an empty float64 array, torch an
    empty complex64 one. An empty result has no value its kind could lose: the reference's
    kind blames nobody (the dtypes are a split), while a non-empty real result of complex
    input still is."""
    empty = [ok("numpy", np.zeros((0, 0))), ok("torch", np.zeros((0, 0), np.complex64))]
    ref = ok("numpy", np.zeros((0, 0)))
    assert {c for _, _, c in blamed(empty, ref, input_dtype="complex64")} <= {"split"}
    full = [
        ok("numpy", np.array([1 + 1j], np.complex64)),
        ok("torch", np.array([1 + 1j], np.complex64)),
        ok("mindspore", np.array([1.0], F32)),
    ]
    got = blamed(full, ok("numpy", np.array([1 + 1j])), input_dtype="complex64")
    assert any(lib == "mindspore" for _, lib, _ in got)


def test_results_of_several_arrays_of_another_kind() -> None:
    """histogram's (counts, edges): numpy's int64 counts against float32 ones, one of the
    pairs empty or not; judging the kinds must take tuples (a campaign met this)."""
    edges = np.array([0.0, 0.5, 1.0], F32)
    outs = [
        ok("numpy", (np.array([1, 0]), edges)),  # type: ignore[arg-type]
        ok("mindspore", (np.array([1.0, 0.0], F32), edges)),  # type: ignore[arg-type]
    ]
    ref = ok("numpy", (np.array([1, 0]), edges.astype(np.float64)))  # type: ignore[arg-type]
    assert ("dtype", "mindspore", "reference") in blamed(outs, ref, input_dtype="float32")
    none = np.zeros(0, F32)
    outs = [
        ok("numpy", (np.zeros(0, np.int64), none)),  # type: ignore[arg-type]
        ok("mindspore", (none, none)),  # type: ignore[arg-type]
    ]
    ref = ok("numpy", (np.zeros(0, np.int64), np.zeros(0)))  # type: ignore[arg-type]
    got = blamed(outs, ref, input_dtype="float32")
    assert {c for _, _, c in got} <= {"split"}


def test_no_answer_is_compared_where_numpy_finds_none() -> None:
    """max over an empty axis: numpy, torch and paddle raise; tensorflow returns -inf (the
    identity), mindspore and mxnet uninitialised memory. With no answer to compare with,
    their values are not judged against each other (no inf-mask blame of tensorflow)."""
    no = "zero-size array to reduction operation maximum which has no identity"
    outs = [
        err("numpy", "ValueError", no),
        err("torch", "IndexError", "amax(): Expected reduction dim -1 to have non-zero size."),
        err("paddle", "ValueError", "Cannot perform reduction along an axis that has size 0"),
        ok("tensorflow", np.array([-np.inf, -np.inf], F32)),
        ok("mindspore", np.array([1.8e-28, 3.0e-41], F32)),
        ok("mxnet", np.array([-3.0e-05, 4.5e-41], F32)),
    ]
    assert not any(lib == "tensorflow" for _, lib, _ in blamed(outs))
    # a majority of refusals still blames the made-up numbers
    assert any(lib == "mxnet" for _, lib, _ in blamed([*outs[:3], outs[5]]))


def test_a_nan_parameter_decides_no_nan_or_inf_mask() -> None:
    """clip(x, min=NaN, max=-0.0): numpy and torch return NaN everywhere, tensorflow and mxnet
    clip to max only (-inf stays -inf): where the NaN bound is read decides both masks."""
    x = np.array([-np.inf, 1.5, np.nan], F32)
    nan_all = np.full(3, np.nan, F32)
    max_only = np.array([-np.inf, -0.0, np.nan], F32)
    outs = [
        ok("numpy", nan_all),
        ok("torch", nan_all),
        ok("mindspore", nan_all),
        ok("tensorflow", max_only),
        ok("mxnet", max_only),
    ]
    nan_parameter = terms(inputs=[x], nan_parameter=True, openings=[opening("nan", "inf")])
    assert blamed(outs, **vars(nan_parameter)) == set()
    assert unsettled(outs, **vars(nan_parameter)) == {("nan", "tensorflow"), ("nan", "mxnet")}
    assert any(lib == "tensorflow" for _, lib, _ in blamed(outs, inputs=[x]))


def test_a_float64_result_beside_float32_ones_is_compared_at_float32() -> None:
    """numpy.histogram's float64 edges reach 1.6e308; mxnet's float32 edges overflow to inf.
    The float64 reference, rounded to float32 to judge mxnet, is inf there too: numpy's
    finite edge is no inf mask it departs from (mxnet's float32 is the dtype finding)."""
    edges = np.linspace(-1.0, np.finfo(np.float64).max, 11)
    counts = np.array([7, 0, 0, 0, 0, 0, 0, 0, 0, 1])
    with np.errstate(over="ignore"):
        narrow = (counts.astype(np.float32), edges.astype(np.float32))
    outs = {"numpy": ok("numpy", (counts, edges)), "mxnet": ok("mxnet", narrow)}
    outs["mindspore"] = ok("mindspore", narrow)
    got = judge(outs, ok("numpy", (counts, edges)))
    assert "numpy" not in {b.library for b in got.blames}
    assert {b.kind for b in got.blames} == {"dtype"}
    # at one precision the masks are judged as before
    wrong = (counts, np.where(edges > 1e308, np.inf, edges))
    same = {"numpy": outs["numpy"], "mindspore": ok("mindspore", (counts, edges))}
    got = judge({**same, "mxnet": ok("mxnet", wrong)}, ok("numpy", (counts, edges)))
    assert ("inf", "mxnet") in {(b.kind, b.library) for b in got.blames}


def test_an_integer_result_a_numpy_scalar_holds_exactly_is_a_dtype_policy() -> None:
    """paddle.nanmedian of a 0-d int32 7 returns int32 7; numpy returns the scalar 7.0 (a
    numpy scalar, not an array): nothing is lost, so no wrong value is blamed."""
    outs = {
        "numpy": ok("numpy", np.float64(7.0)),
        "mxnet": ok("mxnet", np.array(7.0)),
        "paddle": ok("paddle", np.array(7, np.int32)),
    }
    assert "value" not in {b.kind for b in judge(outs).blames}
    outs["paddle"] = ok("paddle", np.array(6, np.int32))  # a truncated 6.5 would be one
    outs["numpy"], outs["mxnet"] = ok("numpy", np.float64(6.5)), ok("mxnet", np.array(6.5))
    assert ("value", "paddle") in {(b.kind, b.library) for b in judge(outs).blames}
    # bfloat16 results (as whole arrays, not only as summaries) are held the same way
    for held, blamed in ((0.0, set()), (0.5, {("value", "jax")})):
        halves = {
            lib: ok(lib, BFloat16(np.array([held], np.float32))) for lib in ("numpy", "torch")
        }
        halves["jax"] = ok("jax", np.array([int(held)], np.int32))
        assert {(b.kind, b.library) for b in judge(halves).blames} == blamed, held


# the other part of a complex infinity, asked where every result is one (a scoped opening)
OTHER_PART = opening(
    "nan",
    "inf",
    "signed-zero",
    "value",
    question="the other part",
    name="complex-infinity-other-part",
    link="https://example.org/annex-g",
    scope="complex-infinities",
)


def test_the_other_part_of_a_complex_infinity_is_asked_not_decided() -> None:
    """inf+nanj against inf+4.5j: C99 Annex G regards both as the same infinity; where an
    opening of that scope applies the difference is a question, and a wrong finite value
    beside it is still decided."""
    c64 = np.complex64
    scoped = OTHER_PART
    same = np.array([complex(np.inf, np.nan), 1 + 1j], c64)
    other = np.array([complex(np.inf, 4.5), 1 + 1j], c64)
    outs = [ok("numpy", same), ok("torch", same), ok("paddle", other)]
    assert blamed(outs) == {("nan", "paddle", "majority")}
    assert blamed(outs, openings=[scoped]) == set()
    assert unsettled(outs, openings=[scoped]) == {("nan", "paddle")}
    # another infinite part (-inf against inf) is no longer the same infinity: decided
    flipped = [ok("numpy", same), ok("torch", same), ok("paddle", -other)]
    assert ("paddle", "majority") in {(lib, c) for _, lib, c in blamed(flipped, openings=[scoped])}
    # a wrong finite value beside it stays decided
    wrong = np.array([complex(np.inf, 4.5), 2 + 1j], c64)
    outs = [ok("numpy", same), ok("torch", same), ok("paddle", wrong)]
    assert ("value", "paddle", "majority") in blamed(outs, openings=[scoped])


def test_a_reference_that_ignores_the_standards_rule_has_no_say_where_the_rule_claims() -> None:
    """expm1(+inf + 0j) is +inf + 0j by the standard (C99 Annex G); a reference (or a
    majority) answering otherwise there does not blame the library that follows the rule,
    and the rule blames the one that does not."""
    x = np.array([complex(np.inf, 0.0), 0.5 + 0.5j], np.complex64)
    rule = np.array([complex(np.inf, 0.0), np.expm1(0.5 + 0.5j)], np.complex64)
    off = np.array([complex(np.nan, np.nan), np.expm1(0.5 + 0.5j)], np.complex64)
    ref = ok("numpy", off.astype(np.complex128))
    outs = [ok("numpy", off), ok("torch", rule), ok("jax", rule)]
    got = blamed(outs, ref, op="expm1", inputs=[x], input_dtype="complex64")
    assert {lib for _, lib, _ in got} == {"numpy"}


def test_positions_the_standard_claims_leave_bfloat16_and_float32_results_alike() -> None:
    """ceil([inf, -1.15625, tiny]) in bfloat16: three libraries return bfloat16, one float32,
    all [inf, -1, 1]: the standard judges every position, and nothing differs."""
    x = np.array([np.inf, -1.15625, 1.1754944e-38], F32)
    right = np.array([np.inf, -1.0, 1.0], F32)
    outs = [
        ok("torch", BFloat16(right.copy())),
        ok("paddle", BFloat16(right.copy())),
        ok("tensorflow", BFloat16(right.copy())),
        ok("mindspore", right.copy()),
    ]
    assert blamed(outs, op="ceil", inputs=[x], input_dtype="bfloat16") <= {
        ("dtype", "mindspore", "majority"),
        ("dtype", "mindspore+paddle+tensorflow+torch", "split"),
    }


def test_a_reference_that_fixes_the_other_part_of_a_complex_infinity_decides() -> None:
    """log2(-inf - 0.69j) is inf - 4.53j (clog's conjugate symmetry, numpy's float64 answer):
    inf + nanj is wrong there, not a question."""
    c64 = np.complex64
    x = np.array([complex(-np.inf, -0.69)], c64)
    right = np.array([complex(np.inf, -4.53236)], c64)
    wrong = np.array([complex(np.inf, np.nan)], c64)
    ref = ok("numpy", right.astype(np.complex128))
    scoped = OTHER_PART
    outs = [ok("numpy", right), ok("torch", right), ok("paddle", wrong)]
    got = blamed(outs, ref, inputs=[x], input_dtype="complex64", openings=[scoped])
    assert ("nan", "paddle", "reference") in got
    assert unsettled(outs, ref, inputs=[x], input_dtype="complex64", openings=[scoped]) == set()


def test_an_opening_for_floating_results_leaves_bool_results_judged() -> None:
    """The digits of a sum at the dtype's limit are open; any() of those values is not a sum:
    a bool answer that differs is decided."""
    cond = opening(
        "value",
        question="the digits of a sum at the dtype's limit",
        name="condition-at-dtype-limit",
        link="https://example.org/conditioning",
        floating_results=True,
    )
    outs = [ok("numpy", np.array([True])), ok("torch", np.array([True]))]
    outs.append(ok("mindspore", np.array([False])))
    assert blamed(outs, openings=[cond]) == {("value", "mindspore", "majority")}
    sums = [ok("numpy", np.array([1.0], F32)), ok("torch", np.array([1.0], F32))]
    sums.append(ok("mindspore", np.array([2.0], F32)))
    assert blamed(sums, openings=[cond]) == set()
    assert unsettled(sums, openings=[cond]) == {("value", "mindspore")}
