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
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Concatenate, ParamSpec

import numpy as np

from xamt import formulas
from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.gradients import differentiable
from xamt.catalog.model import ARRAY_ROLES, Group, Member
from xamt.catalog.normalize import canonical_param, size_roles
from xamt.catalog.ops import traits_of
from xamt.findings import GRADIENT, SEVERITY, Classification, Finding, KnownRef
from xamt.inputs.draw import accepts, array_roles
from xamt.inputs.tags import input_classes
from xamt.known import Facts, KnownDifference, classify, load_known
from xamt.oracle import checks, gradient
from xamt.oracle.signature import canonical_callable, normalize_message, signature_of
from xamt.oracle.verdict import Blame, Judgement, Terms, judge
from xamt.outcomes import outcome_summary
from xamt.serialize import case_to_jsonable
from xamt.types import Call, Case, Outcome
from xamt.workers.pool import DEFAULT_MEMORY_CAP, WorkerPool
from xamt.workers.protocol import DTYPE_NAMES, BFloat16

# Input dtypes whose cases also run numpy on the float64 (complex128) upcast input, as the
# reference: low-precision floats and complex, and integers (whose exact results it gives
# where they fit the integer dtype).
INTEGER_DTYPES = tuple(name for name in DTYPE_NAMES if name.startswith(("int", "uint")))
# Every numeric dtype: float64 and complex128 inputs too, where numpy's own answer is the
# reference (numpy itself is judged there by the standard's special cases only), which a 3-2
# vote cannot overrule
REFERENCE_DTYPES = tuple(name for name in DTYPE_NAMES if name != "bool")
# Seconds numpy may spend on one gradient case's finite-difference probes (four float64 calls
# per input element): past it the rest are not made, and those positions have no reference.
# numpy.round with decimals=2**31-1 took 1.9 s a call, 64 calls for a (4, 4) input.
PROBE_SECONDS = 2.0
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


def triggers_in(tags: Sequence[str]) -> list[str]:
    """The trigger classes ``tags`` hold, most specific first."""
    return [t for t, members in TRIGGER_TAGS.items() if any(m in tags for m in members)]


def trigger_of(tags: Sequence[str]) -> str:
    """The first trigger class among ``tags``, else ``"ordinary"``."""
    return next(iter(triggers_in(tags)), ORDINARY)


def hang_trigger(tags: Sequence[str]) -> str:
    """The trigger of a call that ran out of time, which is not tried by necessity (each try
    would wait a deadline): a parameter at its boundary where the case holds one (a size, a
    count or a number of decimals sets the work a call does: mindspore.numpy.around computes
    ``10 ** 2147483647`` whatever the elements), else :func:`trigger_of`."""
    return "param-boundary" if "param-boundary" in tags else trigger_of(tags)


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
    # a gradient case's reference at the finite-difference probes (xamt.oracle.gradient):
    # numpy's outcomes on the perturbed float64 inputs, in the order of gradient.probes
    probes: tuple[Outcome, ...] = ()
    # a gradient case's blames as the gradient oracle gave them, with the position each
    # names as data (GradientBlame.check): what a short gradient repro asserts
    gradients: tuple[gradient.GradientBlame, ...] = ()

    def signatures(self) -> set[str]:
        return {s.signature for s in self.signed}

    @property
    def decided(self) -> tuple[Signed, ...]:
        """The signed blames something decides (not the questions nothing decides)."""
        return tuple(s for s in self.signed if not s.blame.question)

    @property
    def questions(self) -> tuple[Signed, ...]:
        """The signed blames no standard, reference or documentation decides."""
        return tuple(s for s in self.signed if s.blame.question)

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


def _exact_integer_reference(
    case: Case, outcomes: Mapping[str, Outcome], group: Group
) -> Outcome | None:
    """numpy's own integer answer where the case holds integers beyond 2**53: exact integer
    arithmetic, which the float64 reference cannot give (INT64_MAX rounds to 2**63 there) and
    which a vote of libraries computing through double must not overrule (mindspore and mxnet
    round int64 through double: around(INT64_MAX) comes back as INT64_MIN in both). Only an
    integer array counts (a floating answer is numpy's own rounding)."""
    mine = outcomes.get("numpy")
    if case.dtype not in INTEGER_DTYPES or mine is None or mine.status != "ok":
        return None
    if not isinstance(mine.value, np.ndarray) or mine.value.dtype.kind not in "iu":
        return None
    return mine if int_magnitude(case, group) >= 2.0**53 else None


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


