"""The verdict: which one library departs from what the operation should return.

:func:`judge` turns one case's outcomes into :class:`Blame` records, at most one per library
and kind family, each naming one library. The rules, in order:

1. **Support.** A library that refuses an input it has no kernel for (a dtype it does not
   register: :data:`REFUSALS`) or cannot represent (status ``unsupported``) goes into the
   support matrix and out of every comparison. Refusing is not a bug; returning garbage or
   crashing instead is.
2. **Dead processes.** A crash, hang or memory-cap kill blames that library; when two or
   more libraries ran out of memory (the cap, or their own allocation error), the input is
   simply too large and only crashes are blamed.
3. **Malformed calls.** When numpy (the group's reference for what a valid call is) raises a
   plain argument error (:data:`MALFORMED_ERRORS`: a bad axis, shape or type), the case is no
   case: nothing else is judged. The same when every library raised.
4. **Status.** A library that raises where numpy returned (without numpy: where the others
   returned) is blamed only when the error is a failure inside it (:func:`internal`: an
   ``AttributeError`` in its Python code, a C++ ``Check failed``, an internal dtype
   mismatch). An error with a message of its own ("must be non-negative", "expects
   dims >= 0") is a deliberate check: the library refuses that input kind, which goes into the
   support matrix like a dtype it has no kernel for. Where numpy raised a domain error and
   most libraries did too, the libraries that returned are blamed.
5. **Outputs**, among the libraries that returned, one kind at a time (shape, dtype, then
   NaN mask, inf mask, signed zero and values):

   a. *by the standard*: for elementwise operations, positions where the array API
      standard's special cases fix the result (:mod:`xamt.oracle.special`); a library
      departing there is blamed with confidence ``reference``;
   b. *by a high-precision reference*: numpy on the float64 upcast input, rounded to the
      libraries' dtype (so that a true result beyond float32's range is an overflow there).
      The libraries outside the classes that agree with it are blamed (``reference``). When
      no library agrees with it, every answer is an artefact (an intermediate overflow, say)
      and nothing is blamed;
   c. *by majority*: a class of agreeing libraries holding more than half of those that
      returned; the others are blamed (``majority``);
   d. otherwise (an even split, or a plurality such as 2 against 1 and 1) the libraries
      split: one ``split`` record naming every side.

Note:
    One library can be blamed once per kind family in one case (its NaN and value departures
    are one wrong result), and never for another library's departure: a case where three
    libraries misbehave for three reasons gives three blames.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from xamt.catalog.ops import Trait
from xamt.findings import FAMILY, Confidence, Family, Kind
from xamt.oracle import special
from xamt.oracle import summary as summaries
from xamt.oracle.compare import IGNORED_STATUSES, Partition, _error_text, partitions
from xamt.oracle.signature import headline
from xamt.types import Outcome
from xamt.workers.protocol import BFloat16, Summary

# Errors that mean "this library has no kernel for this input": a support gap, never a bug.
# (library or "*", pattern searched in "ExceptionType: message" of the raw error).
REFUSALS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (lib, re.compile(p, re.IGNORECASE | re.DOTALL))
    for lib, p in (
        ("numpy", r"ufunc '\w+' not supported for the input types"),
        ("numpy", r"did not contain a loop with signature matching types"),
        ("numpy", r"not supported for (the )?(input )?(type|dtype)"),
        (
            "torch",
            r"not implemented for '(Bool|Byte|Char|Short|Int|Long|Half|BFloat16|"
            r"Float|Double|ComplexFloat|ComplexDouble|UInt16|UInt32|UInt64)'",
        ),
        (
            "torch",
            r"Unsupported dtype|is not supported for (dtype|type)|does not support \w+ dtype",
        ),
        ("tensorflow", r"is not in the list of allowed values"),
        ("tensorflow", r"requires tf\.\w+ or tf\.\w+ inputs"),
        ("tensorflow", r"Could not find device for node|No OpKernel was registered"),
        ("tensorflow", r"NotFoundError.*(kernel|Kernel)"),
        ("jax", r"does not accept dtype"),
        ("jax", r"(requires|must be|only accepts?) (a )?(floating|inexact|integer|boolean)"),
        ("jax", r"not (implemented|supported) for (dtype|type)"),
        (
            "paddle",
            r"kernel `?\w+`? is not registered|not registered|"
            r"The kernel .* is not found|Selected wrong DataType",
        ),
        ("paddle", r"(data ?type|dtype) .*(is not supported|not support|must be one of)"),
        (
            "mindspore",
            r"Kernel select failed|Unsupported data type|"
            r"(data ?type|dtype) .*(not supported|is not in|should be in|must be in)|"
            r"dtype of \w+ should be one of \[|do not support (complex|float|u?int|bool)\d*/",
        ),
        (
            "mxnet",
            r"(is not supported|unsupported) (for )?(data ?type|dtype|type)|"
            r"does not support (data ?type|dtype|type)|only supports? (float|integer)",
        ),
        (
            "mindspore",
            r"must be a type of \{|should be one of \[mindspore\.|only \['np\.|"
            r"does not support this kernel data ?type|must not be bool",
        ),
        ("mxnet", r"Unknown type enum|only supports? (\d+-bit )?(and \d+-bit )?floating"),
        # an operator whose kernel exists for one dtype only (mxnet.nd.LRN: float32) meets
        # another in TBlob's own type check: the dtype is not supported, in mshadow's words
        # (a linear-algebra operator, tensorinv of int32: "Binary function only support
        # input/output with the same type", its output being float)
        (
            "mxnet",
            r"TBlob\.get_with_shape: data type do not match specified type|"
            r"only support input/output with the same type",
        ),
        # a legacy operator that has no zero-dim input under numpy shape semantics
        ("mxnet", r"scalar tensor is not supported by this operator"),
        ("torch", r"Expected a (floating point|floating|complex|integral)[\w ]* tensor"),
        ("paddle", r"The kernel with key \(CPU, \w+, \w+\) of kernel `?\w+`? is not"),
        ("torch", r"must be either float or double dtype|expected input to have floating point"),
        # torch's and mindspore's argument parsers refusing an argument's type (a tuple axis)
        ("torch", r"received an invalid combination of arguments"),
        ("mindspore", r"should be floating point dtype|Failed calling \w+ with"),
        ("mxnet", r"does not support boolean type|operation does not support (float|u?int)\d+"),
        ("jax", r"Boolean arguments to [\w.]+ are not implemented"),
        (
            "torch",
            r"Input dtype must be either a floating point or complex dtype|"
            r"not intended to support complex numbers|can't be cast to the desired output type",
        ),
        ("mxnet", r"Do not support `?\w+`? as input|\bis unsupported\b"),
        ("paddle", r"dtype should be one of \['paddle\."),
        ("mindspore", r"must be Tensor or Number \(excluding complex\)"),
        # a parameter value the operation does not support (yet): "n < 0 is not supported now"
        ("mindspore", r"is not supported now"),
        ("jax", r"Integers cannot be raised to negative powers"),
        ("*", r"\b(dtype|data ?type)s? .{0,60}\b(not supported|unsupported|is not allowed)"),
        # a kernel without a loop for a dtype family: "nansum on CPU does not support complex
        # inputs", "clamp is not supported for complex types", "unsupported reduce operation
        # for bool", mxnet's "Check failed: out.type_flag_ == kFloat32 || ..."
        (
            "*",
            r"(does not|do not|doesn't) support (complex|bool|boolean|integer|integral|"
            r"floating|u?int\d*|float\d*)|not supported for (complex|bool|integer|integral)|"
            r"unsupported .{0,40}\bfor (complex|bool|integer|int\d*|float\d*)\b",
        ),
        ("mxnet", r"Check failed: \(?\w+(\.|->)type_flag_ == k(Float|Int|Uint|Bool)"),
    )
)

# Errors no deliberate argument check raises: the library's own code failed on the input (a
# Python error inside its implementation, a C++ assertion, an internal dtype mismatch). A
# library raising one of these where the others returned is a suspected bug; one raising any
# other error, with a message of its own ("must be non-negative", "only supports 1-D or 2-D",
# "expects dims >= 0"), refuses that input kind deliberately and goes into the support matrix.
INTERNAL_ERROR_TYPES = frozenset(
    {
        "AttributeError",
        "KeyError",
        "NameError",
        "UnboundLocalError",
        "RecursionError",
        "SystemError",
        "ZeroDivisionError",
        "InternalError",
        "UnicodeDecodeError",
    }
)
INTERNAL_ERRORS = re.compile(
    r"Check failed|TensorArray dtype|trying to write dtype|[Ii]nternal error|\bINTERNAL\b|"
    r"(tuple|list|string) index out of range|'NoneType'|not subscriptable|is not iterable|"
    r"unsupported operand type|unhashable type|values to unpack|truth value of an array|"
    r"invalid literal for|should not happen|Assertion( `[^`]*`)? failed|"
    r"object has no attribute|Segmentation fault|unexpected (error|exception|internal)",
)


# A failing C++ CHECK whose message states, in the library's own words, a limit the input
# breaks is a deliberate refusal, not a failure inside: mxnet's "Check failed:
# in.shape().ndim() <= 5 (6 vs. 5) : ndim of input cannot larger than 5", its pooling's
# "kernel size exceeds input". One whose message states no limit ("Shape size mismatch" from
# an empty reduction) stays internal.
STATED_CHECK = re.compile(
    r"Check failed: [^\n]*? : [^\n]*\b(cannot|can not|can't|must|should|only|exceeds?|"
    r"requires?|larger than|greater than|less than|at most|at least|not supported|"
    r"unsupported)\b"
)


def internal(outcome: Outcome) -> bool:
    """Whether an error is a failure inside the library (:data:`INTERNAL_ERRORS`) rather than
    a deliberate check of its argument: a bare assertion or an empty message counts as one."""
    if outcome.status != "error" or outcome.error is None:
        return False
    etype, message = outcome.error.type, outcome.error.message.strip()
    if etype == "ZeroDivisionError" and not re.search(r"division|modulo", message):
        return False  # a check of its own in that type ("alpha cannot be 0 for celu")
    if etype == "AssertionError" and not message and _checks_dtype(outcome.error.traceback):
        return False  # `assert x.dtype in [float32, float64]`: the library's dtype check
    if etype in INTERNAL_ERROR_TYPES or not message:
        return True
    if STATED_CHECK.search(message[:4000]):
        return False
    return bool(INTERNAL_ERRORS.search(f"{etype}: {message}"[:4000]))


_DTYPE_ASSERT = re.compile(r"^assert\b.*\b(dtype|isinstance)\b")


def _checks_dtype(traceback: str | None) -> bool:
    """Whether a bare AssertionError came from an ``assert`` statement that tests a dtype
    or a type (the source line of the traceback's last frame)."""
    lines = [
        line.strip()
        for line in (traceback or "").splitlines()
        if line.strip(" ^~")  # (not the carets under the failing expression)
    ]
    return bool(lines) and _DTYPE_ASSERT.match(lines[-1]) is not None


# How close to the dtype's maximum a true result is where intermediates may overflow (four
# bits of headroom): there, inf against a finite answer is the question's condition.
NEAR_OVERFLOW = 16.0

# Input dtypes numpy computes in below the float64 (complex128) reference's precision: its own
# answer there shows what that dtype's arithmetic gives (see _by_partition).
NUMPY_NATIVE = frozenset({"float16", "float32", "complex64"})
# The order partitions report kinds in (compare.partitions), for blames that replace one.
KIND_ORDER = ("shape", "dtype", "nan", "inf", "signed-zero", "value")

# numpy exceptions that say the call itself is malformed (argument count, type, axis, shapes).
MALFORMED_ERRORS = frozenset({"TypeError", "ValueError", "AxisError", "IndexError"})


@dataclass(frozen=True, kw_only=True)
class Blame:
    """One library's departure in one case (or, for a split, every side)."""

    kind: Kind
    library: str  # the one library blamed; for a split, every side's libraries joined by "+"
    confidence: Confidence
    detail: str = ""
    error: str = ""  # "ExceptionType: first line" or a signal name, for status and crashes
    # what no document decides here (an operation trait's question): the blame is then
    # classified "unspecified", never filed
    question: str = ""
    # what decides it, where the verdict knows more than its kind and confidence say: the
    # standard's special case ("standard: ..."), or "unspecified: <question> (<trait>: <link>)"
    basis: str = ""

    @property
    def family(self) -> Family:
        return FAMILY[self.kind]

    @property
    def split(self) -> bool:
        return self.confidence == "split"


@dataclass(frozen=True, kw_only=True)
class Judgement:
    """The verdict on one case."""

    blames: tuple[Blame, ...]
    support: dict[str, str]  # library -> "ok" | "refused", for those that answered
    malformed: bool = False
    # deliberate refusals where numpy (or the others) returned, worded as status blames: no
    # bug, but a documented policy when a known difference names it (replay.judge_case)
    refusals: tuple[Blame, ...] = ()


def refused(outcome: Outcome) -> bool:
    """Whether an outcome is a clean refusal of an input (a support gap)."""
    if outcome.status == "unsupported":
        return True
    if outcome.status != "error" or outcome.error is None:
        return False
    text = f"{outcome.error.type}: {outcome.error.message}"[:4000]
    return any(lib in ("*", outcome.library) and pattern.search(text) for lib, pattern in REFUSALS)


@dataclass(frozen=True, kw_only=True)
class Terms:
    """What one case may be judged on, derived once per case (:func:`xamt.replay.terms_of`).

    Attributes:
        op: the elementwise operation whose standard special cases apply ("" for none).
        inputs: the case's array inputs in role order, for the special cases.
        input_dtype: the case's floating input dtype: results are not held to more precision.
        exclude: libraries whose bound API does not accept this input (an in-place variant
            given a dtype it cannot hold): their outcome is no evidence either way.
        invalid: why the input is no case ("" when it is one): an axis out of range, a call
            outside the operation's domain. Only dead processes are blamed.
        int_inputs: the integer array inputs. A floating result whose dtype cannot hold them
            exactly (2**31 - 1 has no float32 value) is not blamed for its values.
        openings: the operation's traits whose condition holds here: kinds of difference
            nothing decides, each with its question (``xamt/catalog/data/ops.toml``).
        nan_parameter: a scalar parameter is NaN: a library that keeps integer input integer
            cannot show the NaN it brings (its promotion policy).
        open_positions: result positions no answer is held to (a limit, ``silu(-inf)``).
        reference_signs: whether the reference's zero signs count (a formula's do not).
        nan_input: an array input holds NaN: libraries returning NaN where the majority
            returns none propagate it, as IEEE arithmetic does, and are not outvoted.
        normwise: values are also compared relative to each output's largest magnitude.
        fixed_signs: whether zero signs are judged by vote at all (False for complex results
            is decided by the results themselves: C99 Annex G fixes them at special values only).
    """

    op: str = ""
    inputs: tuple[np.ndarray, ...] = ()
    input_dtype: str | None = None
    exclude: frozenset[str] = frozenset()
    invalid: str = ""
    int_inputs: tuple[np.ndarray, ...] = ()
    openings: tuple[Trait, ...] = ()
    nan_parameter: bool = False
    open_positions: np.ndarray | None = None
    reference_signs: bool = True
    nan_input: bool = False
    normwise: bool = False


PLAIN = Terms()


def judge(
    outcomes: Mapping[str, Outcome],
    reference: Outcome | None = None,
    terms: Terms = PLAIN,
) -> Judgement:
    """Blame the libraries that depart from what the operation should return, in the stages
    the module docstring lists: support, dead processes, malformed calls, status, outputs.

    ``reference``: numpy on the float64 (complex128) upcast input (or the group's formula),
    if it was run; ``terms``: what this case may be judged on.
    """
    support, live = _support(outcomes, terms.exclude)
    dead = [lib for lib, o in live.items() if o.status in ("crash", "hang", "resource")]
    heavy = [lib for lib, o in live.items() if o.status == "hang" or _exhausted(o)]
    if len(heavy) >= 2 or "numpy" in heavy:
        # an input too heavy for everyone (a huge requested size): no evidence of a bug,
        # except a library that died outright on it
        crashes = [_dead(lib, live[lib]) for lib in sorted(dead) if live[lib].status == "crash"]
        return Judgement(blames=tuple(crashes), support=support, malformed=True)
    blames = [_dead(lib, live[lib]) for lib in sorted(dead)]
    returned = [lib for lib, o in live.items() if o.status == "ok"]
    raised = [lib for lib, o in live.items() if o.status == "error"]
    numpy = live.get("numpy")
    numpy_raised = numpy is not None and numpy.status == "error"
    if (
        terms.invalid
        or (numpy_raised and numpy is not None and _malformed(numpy))
        or (bool(raised) and not returned)
    ):
        return Judgement(blames=tuple(blames), support=support, malformed=True)
    status, refusals = _status_stage(live, returned, raised, support, numpy_raised=numpy_raised)
    blames += status
    # where numpy raised a domain error there is no answer to compare with: what the others
    # returned for "no value" (tensorflow's -inf maximum of nothing, uninitialised memory)
    # is judged above by status, never against each other
    if len(returned) >= 2 and not (numpy_raised and raised):
        blames += _output_stage(live, returned, reference, terms)
    return Judgement(
        blames=tuple(blames), support=support, malformed=False, refusals=tuple(refusals)
    )


def _support(
    outcomes: Mapping[str, Outcome], exclude: Collection[str]
) -> tuple[dict[str, str], dict[str, Outcome]]:
    """The support matrix of one case (library -> "ok" | "refused") and the outcomes that
    take part in the verdict: refusals, excluded bindings and non-answers stay out."""
    support: dict[str, str] = {}
    live: dict[str, Outcome] = {}
    for lib, o in outcomes.items():
        if lib in exclude and o.status not in ("crash", "hang"):
            continue  # (a process that dies or hangs is a bug whatever it was given)
        if o.status == "resource" and o.error is not None:
            # a library that raised MemoryError answered: it refused an absurd size cleanly
            o = dataclasses.replace(o, status="error")
        if refused(o):
            support[lib] = "refused"
        elif o.status not in IGNORED_STATUSES:
            live[lib] = o
            if o.status == "ok":
                support[lib] = "ok"
    return support, live


def _status_stage(
    live: Mapping[str, Outcome],
    returned: list[str],
    raised: list[str],
    support: dict[str, str],
    *,
    numpy_raised: bool,
) -> tuple[list[Blame], list[Blame]]:
    """Status blames where some libraries raised and others returned, and the deliberate
    refusals among them (no bug; a documented policy where a known difference names one)."""
    if not (returned and raised):
        return [], []
    if numpy_raised:
        if len(returned) >= len(raised):
            return [], []
        # numpy raised a domain error (an empty reduction, a singular matrix) and so did
        # most libraries: returning a made-up number instead is the departure (NaN, inf,
        # an empty array or a dtype limit as the answer to "no value" is a policy)
        made_up = [lib for lib in returned if _made_up(live[lib].value)]
        return (_status(made_up, raised, live, returned_odd=True) if made_up else []), []
    # an explicit check refusing the input is the library's stated contract for it
    for lib in raised:
        if not internal(live[lib]):
            support.setdefault(lib, "refused")
    failed = [lib for lib in raised if internal(live[lib])]
    if "numpy" not in live and len(raised) > len(returned) and len(failed) < len(raised):
        # most libraries refuse the input (a kernel larger than the input), some with a check
        # of their own words: mxnet's CHECK macro ("Check failed: kernel size exceeds input")
        # refuses too, it does not fail
        failed = []
    refusals = [_raised(lib, returned, live) for lib in raised if lib not in failed]
    return (_status(returned, failed, live) if failed else []), refusals


@dataclass(frozen=True, kw_only=True)
class _Values:
    """The results of one case as the output stage judges them."""

    judged: dict[str, Any]  # library -> its result as returned (for the standard's cases)
    values: list[Any]  # the results, summaries where one is, artefacts and open positions out
    ref: Any
    has_ref: bool
    shape: tuple[int, ...] | None  # the whole shape when judged on samples
    inputs: Sequence[np.ndarray]
    fixed: special.Fixed | None


def _prepared(
    live: Mapping[str, Outcome], returned: list[str], reference: Outcome | None, terms: Terms
) -> _Values:
    """The results made comparable: scalars as 0-d arrays, every array summarized where one
    result is, artefact positions and positions no answer is held to set to zero."""
    values = [_array(live[lib].value) for lib in returned]
    has_ref = reference is not None and reference.status == "ok"
    ref_value = _array(reference.value) if reference is not None and has_ref else None
    shape: tuple[int, ...] | None = None
    inputs: Sequence[np.ndarray] = terms.inputs if terms.op else ()
    if any(isinstance(v, Summary) for v in [*values, ref_value]):
        # some result came summarized: judge every array on the same sampled positions
        values = [_summarized(v) for v in values]
        ref_value = _summarized(ref_value)
        shape, inputs = _sampled_inputs(inputs)
    judged = dict(zip(returned, values, strict=True))
    if has_ref:
        values, ref_value = _without_artefacts(values, ref_value)
    fixed = _fixed_by_standard(terms.op, inputs)
    # the positions a rule of the standard claims are the standard's to judge (by
    # _by_standard where it fixes a floating result; nobody where it leaves the result
    # open): a vote or a reference that ignores the rule (numpy's complex expm1) has no say
    # there. (_by_standard judges floating results only: bool ones are voted on; so are
    # bfloat16 results where a rule fixes them, and where a rule leaves them open (`?`) no
    # answer is held, bfloat16 included.)
    open_ = None
    if fixed is not None:
        claimed = all(_kind(x) in ("f", "c") and not _bfloat16(x) for x in values)
        open_ = fixed.rule >= 0 if claimed else special.open_positions(fixed)
    extra = terms.open_positions
    if extra is not None and extra.any():
        if shape is not None or (open_ is not None and open_.shape != extra.shape):
            has_ref, ref_value = False, None  # (not on samples: the reference steps back)
        else:
            open_ = extra if open_ is None else open_ | extra
    if open_ is not None and open_.any():
        values, ref_value = _zero_at(values, ref_value, open_, shape)
    return _Values(
        judged=judged,
        values=values,
        ref=ref_value,
        has_ref=has_ref,
        shape=shape,
        inputs=inputs,
        fixed=fixed,
    )


def _output_stage(
    live: Mapping[str, Outcome],
    returned: list[str],
    reference: Outcome | None,
    terms: Terms,
) -> list[Blame]:
    """Output blames among the libraries that returned: by the standard's special cases, by
    the reference, by majority; kinds no document decides come back with their question.

    Where every result is a complex infinity with the same infinite part, the other part is
    fixed by no document (C99 Annex G) unless an opening of scope "complex-infinities" is
    absent: a blame that shows only there is asked, not decided."""
    v = _prepared(live, returned, reference, terms)
    blames = _blames_of(live, returned, v, reference, terms)
    scoped = [o for o in terms.openings if o.scope == "complex-infinities"]
    settled = _other_parts_settled(v) if scoped else None
    if settled is None:
        return blames
    kept = _blames_of(live, returned, settled, reference, terms)
    keys = {(b.library, b.family) for b in kept}
    asked = [
        dataclasses.replace(b, question=scoped[0].question, basis=_basis(scoped[0]))
        for b in blames
        if (b.library, b.family) not in keys and not b.question and not b.split
    ]
    return [*kept, *asked]


def _other_parts_settled(v: _Values) -> _Values | None:
    """The values with the other part of every complex infinity set to 0 where all results
    have the same infinite part there and no reference fixes the other part (none is run,
    or it is NaN there too: log2(-inf - 0.69j) is inf - 4.53j by the conjugate symmetry
    numpy's clog follows, a number the reference decides); None where no position is such."""
    arrays = [*v.values, *([v.ref] if v.has_ref else [])]
    if not arrays or not all(
        isinstance(a, np.ndarray) and a.dtype.kind == "c" and a.shape == arrays[0].shape
        for a in arrays
    ):
        return None
    with np.errstate(invalid="ignore"):
        reals = np.array([a.real for a in arrays])
        imags = np.array([a.imag for a in arrays])
        real_inf = np.all(np.isinf(reals), axis=0) & np.all(reals == reals[0], axis=0)
        imag_inf = np.all(np.isinf(imags), axis=0) & np.all(imags == imags[0], axis=0)
        if v.has_ref:
            real_inf &= np.isnan(v.ref.imag)
            imag_inf &= np.isnan(v.ref.real)
    if not (real_inf | imag_inf).any():
        return None

    def settle(a: np.ndarray) -> np.ndarray:
        out = a.copy()
        out.imag[real_inf] = 0
        out.real[imag_inf & ~real_inf] = 0
        return out

    values = [settle(a) for a in v.values]
    ref = settle(v.ref) if v.has_ref else v.ref
    return dataclasses.replace(v, values=values, ref=ref)


def _blames_of(
    live: Mapping[str, Outcome],
    returned: list[str],
    v: _Values,
    reference: Outcome | None,
    terms: Terms,
) -> list[Blame]:
    """The output blames of prepared values (see :func:`_output_stage`)."""
    standard = _by_standard(v.judged, terms.op, v.inputs, v.fixed, v.shape)
    parts, derived = _partitions_of(live, returned, v, terms, standard)
    kinds = _by_result_kind(returned, live, reference if v.has_ref else None, terms.input_dtype)
    if kinds is not None:
        # a result of another kind than the float64 reference's (real for complex input,
        # float counts for a histogram): the reference decides, not a vote
        parts = [p for p in parts if p.kind != "dtype"]
        standard = [*standard, *kinds]
    outputs = [live[lib].value for lib in returned]
    if _integer_widths_differ(parts, outputs):
        # int32 against int64 accumulation: values past int32 differ by the dtype policy
        parts = [p for p in parts if p.kind in ("shape", "dtype")]
    if _complex(outputs):
        # C99 Annex G fixes a complex result's zero signs only at its special values, which
        # the standard's cases above judge; elsewhere they follow each library's formula
        # (1/z as conj(z)/|z|**2 or by Smith's algorithm)
        parts = [p for p in parts if p.kind != "signed-zero"]
    openings = _openings(terms, outputs)
    closed = [p for p in parts if p.kind not in openings]
    native = terms.input_dtype in NUMPY_NATIVE
    blames = _outputs(
        [*standard, *(b for b in derived if b.kind not in openings)],
        closed,
        live,
        native=native,
        nan_input=terms.nan_input,
    )
    taken = {(b.library, b.family) for b in blames} | {
        (lib, b.family) for b in blames if b.split for lib in b.library.split("+")
    }
    unsettled = _outputs(
        [b for b in derived if b.kind in openings],
        [p for p in parts if p.kind in openings],
        live,
        native=native,
        nan_input=terms.nan_input,
    )
    for b in unsettled:
        if (b.library, b.family) not in taken and not b.split:
            o = openings[b.kind]
            blames.append(dataclasses.replace(b, question=o.question, basis=_basis(o)))
    return [b for b in blames if not _unjudgeable(b, live, v, terms, standard)]


def _basis(opening: Trait) -> str:
    return f"unspecified: {opening.question} ({opening.name}: {opening.link})"


def _openings(terms: Terms, outputs: Sequence[Any]) -> dict[str, Trait]:
    """The kinds this case leaves open, each with the first opening that names it."""
    integers = _integer_results(outputs)
    floats = all(_floating(x) for x in outputs)
    found: dict[str, Trait] = {}
    for o in terms.openings:
        if (o.integer_results and not integers) or (o.floating_results and not floats):
            continue
        if o.scope:
            continue
        for kind in o.opens:
            found.setdefault(kind, o)
    return found


def _unjudgeable(
    b: Blame, live: Mapping[str, Outcome], v: _Values, terms: Terms, standard: Sequence[Blame]
) -> bool:
    """Whether a value blame rests on no evidence: the result's dtype cannot hold the
    integer inputs; an integer result whose exact value does not fit its dtype (each library
    overflows its own way); a wider result judged against the reference rounded to a
    narrower one (numpy's float64 float_power beside float32 results) that is right at its
    own width."""
    if b.family != "value" or b.split:
        return False
    value = live[b.library].value
    if not _exact_for(value, terms.int_inputs):
        return True
    if v.has_ref and _overflows(value, v.ref):
        return True
    return (
        b.confidence == "reference"
        and b not in standard
        and v.has_ref
        and _right_at_own_width(value, v.ref, terms.input_dtype)
    )


def _partitions_of(
    live: Mapping[str, Outcome],
    returned: list[str],
    v: _Values,
    terms: Terms,
    standard: Sequence[Blame],
) -> tuple[list[Partition], list[Blame]]:
    """The output kinds the libraries disagree on, and blames derived from them: the
    libraries the standard blamed have no vote on the values; integer results (a dtype
    departure of their own) have no NaN, inf or zero sign to vote with, and where the
    result is NaN they are blamed (:func:`_integers_for_nan`)."""

    def among(members: Sequence[int]) -> list[Partition]:
        return partitions(
            [returned[i] for i in members],
            [v.values[i] for i in members],
            v.ref,
            has_ref=v.has_ref,
            input_dtype=terms.input_dtype,
            normwise=terms.normwise,
        )

    parts = among(range(len(returned)))
    if v.has_ref and not terms.reference_signs and any(p.kind == "signed-zero" for p in parts):
        by_vote = partitions(
            returned,
            v.values,
            has_ref=False,
            input_dtype=terms.input_dtype,
            normwise=terms.normwise,
        )
        parts = [
            *(p for p in parts if p.kind != "signed-zero"),
            *(p for p in by_vote if p.kind == "signed-zero"),
        ]
        parts.sort(key=lambda p: KIND_ORDER.index(p.kind))
    blamed = {b.library for b in standard}
    voters = [i for i, lib in enumerate(returned) if lib not in blamed]
    floating = [i for i in voters if _floating(live[returned[i]].value)]
    masks = ("nan", "inf", "signed-zero")
    derived: list[Blame] = []
    if len(voters) < len(returned) or 0 < len(floating) < len(voters):
        parts = [p for p in parts if p.kind in ("shape", "dtype")]
        if len(voters) >= 2:
            parts += [
                p
                for p in among(voters)
                if p.kind not in ("shape", "dtype")
                and (p.kind not in masks or len(floating) == len(voters))
            ]
        if 2 <= len(floating) < len(voters):
            parts += [p for p in among(floating) if p.kind in masks]
        if floating and len(floating) < len(voters) and not terms.nan_parameter:
            derived = _integers_for_nan(
                [returned[i] for i in voters if i not in floating],
                [v.values[i] for i in floating],
                v.ref if v.has_ref else None,
                [returned[i] for i in floating],
            )
    return parts, derived


def _right_at_own_width(value: Any, ref: Any, input_dtype: str | None) -> bool:
    """Whether a floating result agrees with the float64 reference rounded to its own dtype
    (not to the narrowest dtype another library returned)."""
    value = _array(value)
    if isinstance(value, Summary) or isinstance(ref, Summary):
        # judged on the same sampled positions, as the partitions were
        value, ref = _summarized(value), _summarized(ref)
        if not (isinstance(value, Summary) and isinstance(ref, Summary)):
            return False
        if value.dtype == "bfloat16" or value.shape != ref.shape:
            return False
        value, ref = value.sample, ref.sample
    if not isinstance(value, np.ndarray) or not isinstance(ref, np.ndarray):
        return False
    if value.dtype.kind not in "fc" or ref.dtype.kind != value.dtype.kind:
        return False  # (a real result for complex input is wrong at any width)
    if value.shape != ref.shape:
        return False
    with np.errstate(all="ignore"):
        own = ref.astype(value.dtype)
    return not partitions(["result", "reference"], [value, own], input_dtype=input_dtype)


def _exact_for(value: Any, int_inputs: Sequence[np.ndarray]) -> bool:
    """Whether a result's floating dtype holds every integer input exactly (non-floating
    results always do)."""
    if isinstance(value, Summary):
        dtype = summaries.dtype_of(value)
    elif isinstance(value, np.ndarray | np.generic | float):
        dtype = np.asarray(value).dtype
    else:
        dtype = None
    if dtype is None or dtype.kind not in "fc" or not int_inputs:
        return True
    real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
    with np.errstate(all="ignore"):
        return all(
            bool(np.array_equal(a.astype(real).astype(np.float64), a.astype(np.float64)))
            and bool(np.all(np.abs(a.astype(np.float64)) < 2.0**53))
            for a in int_inputs
        )


# numpy errors about the input's *domain* (an empty reduction, a singular or indefinite
# matrix): the call is well formed, the operation has no value there.
DOMAIN_ERRORS = re.compile(
    r"zero-size array|no identity|empty|[Ss]ingular|not positive.definite|did not converge|"
    r"division by zero|must be non-?negative|out of bounds for size",
)


def _malformed(numpy: Outcome) -> bool:
    """Whether numpy's error says the call itself is malformed (a bad axis, shape, argument
    type or count), rather than that the operation has no value on this input."""
    etype = _error_type(numpy)
    if etype not in MALFORMED_ERRORS:
        return False
    message = numpy.error.message if numpy.error is not None else ""
    return not (etype == "ValueError" and DOMAIN_ERRORS.search(headline(message)))


def _fixed_by_standard(op: str, inputs: Sequence[np.ndarray]) -> special.Fixed | None:
    """What the standard's special cases fix for an elementwise ``op`` on ``inputs``, or None
    (no table, no inputs, or inputs that do not broadcast)."""
    if not op or op not in special.SPECIAL_OPS or not inputs:
        return None
    try:
        return special.special_cases(op, list(inputs))
    except ValueError:
        return None


def _zero_at(
    values: list[Any], ref: Any, where: np.ndarray, shape: tuple[int, ...] | None = None
) -> tuple[list[Any], Any]:
    """Set ``where`` to zero in every array of its shape; with ``shape`` (judged on samples),
    ``where`` is a mask over the sample of summaries of that shape."""

    def zero(v: Any) -> Any:
        if isinstance(v, Summary):
            return summaries.zeroed(v, where) if v.shape == shape else v
        if isinstance(v, BFloat16) and v.shape == where.shape and shape is None:
            exact = v.values.copy()
            exact[where] = 0
            return BFloat16(values=exact)
        if isinstance(v, np.ndarray) and v.shape == where.shape and shape is None:
            v = v.copy()
            v[where] = 0
        return v

    return [zero(v) for v in values], zero(ref)


def _summarized(value: Any) -> Any:
    """A whole array as a summary (to be judged alongside summarized ones)."""
    if isinstance(value, np.ndarray | BFloat16) and not isinstance(value, Summary):
        return summaries.as_summary(value)
    return value


def _sampled_inputs(
    inputs: Sequence[np.ndarray],
) -> tuple[tuple[int, ...] | None, Sequence[np.ndarray]]:
    """The inputs' broadcast shape and the inputs read at its sampled positions (for the
    standard's special cases on summarized results), or (None, no inputs)."""
    if not inputs:
        return None, ()
    try:
        shape = tuple(np.broadcast_shapes(*(np.shape(x) for x in inputs)))
    except ValueError:
        return None, ()
    sampled = summaries.sample_inputs(list(inputs), shape)
    return (shape, sampled) if sampled is not None else (None, ())


# Errors that say a library ran out of memory (it answered, but the input is too large).
MEMORY_ERRORS = re.compile(
    r"MemoryError|ResourceExhausted|RESOURCE_EXHAUSTED|[Oo]ut of memory|Fail(ed)? to alloc|"
    r"bad_alloc|Cannot allocate|Unable to allocate|OOM|[Aa]llocate \w+ ?memory failed",
)


def _exhausted(o: Outcome) -> bool:
    """Whether a library ran out of memory: the memory cap, or its own allocation error."""
    if o.status == "resource":
        return True
    if o.status != "error" or o.error is None:
        return False
    return bool(MEMORY_ERRORS.search(f"{o.error.type}: {o.error.message[:2000]}"))


def _error_type(o: Outcome) -> str:
    return o.error.type if o.error is not None else ""


def _dead(lib: str, o: Outcome) -> Blame:
    if o.status == "crash":
        error = o.signal or (f"exit {o.exit_code}" if o.exit_code is not None else "crash")
        return Blame(
            kind="crash",
            library=lib,
            confidence="reference",
            detail=f"{lib} crashed ({error})",
            error=error,
        )
    if o.status == "hang":
        return Blame(
            kind="hang", library=lib, confidence="reference", detail=f"{lib} missed the deadline"
        )
    return Blame(
        kind="resource",
        library=lib,
        confidence="reference",
        detail=f"{lib} exceeded the memory cap",
    )


def _status(
    returned: list[str],
    raised: list[str],
    live: Mapping[str, Outcome],
    *,
    returned_odd: bool = False,
) -> list[Blame]:
    """Status blames: the side that departs, by numpy's say or a majority; a tie is a split."""
    if not returned_odd and ("numpy" in returned or len(raised) < len(returned)):
        return [_raised(lib, returned, live) for lib in sorted(raised)]
    if returned_odd or len(returned) < len(raised):
        where = f"where {', '.join(sorted(raised))} raised"
        return [
            Blame(
                kind="status",
                library=lib,
                confidence="majority",
                detail=f"status: {lib} returned {where}",
            )
            for lib in sorted(returned)
        ]
    sides = "+".join(sorted(returned + raised))
    detail = f"status: {', '.join(raised)} raised where {', '.join(returned)} returned"
    return [Blame(kind="status", library=sides, confidence="split", detail=detail)]


def _raised(lib: str, returned: Sequence[str], live: Mapping[str, Outcome]) -> Blame:
    """``lib`` raised where ``returned`` returned (a majority's or numpy's say)."""
    error = _error_text(live[lib])
    detail = f"status: {lib} raised where {', '.join(sorted(returned))} returned"
    if error:
        detail += f" ({error[:120]})"
    return Blame(kind="status", library=lib, confidence="majority", detail=detail, error=error)


def _outputs(
    standard: Sequence[Blame],
    parts: Sequence[Partition],
    live: Mapping[str, Outcome],
    *,
    native: bool = False,
    nan_input: bool = False,
) -> list[Blame]:
    """One blame per library and family; a library that returns integers where the others
    return floats, and wrong values because of it (integers in, truncated integers out),
    shows one misbehaviour: the value blame stays, naming the dtype too. ``native``: see
    :func:`_by_partition`; ``nan_input``: see :func:`judge`."""
    blamed: dict[tuple[str, str], Blame] = {}  # (library, family)
    voted = []
    for part in parts:
        found = _by_partition(part, native=native)
        if nan_input and part.kind in ("nan", "inf"):  # (NaN where the others have inf)
            found = _propagation_not_outvoted(found, part, live)
        voted += found
    for blame in [*standard, *voted]:
        sides = blame.library.split("+")
        if blame.split and any((lib, blame.family) in blamed for lib in sides):
            continue
        blamed.setdefault((blame.library, blame.family), blame)
    for (lib, family), blame in list(blamed.items()):
        value = blamed.get((lib, "value"))
        mine = live[lib].value if lib in live else None
        kind = summaries.dtype_of(mine) if isinstance(mine, np.ndarray | Summary) else None
        keeps_integers = kind is not None and kind.kind in "iub"
        changes_kind = kind is not None and kind.kind in "iubfc" and _kind_changed(lib, live)
        if (
            family == "dtype"
            and value is not None
            and not blame.split
            and (keeps_integers or changes_kind)
        ):
            del blamed[(lib, family)]
            # a result of another kind (complex returned real) is a wrong value whatever
            # NaN it also shows
            blamed[(lib, "value")] = dataclasses.replace(
                value,
                kind="value" if changes_kind and not keeps_integers else value.kind,
                detail=f"{value.detail} (result dtype {_dtype_name(mine)})",
            )
        elif (
            family == "dtype"
            and value is None
            and not blame.split
            and keeps_integers
            and changes_kind
        ):
            del blamed[(lib, family)]
            others = [o.value for other, o in live.items() if other != lib]
            if not _holds_exactly(mine, others):
                # integers (or bools) out of a floating operation (paddle's deg2rad of bool
                # returns bool): one wrong result, the same departure as the case whose values
                # show it, so one finding for both. (Where the others' values are all such
                # numbers, heaviside of bools being 0 or 1, nothing is lost: the dtype is the
                # library's policy.)
                blamed[(lib, "value")] = dataclasses.replace(
                    blame, kind="value", detail=f"{blame.detail} (integer results)"
                )
        elif family == "value" and keeps_integers and (lib, "dtype") not in blamed:
            floats = [
                o.value
                for other, o in live.items()
                if other != lib and o.status == "ok" and _floating(o.value)
            ]
            if floats:  # the dtype split no majority decides: still say what it returned
                blamed[(lib, family)] = dataclasses.replace(
                    blame, detail=f"{blame.detail} (result dtype {kind})"
                )
    return list(blamed.values())


def _kind(value: Any) -> str:
    """The kind of one result leaf: "c" complex, "f" real floating (bfloat16 included), "i"
    integer, "b" bool; "" for anything else. Arrays, summaries, numpy and Python scalars."""
    if isinstance(value, BFloat16) or (isinstance(value, Summary) and value.dtype == "bfloat16"):
        return "f"
    if isinstance(value, float | complex) and not isinstance(value, bool):
        return "c" if isinstance(value, complex) else "f"
    dtype = summaries.dtype_of(value)
    if dtype is None or dtype.kind not in "biufc":
        return ""
    return "i" if dtype.kind in "iu" else dtype.kind


def _bfloat16(value: Any) -> bool:
    return isinstance(value, BFloat16) or (isinstance(value, Summary) and value.dtype == "bfloat16")


def _floating(value: Any) -> bool:
    return _kind(value) in ("f", "c")


def _integral(value: Any) -> np.dtype[Any] | None:
    """The integer (or bool) dtype of an integer result, else None."""
    return summaries.dtype_of(value) if _kind(value) in ("i", "b") else None


def _plain(value: Any) -> Any:
    """A result as the numpy array it can be judged by: a summary's samples, bfloat16's exact
    float32 values, a scalar's 0-d array (anything else unchanged)."""
    if isinstance(value, Summary):
        return value.sample
    if isinstance(value, BFloat16):
        return value.values
    return _array(value)


def _made_up(value: Any) -> bool:
    """Whether a result holds a finite number that is no dtype limit (a value invented for an
    input that has none), rather than NaN, inf, an empty array or an identity like INT_MAX."""
    if isinstance(value, tuple | list):
        return any(_made_up(v) for v in value)
    if not isinstance(value, np.ndarray | np.generic | Summary | BFloat16):
        return False
    a = _plain(value)  # (a summary: its sampled positions)
    if not isinstance(a, np.ndarray):
        return False
    if a.size == 0 or a.dtype.kind not in "iufcb":
        return False
    if a.dtype.kind in "iu":
        info = np.iinfo(a.dtype)
        return bool(((a != info.max) & (a != info.min)).any())
    if a.dtype.kind == "b":
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.isfinite(a).any())


