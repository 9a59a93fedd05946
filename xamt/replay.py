"""The replay service: run cases across libraries, judge them, and sign what departs.

One engine runs cases for every stage: the campaign, reproduction in fresh workers,
minimization, verification, ``xamt repro`` and ``xamt call``'s verdict. Each case runs on
every library of its ``apis`` at once (one request per library), plus numpy on the float64
upcast input as a reference where the case's dtype is a low-precision float; the outcomes go
through :func:`xamt.oracle.verdict.judge`, and each blame is signed
(:func:`xamt.oracle.signature.signature_of`) with the case's trigger.

Note:
    The *trigger* of a signature is the first input class of :data:`TRIGGERS` the case holds
    (``"ordinary"`` if none). On a raw fuzzing case that is a guess; triage replaces it with
    the class the minimized case still needs (:func:`neutralized`), so the final signature of
    one root cause does not depend on which case met it first.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import re
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec

import numpy as np

from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.model import ARRAY_ROLES, Group, Member
from xamt.catalog.normalize import canonical_param
from xamt.findings import SEVERITY, Classification, Finding, KnownRef
from xamt.inputs.draw import accepts, array_roles
from xamt.inputs.tags import input_classes
from xamt.known import Facts, KnownDifference, classify, load_known
from xamt.oracle import formulas, special
from xamt.oracle.signature import canonical_callable, normalize_message, signature_of
from xamt.oracle.verdict import Blame, Judgement, judge
from xamt.outcomes import outcome_summary
from xamt.serialize import case_to_jsonable
from xamt.types import Call, Case, Outcome
from xamt.workers.pool import WorkerPool
from xamt.workers.protocol import DTYPE_NAMES, BFloat16

# Input dtypes whose cases also run numpy on the float64 (complex128) upcast input, as the
# reference: low-precision floats and complex, and integers (whose exact results it gives
# where they fit the integer dtype).
INTEGER_DTYPES = tuple(name for name in DTYPE_NAMES if name.startswith(("int", "uint")))
# Every numeric dtype: float64 and complex128 inputs too, where numpy's own answer is the
# reference (numpy itself is judged there by the standard's special cases only), which a 3-2
# vote cannot overrule
REFERENCE_DTYPES = tuple(name for name in DTYPE_NAMES if name != "bool")
# The input classes a finding can need, most specific first: the trigger vocabulary, each
# trigger with the input-class tags (``xamt.inputs.tags``) it stands for.
TRIGGER_TAGS: dict[str, tuple[str, ...]] = {
    # subnormal first: where a subnormal and a NaN or inf are both needed (0 * inf from a
    # flushed subnormal), the subnormal is the root cause
    "subnormal": ("subnormal",),
    "nan": ("nan",),
    "inf": ("inf", "neg-inf"),
    "neg-zero": ("neg-zero",),
    "dtype-limit": ("dtype-max", "dtype-min"),
    "zero-divisor": ("zero-divisor",),
    "empty": ("empty",),
    "kernel-beyond-input": ("kernel-beyond-input",),
    "scalar": ("scalar",),
    "out-of-range-axis": ("out-of-range-axis",),
    "out-of-range-index": ("out-of-range-index",),
    "param-boundary": ("param-boundary",),
}
TRIGGERS = tuple(TRIGGER_TAGS)
ORDINARY = "ordinary"
# Families whose results fix the sign of a zero (IEEE 754 arithmetic elementwise, exact
# copies and fills); a reduction's, a transform's or a decomposition's zero has no sign to
# get wrong, except where the standard's special cases say so.
SIGNED_ZERO_FAMILIES = frozenset({"elementwise", "creation", "shape"})
# Operations whose NaN and inf spread by each library's algorithm (LAPACK factorizations and
# solvers, FFT butterflies, polynomial roots): on non-finite input only their shapes and
# dtypes are judged. (A norm, product or reduction of inf has one right answer: judged.)
NONFINITE_UNJUDGED = re.compile(
    r"cholesky\w*|qr|geqrf|svd|svdvals|eig\w*|lstsq|solve|\w+_solve|inv|pinv|det|slogdet|"
    r"logdet|log_matrix_determinant|lu|matrix_rank|matrix_exp|matrix_power|poly\w*|cov|"
    r"corrcoef|\w*fft\w*|histogram\w*|cdist|pdist|cosine_similarity|cond|convolve|correlate|"
    # interpolation between order statistics: numpy's lerp makes inf - inf a NaN where the
    # limit (the minimum for q = 0) is a number, and another algorithm answers it
    r"(nan)?(quantile|percentile)|"
    # C99 7.12.6.4: the exponent frexp stores for an infinite or NaN value is unspecified
    r"frexp"
)
# Deep-learning families whose outputs are weighted sums over windows (a convolution, an
# interpolation): a zero weight meets an infinite input as 0 * inf = NaN or is skipped,
# and a Winograd or FFT kernel spreads a NaN over its tile, by each library's algorithm.
NONFINITE_UNJUDGED_FAMILIES = frozenset({"convolution", "resizing"})
# Families whose results aggregate many inputs (sums, products, dot products): how rounding
# and overflow accumulate depends on the summation order.
AGGREGATES = frozenset({"reduction", "linalg", *dlcore.AGGREGATE_FAMILIES})
FLOATING_DTYPES = ("float16", "bfloat16", "float32", "float64", "complex64", "complex128")


def triggers_in(tags: Sequence[str]) -> list[str]:
    """The trigger classes ``tags`` hold, most specific first."""
    return [t for t, members in TRIGGER_TAGS.items() if any(m in tags for m in members)]


def trigger_of(tags: Sequence[str]) -> str:
    """The first trigger class among ``tags``, else ``"ordinary"``."""
    return next(iter(triggers_in(tags)), ORDINARY)


@dataclass(frozen=True, kw_only=True)
class Signed:
    """One blame of one case, signed."""

    blame: Blame
    signature: str
    key: str
    root: str  # the signature without trigger and dtype: what minimization must keep
    callable: str
    trigger: str


@dataclass(frozen=True, kw_only=True)
class Replayed:
    """One case after it ran: outcomes, the reference, the verdict and its signed blames."""

    case: Case
    outcomes: dict[str, Outcome]
    reference: Outcome | None
    judgement: Judgement
    tags: tuple[str, ...]
    signed: tuple[Signed, ...]
    # the judge's own error, where it failed on this case (a defect in xamt): the case is
    # kept unjudged, and the run goes on
    failed: str = ""

    def signatures(self) -> set[str]:
        return {s.signature for s in self.signed}

    def roots(self) -> set[str]:
        return {s.root for s in self.signed}


def case_dtype(case: Case, group: Group) -> str:
    """The input dtype a signature names: ``"-"`` for a call without an array input."""
    return case.dtype if array_roles(group) else "-"


def sign(case: Case, group: Group, blame: Blame, trigger: str) -> Signed:
    """Sign one blame of ``case`` with ``trigger``."""
    lib = blame.library
    op = dlcore.function_op(group)
    callable_ = canonical_callable(lib, op) if not blame.split else op
    facts = {
        "family": blame.family,
        "library": lib,
        "callable": callable_,
        "dtype": case_dtype(case, group),
        "error": blame.error,
    }
    sig, key = signature_of(trigger=trigger, **facts)
    root, _ = signature_of(trigger="*", **{**facts, "dtype": "*"})
    return Signed(
        blame=blame, signature=sig, key=key, root=root, callable=callable_, trigger=trigger
    )


P = ParamSpec("P")


def array_inputs(case: Case, group: Group) -> list[np.ndarray]:
    """The case's array inputs in role order (bfloat16 as float32); none for sequences."""
    out = []
    for role in group.roles:
        if role not in ARRAY_ROLES:
            continue
        value = case.values.get(role)
        if isinstance(value, BFloat16):
            value = value.values
        if not isinstance(value, np.ndarray):
            return []
        out.append(value)
    return out


