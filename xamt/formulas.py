"""Float64 references for operations numpy lacks: activations, log-sum-exp and a few special
functions, written from their definitions.

Where numpy is in a group, its own function on the float64 upcast input is the reference. Many
groups have no numpy member (``hardtanh``, ``softplus``, ``logcumsumexp``, ``erf``...), and
their cases were decided by vote: two libraries that ignore a NaN outvote the one that
propagates it. A formula here gives those groups a reference. The catalog build checks each
formula against the group's members on the canonical inputs (a group whose default
``negative_slope`` is 0.2 does not get the 0.01 formula) and records the one that agrees as
the group's ``reference``.

Each formula takes the group's roles as keywords (``x`` and parameters such as ``alpha``,
``lambd``, ``axis``) and returns the result and the positions it leaves *open*: where the
definition's limit and its IEEE evaluation differ (``silu(-inf)`` is 0 as a limit and NaN as
``-inf * sigmoid(-inf)``), nothing decides, and those positions are not judged. NaN in gives
NaN out everywhere, as the array API standard states for every elementwise function.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

Result = tuple[np.ndarray, np.ndarray]  # values, open positions (bool, same shape)


@dataclass(frozen=True)
class Formula:
    """One definition: ``fn(x, **params)`` in float64; ``params`` are the roles it reads, with
    the value each takes when the case does not give it."""

    name: str
    fn: Callable[..., Result]
    params: Mapping[str, Any]
    arrays: tuple[str, ...] = ()  # array roles it reads besides x (a convolution's kernel)
    primary: str = "x"  # the array role passed first (igamma's ``a`` is ``x1``)


def _none(x: np.ndarray) -> np.ndarray:
    return np.zeros(np.shape(x), bool)


def _elementwise(f: Callable[..., np.ndarray], limits: Callable[..., np.ndarray] | None = None):
    """An elementwise formula: ``f`` on float64; ``limits(x, **params)`` marks open positions."""

    def run(x: np.ndarray, **params: Any) -> Result:
        with np.errstate(all="ignore"):
            out = np.asarray(f(x, **params), np.float64)
            out = np.where(np.isnan(x), np.nan, out)
        return out, (limits(x, **params) if limits is not None else _none(x))

    return run


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def _softplus(x: np.ndarray, beta: float = 1.0, threshold: float = 20.0) -> np.ndarray:
    return np.where(beta * x > threshold, x, np.logaddexp(0.0, beta * x) / beta)


def _minus_inf(x: np.ndarray, **_: Any) -> np.ndarray:
    """``x * f(x)`` with ``f(-inf) = 0``: 0 as a limit, NaN as IEEE arithmetic."""
    return np.isneginf(x)


# Above this, ``x * 6`` overflows in float32: hardswish(x) is x by definition, inf where a
# library multiplies before it divides (torch, paddle) and x where it does not (mindspore).
_HARDSWISH_OVERFLOW = float(np.finfo(np.float32).max) / 6


def _hardswish_open(x: np.ndarray, **_: Any) -> np.ndarray:
    """-inf (see :func:`_minus_inf`), and values whose evaluation order decides overflow."""
    return np.isneginf(x) | (x > _HARDSWISH_OVERFLOW)


# Exact integer functions: the reference of integer gcd and lcm, in Python's unbounded
# integers (a result beyond the integer dtype is an overflow every library answers its own way).
EXACT_INTEGER: dict[str, Callable[[int, int], int]] = {"gcd": math.gcd, "lcm": math.lcm}


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def _lgamma(v: float) -> float:
    try:
        return math.lgamma(v)
    except (ValueError, OverflowError):  # a pole (0, -1, -2...), or beyond float64: +inf
        return math.inf


def _entr(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, -x * np.log(np.where(x > 0, x, 1.0)), np.where(x == 0, 0.0, -np.inf))


SELU_ALPHA = 1.6732632423543772848170429916717
SELU_SCALE = 1.0507009873554804934193349852946
SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)


def _logsumexp(x: np.ndarray, axis: Any = None, keepdims: bool = False) -> Result:
    axis = tuple(axis) if isinstance(axis, list) else axis
    with np.errstate(all="ignore"):
        m = np.max(x, axis=axis, keepdims=True, initial=-np.inf)
        shift = np.where(np.isfinite(m), m, 0.0)
        total = np.log(np.sum(np.exp(x - shift), axis=axis, keepdims=True)) + shift
        out = np.where(np.isinf(m) & ~np.isnan(total), m, total)  # all -inf, or any +inf
        out = np.where(np.isnan(x).any(axis=axis, keepdims=True), np.nan, out)
    if not keepdims:
        out = np.squeeze(out, axis=axis) if axis is not None else out.reshape(())
    return out, _none(out)


def _logcumsumexp(x: np.ndarray, axis: Any = None) -> Result:
    if axis is None:
        x, axis = x.reshape(-1), 0
    with np.errstate(all="ignore"):
        out = np.logaddexp.accumulate(x, axis=int(axis))
    return out, _none(out)


def _trapezoid(x: np.ndarray, axis: Any = -1) -> Result:
    """The trapezoidal rule with unit spacing along ``axis``: the sum of the neighbours' means
    (inf beside a finite sample is inf, as its integral is; inf beside -inf is NaN)."""
    y = np.moveaxis(x, axis, -1)
    with np.errstate(invalid="ignore", over="ignore"):
        out = ((y[..., 1:] + y[..., :-1]) / 2.0).sum(axis=-1)
    return out, _none(out)


def _cosine_similarity(x1: np.ndarray, x2: np.ndarray, axis: Any = 1, eps: Any = 1e-8) -> Result:
    """x1 . x2 / (max(|x1|, eps) max(|x2|, eps)) along ``axis`` of the shape x1 and x2
    broadcast to (torch documents ``dim`` as a dimension of that common shape). Open where a
    norm is within eps (the libraries place eps differently) or a vector is not finite."""
    a, b = np.broadcast_arrays(x1, x2)
    with np.errstate(all="ignore"):
        n1 = np.sqrt(np.sum(a * a, axis=axis))
        n2 = np.sqrt(np.sum(b * b, axis=axis))
        out = np.sum(a * b, axis=axis) / (np.maximum(n1, eps) * np.maximum(n2, eps))
        finite = np.all(np.isfinite(a) & np.isfinite(b), axis=axis)
        open_ = ~finite | ~np.isfinite(n1 * n2) | (n1 <= eps) | (n2 <= eps)
    return out, open_


def _softmax(log: bool) -> Callable[..., Result]:
    def run(x: np.ndarray, axis: Any = -1) -> Result:
        with np.errstate(all="ignore"):
            m = np.max(x, axis=axis, keepdims=True)
            shifted = x - m
            lse = np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))
            out = shifted - lse if log else np.exp(shifted - lse)
        # an infinite entry makes every answer of its slice a matter of policy
        open_ = np.broadcast_to(np.isinf(x).any(axis=axis, keepdims=True), x.shape)
        return out, open_.copy()

    return run


_FORMULAS: tuple[tuple[str, Formula], ...] = (
    ("relu", Formula("relu", _elementwise(lambda x: np.maximum(x, 0.0)), {})),
    ("relu6", Formula("relu6", _elementwise(lambda x: np.clip(x, 0.0, 6.0)), {})),
    ("sigmoid", Formula("sigmoid", _elementwise(_sigmoid), {})),
    ("logsigmoid", Formula("logsigmoid", _elementwise(lambda x: -np.logaddexp(0.0, -x)), {})),
    ("silu", Formula("silu", _elementwise(lambda x: x * _sigmoid(x), _minus_inf), {})),
    (
        "mish",
        Formula("mish", _elementwise(lambda x: x * np.tanh(np.logaddexp(0.0, x)), _minus_inf), {}),
    ),
    ("softsign", Formula("softsign", _elementwise(lambda x: x / (1.0 + np.abs(x))), {})),
    ("tanhshrink", Formula("tanhshrink", _elementwise(lambda x: x - np.tanh(x)), {})),
    (
        "selu",
        Formula(
            "selu",
            _elementwise(lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x))),
            {},
        ),
    ),
    (
        "elu",
        Formula(
            "elu",
            _elementwise(lambda x, alpha: np.where(x > 0, x, alpha * np.expm1(x))),
            {"alpha": 1.0},
        ),
    ),
    (
        "celu",
        Formula(
            "celu",
            _elementwise(
                lambda x, alpha: np.maximum(x, 0.0) + np.minimum(0.0, alpha * np.expm1(x / alpha))
            ),
            {"alpha": 1.0},
        ),
    ),
    (
        "hardtanh",
        Formula(
            "hardtanh",
            _elementwise(lambda x, **p: np.minimum(np.maximum(x, p["min"]), p["max"])),
            {"min": -1.0, "max": 1.0},
        ),
    ),
    (
        "hardshrink",
        Formula(
            "hardshrink",
            _elementwise(lambda x, lambd: np.where(np.abs(x) > lambd, x, 0.0)),
            {"lambd": 0.5},
        ),
    ),
    (
        "softshrink",
        Formula(
            "softshrink",
            _elementwise(
                lambda x, lambd: np.where(
                    x > lambd, x - lambd, np.where(x < -lambd, x + lambd, 0.0)
                )
            ),
            {"lambd": 0.5},
        ),
    ),
    (
        "hardsigmoid",
        Formula("hardsigmoid", _elementwise(lambda x: np.clip(x + 3.0, 0.0, 6.0) / 6.0), {}),
    ),
    (
        "hardswish",
        Formula(
            "hardswish",
            _elementwise(lambda x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0, _hardswish_open),
            {},
        ),
    ),
    (
        "softplus",
        Formula("softplus", _elementwise(_softplus), {"beta": 1.0, "threshold": 20.0}),
    ),
    (
        "leaky_relu",
        Formula(
            "leaky_relu",
            _elementwise(lambda x, negative_slope: np.where(x >= 0, x, negative_slope * x)),
            {"negative_slope": 0.01},
        ),
    ),
    (
        "leaky_relu",
        Formula(
            "leaky_relu_alpha",
            _elementwise(lambda x, alpha: np.where(x >= 0, x, alpha * x)),
            {"alpha": 0.2},
        ),
    ),
    (
        "gelu",
        Formula(
            "gelu",
            _elementwise(lambda x: 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0))), _minus_inf),
            {},
        ),
    ),
    (
        "gelu",
        Formula(
            "gelu_tanh",
            _elementwise(
                lambda x: 0.5 * x * (1.0 + np.tanh(SQRT_2_OVER_PI * (x + 0.044715 * x**3))),
                _minus_inf,
            ),
            {},
        ),
    ),
    ("erf", Formula("erf", _elementwise(_erf), {})),
    ("erfc", Formula("erfc", _elementwise(lambda x: 1.0 - _erf(x)), {})),
    (
        "gammaln",
        Formula(
            "gammaln",
            _elementwise(lambda x: np.vectorize(_lgamma, otypes=[np.float64])(x)),
            {},
        ),
    ),
    ("entr", Formula("entr", _elementwise(_entr), {})),
    ("logsumexp", Formula("logsumexp", _logsumexp, {"axis": None, "keepdims": False})),
    ("logcumsumexp", Formula("logcumsumexp", _logcumsumexp, {"axis": None})),
    ("trapz", Formula("trapezoid", _trapezoid, {"axis": -1})),
    (
        "cosine_similarity",
        Formula(
            "cosine_similarity",
            _cosine_similarity,
            {"axis": 1, "eps": 1e-8},
            arrays=("x2",),
            primary="x1",
        ),
    ),
    ("softmax", Formula("softmax", _softmax(log=False), {"axis": -1})),
    ("log_softmax", Formula("log_softmax", _softmax(log=True), {"axis": -1})),
)

# --- the deep-learning core: pooling and convolution over channels-first arrays -------------


# The most window cells (batch x channels x outputs x window) a formula materializes: a 3-d
# convolution with a kernel of 10 over a padded input reaches tens of gigabytes, for which the
# reference steps back (the libraries are still compared with each other).
MAX_WINDOW_CELLS = 1 << 24


def _spatial_windows(
    x: np.ndarray,
    window: int | tuple[int, ...],
    stride: int,
    pad: int,
    fill: float,
    dilation: int = 1,
) -> np.ndarray:
    """(N, C, *out, *window) views of ``x`` (N, C, *spatial) padded with ``fill``."""
    d = x.ndim - 2
    sizes = tuple(window) if isinstance(window, tuple) else (int(window),) * d
    if d < 1 or len(sizes) != d or stride < 1 or dilation < 1 or pad < 0 or min(sizes) < 1:
        raise ValueError("no reference for these parameters")
    if pad:
        x = np.pad(x, ((0, 0), (0, 0), *((pad, pad),) * d), constant_values=fill)
    span = tuple((k - 1) * dilation + 1 for k in sizes)
    cells = math.prod(x.shape[:2]) * math.prod(
        max(0, (n - s) // stride + 1) * k for n, s, k in zip(x.shape[2:], span, sizes, strict=True)
    )
    if cells > MAX_WINDOW_CELLS:
        raise ValueError("too many window cells for a reference")
    w = np.lib.stride_tricks.sliding_window_view(x, span, axis=tuple(range(2, 2 + d)))
    w = w[(slice(None), slice(None), *(slice(None, None, stride),) * d)]
    taps: tuple[Any, ...] = (Ellipsis, *(slice(None, None, dilation),) * d)
    return np.asarray(w[taps])


def _max_pool(x: np.ndarray, kernel_size: int, stride: int, padding: int = 0) -> Result:
    w = _spatial_windows(x, kernel_size, stride, padding, -np.inf)
    out = w.max(axis=tuple(range(-(x.ndim - 2), 0)))  # (NaN in a window: NaN out)
    return out, _none(out)


def _max_pool_ceil(x: np.ndarray, kernel_size: int, stride: int, padding: int = 0) -> Result:
    """Max pooling with ceil_mode: ceil((L + 2p - k) / s) + 1 windows per axis, the last ones
    running past the input; a window without an input element (torch drops one that starts
    past the input, the "full" convention keeps it, filled with -inf or -FLT_MAX) is open."""
    d = x.ndim - 2
    if d < 1 or stride < 1 or kernel_size < 1 or padding < 0:
        raise ValueError("no reference for these parameters")
    spatial = x.shape[2:]
    n_out = [-(-(n + 2 * padding - kernel_size) // stride) + 1 for n in spatial]
    if min(n_out) < 1:
        raise ValueError("no window")
    extra = [
        (m - 1) * stride + kernel_size - (n + 2 * padding)
        for m, n in zip(n_out, spatial, strict=True)
    ]
    real = np.pad(
        np.ones(spatial, bool), [(padding, padding + max(e, 0)) for e in extra]
    )  # where the padded input holds an element
    x = np.pad(x, ((0, 0), (0, 0), *((0, max(e, 0)) for e in extra)), constant_values=-np.inf)
    w = _spatial_windows(x, kernel_size, stride, padding, -np.inf)
    cut = (slice(None), slice(None), *(slice(0, m) for m in n_out))
    out = w.max(axis=tuple(range(-d, 0)))[cut]
    hits = _spatial_windows(real[None, None].astype(np.float64), kernel_size, stride, 0, 0.0)
    empty = hits.max(axis=tuple(range(-d, 0)))[cut][0, 0] == 0
    return out, np.broadcast_to(empty, out.shape).copy()


def _avg_pool(x: np.ndarray, kernel_size: int, stride: int, padding: int = 0) -> Result:
    # (padding counts in the divisor: count_include_pad, every library's default)
    w = _spatial_windows(x, kernel_size, stride, padding, 0.0)
    with np.errstate(all="ignore"):
        out = w.mean(axis=tuple(range(-(x.ndim - 2), 0)))
    return out, _none(out)


def _conv(
    x: np.ndarray, kernel: np.ndarray, stride: int = 1, padding: int = 0, dilation: int = 1
) -> Result:
    """Cross-correlation (what every library calls convolution), one group."""
    d = x.ndim - 2
    if kernel.ndim != x.ndim or kernel.shape[1] != x.shape[1]:
        raise ValueError("no reference for this kernel")
    w = _spatial_windows(x, tuple(kernel.shape[2:]), stride, padding, 0.0, dilation)
    axes = ([1, *range(2 + d, 2 + 2 * d)], [1, *range(2, 2 + d)])
    with np.errstate(all="ignore"):
        out = np.moveaxis(np.tensordot(w, kernel, axes=axes), -1, 1)
    return out, _none(out)


_FORMULAS += (
    *(
        (
            f"max_pool{d}d",
            Formula("max_pool", _max_pool, {"kernel_size": 2, "stride": 2, "padding": 0}),
        )
        for d in (1, 2, 3)
    ),
    *(
        (
            f"max_pool{d}d",
            Formula("max_pool_ceil", _max_pool_ceil, {"kernel_size": 2, "stride": 2, "padding": 0}),
        )
        for d in (1, 2, 3)
    ),
    *(
        (
            f"avg_pool{d}d",
            Formula("avg_pool", _avg_pool, {"kernel_size": 2, "stride": 2, "padding": 0}),
        )
        for d in (1, 2, 3)
    ),
    *(
        (
            f"conv{d}d",
            Formula("conv", _conv, {"stride": 1, "padding": 0, "dilation": 1}, arrays=("kernel",)),
        )
        for d in (1, 2, 3)
    ),
)

# -- special functions numpy lacks: scipy.special in float64 -----------------------------------
#
# digamma, igamma, erfinv, ndtri... have no numpy member, and their groups were decided by
# vote: two libraries sharing one implementation (tensorflow and mindspore run the same Eigen
# code) outvoted a third that was right. scipy.special (Cephes and Boost in float64, a few
# ulps) is the reference there, on the inputs where its value is the definition's:
#
# - NaN in gives NaN out (the array API standard's rule for every elementwise function);
# - a non-finite input, a pole or the edge of the domain (digamma(-2), igamma(0, x)) is open:
#   there the value is a limit or a convention (scipy's digamma(-0.0) is +inf, torch's NaN),
#   and no definition decides between them;
# - an ill-conditioned position is open: where ``|x f'(x) / f(x)|`` (numerically) exceeds
#   CONDITION_LIMIT, a library's answer depends on how it evaluates (digamma's reflection
#   formula near a pole loses digits through tan(pi x)) more than on whether it is right.
CONDITION_LIMIT = 64.0


def _scipy(name: str) -> Callable[..., np.ndarray]:
    import scipy.special  # (only where such a group is judged: a fifth of a second to import)

    fn: Callable[..., np.ndarray] = getattr(scipy.special, name)
    return fn


def _ill_conditioned(
    f: Callable[..., np.ndarray], args: list[np.ndarray], discrete: tuple[int, ...] = ()
) -> np.ndarray:
    """Finite positions where evaluation errors of a few ulps in an argument move ``f``
    beyond what the tolerance allows: ``|a df/da|`` (numerically, a relative step of 1e-7)
    above CONDITION_LIMIT times ``|f| + 0.1`` (the float32 tolerance is 1e-4 * (|f| + 0.1)),
    or a neighbour that is not finite. An exact zero argument is not perturbed (nothing
    rounds it), nor a ``discrete`` one (polygamma's order n)."""
    value = f(*args)
    bad = np.zeros(np.shape(value), bool)
    for i, a in enumerate(args):
        if i in discrete:
            continue
        h = np.abs(a) * 1e-7
        up = f(*[a + h if j == i else b for j, b in enumerate(args)])
        down = f(*[a - h if j == i else b for j, b in enumerate(args)])
        sensitivity = np.abs(up - down) / 2e-7
        moved = (
            ~np.isfinite(up)
            | ~np.isfinite(down)
            | (sensitivity > CONDITION_LIMIT * (np.abs(value) + 0.1))
            # a pole inside the step: the neighbours change sign, or the value dwarfs them
            # (digamma at -1 + 1.1e-16 is -9e15, its neighbours at -+1e-7 are -+1e7)
            | (np.sign(up) * np.sign(down) < 0)
            | (np.abs(value) > 1e3 * np.maximum(np.abs(up), np.abs(down)))
        )
        bad |= moved & (a != 0)
    return bad & np.isfinite(value)


def _special(
    name: str,
    edges: Callable[..., np.ndarray],
    discrete: tuple[int, ...] = (),
    leading: str = "",
    slow: Callable[..., np.ndarray] | None = None,
) -> Callable[..., Result]:
    """A scipy.special function of the case's array roles, in the order scipy takes them
    (``leading``: a parameter scipy takes first, polygamma's order n); ``edges(*args)`` marks
    poles and domain edges, ``discrete`` the integer arguments; ``slow(*args)`` marks inputs
    scipy takes minutes on (polygamma at x = -2147483647.5: 77 s), evaluated at 1 instead and
    left open. Its ``loose`` attribute gives the ill-conditioned positions
    (:func:`loose_positions`)."""

    def arguments(
        x: np.ndarray, rest: tuple[np.ndarray, ...], kw: dict[str, Any]
    ) -> tuple[list[np.ndarray], np.ndarray]:
        first = [np.asarray(kw.pop(leading), np.float64)] if leading else []
        args = [np.asarray(a, np.float64) for a in (*first, x, *rest, *kw.values())]
        args = list(np.broadcast_arrays(*args))
        with np.errstate(invalid="ignore"):
            skip = slow(*args) if slow is not None else np.zeros(np.shape(args[0]), bool)
        if skip.any():
            args = [np.where(skip, 1.0, a) for a in args]
        return args, skip

    def run(x: np.ndarray, *rest: np.ndarray, **kw: Any) -> Result:
        args, skip = arguments(x, rest, kw)
        f = _scipy(name)
        with np.errstate(all="ignore"):
            out = np.asarray(f(*args), np.float64)
            nan = np.zeros(out.shape, bool)
            finite = np.ones(out.shape, bool)
            for a in args:
                nan |= np.isnan(a)
                finite &= np.isfinite(a)
            open_ = ~finite | edges(*args) | skip
        return np.where(nan, np.nan, out), open_ & ~nan

    def loose(x: np.ndarray, *rest: np.ndarray, **kw: Any) -> np.ndarray:
        args, _ = arguments(x, rest, kw)
        with np.errstate(all="ignore"):
            return _ill_conditioned(_scipy(name), args, discrete)

    run.loose = loose  # type: ignore[attr-defined]
    return run


def _non_positive_integer(x: np.ndarray) -> np.ndarray:
    return (x <= 0) & (x == np.round(x))


def _digamma_poles(x: np.ndarray) -> np.ndarray:
    """The poles 0, -1, -2... except +0, where digamma's limit from the right is -inf: scipy
    returns it (jax documents its digamma as scipy's) and torch documents it since 1.8."""
    return _non_positive_integer(x) & ~((x == 0) & ~np.signbit(x))


def _polygamma_edges(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """polygamma(n, x): n a non-negative integer, poles at x = 0, -1, -2..."""
    return (n < 0) | (n != np.round(n)) | _non_positive_integer(x)


def _gammainc_edges(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) and Q(a, x) are defined for a > 0, x >= 0; a = 0 is a limit (P = 1)."""
    return a <= 0


def _far_negative(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    """polygamma's recurrence for negative x takes time in proportion to |x|."""
    return x < -1e4


def _zeta_slow(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Inputs that are edges anyway, where scipy's zeta can take minutes (x = 2**31 - 1 with
    q = -2**31 + 0.5): not evaluated."""
    return (q <= 0) | (x > 1e3)


def _zeta_edges(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Hurwitz zeta(x, q): the series converges for x > 1; x = 1 is a pole, and x < 1 needs
    the analytic continuation that scipy (and the libraries) define differently; q <= 0 hits
    the terms' poles; beyond x = 1000 scipy returns NaN where the sum is q**-x (the last two
    are where scipy is slow, :func:`_zeta_slow`)."""
    return (x <= 1) | _zeta_slow(x, q)


def _no_edges(*args: np.ndarray) -> np.ndarray:
    """A function defined on every finite input (NaN outside its domain: erfinv(2), the
    log of a negative y in xlogy)."""
    return np.zeros(np.shape(args[0]), bool)


_SPECIAL: tuple[tuple[str, Formula], ...] = (
    ("digamma", Formula("digamma", _special("psi", _digamma_poles), {})),
    (
        "polygamma",
        Formula(
            "polygamma_x_n",
            _special("polygamma", _polygamma_edges, (0,), leading="n", slow=_far_negative),
            {"n": 1},
        ),
    ),
    (
        "polygamma",
        Formula(
            "polygamma",
            _special("polygamma", _polygamma_edges, (0,), slow=_far_negative),
            {},
            arrays=("x2",),
            primary="x1",
        ),
    ),
    (
        "igamma",
        Formula(
            "gammainc", _special("gammainc", _gammainc_edges), {}, arrays=("x2",), primary="x1"
        ),
    ),
    (
        "igammac",
        Formula(
            "gammaincc", _special("gammaincc", _gammainc_edges), {}, arrays=("x2",), primary="x1"
        ),
    ),
    ("zeta", Formula("zeta", _special("zeta", _zeta_edges, slow=_zeta_slow), {}, arrays=("q",))),
    (
        "zeta",
        Formula(
            "zeta_x1_x2",
            _special("zeta", _zeta_edges, slow=_zeta_slow),
            {},
            arrays=("x2",),
            primary="x1",
        ),
    ),
    ("erfinv", Formula("erfinv", _special("erfinv", _no_edges), {})),
    ("ndtri", Formula("ndtri", _special("ndtri", _no_edges), {})),
    ("ndtr", Formula("ndtr", _special("ndtr", _no_edges), {})),
    ("log_ndtr", Formula("log_ndtr", _special("log_ndtr", _no_edges), {})),
    ("erfcx", Formula("erfcx", _special("erfcx", _no_edges), {})),
    ("i0e", Formula("i0e", _special("i0e", _no_edges), {})),
    ("i1", Formula("i1", _special("i1", _no_edges), {})),
    ("i1e", Formula("i1e", _special("i1e", _no_edges), {})),
    ("bessel_j0", Formula("j0", _special("j0", _no_edges), {})),
    ("bessel_j1", Formula("j1", _special("j1", _no_edges), {})),
    (
        "xlogy",
        Formula("xlogy", _special("xlogy", _no_edges), {}, arrays=("x2",), primary="x1"),
    ),
    (
        "xlog1py",
        Formula("xlog1py", _special("xlog1py", _no_edges), {}, arrays=("x2",), primary="x1"),
    ),
)

# operation -> the formulas that may define it, tried in order by the catalog build
BY_OP: dict[str, tuple[Formula, ...]] = {}
for _op, _f in (*_FORMULAS, *_SPECIAL):
    BY_OP[_op] = (*BY_OP.get(_op, ()), _f)
BY_NAME: dict[str, Formula] = {f.name: f for _, f in (*_FORMULAS, *_SPECIAL)}


# A special function's reference (scipy, its poles and its conditioning: five evaluations) is
# computed on inputs up to this many elements; beyond it (arrays of millions, whose results
# the workers summarize anyway) the libraries are compared with each other.
SPECIAL_MAX_ELEMENTS = 1 << 16


def _prepared(
    name: str, values: Mapping[str, Any]
) -> tuple[Formula, np.ndarray, dict[str, np.ndarray], dict[str, Any]] | None:
    """The formula ``name`` and a case's values as it takes them (the first array, the other
    arrays in float64, the parameters); None where it cannot say: a role it does not read, a
    complex or bool input, a parameter that is not a real number."""
    formula = BY_NAME.get(name)
    if formula is None:
        return None
    x = values.get(formula.primary)
    if not isinstance(x, np.ndarray) or x.dtype.kind not in "iuf":
        return None
    params = dict(formula.params)
    arrays: dict[str, np.ndarray] = {}
    for role, value in values.items():
        if role == formula.primary:
            continue
        if role in formula.arrays:
            if not isinstance(value, np.ndarray) or value.dtype.kind not in "iuf":
                return None
            arrays[role] = value.astype(np.float64)
            continue
        if role not in params:
            return None
        params[role] = value
    if set(arrays) != set(formula.arrays):
        return None
    for role, value in params.items():
        if role in ("axis", "keepdims"):
            continue
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
            return None
    if hasattr(formula.fn, "loose") and max(a.size for a in (x, *arrays.values())) > (
        SPECIAL_MAX_ELEMENTS
    ):
        return None
    return formula, x.astype(np.float64), arrays, params


_CANNOT_TAKE = (ValueError, TypeError, IndexError, ArithmeticError, MemoryError)


def loose_positions(name: str, values: Mapping[str, Any]) -> np.ndarray | None:
    """Positions of formula ``name``'s result whose digits are not judged, only whether they
    are NaN, infinite or finite: the ill-conditioned ones (erfinv just below 1: the digits
    follow each library's evaluation, but inf for a true 3.83 is wrong). None: none."""
    prepared = _prepared(name, values)
    loose = getattr(prepared[0].fn, "loose", None) if prepared is not None else None
    if prepared is None or loose is None:
        return None
    _, x, arrays, params = prepared
    try:
        return np.asarray(loose(x, **arrays, **params), bool)
    except _CANNOT_TAKE:
        return None


def evaluate(name: str, values: Mapping[str, Any]) -> Result | None:
    """The formula ``name`` on a case's values, in float64; None where it cannot say (see
    :func:`_prepared`), or where the definition cannot take the input."""
    prepared = _prepared(name, values)
    if prepared is None:
        return None
    formula, x, arrays, params = prepared
    try:
        out, open_ = formula.fn(x, **arrays, **params)
    except (*_CANNOT_TAKE, np.exceptions.AxisError):
        return None  # (an input the definition cannot take: no reference, not a failure)
    return np.asarray(out, np.float64), np.asarray(open_, bool)