def _dtype_name(value: Any) -> str:
    if isinstance(value, tuple | list):
        return "(" + ", ".join(_dtype_name(v) for v in value) + ")"
    if isinstance(value, BFloat16):
        return "bfloat16"
    if isinstance(value, Summary):
        return value.dtype
    if isinstance(value, np.ndarray | np.generic):
        return str(value.dtype)
    return type(value).__name__


def _leaf_kinds(value: Any) -> tuple[str, ...] | None:
    """The kind of each leaf of a result: "c" complex, "f" real floating, "i" integer, "b"
    bool (None for anything else)."""
    if isinstance(value, tuple | list):
        parts = [_leaf_kinds(v) for v in value]
        if any(p is None for p in parts):
            return None
        return tuple(k for p in parts if p is not None for k in p)
    kind = _kind(value)
    return (kind,) if kind else None


def _by_result_kind(
    returned: Sequence[str],
    live: Mapping[str, Outcome],
    reference: Outcome | None,
    input_dtype: str | None,
) -> list[Blame] | None:
    """Dtype blames by the float64 reference's result kinds, when the libraries' results
    differ in kind (not only in width) and the input is floating (its upcast keeps the kind):
    None when the reference cannot decide."""
    if reference is None or input_dtype is None:
        return None
    want = _leaf_kinds(reference.value)
    got = {lib: _leaf_kinds(live[lib].value) for lib in returned}
    if want is None or any(k is None or len(k) != len(want) for k in got.values()):
        return None
    if len(set(got.values())) < 2 or want not in got.values():
        return None
    if any(_empty(live[lib].value) for lib in returned):
        return None  # an empty result holds no value that its kind could lose
    names = {"c": "complex", "f": "real floating", "i": "integer", "b": "bool"}
    right = sorted(lib for lib, k in got.items() if k == want)
    return [
        Blame(
            kind="dtype",
            library=lib,
            confidence="reference",
            detail=f"dtype: {lib} returned {_dtype_name(live[lib].value)} where "
            f"{', '.join(right)} and the float64 reference return "
            f"{' and '.join(names[k] for k in dict.fromkeys(want))} results",
        )
        for lib, k in sorted(got.items())
        if k != want
    ]