def int_magnitude(case: Case, group: Group) -> float:
    """The largest magnitude among the case's integer array inputs (0 without any)."""
    found = 0.0
    for arr in array_inputs(case, group):
        if arr.dtype.kind in "iu" and arr.size:
            found = max(found, float(np.max(np.abs(arr.astype(np.float64)))))
    return found


# gcd and lcm of integers: where the exact result does not fit the result's integer dtype
# (lcm(-10, 2147483646) is 10737418230; gcd(INT_MIN, 0) is 2**31), every library's answer
# is a wrapped artefact (numpy documents that integer overflow wraps silently), so those
# positions are not judged; the rest still are, exactly.
EXACT_INTEGER_OPS: dict[str, Callable[[int, int], int]] = {"gcd": math.gcd, "lcm": math.lcm}


def _beyond_integer_range(op: str, arrays: Sequence[np.ndarray]) -> np.ndarray | None:
    """Positions whose exact ``op`` overflows the integer result dtype (None: not integers)."""
    if len(arrays) != 2 or any(a.dtype.kind not in "iu" for a in arrays):
        return None
    try:
        a, b = np.broadcast_arrays(*(x.astype(object) for x in arrays))
    except ValueError:
        return None  # (shapes that do not broadcast: the libraries judge that)
    info = np.iinfo(np.result_type(*arrays))
    exact = np.frompyfunc(EXACT_INTEGER_OPS[op], 2, 1)(a, b)
    return np.asarray((exact > info.max) | (exact < info.min), bool).reshape(a.shape)


