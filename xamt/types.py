"""Frozen records that cross process boundaries: calls and their outcomes.

Records hold plain data only (numpy arrays, scalars, tuples, dtype names); no library objects.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# What a call can come to. The first five are answers from a live worker; the next three are
# what the pool concludes when a worker dies, misses its deadline, or runs out of memory; the
# last is a call its caller took back before it was sent (see WorkerPool.withdraw).
STATUSES = (
    "ok",  # returned a value
    "error",  # raised an exception
    "unsupported",  # the library cannot represent an input (e.g. a dtype it lacks)
    "unknown-api",  # the API path names nothing callable in the library
    "bad-request",  # the request did not follow the protocol
    "crash",  # the worker died (signal or exit) during the call
    "hang",  # the call missed its deadline; the worker was killed
    "resource",  # an allocation beyond the memory cap
    "withdrawn",  # never made: withdrawn by the caller
)
WITHDRAWN = "withdrawn"


@dataclass(frozen=True, kw_only=True)
class Call:
    """One API call: a dotted path, arguments made of arrays, scalars, tuples, None, dtypes."""

    api: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    # axis permutations the worker applies (numpy.transpose) before the call, keyed by argument
    # position ("0") or keyword name, and to the result ("return"): a member that computes in
    # another layout (channels-last, HWIO weights) sees the group's logical tensor in its own
    # layout, and its result comes back in the group's.
    transpose: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # the arguments (position "0" or keyword name) to differentiate: the worker also returns
    # the vector-Jacobian product of the result for the cotangent
    # :func:`xamt.workers.protocol.cotangent` makes from ``seed`` (empty: values only)
    grad: tuple[str, ...] = ()
    # a time budget shared by the calls of one batch that name the same key (key, seconds): a
    # call the worker reaches once that key's calls have taken the seconds is not made, and
    # comes back "withdrawn" (a gradient case's finite-difference probes: four calls per input
    # element, each of which may be slow under the hang deadline)
    budget: tuple[str, float] | None = None


@dataclass(frozen=True, kw_only=True)
class ErrorInfo:
    """An exception raised by a library, as data."""

    type: str
    module: str = ""
    message: str = ""
    traceback: str = ""


@dataclass(frozen=True, kw_only=True)
class Outcome:
    """What one library did with one call."""

    library: str
    api: str
    status: str
    value: Any = None
    error: ErrorInfo | None = None
    signal: str | None = None
    exit_code: int | None = None
    seconds: float | None = None  # wall time of the call and conversions, in the worker
    cpu: float | None = None  # the worker's CPU time for the same (excludes waiting for a core)
    detail: str = ""
    # the vector-Jacobian product (a call with ``grad``): one array per differentiated
    # argument, in ``Call.grad``'s order; None where the library's autodiff returned none
    # (no dependence); ``grad_status`` says how it went ("" for a values-only call, "ok",
    # "error": the library raised while differentiating, "unsupported": it has no autodiff)
    grad: tuple[Any, ...] | None = None
    grad_status: str = ""
    grad_error: ErrorInfo | None = None
    # the Jacobian-vector product (forward mode) of a gradient call, for the tangents
    # :func:`xamt.workers.protocol.tangent` makes, as the result is structured; its status
    # ("unsupported" where the library has no forward mode)
    tangent: Any = None
    tangent_status: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# Value classes of fuzzing inputs, and the kinds of discrepancy the oracles report.
VALUE_CLASSES = ("ordinary", "boundary", "non-finite")
DISCREPANCY_KINDS = (
    "crash",  # a library's worker died (signal)
    "hang",  # a library missed the deadline
    "resource",  # a library exceeded the memory cap
    "status",  # some libraries raised while others returned
    "shape",  # output shapes (or structures) differ
    "dtype",  # output dtypes differ (type promotion), values aside
    "nan",  # NaN masks differ
    "inf",  # inf masks (with sign) differ
    "signed-zero",  # -0.0 against 0.0 where both are zero
    "value",  # finite values beyond the dtype's (rtol, atol)
)


@dataclass(frozen=True, kw_only=True)
class Case:
    """One input set for one group: role values, and the member API used per library."""

    group: str
    dtype: str
    value_class: str
    values: dict[str, Any]
    apis: dict[str, str]
    seed: int = 0
    # whether the case also checks gradients (xamt.oracle.gradient): each library's
    # vector-Jacobian product for the cotangent its seed makes, against a float64 finite
    # difference
    grad: bool = False


@dataclass(frozen=True, kw_only=True)
class Discrepancy:
    """What the oracles found wrong in one case's outcomes.

    ``odd`` names the libraries that are the odd ones out (by majority vote, a float64
    reference breaking ties). ``error`` is the odd side's exception type and message (status
    and crash kinds), the raw material of a signature.
    """

    kind: str
    odd: tuple[str, ...]
    detail: str = ""
    error: str = ""