def view_of(
    case: Case, group: Group, tags: Sequence[str], *, nan_parameter: bool = False
) -> checks.View:
    """What the named checks read of ``case``."""
    # the standard's special cases hold for the plain function: no extra parameters
    plain = group.family == "elementwise" and set(group.roles) <= set(ARRAY_ROLES)
    return checks.View(
        values=case.values,
        roles=group.roles,
        dtype=case.dtype,
        tags=frozenset(tags),
        arrays=tuple(array_inputs(case, group)),
        plain_op=group.op if plain else "",
        params=group.params,
        nan_parameter=nan_parameter,
        componentwise=any(t.compare == "componentwise" for t in traits_of(group)),
    )


def _sorted(outcome: Outcome) -> Outcome:
    """An outcome whose array result lists values in no documented order, sorted along its
    last axis (complex values by real part, then imaginary; NaN last)."""
    value = outcome.value
    if outcome.status != "ok" or not isinstance(value, np.ndarray) or value.ndim == 0:
        return outcome
    return dataclasses.replace(outcome, value=np.sort(value, axis=-1))


def equated(
    view: checks.View, group: Group, outcomes: Mapping[str, Outcome]
) -> Mapping[str, Outcome]:
    """The outcomes with the second of two standing answers read as the first (NaN), where
    the group's traits name such positions (sinc's limit 0 at an infinite input)."""
    rules = [checks.EQUATES[t.equates] for t in traits_of(group) if t.equates]
    if not rules:
        return outcomes
    out = dict(outcomes)
    for lib, o in outcomes.items():
        if o.status != "ok" or not isinstance(o.value, np.ndarray):
            continue
        for rule in rules:
            where = rule(view, o.value)
            if where is not None and where.any():
                out[lib] = o = dataclasses.replace(o, value=np.where(where, np.nan, o.value))
    return out


def terms_of(
    case: Case,
    group: Group,
    view: checks.View,
    *,
    formula_positions: np.ndarray | None = None,
) -> Terms:
    """What ``case`` may be judged on: its group's traits (``xamt/catalog/data/ops.toml``)
    whose conditions hold on it (``view``, :func:`view_of`), read through the named checks
    of :mod:`xamt.oracle.checks`.

    ``formula_positions``: where the group's formula reference leaves results open (None
    without a formula reference; then the traits' position rules apply)."""
    arrays, plain, tags = view.arrays, bool(view.plain_op), view.tags
    traits = traits_of(group)
    invalid = "out-of-range-axis" if "out-of-range-axis" in tags else ""
    invalid = invalid or next(
        (t.name for t in traits if t.domain and checks.DOMAINS[t.domain](view)), ""
    )
    openings = tuple(t for t in traits if t.opens and checks.CONDITIONS[t.when](view, t.bound))
    positions = formula_positions
    if formula_positions is None:
        for t in (t for t in traits if t.positions):
            found = checks.POSITIONS[t.positions](view, t.function)
            if found is not None:
                positions = found if positions is None else positions | found
    return Terms(
        op=view.plain_op,
        inputs=arrays if plain else (),
        input_dtype=case.dtype if case.dtype in checks.FLOATING_DTYPES else None,
        exclude=frozenset(
            lib for lib, api in case.apis.items() if not accepts(group, api, case.dtype, tags)
        ),
        invalid=invalid,
        int_inputs=tuple(a for a in arrays if a.dtype.kind in "iu"),
        openings=openings,
        nan_parameter=view.nan_parameter,
        open_positions=positions,
        reference_signs=formula_positions is None,
        nan_input="nan" in tags,
        normwise=any(t.compare == "normwise" for t in traits),
    )


def _formula_reference(
    case: Case, group: Group, outcomes: Mapping[str, Outcome]
) -> tuple[Outcome | None, np.ndarray | None, Mapping[str, Outcome]]:
    """The group's float64 formula reference for ``case`` (where it has one and can take the
    case), the positions it leaves open, and the outcomes as the judge sees them (only NaN,
    inf or finite at the formula's ill-conditioned positions). (None, None, outcomes) else."""
    if not group.reference or not needs_reference(case, group):
        return None, None, outcomes
    upcast_values = upcast(case.values)
    computed = formulas.evaluate(group.reference, upcast_values)
    if computed is None:
        return None, None, outcomes
    reference = Outcome(
        library="numpy",
        api=f"xamt.formulas.{group.reference}",
        status="ok",
        value=computed[0],
    )
    loose = formulas.loose_positions(group.reference, upcast_values)
    if loose is not None and loose.any():
        judged, reference = _masks_only(dict(outcomes), reference, loose)
        return reference, computed[1], judged
    return reference, computed[1], outcomes