# Integer aggregates that can wrap, by how their bound grows: a running product's as the
# largest magnitude to the power of the count, a matrix product's as the count times the
# operands' largest magnitudes, a sum's as the count times the largest magnitude. Other
# aggregates (max, argmin, rot90) select values and cannot wrap.
PRODUCTS = re.compile(r"(nan)?(cum)?prod|cumulative_prod")
MATRIX_PRODUCTS = re.compile(
    r"matmul|(add|b|addb|baddb)?mm|(add)?mv|(v)?dot|inner|outer|tensordot|einsum|kron|"
    r"multi_dot|chain_matmul|addr"
)
SUMS = re.compile(r"(nan)?(cum)?sum|cumulative_sum|trace|(unsorted_)?segment_sum|reduce_sum")
# Differences of neighbours, computed in the input's integer dtype (numpy.diff documents the
# dtype is kept, so a difference past its range wraps): unwrap of [INT_MIN, 1] in int32.
DIFFERENCES = re.compile(r"diff|diff_ext|ediff1d|unwrap|gradient")


def _may_overflow(group: Group, arrays: Sequence[np.ndarray], order: object = None) -> bool:
    """Whether integer arrays aggregated by ``group`` may leave their dtype's range, though
    no value sits at its limits: [2**63 - 2, 6, 2**63 - 2] sums to 2**64 + 2 in int64; the
    differences of order ``order`` (``n`` of diff) of values spanning more than the range."""
    ints = [a for a in arrays if a.dtype.kind in "iu" and a.size]
    if not ints:
        return False
    limit = max(int(np.iinfo(a.dtype).max) for a in ints)
    if DIFFERENCES.fullmatch(group.op):
        times = 2 ** (min(order, 64) - 1) if isinstance(order, int) and order > 1 else 1
        return any((int(a.max()) - int(a.min())) * times > limit for a in ints)
    n = max(a.size for a in ints)
    largest = [max(abs(int(a.max())), abs(int(a.min()))) for a in ints]
    if PRODUCTS.fullmatch(group.op):
        m = max(largest)
        return m > 1 and n * math.log2(m) >= math.log2(limit)
    if MATRIX_PRODUCTS.fullmatch(group.op):
        return n * math.prod(largest) > limit
    if SUMS.fullmatch(group.op):
        return n * max(largest) > limit
    return False


def _masks_only(
    outcomes: dict[str, Outcome], reference: Outcome, loose: np.ndarray
) -> tuple[dict[str, Outcome], Outcome]:
    """The outcomes with every finite value at ``loose`` positions replaced by the reference's
    finite value: what is judged there is only whether a result is NaN, infinite or finite
    (and a departure is told with the true value: "inf vs 3.832507")."""
    ref = np.asarray(reference.value, np.float64)
    if ref.shape != loose.shape:
        return outcomes, reference
    where = loose & np.isfinite(ref)

    def flat(o: Outcome) -> Outcome:
        v = o.value
        if o.status != "ok" or not isinstance(v, np.ndarray) or v.dtype.kind != "f":
            return o
        if v.shape != loose.shape:
            return o
        with np.errstate(over="ignore"):
            v = np.where(where & np.isfinite(v), ref.astype(v.dtype), v)
        return dataclasses.replace(o, value=v)

    return {lib: flat(o) for lib, o in outcomes.items()}, reference


def needs_reference(case: Case, group: Group) -> bool:
    """Whether the float64 reference can judge this case: a float, complex or integer input,
    every integer exactly representable in float64 (below 2**53)."""
    return case.dtype in REFERENCE_DTYPES and int_magnitude(case, group) < 2.0**53


def _clip_unspecified(case: Case, group: Group) -> bool:
    """clip where the array API standard leaves the result unspecified (implementation-
    dependent): a bound above the other, a floating bound for integer input, an integer bound
    outside the input dtype's range
    (https://data-apis.org/array-api/latest/API_specification/generated/array_api.clip.html)."""
    if group.op != "clip":
        return False
    low, high = case.values.get("min"), case.values.get("max")
    try:
        if (
            low is not None
            and high is not None
            and bool(np.any(np.asarray(low) > np.asarray(high)))
        ):
            return True
    except (TypeError, ValueError):
        pass  # (shapes that do not broadcast: the libraries judge that)
    x = case.values.get("x")
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "iu":
        return False
    info = np.iinfo(x.dtype)
    for bound in (low, high):
        if bound is None:
            continue
        b = np.asarray(bound)
        if b.dtype.kind not in "iub":
            return True  # a floating bound for integer input
        if b.size and (int(b.max()) > info.max or int(b.min()) < info.min):
            return True
    return False