def _empty(value: Any) -> bool:
    """Whether a result (an array, a summary, or a tuple of them) has an empty leaf."""
    if isinstance(value, tuple | list):
        return any(_empty(v) for v in value)
    if isinstance(value, Summary):
        return int(np.prod(value.shape)) == 0
    return isinstance(value, np.ndarray) and value.size == 0


def _array(value: Any) -> Any:
    """A numpy or Python float scalar result as the 0-d array it stands for."""
    if isinstance(value, np.generic | float | complex) and not isinstance(value, bool):
        return np.asarray(value)
    return value


def _integers_for_nan(
    integral: Sequence[str], floats: Sequence[Any], ref: Any, float_libs: Sequence[str]
) -> list[Blame]:
    """Libraries that returned integers where the result is NaN: the float64 reference's NaN
    positions or, without one, those every floating result agrees on (an integer holds no
    NaN: -2**31 for the variance of nothing is a wrong value, not a dtype policy)."""
    # summaries of one shape are judged on their samples (the same positions)
    floats = [_plain(v) for v in floats]
    ref = _plain(ref)
    arrays = [v for v in floats if isinstance(v, np.ndarray) and v.dtype.kind in "fc"]
    if len(arrays) != len(floats) or not arrays or len({a.shape for a in arrays}) != 1:
        return []
    if isinstance(ref, np.ndarray) and ref.dtype.kind in "fc" and ref.shape == arrays[0].shape:
        want, by = np.isnan(ref), "the float64 reference"
        confidence: Confidence = "reference"
    else:
        masks = [np.isnan(a) for a in arrays]
        if len(arrays) < 2 or any(not np.array_equal(m, masks[0]) for m in masks):
            return []
        want, by, confidence = masks[0], ", ".join(float_libs), "majority"
    if not want.any():
        return []
    n = int(want.sum())
    return [
        Blame(
            kind="nan",
            library=lib,
            confidence=confidence,
            detail=f"nan mask: {lib} returned integers where {by} "
            f"{'has' if ' ' in by and ',' not in by else 'have'} NaN at {n} "
            f"position{'s' if n != 1 else ''}",
        )
        for lib in integral
    ]