# Bytes an element of an implied allocation takes at least (float64, int64).
ELEMENT_BYTES = 8


def beyond_memory_cap(case: Case, group: Group, cap: int = DEFAULT_MEMORY_CAP) -> bool:
    """Whether a size parameter of ``case`` (a role that counts elements, ``size = true`` in
    ``data/roles.toml``) asks for more elements than the worker's memory cap holds
    (``eye(2**31 - 1)``): a worker that misses its deadline or hits the cap on such a call is
    doing what it was asked, allocating."""
    sizes = size_roles()
    return any(
        _elements(v) * ELEMENT_BYTES > cap for role, v in case.values.items() if role in sizes
    )


def _elements(value: Any) -> int:
    """The elements a size parameter asks for: a whole number, or the product of a shape's."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | np.integer):
        return abs(int(value))
    if isinstance(value, tuple | list) and all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) for v in value
    ):
        return math.prod(abs(int(v)) for v in value)
    return 0


def _without_allocations(outcomes: Mapping[str, Outcome]) -> Mapping[str, Outcome]:
    """The outcomes without the missed deadlines and memory-cap kills of a call that asks for
    more than the cap: the resource they show is the request's, no evidence of a defect (a
    crash still is)."""
    return {lib: o for lib, o in outcomes.items() if o.status not in ("hang", "resource")}


def _has_nan_parameter(case: Case, group: Group) -> bool:
    """Whether a scalar parameter of the case is NaN (``clip(x, max=nan)``)."""
    roles = array_roles(group)
    return any(
        isinstance(v, float | np.floating) and v != v
        for role, v in case.values.items()
        if role not in roles
    )


@_guarded
def judge_case(
    case: Case,
    group: Group,
    outcomes: Mapping[str, Outcome],
    reference: Outcome | None,
    trigger: str | None = None,
    known: Sequence[KnownDifference] | None = None,
    probes: Sequence[Outcome] = (),
) -> Replayed:
    """Judge one case's outcomes and sign the blames (trigger: computed from the tags).

    A deliberate refusal (a support gap, no bug) is signed too where a known difference
    names it (``known``, default the shipped baseline): torch's ZeroDivisionError for an
    integer remainder by zero is a documented policy the report lists with its link.

    ``reference``: numpy's answer on the float64 upcast input; for a group without numpy,
    its formula's (:mod:`xamt.formulas`) is computed here."""
    tags = tuple(input_classes(case, group))
    nan_parameter = _has_nan_parameter(case, group)
    judged: Mapping[str, Outcome] = outcomes  # the outcomes, or their masks where loose
    formula_positions = None
    # (a NaN parameter leaves a definition to the min/max it uses: fmin(0, NaN) is 0, IEEE
    # minimum NaN; celu(x, alpha=NaN) has no one answer)
    if reference is None and not nan_parameter:
        reference = _exact_integer_reference(case, outcomes, group)
    if reference is None and not nan_parameter:
        reference, formula_positions, judged = _formula_reference(case, group, outcomes)
    view = view_of(case, group, tags, nan_parameter=nan_parameter)
    terms = terms_of(case, group, view, formula_positions=formula_positions)
    judged = equated(view, group, judged)
    if any(t.compare == "unordered" for t in traits_of(group)):
        judged = {lib: _sorted(o) for lib, o in judged.items()}
        reference = _sorted(reference) if reference is not None else None
    if beyond_memory_cap(case, group):
        judged = _without_allocations(judged)
    judgement = judge(judged, reference, terms)
    chosen = trigger if trigger is not None else trigger_of(tags)
    signed = tuple(sign(case, group, b, chosen) for b in judgement.blames)
    gradients: list[gradient.GradientBlame] = []
    if case.grad:
        # a gradient blame's trigger is its oracle (reference, nonfinite, kink)
        with np.errstate(all="ignore"):  # NaN and inf results are the data here
            gradients = gradient_blames(case, group, outcomes, reference, probes, terms, judgement)
        signed += tuple(sign(case, group, gradient_blame(g), g.oracle) for g in gradients)
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
        probes=tuple(probes),
        gradients=tuple(gradients),
    )