# Running sums and products: the sign of a zero depends on where the accumulator starts (a
# sum started at +0 turns a first -0.0 into +0.0, one started at the first element keeps it);
# IEEE 754 fixes no sum of one term, so their zero signs are not judged.
ACCUMULATIONS = re.compile(r"(nan)?cum(sum|prod)|cumulative_(sum|prod)|logcumsumexp")
# Operations that fill the positions they mask with zeros of their own: the array API
# standard (tril, triu) and numpy say those elements are "zeroed", without a sign, so a -0.0
# there (mindspore multiplies by a mask: -2.5 * 0) is no departure (a masked inf turned into
# NaN still is).
ZEROING = re.compile(r"tril|triu|diag|diagflat|diag_embed|matrix_band_part")
# Window functions of a sample count: fftfreq(n, d) divides by n * d, so n must be positive
# (numpy returns an empty array for a negative n without checking).
SAMPLE_COUNTS = frozenset({"fftfreq", "rfftfreq"})
ROUNDING_TO_DECIMALS = frozenset({"round", "around", "round_"})
# Complex arithmetic on infinities is fixed only where C99 Annex G and the array API standard
# give a function's special cases (special.COMPLEX, special.COMPLEX_VIA). Elsewhere (exp2 of
# inf+0j) the NaN and inf parts of an elementwise function follow how an implementation
# multiplies: numpy and std::complex multiply naively ((inf+0j)*(1+0j) is inf+nanj), Annex
# G's G.5.1 recovers the infinity; both are conforming C, so those masks are not judged.
COMPLEX_STANDARDIZED = frozenset(special.COMPLEX) | frozenset(special.COMPLEX_VIA)
# numpy.partition documents "the order of all elements in the partitions is undefined": two
# right answers differ position by position, so only shapes and dtypes are judged.
UNORDERED_PARTITIONS = frozenset({"partition", "argpartition"})
# Losses whose target is a probability distribution: a negative target is outside the
# function's domain (torch.nn.functional.kl_div documents ``target`` as probabilities), and
# every library's answer to log(negative) is an artefact.
PROBABILITY_TARGETS = frozenset({"kl_div"})


# Variances with a correction (ddof): N - correction must be positive; numpy warns "Degrees of
# freedom <= 0" and divides by zero or a negative count, and every answer is an artefact.
DEGREES_OF_FREEDOM = frozenset({"std", "var", "nanstd", "nanvar"})


def _no_degrees_of_freedom(case: Case) -> bool:
    """Whether a variance's correction leaves no degrees of freedom in some reduction."""
    x, correction = case.values.get("x"), case.values.get("correction")
    if not isinstance(x, np.ndarray) or not isinstance(correction, int | float | np.number):
        return False
    if not math.isfinite(float(correction)):
        return False  # (a NaN or infinite correction: the libraries judge that)
    axis = case.values.get("axis")
    try:
        axes = range(x.ndim) if axis is None else np.atleast_1d(axis).tolist()
        count = math.prod(x.shape[int(a)] for a in axes)
    except (IndexError, TypeError, ValueError):
        return False  # (an axis out of range: the libraries judge that)
    return count > 0 and count - correction <= 0


# Pooling with ceil_mode: the last window may start past the input. torch documents that it
# drops such a window ("sliding windows that start in the right padded region are ignored");
# mxnet's pooling_convention="full" and paddle keep it (empty). Where the two conventions
# give different lengths, the output shape is the convention's, not a departure.
CEIL_MODE_POOLING = re.compile(r"(max|avg)_pool[123]d\[ceil_mode\]")