def _holds_exactly(mine: Any, others: Sequence[Any]) -> bool:
    """Whether every floating result of ``others`` holds only values that ``mine``'s integer
    (or bool) dtype represents exactly."""
    if isinstance(mine, Summary):
        mine = mine.sample.astype(mine.dtype) if mine.dtype != "bfloat16" else None
    if not isinstance(mine, np.ndarray) or mine.dtype.kind not in "iub":
        return False
    floats = [
        _plain(v)
        for v in others
        # (numpy.nanmedian of a 0-d array returns a numpy scalar)
        if isinstance(v, np.ndarray | np.generic | float | Summary | BFloat16) and _floating(v)
    ]
    if not floats:
        return False
    for v in floats:
        if not np.isfinite(v).all():
            return False
        with np.errstate(all="ignore"):
            back = v.astype(mine.dtype).astype(v.dtype)
        if not np.array_equal(back, v):
            return False
    return True


def _kind_changed(lib: str, live: Mapping[str, Outcome]) -> bool:
    """Whether ``lib``'s result is of another kind (complex, real, integer) than most others'
    (complex input returned real drops the imaginary part: its dtype and values are one
    departure)."""
    mine = _kind(live[lib].value)
    others = [_kind(o.value) for x, o in live.items() if x != lib and o.status == "ok"]
    return bool(mine) and bool(others) and 2 * sum(k != mine for k in others) > len(others)