def gradient_blames(
    case: Case,
    group: Group,
    outcomes: Mapping[str, Outcome],
    reference: Outcome | None,
    probes: Sequence[Outcome],
    terms: Terms,
    judgement: Judgement,
) -> list[gradient.GradientBlame]:
    """The gradient oracle's blames on a gradient case (:func:`gradient_blame` makes each a
    :class:`Blame`): libraries whose values were blamed, or whose API does not take the
    input, are not judged."""
    record = gradient.shipped().of(group)
    roles = gradient.wrt_roles(case.values, group.roles)
    if record is None or not roles:
        return []
    if reference is not None and not (reference.ok and gradient.finite_result(reference.value)):
        return []  # outside the domain (or the reference failed): no derivative to judge
    derivative = None
    if reference is not None:
        base = gradient.scalar(reference.value, case.seed)
        if probes:
            at = [gradient.scalar(o.value, case.seed) if o.ok else math.nan for o in probes]
        elif group.reference:
            up = upcast(case.values)
            at = []
            for probe in gradient.probes(case.values, roles):
                computed = formulas.evaluate(group.reference, gradient.probed(up, probe))
                at.append(gradient.scalar(computed[0], case.seed) if computed else math.nan)
        else:
            at = []
        if at and math.isfinite(base):
            derivative = gradient.finite_difference(case.values, roles, base, at)
    arrays = [gradient.array_of(case.values[r]) for r in roles]
    kinks = {
        r: gradient.kink_mask(a, record, [b for b in arrays if b is not a])
        for r, a in zip(roles, arrays, strict=True)
    }
    skip = {lib for b in judgement.blames for lib in b.library.split("+")} | set(terms.exclude)
    return gradient.judge_gradients(
        case.dtype,
        case.values,
        roles,
        outcomes,
        derivative,
        kinks,
        frozenset(skip),
        symmetric=record.symmetric,
        seed=case.seed,
        forward=reference.value if reference is not None else None,
    )


def gradient_blame(g: gradient.GradientBlame) -> Blame:
    """The gradient oracle's blame as the verdict's (signed with its oracle as trigger)."""
    return Blame(
        kind=GRADIENT,
        library=g.library,
        confidence=g.confidence,  # type: ignore[arg-type]
        detail=g.detail,
        question=g.question,
        basis=g.basis,
    )


@dataclass
class Submitted:
    """Cases handed to the pool (:meth:`Replay.submit`), to be collected later."""

    replay: Replay
    cases: list[Case]
    ticket: int
    slots: list[list[tuple[str, int]]]
    ref_slots: list[int | None]
    # per case, the numpy slots of its finite-difference probes (a gradient case)
    probe_slots: list[range] = dataclasses.field(default_factory=list)
    probes: list[tuple[Outcome, ...]] = dataclasses.field(default_factory=list)

    def outcomes(self) -> tuple[list[dict[str, Outcome]], list[Outcome | None]]:
        """Each case's outcomes and reference (its probes land in :attr:`probes`)."""
        results = self.replay.pool.collect(self.ticket)
        outcomes = [{lib: results[lib][i] for lib, i in mine} for mine in self.slots]
        references = [results["numpy"][r] if r is not None else None for r in self.ref_slots]
        self.probes = [tuple(results["numpy"][i] for i in slots) for slots in self.probe_slots]
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
            judge_case(c, self.replay.groups[c.group], o, r, known=self.replay.known, probes=p)
            for c, o, r, p in zip(self.cases, outcomes, references, self.probes, strict=True)
        ]


def case_misfit(case: Case, groups: Mapping[str, Group]) -> str:
    """Why a case read from a file or a store cannot be replayed against ``groups`` ("" when
    it fits): its group must be one of them, each library's API one of that group's members
    for that library, every value a role of the group (or an optional one of its members), and
    every array role given."""
    group = groups.get(case.group)
    if group is None:
        return f"its group {case.group!r} is not among the groups of this run"
    if not case.apis:
        return "it names no API"
    members = {(m.library, m.api) for m in group.members}
    for lib, api in sorted(case.apis.items()):
        if (lib, api) not in members:
            return f"{lib} API {api!r} is not a member of group {group.id!r}"
    taken = set(group.roles).union(*(m.optional for m in group.members))
    foreign = sorted(set(case.values) - taken)
    if foreign:
        return f"it gives {', '.join(foreign)}, not roles of group {group.id!r}"
    missing = [r for r in array_roles(group) if r not in case.values]
    if missing:
        return f"it lacks the input {', '.join(missing)} of group {group.id!r}"
    return ""


