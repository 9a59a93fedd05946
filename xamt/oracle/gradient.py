"""The gradient oracle: each library's vector-Jacobian product against a float64 finite
difference, kinks judged by the conventions the known differences record.

A gradient case (``Case.grad``) asks every library for the vector-Jacobian product of its
result for one cotangent (:func:`xamt.workers.protocol.cotangent`, the same numbers
everywhere) with respect to the case's floating array inputs (:func:`wrt_roles`). The
reference is the derivative of the scalar ``L(x) = <cotangent, f(x)>`` along each input
element, by central differences of the group's float64 reference (the numpy member on
the upcast input, or its formula) at two step sizes (:data:`STEPS`):

* the two must agree (:func:`finite_difference`, ``consistent``), or the position is not
  judged (a jump, roundoff);
* one-sided differences must agree with each other as the step shrinks (``smooth``); where
  they do not, the position is a *kink*: the operation is not differentiable there, so the
  derivative is a convention. The operation's declared kinks (``data/gradients.toml``) are
  kinks too, as are positions within :data:`KINK_DISTANCE` of them.

A library departs at a smooth position when its gradient differs from the reference beyond
the dtype's tolerance (:data:`RTOL`, relative to the gradient's largest magnitude) while
another library agrees with the reference there (oracle ``reference``; ``nonfinite`` when its
gradient is NaN or infinite where the reference is finite). At kinks a library that departs
from the others that agree is blamed with a question (oracle ``kink``): unspecified, unless a
known difference records the library's convention (documented). Libraries whose forward
values were blamed are not judged: a case whose values already differ is the value oracle's.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import tomllib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from xamt.catalog.model import ARRAY_ROLES, DL_ARRAY_ROLES, FAMILIES, CatalogError, Group, Member
from xamt.inputs.values import round_to_bfloat16
from xamt.tolerance import tolerance
from xamt.types import Case, Outcome
from xamt.workers.protocol import BFloat16, cotangent, tangent

GRADIENTS_PATH = Path(__file__).resolve().parent.parent / "catalog" / "data" / "gradients.toml"
# Relative steps of the two central differences (times max(1, |x|)).
STEPS = (1e-5, 1e-6)
# The most array elements one gradient case differentiates (each costs four reference calls).
MAX_ELEMENTS = 16
# The share of an operation-with-kinks' gradient cases that put one element on a kink.
KINK_SHARE = 0.25
# The largest input magnitude a gradient case differentiates: beyond it a step of 1e-6
# relative is past what a float64 difference of the result resolves (and the largest
# finite values overflow when stepped).
MAX_MAGNITUDE = 1e8
# How near a declared kink an input element counts as at it; ordinary gradient cases keep
# their inputs farther than this from every kink.
KINK_DISTANCE = 1e-3
# Gradients are compared relative to the largest reference magnitude of the input's gradient
# (normwise): a derivative computed in the dtype loses about this much.
RTOL = {"float64": 1e-6, "float32": 1e-3, "float16": 2e-2, "bfloat16": 8e-2}
# and absolutely, in units of the cotangent (whose numbers are 1/8 to 7/8): the value oracle's
# absolute tolerance (xamt.tolerance), since the backward carries the forward's rounding, which
# that tolerance accepts, into the gradient (a log_softmax over one element: exactly 0 in the
# reference, a rounding of exp and log in float32)
ATOL = {name: tolerance(name)[1] for name in RTOL}
FLOATING = tuple(RTOL)
# The dtypes whose forward and reverse modes are compared (see judge_gradients).
MODES_DTYPES = ("float32", "float64")
ORACLES = ("reference", "nonfinite", "kink", "modes")
KINK_QUESTION = (
    "The derivative at a point where the operation is not differentiable (a kink): any "
    "subgradient, or a one-sided derivative, is an answer no standard fixes"
)


# --------------------------------------------------------------------------------------------
# Reviewed data: which operations are differentiable, and their kinks


@dataclass(frozen=True, kw_only=True)
class OpGradient:
    """What the gradient oracle knows of one operation (``data/gradients.toml``)."""

    differentiable: bool = True
    kinks: tuple[float, ...] = ()  # input values where the derivative jumps
    ties: bool = False  # equal input elements are a kink (max, sort, median)
    # the input is a symmetric matrix: only derivatives along symmetric directions are
    # defined (one library reads one triangle, another symmetrizes the gradient)
    symmetric: bool = False
    reason: str = ""
    link: str = ""


@dataclass(frozen=True, kw_only=True)
class GradientData:
    families: frozenset[str]
    ops: dict[str, OpGradient] = field(default_factory=dict)

    def of(self, group: Group) -> OpGradient | None:
        """The group's record; None where its operation is not differentiable."""
        record = self.ops.get(group.op)
        if record is None:
            return OpGradient() if group.family in self.families else None
        return record if record.differentiable else None