def _overflows(value: Any, ref: Any) -> bool:
    """Whether ``value`` is an integer result and the float64 reference leaves its range."""
    dtype = _integral(value)
    if dtype is None or dtype.kind == "b":
        return False
    r = _plain(ref)
    if not isinstance(r, np.ndarray) or r.dtype.kind not in "fc":
        return False
    info = np.iinfo(dtype)
    with np.errstate(invalid="ignore"):
        real = r.real if r.dtype.kind == "c" else r
        finite = real[np.isfinite(real)]
        return bool(((finite > info.max) | (finite < info.min)).any())


def _integer_results(values: Sequence[Any]) -> bool:
    """Whether every result is an integer array (or scalar)."""
    return all(_kind(v) in ("i", "b") for v in values)


def _complex(values: Sequence[Any]) -> bool:
    """Whether any result is a complex array."""
    return any(_kind(v) == "c" for v in values)


def _integer_widths_differ(parts: Sequence[Partition], values: Sequence[Any]) -> bool:
    """Whether the libraries returned integers of different widths (a dtype difference)."""
    if not any(p.kind == "dtype" for p in parts):
        return False
    dtypes = [summaries.dtype_of(v) for v in values if isinstance(v, np.ndarray | Summary)]
    return len(dtypes) == len(values) and all(d is not None and d.kind in "iub" for d in dtypes)