def case_binds(case: Case, group: Group) -> bool:
    """Whether every member ``case`` names can be called with its values (a shrinking pass
    may drop a value the group treats as optional that one member's signature requires)."""
    members = {m.api: m for m in group.members}
    for api in case.apis.values():
        member = members.get(api)
        if member is None:
            return False
        try:
            bind(member, case.values, seed=case.seed)
        except (KeyError, IndexError, TypeError, ValueError):
            return False
    return True


class Replay:
    """Runs cases of ``groups`` on a started pool."""

    def __init__(
        self,
        pool: WorkerPool,
        groups: Mapping[str, Group] | Sequence[Group],
        known: Sequence[KnownDifference] | None = None,
        *,
        all_gradients: bool = False,
    ) -> None:
        self.pool = pool
        self.known = known  # the known differences that name documented refusals
        # a gradient case asks every member for its gradient (the catalog's gradient check),
        # not only those the check kept (data/gradient_members.json)
        self.all_gradients = all_gradients
        self.groups: dict[str, Group] = (
            dict(groups) if isinstance(groups, Mapping) else {g.id: g for g in groups}
        )
        self.members: dict[tuple[str, str], Member] = {
            (g.id, m.api): m for g in self.groups.values() for m in g.members
        }

    def member(self, case: Case, lib: str) -> Member:
        return self.members[(case.group, case.apis[lib])]

    def binds(self, case: Case) -> bool:
        """Whether every member of ``case`` can be called with its values (as :meth:`submit`
        binds them)."""
        group = self.groups.get(case.group)
        return group is not None and case_binds(case, group)

    def submit(self, cases: Sequence[Case]) -> Submitted:
        """Queue cases on every library (and the reference) without waiting for them."""
        calls: dict[str, list[Call]] = {}
        slots: list[list[tuple[str, int]]] = []
        ref_slots: list[int | None] = []
        probe_slots: list[range] = []
        for case in cases:
            group = self.groups[case.group]
            roles = gradient.wrt_roles(case.values, group.roles) if case.grad else ()
            mine = []
            for lib, api in case.apis.items():
                calls.setdefault(lib, [])
                mine.append((lib, len(calls[lib])))
                member = self.members[(case.group, api)]
                call = bind(member, case.values, seed=case.seed)
                if roles and (self.all_gradients or api in differentiable(group)):
                    call = dataclasses.replace(call, grad=gradient.grad_keys(member, roles))
                calls[lib].append(call)
            slots.append(mine)
            ref = None
            probe = range(0)
            np_api = case.apis.get("numpy")
            if np_api and needs_reference(case, group) and "numpy" in self.pool.workers:
                member = self.members[(case.group, np_api)]
                up = upcast(case.values)
                ref = len(calls["numpy"])
                calls["numpy"].append(bind(member, up))
                if roles:
                    moved = [gradient.probed(up, p) for p in gradient.probes(case.values, roles)]
                    probe = range(len(calls["numpy"]), len(calls["numpy"]) + len(moved))
                    budget = (f"probes-{len(probe_slots)}", PROBE_SECONDS)
                    calls["numpy"] += [
                        dataclasses.replace(bind(member, values), budget=budget) for values in moved
                    ]
            ref_slots.append(ref)
            probe_slots.append(probe)
        return Submitted(
            replay=self,
            cases=list(cases),
            ticket=self.pool.submit(calls),
            slots=slots,
            ref_slots=ref_slots,
            probe_slots=probe_slots,
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


# Where a value class sits in one real array (the real and imaginary parts of a complex one
# are read alike): the positions :func:`neutralized` sets to 1.
CLASS_MASKS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "nan": np.isnan,
    "inf": np.isinf,
    "neg-zero": lambda a: (a == 0) & np.signbit(a),
    "subnormal": lambda a: (a != 0) & (np.abs(a) < np.finfo(a.dtype).tiny),
}


def neutralized(case: Case, group: Group, trigger: str) -> Case | None:
    """``case`` without the input class ``trigger`` (special values replaced by 1, 0-d arrays
    made 1-d, axes and parameters back to canonical values); None if it cannot be removed."""
    values = dict(case.values)
    roles = array_roles(group)
    changed = False
    for k, (role, i, arr) in enumerate(list(_arrays_of(values, roles))):
        if not isinstance(arr, np.ndarray):
            continue
        new = _neutral_array(arr, trigger, k, role, values.get("x"))
        if new is None:
            continue
        wrapped: Any = BFloat16(new.astype(np.float32)) if case.dtype == "bfloat16" else new
        if i is None:
            values[role] = wrapped
        else:
            items = list(values[role])
            items[i] = wrapped
            values[role] = items
        changed = True
    changed = _neutral_parameters(values, group, trigger, roles) or changed
    return dataclasses.replace(case, values=values) if changed else None