def load_gradients(path: Path = GRADIENTS_PATH) -> GradientData:
    """Read and check the gradient data; every problem names the file and the entry."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: not a readable gradients file: {exc}") from None
    unknown = set(data) - {"differentiable", "op"}
    if unknown:
        raise CatalogError(f"{path}: unknown table(s) {sorted(unknown)}")
    families = data.get("differentiable", {}).get("families", [])
    bad = [f for f in families if f not in FAMILIES]
    if bad:
        raise CatalogError(f"{path}: differentiable.families: unknown {', '.join(bad)}")
    ops = {}
    for name, raw in dict(data.get("op", {})).items():
        where = f"{path}: op {name!r}"
        if not isinstance(raw, dict) or set(raw) - {
            "differentiable",
            "kinks",
            "ties",
            "symmetric",
            "reason",
            "link",
        }:
            raise CatalogError(
                f"{where}: fields are differentiable, kinks, ties, symmetric, reason, link"
            )
        for key in ("reason", "link"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise CatalogError(f"{where}: {key!r} is required (a non-empty string)")
        if not raw["link"].startswith("https://"):
            raise CatalogError(f"{where}: link must be an https URL")
        kinks = raw.get("kinks", [])
        if not isinstance(kinks, list) or not all(
            isinstance(k, int | float) and math.isfinite(k) for k in kinks
        ):
            raise CatalogError(f"{where}: kinks must be a list of finite numbers")
        ops[name] = OpGradient(
            differentiable=bool(raw.get("differentiable", True)),
            kinks=tuple(float(k) for k in kinks),
            ties=bool(raw.get("ties", False)),
            symmetric=bool(raw.get("symmetric", False)),
            reason=raw["reason"],
            link=raw["link"],
        )
    return GradientData(families=frozenset(families), ops=ops)


@functools.cache
def shipped() -> GradientData:
    return load_gradients()


# --------------------------------------------------------------------------------------------
# Which inputs a case differentiates


def array_of(value: Any) -> np.ndarray:
    """A differentiated input as a numpy array (bfloat16 as its float32 values)."""
    found = _array(value)
    assert found is not None
    return found


def _array(value: Any) -> np.ndarray | None:
    if isinstance(value, BFloat16):
        return value.values
    return value if isinstance(value, np.ndarray) else None


def wrt_roles(values: Mapping[str, Any], roles: Sequence[str]) -> tuple[str, ...]:
    """The roles a gradient case differentiates: the array roles among ``roles`` (a group's)
    holding a real floating array (not index or target arrays, not sequences)."""
    found = []
    for role in roles:
        if role not in ARRAY_ROLES and role not in DL_ARRAY_ROLES:
            continue
        value = values.get(role)
        if isinstance(value, BFloat16) or (
            isinstance(value, np.ndarray) and value.dtype.name in FLOATING
        ):
            found.append(role)
    return tuple(found)


def eligible(values: Mapping[str, Any], group: Group, data: GradientData | None = None) -> bool:
    """Whether a case can check gradients: a differentiable operation, floating inputs to
    differentiate, all finite, at most :data:`MAX_MAGNITUDE`, and few enough to difference
    element by element."""
    if (data or shipped()).of(group) is None:
        return False
    roles = wrt_roles(values, group.roles)
    arrays = [_array(values[r]) for r in roles]
    if not arrays or sum(a.size for a in arrays if a is not None) > MAX_ELEMENTS:
        return False
    with np.errstate(all="ignore"):
        return all(
            a is not None and a.size and np.isfinite(a).all() and np.abs(a).max() <= MAX_MAGNITUDE
            for a in arrays
        )


def grad_keys(member: Member, roles: Sequence[str]) -> tuple[str, ...]:
    """The argument keys (a position or a keyword) of ``member``'s call that hold ``roles``."""
    where = {role: str(i) for i, role in enumerate(member.args)}
    where.update({role: param for param, role in member.kwargs.items()})
    return tuple(where[r] for r in roles if r in where and where[r] not in member.encode)


# --------------------------------------------------------------------------------------------
# Kinks: declared points and ties


def kink_mask(
    array: np.ndarray, record: OpGradient, others: Sequence[np.ndarray] = ()
) -> np.ndarray:
    """The elements of one input at or within :data:`KINK_DISTANCE` of a declared kink (a
    point, or, for an operation with ties, another element of any differentiated input)."""
    x = array.astype(np.float64)
    near = np.zeros(x.shape, dtype=bool)
    for point in record.kinks:
        near |= np.abs(x - point) <= KINK_DISTANCE
    if record.ties:
        pool = np.concatenate([np.ravel(a).astype(np.float64) for a in (array, *others)])
        flat = np.ravel(x)
        gaps = np.abs(flat[:, None] - pool[None, :])
        close = (gaps <= KINK_DISTANCE).sum(axis=1) > 1  # itself, and another
        near |= close.reshape(x.shape)
    return near


def away_from_kinks(array: np.ndarray, record: OpGradient) -> np.ndarray:
    """``array`` with every element near a declared kink point moved 2 * KINK_DISTANCE
    beyond it (same dtype; ties are left to the finite difference to see)."""
    x = array.astype(np.float64)
    for point in record.kinks:
        near = np.abs(x - point) <= 2 * KINK_DISTANCE
        x = np.where(near, point + np.where(x >= point, 4, -4) * KINK_DISTANCE, x)
    return x.astype(array.dtype)


def gradient_case(case: Case, group: Group, rng: np.random.Generator) -> Case:
    """``case`` as a gradient case (``grad`` set) where it is :func:`eligible`, else as it is.
    An ordinary case's differentiated inputs are moved off the operation's declared kink
    points, then, in :data:`KINK_SHARE` of the cases of an operation with kinks, one element
    is put on a kink (a kink point, or another element's value where ties are kinks); a
    boundary case keeps its values (0, 1, the dtype's limits: often kinks themselves)."""
    record = shipped().of(group)
    if record is None or not eligible(case.values, group):
        return case
    values = dict(case.values)
    roles = wrt_roles(values, group.roles)
    if case.value_class != "ordinary":  # boundary values stay where they are, kinks or not
        return dataclasses.replace(case, grad=True)
    moved = {r: away_from_kinks(array_of(values[r]), record) for r in roles}
    if (record.kinks or record.ties) and rng.random() < KINK_SHARE:
        role = roles[int(rng.integers(len(roles)))]
        flat = moved[role].reshape(-1)
        pool = np.concatenate([np.ravel(moved[r]) for r in roles])
        if record.kinks and (not record.ties or rng.random() < 0.5):
            point = record.kinks[int(rng.integers(len(record.kinks)))]
        else:
            point = float(pool[int(rng.integers(pool.size))])
        flat[int(rng.integers(flat.size))] = point
    for role in roles:
        values[role] = (
            BFloat16(round_to_bfloat16(moved[role]))
            if isinstance(values[role], BFloat16)
            else moved[role]
        )
    return dataclasses.replace(case, values=values, grad=True)


# --------------------------------------------------------------------------------------------
# The finite-difference reference


@dataclass(frozen=True)
class Probe:
    """One perturbed reference input: ``role``'s element ``index`` moved by ``delta``."""

    role: str
    index: int
    delta: float


def probes(values: Mapping[str, Any], roles: Sequence[str]) -> list[Probe]:
    """The perturbations the reference evaluates, four per element: +-h at both steps."""
    found = []
    for role in roles:
        x = _array(values[role])
        assert x is not None
        for index, v in enumerate(np.ravel(x).astype(np.float64)):
            scale = max(1.0, abs(float(v)))
            for step in STEPS:
                found += [Probe(role, index, step * scale), Probe(role, index, -step * scale)]
    return found


def probed(values: Mapping[str, Any], probe: Probe) -> dict[str, Any]:
    """The float64 input of one probe (``values`` upcast, one element moved)."""
    x = _array(values[probe.role])
    assert x is not None
    moved = x.astype(np.float64).copy()
    flat = moved.reshape(-1)
    flat[probe.index] += probe.delta
    return {**values, probe.role: moved}


def scalar(value: Any, seed: int) -> float:
    """``<cotangent, value>`` over the floating leaves of a result, in float64 (integer,
    boolean and other leaves carry no derivative: jax's float0 tangents, indices)."""
    total = 0.0
    for k, leaf in enumerate(_leaves(value)):
        if isinstance(leaf, BFloat16):
            leaf = leaf.values
        elif isinstance(leaf, float | np.floating):  # a 0-d result that came back a number
            leaf = np.asarray(leaf, dtype=np.float64)
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
            total += float(np.sum(cotangent(leaf.shape, seed + k) * leaf.astype(np.float64)))
    return total


def finite_result(value: Any) -> bool:
    """Whether every floating leaf of a result is finite: a derivative exists only where the
    function's value does (log of a negative number has none to compare)."""
    for leaf in _leaves(value):
        if isinstance(leaf, BFloat16):
            leaf = leaf.values
        if isinstance(leaf, float | np.floating) and not math.isfinite(leaf):
            return False
        if isinstance(leaf, np.ndarray) and leaf.dtype.kind in "fc":
            with np.errstate(all="ignore"):
                if not np.isfinite(leaf).all():
                    return False
    return True


def overflowed(value: Any, reference: Any) -> bool:
    """Whether a floating leaf of a library's result is infinite where the reference's is
    finite (anywhere infinite, without a reference): an overflow in the tested dtype."""
    mine = [_floats(leaf) for leaf in _leaves(value)]
    theirs = [_floats(leaf) for leaf in _leaves(reference)] if reference is not None else []
    for k, a in enumerate(mine):
        if a is None:
            continue
        with np.errstate(all="ignore"):
            inf = np.isinf(a)
            if not inf.any():
                continue
            b = theirs[k] if k < len(theirs) else None
            if b is None or b.shape != a.shape or (inf & np.isfinite(b)).any():
                return True
    return False


def _floats(leaf: Any) -> np.ndarray | None:
    if isinstance(leaf, BFloat16):
        return leaf.values
    if isinstance(leaf, float | np.floating):
        return np.asarray(leaf, dtype=np.float64)
    if isinstance(leaf, np.ndarray) and leaf.dtype.kind == "f":
        return leaf
    return None


def _leaves(value: Any) -> Iterator[Any]:
    if isinstance(value, tuple | list):
        for item in value:
            yield from _leaves(item)
    else:
        yield value


@dataclass(frozen=True, kw_only=True)
class Derivative:
    """The reference derivative of ``L`` along each element of one input."""

    value: np.ndarray  # the central difference at the smaller step
    consistent: np.ndarray  # both steps agree: the reference holds
    smooth: np.ndarray  # one-sided differences agree as the step shrinks: no kink


def finite_difference(
    values: Mapping[str, Any],
    roles: Sequence[str],
    base: float,
    probe_values: Sequence[float],
) -> dict[str, Derivative]:
    """The reference derivatives from ``L`` at the input (``base``) and at each of
    :func:`probes` (``probe_values``, in the same order)."""
    found: dict[str, Derivative] = {}
    it = iter(probe_values)
    for role in roles:
        x = _array(values[role])
        assert x is not None
        n = x.size
        d = np.zeros((len(STEPS), n))
        jump = np.zeros((len(STEPS), n))
        size = np.zeros(n)
        for index, v in enumerate(np.ravel(x).astype(np.float64)):
            scale = max(1.0, abs(float(v)))
            for s, step in enumerate(STEPS):
                h = step * scale
                up, down = next(it), next(it)
                d[s, index] = (up - down) / (2 * h)
                jump[s, index] = abs((up - base) - (base - down)) / h
                size[index] = max(size[index], abs(up), abs(down), abs(base))
        with np.errstate(invalid="ignore", over="ignore"):
            finite = np.isfinite(d).all(axis=0) & np.isfinite(jump).all(axis=0)
            consistent = finite & (np.abs(d[0] - d[1]) <= 1e-4 * np.abs(d[1]) + 1e-8 * size)
            # a kink keeps its jump as the step shrinks; a smooth point's falls with the step
            kink = (jump[1] > 0.5 * jump[0]) & (jump[1] > 1e-6 * np.abs(d[1]) + 1e-8 * size)
        found[role] = Derivative(
            value=d[-1].reshape(x.shape),
            consistent=consistent.reshape(x.shape),
            smooth=(finite & ~kink).reshape(x.shape),
        )
    return found


# --------------------------------------------------------------------------------------------
# The verdict


@dataclass(frozen=True, kw_only=True)
class GradientCheck:
    """What a script needs to check one gradient blame: the blamed library's derivative of
    ``<cotangent, f(x)>`` along ``role``'s element ``position`` (``actual``; along the
    symmetric direction where ``symmetric``) against ``expected``, within the tolerance the
    oracle applied there.

    Note:
        The oracle's :func:`_close` holds ``|actual - expected| <= rtol * (|expected| +
        scale) + floor``; ``atol`` is ``floor + rtol * scale``, so ``numpy.testing.
        assert_allclose(actual, expected, rtol=rtol, atol=atol, equal_nan=True)`` fails exactly
        where the oracle says the two differ (NaN and infinities included).
    """

    role: str
    position: tuple[int, ...]
    actual: float
    expected: float
    # where ``expected`` comes from: "the float64 finite difference; torch agrees", or, at a
    # kink, "what torch and jax give"
    source: str
    rtol: float
    atol: float
    # compared along symmetric directions (:func:`_symmetric`): off the diagonal, ``actual``
    # is the sum of the gradient at ``position`` and at its mirror across the last two axes
    symmetric: bool = False


@dataclass(frozen=True, kw_only=True)
class GradientBlame:
    """One library's departing gradient in one case."""

    library: str
    oracle: str  # one of ORACLES
    confidence: str  # "reference" or "majority"
    detail: str
    question: str = ""
    basis: str = ""  # what decides it, where the kind and confidence do not say
    # the position the detail names, as data (None for the "modes" oracle, which compares
    # one directional derivative, no position)
    check: GradientCheck | None = None


def gradients_of(
    outcome: Outcome, roles: Sequence[str], values: Mapping[str, Any]
) -> dict[str, np.ndarray] | None:
    """A library's gradients by role, float64, None returned as zeros; None where the
    library gave none to judge (a failure, or a gradient of another shape)."""
    if outcome.status != "ok" or outcome.grad_status != "ok" or outcome.grad is None:
        return None
    if len(outcome.grad) != len(roles):
        return None
    found = {}
    for role, g in zip(roles, outcome.grad, strict=True):
        x = _array(values[role])
        assert x is not None
        if g is None:
            g = np.zeros(x.shape)
        arr = g.values if isinstance(g, BFloat16) else g
        if not isinstance(arr, np.ndarray) or arr.shape != x.shape or arr.dtype.kind != "f":
            return None
        found[role] = arr.astype(np.float64)
    return found


def judge_gradients(
    dtype: str,
    values: Mapping[str, Any],
    roles: Sequence[str],
    outcomes: Mapping[str, Outcome],
    reference: Mapping[str, Derivative] | None,
    kinks: Mapping[str, np.ndarray],
    skip: frozenset[str] = frozenset(),
    symmetric: bool = False,
    seed: int = 0,
    forward: Any = None,
) -> list[GradientBlame]:
    """Judge one gradient case: the libraries ``outcomes`` names but ``skip`` (those whose
    values the value oracle blamed) against the finite-difference ``reference`` at smooth
    positions, and against each other at kinks (declared ``kinks`` per role, or where the
    reference is not smooth); off every kink, each library's forward mode against its own
    reverse mode (``seed``: the case's, which made the cotangent and the tangents;
    ``forward``: the reference's value, to tell a library's overflow)."""
    # a library whose value overflowed in the dtype has no derivative a float64 difference
    # can judge (the backward's intermediate terms overflow too)
    grads = {
        lib: g
        for lib, o in outcomes.items()
        if lib not in skip
        and not overflowed(o.value, forward)
        and (g := gradients_of(o, roles, values)) is not None
    }
    smooth = not any(k.any() for k in kinks.values()) and (
        reference is None or all(d.smooth.all() for d in reference.values())
    )
    # (a symmetric input's two modes project a tangent that is not symmetric each their way;
    # in float16 and bfloat16 the two modes' sums cancel differently beyond any tolerance the
    # check could know without the Jacobian's magnitudes: |c|^T |J| |t| bounds the rounding)
    judge_modes = smooth and not symmetric and dtype in MODES_DTYPES
    modes = _modes(grads, outcomes, roles, dtype, seed) if judge_modes else {}
    if len(grads) < 2 or reference is None:
        return list(modes.values())
    if symmetric:
        grads = {lib: {r: _symmetric(g[r]) for r in g} for lib, g in grads.items()}
        reference = {r: _symmetric_derivative(d) for r, d in reference.items()}
        kinks = {r: _symmetric(k.astype(float)) != 0 for r, k in kinks.items()}
    tol = (RTOL.get(dtype, RTOL["float32"]), ATOL.get(dtype, ATOL["float32"]))
    blames: dict[str, GradientBlame] = {}
    for role in roles:
        ref = reference[role]
        at_kink = kinks.get(role, np.zeros(ref.value.shape, bool)) | (ref.consistent & ~ref.smooth)
        judged = ref.consistent & ref.smooth & ~at_kink
        if judged.any():
            _by_reference(role, grads, ref.value, judged, tol, blames, symmetric=symmetric)
        if at_kink.any():
            _at_kinks(role, grads, at_kink, tol, blames, symmetric=symmetric)
    return list(blames.values()) + [b for lib, b in modes.items() if lib not in blames]


def _modes(
    grads: Mapping[str, Mapping[str, np.ndarray]],
    outcomes: Mapping[str, Outcome],
    roles: Sequence[str],
    dtype: str,
    seed: int,
) -> dict[str, GradientBlame]:
    """The libraries whose forward mode gives another directional derivative than their
    reverse mode: ``<cotangent, J t>`` against ``<J^T cotangent, t>`` (oracle ``modes``)."""
    rtol, atol = RTOL.get(dtype, RTOL["float32"]), ATOL.get(dtype, ATOL["float32"])
    found = {}
    for lib, g in grads.items():
        o = outcomes[lib]
        if o.tangent_status != "ok" or not finite_result(o.value):
            continue
        forward = scalar(o.tangent, seed)
        terms = [g[r] * tangent(g[r].shape, seed + k) for k, r in enumerate(roles)]
        reverse = float(sum(np.sum(t) for t in terms))
        size = float(sum(np.sum(np.abs(t)) for t in terms))
        if not (math.isfinite(forward) and math.isfinite(reverse)):
            bad = math.isfinite(forward) != math.isfinite(reverse)
        else:
            bad = abs(forward - reverse) > rtol * max(size, abs(forward)) + atol * len(terms)
        if bad:
            found[lib] = GradientBlame(
                library=lib,
                oracle="modes",
                confidence="reference",
                detail=(
                    f"gradient modes: {lib}'s forward mode gives the directional derivative "
                    f"{_num(forward)} where its reverse mode gives {_num(reverse)}"
                ),
                basis=(
                    f"reference: {lib}'s own reverse mode: the forward mode's directional "
                    f"derivative is {_num(forward)}, <J^T c, t> is {_num(reverse)}"
                ),
            )
    return found


def _square(g: np.ndarray) -> bool:
    """Whether an array's last two axes make square matrices (:func:`_symmetric`'s inputs)."""
    return g.ndim >= 2 and g.shape[-1] == g.shape[-2]


def _symmetric(g: np.ndarray) -> np.ndarray:
    """A gradient as derivatives along symmetric directions of its last two axes: the lower
    triangle of ``g + g^T`` (the diagonal once); other shapes as they are."""
    if not _square(g):
        return g
    t = g + np.swapaxes(g, -1, -2)
    n = g.shape[-1]
    diag = np.eye(n, dtype=bool)
    t = np.where(diag, g, t)
    return np.where(np.tril(np.ones((n, n), dtype=bool)), t, 0)


def _symmetric_derivative(d: Derivative) -> Derivative:
    def both(mask: np.ndarray) -> np.ndarray:
        if mask.ndim < 2 or mask.shape[-1] != mask.shape[-2]:
            return mask
        return mask & np.swapaxes(mask, -1, -2)

    return Derivative(
        value=_symmetric(d.value), consistent=both(d.consistent), smooth=both(d.smooth)
    )


def _close(a: np.ndarray, b: np.ndarray, tol: tuple[float, float], scale: float) -> np.ndarray:
    """Where ``a`` is ``b`` within the tolerance (relative to ``|b|`` plus the gradient's
    largest magnitude ``scale``, plus the absolute floor), or the same non-finite value."""
    rtol, atol = tol
    with np.errstate(invalid="ignore", over="ignore"):
        both = np.isfinite(a) & np.isfinite(b)
        return (both & (np.abs(a - b) <= rtol * (np.abs(b) + scale) + atol)) | (
            ~np.isfinite(a) & ~np.isfinite(b) & ((a == b) | (np.isnan(a) & np.isnan(b)))
        )


def _by_reference(
    role: str,
    grads: Mapping[str, Mapping[str, np.ndarray]],
    ref: np.ndarray,
    judged: np.ndarray,
    tol: tuple[float, float],
    blames: dict[str, GradientBlame],
    *,
    symmetric: bool = False,
) -> None:
    scale = float(np.max(np.abs(ref[judged]))) + 1e-300
    agree = {lib: _close(g[role], ref, tol, scale) | ~judged for lib, g in grads.items()}
    for lib, g in grads.items():
        bad = ~agree[lib]
        others = [agree[other] for other in grads if other != lib]
        backed = bad & np.logical_or.reduce(others)
        if lib in blames or not backed.any():
            continue
        pos = _worst(g[role], ref, backed)
        nonfinite = not np.isfinite(g[role][pos])
        witnesses = [o for o in grads if o != lib and agree[o][pos]]
        each = ", ".join(f"{o} {_num(grads[o][role][pos])}" for o in grads if o != lib)
        blames[lib] = GradientBlame(
            library=lib,
            oracle="nonfinite" if nonfinite else "reference",
            confidence="reference",
            detail=(
                f"gradient: {lib}'s d/d{role} at {_where(pos)} is {_num(g[role][pos])} where "
                f"the float64 finite difference is {_num(ref[pos])} "
                f"({', '.join(witnesses)} agree; {int(backed.sum())} of {backed.size} "
                f"positions differ; there: {each})"
            ),
            check=GradientCheck(
                role=role,
                position=pos,
                actual=float(g[role][pos]),
                expected=float(ref[pos]),
                source=_agreed("the float64 finite difference", witnesses),
                rtol=tol[0],
                atol=tol[1] + tol[0] * scale,
                symmetric=symmetric and _square(ref),
            ),
        )


def _at_kinks(
    role: str,
    grads: Mapping[str, Mapping[str, np.ndarray]],
    at_kink: np.ndarray,
    tol: tuple[float, float],
    blames: dict[str, GradientBlame],
    *,
    symmetric: bool = False,
) -> None:
    """Blame the libraries outside the largest class of libraries whose gradients agree at
    every kink position (no blame where no class is larger than every other)."""
    classes: list[list[str]] = []
    for lib, g in grads.items():
        for members in classes:
            first = grads[members[0]][role]
            if _close(g[role], first, tol, _largest(first))[at_kink].all():
                members.append(lib)
                break
        else:
            classes.append([lib])
    classes.sort(key=len, reverse=True)
    if len(classes) < 2 or len(classes[0]) < 2 or len(classes[0]) == len(classes[1]):
        return
    major = classes[0]
    ref = grads[major[0]][role]
    for members in classes[1:]:
        for lib in members:
            if lib in blames:
                continue
            mine = grads[lib][role]
            pos = _worst(mine, ref, at_kink & ~_close(mine, ref, tol, _largest(ref)))
            blames[lib] = GradientBlame(
                library=lib,
                oracle="kink",
                confidence="majority",
                detail=(
                    f"gradient at a kink: {lib}'s d/d{role} at {_where(pos)} is "
                    f"{_num(mine[pos])} where {', '.join(major)} give {_num(ref[pos])}"
                ),
                question=KINK_QUESTION,
                check=GradientCheck(
                    role=role,
                    position=pos,
                    actual=float(mine[pos]),
                    expected=float(ref[pos]),
                    source=f"what {_names(major)} give at this kink",
                    rtol=tol[0],
                    atol=tol[1] + tol[0] * _largest(ref),
                    symmetric=symmetric and _square(ref),
                ),
            )


def _largest(g: np.ndarray) -> float:
    """A gradient's largest finite magnitude (the normwise scale; never 0)."""
    return float(np.max(np.abs(np.where(np.isfinite(g), g, 0)), initial=0.0)) + 1e-300


def _worst(g: np.ndarray, ref: np.ndarray, where: np.ndarray) -> tuple[int, ...]:
    with np.errstate(invalid="ignore", over="ignore"):
        gap = np.where(np.isfinite(g), np.abs(g - ref), np.inf)
    gap = np.where(where, np.nan_to_num(gap, nan=np.inf, posinf=np.inf), -1.0)
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(gap)), g.shape))


def _agreed(source: str, witnesses: Sequence[str]) -> str:
    """Where an expected value comes from, with the libraries that agree with it."""
    if not witnesses:
        return source
    return f"{source}; {_names(witnesses)} {'agrees' if len(witnesses) == 1 else 'agree'}"


def _names(libs: Sequence[str]) -> str:
    """Libraries for a sentence: "torch", "torch and jax", "torch, jax and paddle"."""
    return ", ".join(libs[:-1]) + " and " + libs[-1] if len(libs) > 1 else "".join(libs)


def _where(pos: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(i) for i in pos) + ")" if pos else "()"


def _num(x: Any) -> str:
    """A gradient value in its shortest round-trip form (float32 values as float32)."""
    value = float(x)
    short = repr(float(np.float32(value)))
    return short if float(np.float32(short)) == value else repr(value)