def _without_artefacts(values: list[Any], ref: Any) -> tuple[list[Any], Any]:
    """Positions the libraries cannot be judged on, set to 0 everywhere:

    - floating results where the float64 reference is finite but every library's result is
      not (an intermediate overflow everywhere);
    - integer results where the exact (float64) result does not fit the integer dtype (every
      library overflows, each its own way: wraps, saturates).

    The reference of integer results is rounded to their dtype (numpy's integer functions
    run on float64 here: the same values, exactly, where they fit). Summarized results are
    judged on their samples (:func:`_sampled_artefacts`).
    """
    if isinstance(ref, Summary) or any(isinstance(v, Summary) for v in values):
        return _sampled_artefacts(values, ref)
    arrays = [v for v in values if isinstance(v, np.ndarray)]
    if (
        not isinstance(ref, np.ndarray)
        or len(arrays) != len(values)
        or not arrays
        or any(a.shape != ref.shape for a in arrays)
        or ref.dtype.kind not in "fc"
    ):
        return values, ref
    kinds = {a.dtype.kind for a in arrays}
    with np.errstate(all="ignore"):
        if kinds <= {"f", "c"}:
            artefact = np.isfinite(ref) & np.all([~np.isfinite(a) for a in arrays], axis=0)
            # a true result within NEAR_OVERFLOW of the dtype's maximum: a library whose
            # intermediate grows past it (a norm's sum of squares, a product before a division)
            # overflows where one that rescales does not; the condition of the question, not
            # a bug, decides between inf and a finite answer
            top = min(np.finfo(a.dtype).max for a in arrays)
            near = (np.abs(ref) > top / NEAR_OVERFLOW) & (np.abs(ref) <= top)
            if near.any():
                artefact |= near & np.any([~np.isfinite(a) for a in arrays], axis=0)
        elif kinds <= {"i", "u"} and ref.dtype.kind == "f" and len({a.dtype for a in arrays}) == 1:
            info = np.iinfo(arrays[0].dtype)
            # from 2**53 on a float64 holds no exact integer: no exact reference there either
            limit = min(float(info.max), 2.0**53 - 1)
            lower = max(float(info.min), -(2.0**53 - 1))
            artefact = ~np.isfinite(ref) | (ref > limit) | (ref < lower)
            ref = np.where(artefact, 0, np.rint(ref)).astype(arrays[0].dtype)
        else:
            return values, ref
    if not artefact.any():
        return values, ref
    return _zero_at(values, ref, artefact)