def _arrays_of(
    values: Mapping[str, Any], roles: Sequence[str]
) -> Iterator[tuple[str, int | None, np.ndarray]]:
    """The array inputs of a case: (role, index in a sequence role or None, the array)."""
    for role in roles:
        v = values.get(role)
        if isinstance(v, list):
            for i, item in enumerate(v):
                yield role, i, item.values if isinstance(item, BFloat16) else item
        elif v is not None:
            yield role, None, v.values if isinstance(v, BFloat16) else v


def _neutral_array(arr: np.ndarray, trigger: str, k: int, role: str, x: Any) -> np.ndarray | None:
    """The ``k``-th array input without the class ``trigger`` (None: it holds none)."""
    if trigger == "empty":
        return np.ones(tuple(max(n, 1) for n in arr.shape), arr.dtype) if arr.size == 0 else None
    if trigger == "scalar":
        return arr.reshape(1) if arr.ndim == 0 else None
    if trigger == "kernel-beyond-input":
        return _fit_kernel(arr, x) if role == "kernel" else None
    hit = np.zeros(arr.shape, dtype=bool)
    parts = (arr.real, arr.imag) if arr.dtype.kind == "c" else (arr,)
    if trigger in CLASS_MASKS and arr.dtype.kind in "fc":
        for part in parts:
            hit |= CLASS_MASKS[trigger](part)
    elif trigger == "dtype-limit" and arr.dtype.kind in "iufc":
        info = np.iinfo(arr.dtype) if arr.dtype.kind in "iu" else np.finfo(arr.dtype)
        with np.errstate(invalid="ignore"):
            for part in parts:
                hit |= (part >= info.max) | (part <= info.min)
    elif trigger == "zero-divisor" and k == 1 and arr.dtype.kind != "b":
        hit = arr == 0
    if not hit.any():
        return None
    new = arr.copy()
    new[hit] = 1
    return new


def _neutral_parameters(
    values: dict[str, Any], group: Group, trigger: str, roles: Sequence[str]
) -> bool:
    """Take ``trigger`` out of the case's parameters in place (a kernel size fitted to the
    input, an axis in range, indices clipped, parameters back to canonical values); whether
    anything changed."""
    changed = False
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
    if trigger not in ("param-boundary", "out-of-range-index"):
        return changed
    for role in group.roles:
        if role in roles or role in ("axis", "keepdims") or role not in values:
            continue
        if trigger == "out-of-range-index" and isinstance(values[role], np.ndarray):
            first = next(_arrays_of(values, roles), None)
            n = first[2].shape[0] if first is not None and first[2].ndim else 1
            values[role] = np.clip(values[role], 0, max(n - 1, 0))
            changed = True
        elif trigger == "param-boundary" and not isinstance(values[role], np.ndarray):
            values[role] = canonical_param(group, role, bool(roles))
            changed = True
    return changed


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
    view = functools.cache(lambda: view_of(case, group, input_classes(case, group)))
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
        holds=lambda name: checks.CONDITIONS[name](view(), ""),
    )
    classification, entry = classify(known, facts, split=blame.split)
    if classification == "suspected-bug" and blame.question:
        return "unspecified", None
    return classification, entry


def decided_by(blame: Blame, classification: Classification, entry: KnownRef | None) -> str:
    """What decides a blame: the documentation a known difference cites, the question no
    document decides, a dead process, the standard, the float64 reference, or a majority."""
    if entry is not None:
        return f"documentation: {entry.reason} ({entry.link})"
    if blame.question:
        return blame.basis or f"unspecified: {blame.question}"
    if blame.kind in ("crash", "hang", "resource"):
        return f"process: {blame.detail}"
    if blame.kind == "status" and blame.error and not blame.split:
        return f"process: an error inside {blame.library} ({blame.error})"
    if blame.split or classification == "split":
        return f"split: {blame.detail}"
    if blame.basis:
        return blame.basis
    if blame.confidence == "reference":
        return f"reference: {blame.detail}"
    return f"majority: {blame.detail}"


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
        decided_by=decided_by(blame, classification, entry),
        question=blame.question,
        case=case_to_jsonable(case),
        outputs={lib: outcome_summary(o) for lib, o in replayed.outcomes.items()},
        known_difference=entry,
    )