def _ceil_mode_conventions_differ(case: Case, group: Group) -> bool:
    """Whether a ceil_mode pooling case has a last window that starts past the input in some
    spatial dimension (ceil((n - k) / s) windows after the first): torch drops it, the full
    convention keeps it."""
    if CEIL_MODE_POOLING.fullmatch(group.id) is None:
        return False
    x, k, s = case.values.get("x"), case.values.get("kernel_size"), case.values.get("stride")
    if not isinstance(x, np.ndarray) or x.ndim < 3:
        return False
    sizes = x.shape[2:]
    try:
        ks = [int(v) for v in np.broadcast_to(np.asarray(k), (len(sizes),))]
        ss = [int(v) for v in np.broadcast_to(np.asarray(s if s is not None else k), (len(sizes),))]
    except (TypeError, ValueError):
        return False
    for n, kk, st in zip(sizes, ks, ss, strict=True):
        if st <= 0 or n < kk:
            continue
        full = -(-(n - kk) // st) + 1
        if (full - 1) * st >= n:  # the last window starts past the input: torch drops it
            return True
    return False


def _transform_without_axes(group: Group, arrays: Sequence[np.ndarray]) -> bool:
    """A Fourier transform of a 0-d array: there is no axis to transform, and no convention
    for it (numpy returns the input as it is, real; torch a complex copy; mindspore refuses),
    so only a dead process is blamed."""
    return group.family == "fft" and bool(arrays) and arrays[0].ndim == 0


def _outside_domain(case: Case, group: Group) -> bool:
    """A call outside the function's domain: a probability target holding a negative value
    (:data:`PROBABILITY_TARGETS`), a sample count below one (:data:`SAMPLE_COUNTS`), a
    geometric sequence between ends of opposite signs."""
    if group.op == "geomspace":
        # a geometric sequence between a negative and a positive end has no real terms
        # (numpy computes log(stop / start) and fills NaN without checking)
        start, stop = case.values.get("start"), case.values.get("stop")
        if isinstance(start, int | float) and isinstance(stop, int | float):
            return start * stop < 0
        return False
    if group.op in SAMPLE_COUNTS:
        n = case.values.get("n")
        return isinstance(n, int | np.integer) and int(n) <= 0
    if group.op in DEGREES_OF_FREEDOM:
        return _no_degrees_of_freedom(case)
    if group.op not in PROBABILITY_TARGETS or case.values.get("log_target") is True:
        return False
    arrays = array_inputs(case, group)
    target = case.values.get("target", arrays[1] if len(arrays) > 1 else None)
    if not isinstance(target, np.ndarray):
        return False
    with np.errstate(invalid="ignore"):  # a NaN target is no negative probability
        return bool(np.any(np.asarray(target) < 0))


def _guarded(
    judge_fn: Callable[Concatenate[Case, P], Replayed],
) -> Callable[Concatenate[Case, P], Replayed]:
    """Where the judge itself fails on a case (a defect in xamt, not in a library), the case
    comes back unjudged with the error in ``failed``, so that one case never stops a
    campaign, a reproduction or a triage."""

    @functools.wraps(judge_fn)
    def guarded(case: Case, *args: P.args, **kwargs: P.kwargs) -> Replayed:
        try:
            return judge_fn(case, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - any defect of the judge; said, never lost
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            where = f"{Path(frame.filename).name}:{frame.lineno}"
            given = dict(zip(("group", "outcomes", "reference"), args, strict=False)) | kwargs
            outcomes: Mapping[str, Outcome] = given.get("outcomes", {})  # type: ignore[assignment]
            return Replayed(
                case=case,
                outcomes=dict(outcomes),
                reference=given.get("reference"),  # type: ignore[arg-type]
                judgement=Judgement(blames=(), support={}),
                tags=(),
                signed=(),
                failed=f"{type(exc).__name__}: {str(exc)[:300]} (at {where})",
            )

    return guarded


@_guarded
def judge_case(
    case: Case,
    group: Group,
    outcomes: Mapping[str, Outcome],
    reference: Outcome | None,
    trigger: str | None = None,
    known: Sequence[KnownDifference] | None = None,
) -> Replayed:
    """Judge one case's outcomes and sign the blames (trigger: computed from the tags).

    A deliberate refusal (a support gap, no bug) is signed too where a known difference
    names it (``known``, default the shipped baseline): torch's ZeroDivisionError for an
    integer remainder by zero is a documented policy the report lists with its link.

    ``reference``: numpy's answer on the float64 upcast input; for a group without numpy,
    its formula's (:mod:`xamt.oracle.formulas`) is computed here."""
    tags = tuple(input_classes(case, group))
    nan_parameter = any(
        isinstance(v, float | np.floating) and v != v
        for role, v in case.values.items()
        if role not in array_roles(group)
    )
    open_positions = None
    judged = outcomes  # what the judge sees: the outcomes, or their masks where loose
    # (a NaN parameter leaves a definition to the min/max it uses: fmin(0, NaN) is 0, IEEE
    # minimum NaN; celu(x, alpha=NaN) has no one answer)
    if reference is None and group.reference and not nan_parameter and needs_reference(case, group):
        upcast_values = upcast(case.values)
        computed = formulas.evaluate(group.reference, upcast_values)
        if computed is not None:
            reference = Outcome(
                library="numpy",
                api=f"xamt.oracle.formulas.{group.reference}",
                status="ok",
                value=computed[0],
            )
            open_positions = computed[1]
            loose = formulas.loose_positions(group.reference, upcast_values)
            if loose is not None and loose.any():
                judged, reference = _masks_only(dict(outcomes), reference, loose)
    arrays = array_inputs(case, group)
    formula_reference = open_positions is not None
    if not formula_reference and set(group.roles) == {"x"}:
        open_positions = formulas.numpy_limits(group.op, case.values.get("x"))
    if group.op in EXACT_INTEGER_OPS:
        open_positions = _beyond_integer_range(group.op, arrays)
    # the standard's special cases hold for the plain function: no extra parameters
    plain = group.family == "elementwise" and set(group.roles) <= set(ARRAY_ROLES)
    op = group.op if plain else ""
    floating = case.dtype if case.dtype in FLOATING_DTYPES else None
    judgement = judge(
        judged,
        reference,
        op=op,
        inputs=arrays if op else (),
        input_dtype=floating,
        exclude={
            lib for lib, api in case.apis.items() if not accepts(group, api, case.dtype, tags)
        },
        invalid="out-of-range-axis" in tags
        or _clip_unspecified(case, group)
        or _outside_domain(case, group)
        or _ceil_mode_conventions_differ(case, group)
        or _transform_without_axes(group, arrays),
        signed_zeros=group.family in SIGNED_ZERO_FAMILIES
        and ACCUMULATIONS.fullmatch(group.op) is None
        and ZEROING.fullmatch(group.op) is None,
        int_inputs=[a for a in arrays if a.dtype.kind in "iu"],
        judge_values=not (
            (
                group.family == "fft"
                or group.family in NONFINITE_UNJUDGED_FAMILIES
                or NONFINITE_UNJUDGED.fullmatch(group.op) is not None
            )
            and any(a.dtype.kind in "fc" and not np.isfinite(a).all() for a in arrays)
        )
        and group.op not in UNORDERED_PARTITIONS
        # differences past the integer dtype's range: numpy computes them in that dtype and
        # wraps (unwrap of int32 [INT_MIN, 1] then gives a float64 +2.1e9), what a library
        # delegating to numpy repeats; no result is evidence of a defect there
        and not (
            DIFFERENCES.fullmatch(group.op) is not None
            and _may_overflow(group, arrays, case.values.get("n"))
        )
        and not (
            # round(x, decimals) in a 16-bit float: x * 10**decimals is rounded to the dtype
            # first (bfloat16's 8 bits make 33.44 into 33.5), so results differ by a whole
            # unit of the last decimal by the dtype, not by a defect
            group.op in ROUNDING_TO_DECIMALS
            and case.dtype in ("float16", "bfloat16")
            and case.values.get("decimals") not in (None, 0)
        )
        and not (
            # a sum of float32 values near +-FLT_MAX cancels to anything: its condition
            # number, not the library, decides the digits (and whether it overflows); a
            # transform is such a sum (irfft of -DBL_MAX: torch's finite -4.5e307 is right
            # where numpy's 2 * x overflows first)
            group.family in (*AGGREGATES, "fft")
            and case.dtype in FLOATING_DTYPES
            and bool({"dtype-max", "dtype-min"} & set(tags))
        ),
        int_overflow=group.family in AGGREGATES
        and ("int-overflow" in tags or _may_overflow(group, arrays)),
        nan_parameter=nan_parameter,
        open_positions=open_positions,
        reference_signs=not formula_reference,
        nan_input="nan" in tags,
        infinity_masks=not (
            op
            and op not in COMPLEX_STANDARDIZED
            and any(a.dtype.kind == "c" and np.isinf(a).any() for a in arrays)
        ),
        normwise=group.family in dlcore.AGGREGATE_FAMILIES,
    )
    chosen = trigger if trigger is not None else trigger_of(tags)
    signed = tuple(sign(case, group, b, chosen) for b in judgement.blames)
    if judgement.refusals:
        baseline = default_known() if known is None else known
        refusals = (sign(case, group, b, chosen) for b in judgement.refusals)
        signed += tuple(
            s
            for s in refusals
            if classify_blame(baseline, s, case, group)[0] == "documented-difference"
        )
    return Replayed(
        case=case,
        outcomes=dict(outcomes),
        reference=reference,
        judgement=judgement,
        tags=tags,
        signed=signed,
    )


@dataclass
class Submitted:
    """Cases handed to the pool (:meth:`Replay.submit`), to be collected later."""

    replay: Replay
    cases: list[Case]
    ticket: int
    slots: list[list[tuple[str, int]]]
    ref_slots: list[int | None]

    def outcomes(self) -> tuple[list[dict[str, Outcome]], list[Outcome | None]]:
        results = self.replay.pool.collect(self.ticket)
        outcomes = [{lib: results[lib][i] for lib, i in mine} for mine in self.slots]
        references = [results["numpy"][r] if r is not None else None for r in self.ref_slots]
        return outcomes, references

    def case_of(self, library: str, slot: int) -> int:
        """The index of the case whose ``library`` call has this place in the pool's run."""
        for i, mine in enumerate(self.slots):
            if (library, slot) in mine:
                return i
        raise KeyError((library, slot))

    def withdraw(self, case: int, library: str) -> None:
        """Leave ``library``'s call for the ``case``-th case out, if it is not yet sent (its
        outcome is then ``withdrawn``; see :meth:`WorkerPool.withdraw`)."""
        for lib, index in self.slots[case]:
            if lib == library:
                self.replay.pool.withdraw(self.ticket, lib, index)

    def collect(self) -> list[Replayed]:
        outcomes, references = self.outcomes()
        return [
            judge_case(c, self.replay.groups[c.group], o, r, known=self.replay.known)
            for c, o, r in zip(self.cases, outcomes, references, strict=True)
        ]


class Replay:
    """Runs cases of ``groups`` on a started pool."""

    def __init__(
        self,
        pool: WorkerPool,
        groups: Mapping[str, Group] | Sequence[Group],
        known: Sequence[KnownDifference] | None = None,
    ) -> None:
        self.pool = pool
        self.known = known  # the known differences that name documented refusals
        self.groups: dict[str, Group] = (
            dict(groups) if isinstance(groups, Mapping) else {g.id: g for g in groups}
        )
        self.members: dict[tuple[str, str], Member] = {
            (g.id, m.api): m for g in self.groups.values() for m in g.members
        }

    def member(self, case: Case, lib: str) -> Member:
        return self.members[(case.group, case.apis[lib])]

    def submit(self, cases: Sequence[Case]) -> Submitted:
        """Queue cases on every library (and the reference) without waiting for them."""
        calls: dict[str, list[Call]] = {}
        slots: list[list[tuple[str, int]]] = []
        ref_slots: list[int | None] = []
        for case in cases:
            mine = []
            for lib, api in case.apis.items():
                calls.setdefault(lib, [])
                mine.append((lib, len(calls[lib])))
                calls[lib].append(
                    bind(self.members[(case.group, api)], case.values, seed=case.seed)
                )
            slots.append(mine)
            ref = None
            np_api = case.apis.get("numpy")
            group = self.groups[case.group]
            if np_api and needs_reference(case, group) and "numpy" in self.pool.workers:
                ref = len(calls["numpy"])
                calls["numpy"].append(bind(self.members[(case.group, np_api)], upcast(case.values)))
            ref_slots.append(ref)
        return Submitted(
            replay=self,
            cases=list(cases),
            ticket=self.pool.submit(calls),
            slots=slots,
            ref_slots=ref_slots,
        )

    def run(self, cases: Sequence[Case]) -> list[Replayed]:
        """Run, judge and sign ``cases``; wait for all of them."""
        return self.submit(cases).collect()


def upcast(values: Mapping[str, Any]) -> dict[str, Any]:
    """The same values in float64, complex in complex128 (for the reference run)."""

    def up(v: Any) -> Any:
        if isinstance(v, BFloat16):
            return v.values.astype(np.float64)
        if isinstance(v, np.ndarray) and v.dtype.kind in "fiu":
            return v.astype(np.float64)
        if isinstance(v, np.ndarray) and v.dtype.kind == "c":
            return v.astype(np.complex128)
        if isinstance(v, list):
            return [up(x) for x in v]
        return v

    return {k: up(v) for k, v in values.items()}


# --------------------------------------------------------------------------------------------
# Triggers by necessity


def neutralized(case: Case, group: Group, trigger: str) -> Case | None:
    """``case`` without the input class ``trigger`` (special values replaced by 1, 0-d arrays
    made 1-d, axes and parameters back to canonical values); None if it cannot be removed."""
    values = dict(case.values)
    roles = array_roles(group)
    changed = False

    def arrays() -> Iterator[tuple[str, int | None, np.ndarray]]:
        for role in roles:
            v = values.get(role)
            if isinstance(v, list):
                for i, item in enumerate(v):
                    yield role, i, item.values if isinstance(item, BFloat16) else item
            elif v is not None:
                yield role, None, v.values if isinstance(v, BFloat16) else v

    def put(role: str, i: int | None, arr: np.ndarray) -> None:
        nonlocal changed
        wrapped: Any = BFloat16(arr.astype(np.float32)) if case.dtype == "bfloat16" else arr
        if i is None:
            values[role] = wrapped
        else:
            items = list(values[role])
            items[i] = wrapped
            values[role] = items
        changed = True

    masks: dict[str, Callable[[np.ndarray], np.ndarray]] = {
        "nan": np.isnan,
        "inf": np.isinf,
        "neg-zero": lambda a: (a == 0) & np.signbit(a),
        "subnormal": lambda a: (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny),
    }
    for k, (role, i, arr) in enumerate(list(arrays())):
        if not isinstance(arr, np.ndarray):
            continue
        new = None
        if trigger in masks and arr.dtype.kind in "fc":
            parts = (arr.real, arr.imag) if arr.dtype.kind == "c" else (arr,)
            hit = np.zeros(arr.shape, dtype=bool)
            for part in parts:
                hit |= masks[trigger](part)
            if hit.any():
                new = arr.copy()
                new[hit] = 1
        elif trigger == "dtype-limit" and arr.dtype.kind in "iufc":
            info = np.iinfo(arr.dtype) if arr.dtype.kind in "iu" else np.finfo(arr.dtype)
            parts = (arr.real, arr.imag) if arr.dtype.kind == "c" else (arr,)
            hit = np.zeros(arr.shape, dtype=bool)
            with np.errstate(invalid="ignore"):
                for part in parts:
                    hit |= (part >= info.max) | (part <= info.min)
            if hit.any():
                new = arr.copy()
                new[hit] = 1
        elif trigger == "zero-divisor" and k == 1 and arr.dtype.kind != "b":
            hit = arr == 0
            if hit.any():
                new = arr.copy()
                new[hit] = 1
        elif trigger == "empty" and arr.size == 0:
            new = np.ones(tuple(max(n, 1) for n in arr.shape), dtype=arr.dtype)
        elif trigger == "scalar" and arr.ndim == 0:
            new = arr.reshape(1)
        elif trigger == "kernel-beyond-input" and role == "kernel":
            new = _fit_kernel(arr, values.get("x"))
        if new is not None:
            put(role, i, new)
    if trigger == "kernel-beyond-input" and isinstance(values.get("kernel_size"), int):
        x = values.get("x")
        x = x.values if isinstance(x, BFloat16) else x
        if isinstance(x, np.ndarray) and x.ndim >= 3 and min(x.shape[2:]) > 0:
            values["kernel_size"] = min(values["kernel_size"], min(x.shape[2:]))
            changed = True
    if trigger == "out-of-range-axis" and "axis" in values:
        values["axis"] = 0 if "axis" in group.roles else None
        if values["axis"] is None:
            del values["axis"]
        changed = True
    if trigger in ("param-boundary", "out-of-range-index"):
        for role in group.roles:
            if role in roles or role in ("axis", "keepdims") or role not in values:
                continue
            canonical = canonical_param(group, role, bool(roles))
            if trigger == "out-of-range-index" and isinstance(values[role], np.ndarray):
                first = next(arrays(), None)
                n = first[2].shape[0] if first is not None and first[2].ndim else 1
                values[role] = np.clip(values[role], 0, max(n - 1, 0))
                changed = True
            elif trigger == "param-boundary" and not isinstance(values[role], np.ndarray):
                values[role] = canonical
                changed = True
    return dataclasses.replace(case, values=values) if changed else None


def _fit_kernel(kernel: np.ndarray, x: Any) -> np.ndarray | None:
    """A convolution kernel cut to the input's spatial size (None where it already fits)."""
    x = x.values if isinstance(x, BFloat16) else x
    if not isinstance(x, np.ndarray) or x.ndim != kernel.ndim or x.ndim < 3:
        return None
    fit = tuple(max(1, min(k, s)) for k, s in zip(kernel.shape[2:], x.shape[2:], strict=True))
    if fit == kernel.shape[2:]:
        return None
    return np.ascontiguousarray(kernel[(slice(None), slice(None), *(slice(0, f) for f in fit))])


@functools.cache
def default_known() -> list[KnownDifference]:
    """The shipped known-differences baseline, read once."""
    return load_known()


def classify_blame(
    known: Sequence[KnownDifference], signed: Signed, case: Case, group: Group
) -> tuple[Classification, KnownRef | None]:
    """Classify one signed blame against the known differences (a split stays a split)."""
    blame = signed.blame
    facts = Facts(
        kind=blame.kind,
        library=blame.library,
        api=case.apis.get(blame.library, ""),
        op=group.op,
        group=group.id,
        dtype=case_dtype(case, group),
        trigger=signed.trigger,
        error=normalize_message(blame.error),
        output=blame.detail,
    )
    return classify(known, facts, split=blame.split)


def finding_of(
    signed: Signed, replayed: Replayed, group: Group, known: Sequence[KnownDifference]
) -> Finding:
    """The finding one signed blame of a replayed case makes: blamed, signed, classified,
    with the case and what each library did with it (not yet reproduced)."""
    case = replayed.case
    blame = signed.blame
    classification, entry = classify_blame(known, signed, case, group)
    return Finding(
        signature=signed.signature,
        key=signed.key,
        kind=blame.kind,
        classification=classification,
        severity=SEVERITY[blame.family],
        confidence=blame.confidence,
        library=blame.library,
        callable=signed.callable,
        group=case.group,
        apis=dict(case.apis),
        trigger=signed.trigger,
        input_classes=replayed.tags,
        dtype=case_dtype(case, group),
        detail=blame.detail,
        error=blame.error,
        case=case_to_jsonable(case),
        outputs={lib: outcome_summary(o) for lib, o in replayed.outcomes.items()},
        known_difference=entry,
    )