def _sampled_artefacts(values: list[Any], ref: Any) -> tuple[list[Any], Any]:
    """:func:`_without_artefacts` on summaries of one shape: on their samples."""
    if (
        not isinstance(ref, Summary)
        or not all(isinstance(v, Summary) and v.shape == ref.shape for v in values)
        or any(v.dtype == "bfloat16" for v in [*values, ref])  # as whole: numpy arrays only
        or ref.sample.dtype.kind not in "fc"
    ):
        return values, ref
    samples = [v.sample for v in values]
    kinds = {a.dtype.kind for a in samples}
    names = {v.dtype for v in values}
    with np.errstate(all="ignore"):
        if kinds <= {"f", "c"}:
            artefact = np.isfinite(ref.sample) & np.all([~np.isfinite(a) for a in samples], axis=0)
            top = min(np.finfo(a.dtype).max for a in samples)
            r = np.abs(ref.sample)
            near = (r > top / NEAR_OVERFLOW) & (r <= top)
            if near.any():
                artefact |= near & np.any([~np.isfinite(a) for a in samples], axis=0)
        elif kinds <= {"i", "u"} and ref.sample.dtype.kind == "f" and len(names) == 1:
            dtype = np.dtype(names.pop())
            info = np.iinfo(dtype)
            limit = min(float(info.max), 2.0**53 - 1)
            lower = max(float(info.min), -(2.0**53 - 1))
            r = ref.sample
            artefact = ~np.isfinite(r) | (r > limit) | (r < lower)
            ref = summaries.rounded(ref, dtype, artefact)
        else:
            return values, ref
    if not artefact.any():
        return values, ref
    return [summaries.zeroed(v, artefact) for v in values], summaries.zeroed(ref, artefact)


def _propagation_not_outvoted(
    blames: list[Blame], part: Partition, live: Mapping[str, Outcome]
) -> list[Blame]:
    """A majority's NaN-mask blames, or one split where every library blamed returns more
    NaN than every library of the majority (it propagates the input's NaN, they drop it)."""
    if not blames or any(b.confidence != "majority" for b in blames):
        return blames
    blamed = {b.library for b in blames}

    def nans(lib: str) -> int | None:
        value = live[lib].value if lib in live else None
        if isinstance(value, Summary):
            return value.nan
        if not isinstance(value, np.ndarray) or value.dtype.kind not in "fc":
            return None
        return int(np.isnan(value).sum())

    counts = {lib: nans(lib) for lib in part.libs}
    odd = [n for lib, n in counts.items() if lib in blamed and n is not None]
    major = [n for lib, n in counts.items() if lib not in blamed and n is not None]
    if None in counts.values() or not major or min(odd) <= max(major):
        return blames
    return [
        Blame(
            kind=blames[0].kind,
            library="+".join(sorted(part.libs)),
            confidence="split",
            detail=blames[0].detail + " (NaN in the input: its propagation is not outvoted)",
        )
    ]


def _by_partition(part: Partition, *, native: bool = False) -> list[Blame]:
    """The blames of one output kind's classes: by the reference where there is one, else by
    a strict majority, else one split.

    ``native``: the input's dtype is one numpy computes in (:data:`NUMPY_NATIVE`: ``pi * x``
    overflows to inf at x = -FLT_MAX in ``sinc``; ``unwrap``'s differences round to float16's
    11 bits), so where numpy's own answer departs from the float64 reference, the departure is
    that dtype's arithmetic, not a library's: the libraries answering as numpy does are not
    blamed.
    """
    classes = list(part.classes)
    kind: Kind = part.kind  # type: ignore[assignment]
    if native and "numpy" in part.libs:
        at = part.libs.index("numpy")
        classes = [c for c in classes if c.ref is not False or at not in c.members]
    if any(c.ref is not None for c in classes) and kind != "dtype":
        right = [c for c in classes if c.ref]
        right_libs = {lib for c in right for lib in part.names(c)}
        if not right:
            return []  # nobody matches the reference: every answer is an artefact
        if right_libs:
            major = max(right, key=lambda c: len(c.members))
            return [
                Blame(
                    kind=kind,
                    library=lib,
                    confidence="reference",
                    detail=part.describe(c, major) + " (the float64 reference agrees with "
                    f"{', '.join(sorted(right_libs))})",
                )
                for c in classes
                if not c.ref
                for lib in part.names(c)
            ]
    top = max(len(c.members) for c in classes)
    tops = [c for c in classes if len(c.members) == top]
    if 2 * top > sum(len(c.members) for c in classes):  # a majority, not a plurality
        major = tops[0]
        odd = [c for c in classes if c is not major]
        if kind == "dtype" and part.keys:
            # no reference fixes a result's dtype: a width (float16 kept or float32 made,
            # int32 indices) or a wider kind (integers in, floats out) is the library's
            # promotion policy, which a vote cannot call wrong; a narrower kind than the
            # majority's (bool sums, integer means, a real result of complex input) loses
            # values. numpy's dtypes define the numpy API the others mirror: never outvoted.
            key = dict(zip(part.classes, part.keys, strict=True))
            policy = [
                c for c in odd if "numpy" in part.names(c) or not _narrower(key[c], key[major])
            ]
            odd = [c for c in odd if c not in policy]
            if policy and not odd:
                sides = "+".join(sorted(lib for c in classes for lib in part.names(c)))
                detail = part.describe(policy[0], major) + " (promotion policies differ)"
                return [Blame(kind=kind, library=sides, confidence="split", detail=detail)]
        return [
            Blame(kind=kind, library=lib, confidence="majority", detail=part.describe(c, major))
            for c in odd
            for lib in part.names(c)
        ]
    sides = "+".join(sorted(part.libs[i] for c in classes for i in c.members))
    ranked = sorted(classes, key=lambda c: -len(c.members))
    return [
        Blame(
            kind=kind,
            library=sides,
            confidence="split",
            detail=part.describe(ranked[1], ranked[0]) + " (no majority, no reference)",
        )
    ]


# Result kinds by what they can hold, narrowest first (bfloat16 is a float).
_KIND_RANK = {"b": 0, "i": 1, "u": 1, "f": 2, "c": 3}


def _kind_rank(dtype: str) -> int | None:
    if dtype == "bfloat16":
        return 2
    try:
        return _KIND_RANK.get(np.dtype(dtype).kind)
    except TypeError:
        return None


def _narrower(odd: Sequence[str], major: Sequence[str]) -> bool:
    """Whether some result of ``odd`` is of a narrower kind than the majority's same result
    (bool where it counts, integers where it averages, real where it is complex); results
    that do not pair up count as narrower (the departure is not a policy of width)."""
    if len(odd) != len(major):
        return True
    for a, b in zip(odd, major, strict=True):
        ra, rb = _kind_rank(a), _kind_rank(b)
        if ra is None or rb is None or ra < rb:
            return True
    return False


def _by_standard(
    returned: Mapping[str, Any],
    op: str,
    inputs: Sequence[np.ndarray],
    fixed: special.Fixed | None,
    shape: tuple[int, ...] | None = None,
) -> list[Blame]:
    """Departures from the array API standard's special cases (elementwise operations), by
    library from what each returned; with ``shape``, ``inputs`` and ``fixed`` are at the
    sampled positions of summaries of that shape."""
    if fixed is None or not fixed.mask.any():
        return []
    mask, expected = fixed.mask, special.expected_of(fixed)
    source = "its definition" if op in special.BEYOND_STANDARD else "the array API standard"
    out = []
    for lib, value in returned.items():
        if isinstance(value, Summary) and value.shape == shape and value.dtype != "bfloat16":
            value = value.sample
        elif not isinstance(value, np.ndarray) or shape is not None:
            continue
        if value.shape != mask.shape or value.dtype.kind not in "fc":
            continue
        bad = special.departs(op, list(inputs), value, fixed=fixed)
        if bad is None or not bad.any():
            continue
        i = int(np.argmax(bad.reshape(-1)))
        got = value.reshape(-1)[i]
        want = expected.reshape(-1)[i]
        kind = _departure_kind(got, want)
        args = ", ".join(repr(a.reshape(-1)[i].item()) for a in np.broadcast_arrays(*inputs))
        detail = (
            f"{kind}: {lib} returned {_fmt(got)} for {op}({args}) where {source} "
            f"requires {_fmt(want)} ({int(bad.sum())} "
            f"{'sampled ' if shape is not None else ''}position"
            f"{'s' if bad.sum() != 1 else ''})"
        )
        out.append(
            Blame(
                kind=kind,
                library=lib,
                confidence="reference",
                detail=detail,
                basis=f"standard: {detail}",
            )
        )
    return out


def _departure_kind(got: Any, want: Any) -> Kind:
    g, w = complex(got), complex(want)
    for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
        if np.isnan(gp) != np.isnan(wp):
            return "nan"
    for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
        if np.isinf(gp) or np.isinf(wp):
            if gp != wp:
                return "inf"
    for gp, wp in ((g.real, w.real), (g.imag, w.imag)):
        if gp == 0 and wp == 0 and np.signbit(gp) != np.signbit(wp):
            return "signed-zero"
    return "value"


def _fmt(x: Any) -> str:
    if isinstance(x, complex | np.complexfloating):
        return f"{complex(x)!r}"
    return repr(float(x))
