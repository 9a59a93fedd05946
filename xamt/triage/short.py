"""Short repros: one finding in the blamed library's own idiom, about fifteen lines.

A short repro holds the imports, the minimized inputs as exact inline literals (NaN, inf,
-0.0 and the dtype explicit; ``short_inputs.npz`` beside it only past
:data:`xamt.triage.repro.INLINE_LIMIT` elements), the one call as xamt binds it
(:func:`xamt.catalog.bind.bind`, rendered by :class:`xamt.triage.repro._Renderer`), and:

- for a wrong value, NaN, infinity, signed zero, dtype or shape: the expected value, with
  where it comes from (the other libraries' agreement, the float64 reference, the standard's
  special case the finding is decided by), against the actual one as an assertion that fails
  while the bug is there, with the oracle's tolerance (:data:`xamt.tolerance.TOLERANCE`);
- for a dead or hung process, or an error where the others return: the call alone, with a
  comment saying what happens.

Execution is forced where a library is lazy (mxnet's asynchronous engine, jax's dispatch,
mindspore's PyNative queue), so that a crash happens inside the script. The full harness
scripts (:mod:`xamt.triage.repro`) stay for xamt's own verification;
:func:`run_standalone` runs a short repro in a fresh process of the blamed library's
environment and says whether it shows the departure (:mod:`xamt.triage.standalone` runs many
at once, in forked children of one process per library).
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from xamt.catalog.bind import bind
from xamt.catalog.model import Member
from xamt.errors import XamtError
from xamt.findings import Finding
from xamt.oracle.signature import error_type, headline
from xamt.outcomes import summarize
from xamt.tolerance import TOLERANCE, tolerance
from xamt.triage.repro import IMPORTS, INLINE_LIMIT, _Renderer
from xamt.types import Case, Outcome
from xamt.workers.protocol import ApiRef, BFloat16

# What a standalone run of a short repro shows while the bug is there: an AssertionError, the
# library's own exception, a process killed by a signal, a call that never returns; "" where
# it is not checked (an allocation beyond the memory cap depends on the machine).
Shows = Literal["assertion", "error", "signal", "hang", ""]

VALUE_KINDS = frozenset({"nan", "inf", "signed-zero", "value"})
COMPARED_KINDS = VALUE_KINDS | {"dtype", "shape"}

# The result as a numpy array, in the library's own spelling ({} is the result); converting
# forces a lazy library to compute it.
# (A library may also return a Python scalar or a numpy array where it usually returns its
# tensor: tensorflow's isinf of an integer, mxnet's numpy fallbacks; those are read as they are.)
TO_NUMPY = {
    "numpy": "numpy.asarray({})",
    "torch": "{0}.detach().numpy() if hasattr({0}, 'detach') else numpy.asarray({0})",
    "tensorflow": "{0}.numpy() if hasattr({0}, 'numpy') else numpy.asarray({0})",
    "jax": "numpy.asarray({})",
    "paddle": "{0}.numpy() if hasattr({0}, 'numpy') else numpy.asarray({0})",
    "mindspore": "{0}.asnumpy() if hasattr({0}, 'asnumpy') else numpy.asarray({0})",
    "mxnet": "{0}.asnumpy() if hasattr({0}, 'asnumpy') else numpy.asarray({0})",
}
# The same for a bfloat16 result, which numpy has no dtype for: widened to float32 first.
TO_NUMPY_BF16 = {
    "torch": "{}.detach().float().numpy()",
    "tensorflow": "tensorflow.cast({}, tensorflow.float32).numpy()",
    "jax": "numpy.asarray({}.astype(jax.numpy.float32))",
    "paddle": "{}.astype('float32').numpy()",
    "mindspore": "{}.astype(mindspore.float32).asnumpy()",
}
# What waits for a lazy library's result where nothing reads it (a crash or a hang).
FORCE = {
    "jax": "jax.block_until_ready(out)  # jax dispatches asynchronously: wait for the result",
    "mxnet": "mxnet.nd.waitall()  # mxnet runs asynchronously: wait for the result",
    "mindspore": "mindspore.runtime.synchronize()  # wait for the queued kernel",
}
# After the forced wait, the result is read as xamt's harness reads it (a library may defer
# the work, or the fault, to the first read of an output: paddle's adaptive pooling with an
# output size of -1 dies there, not in the call).
READ = "print(out)  # read the result, as a user would"
# Environment of a standalone run: quiet, one thread, CPU only.
QUIET = {
    "TF_CPP_MIN_LOG_LEVEL": "3",
    "GLOG_v": "3",
    "JAX_PLATFORMS": "cpu",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
}
RUN_SECONDS = 180.0  # a standalone run of a short repro (imports included)
HANG_SECONDS = 30.0  # a hang's short repro: still running after this is the hang shown
NPZ = "short_inputs.npz"


@dataclass(frozen=True, kw_only=True)
class ShortRepro:
    """A short repro's text, the arrays for :data:`NPZ` (none when all are inline), what a
    standalone run shows while the bug is there, and the error type it raises (``error``)."""

    text: str
    arrays: dict[str, np.ndarray]
    shows: Shows
    error: str = ""


@dataclass(frozen=True, kw_only=True)
class Expected:
    """What the blamed library should have returned at one output leaf, and why."""

    actual: np.ndarray
    value: np.ndarray
    leaf: tuple[int, ...]  # where the leaf sits in a tuple result (() for a plain result)
    source: str
    rtol: float
    atol: float


class _ShortRenderer(_Renderer):
    """The full scripts' renderer, writing literals at their shortest exact spelling, a
    callable by its own name, and large arrays into :data:`NPZ`."""

    INDENT = ""
    NPZ_LOAD = f"numpy.load(pathlib.Path(__file__).with_name('{NPZ}'))['{{}}']"

    def value(self, v: Any) -> str:
        if isinstance(v, ApiRef):
            return v.path
        return super().value(v)

    def literal(self, arr: np.ndarray, dtype: str) -> str:
        return inline_array(arr, dtype)


def exact_scalar(x: Any, dtype: str) -> str:
    """A Python literal that gives ``x`` back exactly at ``dtype``: the shortest round-trip
    digits at that dtype (``0.1`` for float32's 0.1, not ``0.10000000149011612``)."""
    if dtype == "bfloat16":  # its values are float32 values (the script casts them)
        dtype = "float32"
    kind = np.dtype(dtype).kind
    if kind == "b":
        return repr(bool(x))
    if kind in "iu":
        return repr(int(x))
    if kind == "c":
        part = "float32" if np.dtype(dtype) == np.complex64 else "float64"
        z = complex(x)
        return f"complex({exact_scalar(z.real, part)}, {exact_scalar(z.imag, part)})"
    value = float(x)
    if value != value:
        return "float('nan')"
    if value in (float("inf"), float("-inf")):
        return "float('inf')" if value > 0 else "float('-inf')"
    return str(np.dtype(dtype).type(value))


def inline_array(arr: np.ndarray, dtype: str) -> str:
    """An exact literal of a small array: 0-d and 1-d as they read, others reshaped."""
    items = [exact_scalar(x, dtype) for x in arr.reshape(-1).tolist()]
    if arr.ndim == 0:
        return f"numpy.array({items[0]}, dtype='{dtype}')"
    flat = f"numpy.array([{', '.join(items)}], dtype='{dtype}')"
    return flat if arr.ndim == 1 else f"{flat}.reshape({tuple(arr.shape)!r})"


def _leaves(value: Any, at: tuple[int, ...] = ()) -> list[tuple[tuple[int, ...], Any]]:
    """The leaves of a result, each with its index path in nested tuples and lists."""
    if isinstance(value, tuple | list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*at, i))]
    return [(at, value)]


def _array(value: Any) -> np.ndarray | None:
    """A leaf as a numpy array (bfloat16 as float32); None for anything else (a summary of a
    large result, an opaque object)."""
    if isinstance(value, BFloat16):
        return np.asarray(value.values)
    if isinstance(value, np.ndarray | np.generic | bool | int | float | complex):
        return np.asarray(value)
    return None


def _departs(kind: str, actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> bool:
    """Whether the short repro's check of ``kind`` fails for ``actual`` against ``expected``."""
    if kind == "dtype":
        return actual.dtype != expected.dtype
    if kind == "shape":
        return actual.shape != expected.shape
    try:
        if _exact(actual, expected):
            np.testing.assert_array_equal(actual, expected)
        else:
            for a, e in _parts(actual, expected):
                np.testing.assert_allclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
        if kind == "signed-zero":
            zero = (actual == 0) & (expected == 0)
            np.testing.assert_array_equal(np.signbit(actual[zero]), np.signbit(expected[zero]))
    except (AssertionError, ValueError, TypeError):
        return True
    return False


def _parts(actual: np.ndarray, expected: np.ndarray) -> list[tuple[np.ndarray, np.ndarray]]:
    """The pairs a check compares: the arrays themselves, or, where both are complex, their
    real and imaginary parts apart, as the oracle compares them (numpy's ``equal_nan`` takes
    any complex number with a NaN part for any other: ``nan+1j`` would pass for ``nan+nanj``).
    A complex result against a real one is compared per number, as the oracle does too."""
    if actual.dtype.kind == "c" and expected.dtype.kind == "c":
        return [(actual.real, expected.real), (actual.imag, expected.imag)]
    return [(actual, expected)]


def _exact(actual: np.ndarray, expected: np.ndarray) -> bool:
    return actual.dtype.kind in "biu" and expected.dtype.kind in "biu"


def _tolerance(case: Case, *dtypes: str) -> tuple[float, float]:
    """The oracle's tolerance for outputs of ``dtypes``: the loosest of theirs, never tighter
    than the input dtype's (a float16 input computed in float32 is held to float16)."""
    rtol, atol = tolerance(*(d for d in dtypes if d in TOLERANCE))
    if (
        rtol
        and case.dtype in TOLERANCE
        and (case.dtype == "bfloat16" or np.dtype(case.dtype).kind in "fc")
    ):
        floor = TOLERANCE.get(case.dtype, (0.0, 0.0))
        rtol, atol = max(rtol, floor[0]), max(atol, floor[1])
    return rtol, atol


def expected_of(
    finding: Finding,
    case: Case,
    outcomes: Mapping[str, Outcome],
    reference: Outcome | None,
) -> Expected | None:
    """The value the blamed library should have returned, at the first output leaf where its
    result departs: what the other libraries that agree with the float64 reference return;
    else the reference itself; else what the largest agreeing class of the others returns.
    None when no leaf departs from any of them (or the result came summarized)."""
    blamed = outcomes.get(finding.library)
    if blamed is None or blamed.status != "ok":
        return None
    others = [lib for lib, o in outcomes.items() if lib != finding.library and o.status == "ok"]
    ref_leaves = dict(_leaves(reference.value)) if reference and reference.status == "ok" else {}
    for at, leaf in _leaves(blamed.value):
        actual = _array(leaf)
        if actual is None:
            continue
        found = {}
        for lib in others:
            leaves = dict(_leaves(outcomes[lib].value))
            other = _array(leaves.get(at))
            if other is not None:
                found[lib] = other
        ref = _array(ref_leaves.get(at)) if at in ref_leaves else None
        if ref is not None and actual.dtype.kind in "fc" and ref.dtype.kind in "fc":
            with np.errstate(all="ignore"):  # as the oracle does: at the result's precision
                ref = ref.astype(actual.dtype)

        def tol(*arrays: np.ndarray) -> tuple[float, float]:
            return _tolerance(case, *(a.dtype.name for a in arrays))

        departing = {
            lib: v for lib, v in found.items() if _departs(finding.kind, actual, v, *tol(actual, v))
        }
        if ref is not None:
            agreeing = [
                lib for lib, v in departing.items() if not _departs(finding.kind, v, ref, *tol(v))
            ]
            if agreeing:
                value = departing[agreeing[0]]
                source = (
                    f"what {_names(agreeing)} return, as does the float64 reference "
                    "(numpy on the inputs in float64)"
                )
                return _expected(actual, value, at, source, tol(actual, value))
            if _departs(finding.kind, actual, ref, *tol(actual)):
                source = f"the float64 reference (numpy on the inputs in float64), in {ref.dtype}"
                return _expected(actual, ref, at, source, tol(actual))
        if departing:
            classes: list[list[str]] = []
            for lib, v in departing.items():
                home = next(
                    (c for c in classes if not _departs(finding.kind, departing[c[0]], v, *tol(v))),
                    None,
                )
                if home is None:
                    classes.append([lib])
                else:
                    home.append(lib)
            best = max(classes, key=len)
            value = departing[best[0]]
            return _expected(actual, value, at, f"what {_names(best)} return", tol(actual, value))
    return None


def _expected(
    actual: np.ndarray,
    value: np.ndarray,
    at: tuple[int, ...],
    source: str,
    tol: tuple[float, float],
) -> Expected:
    return Expected(actual=actual, value=value, leaf=at, source=source, rtol=tol[0], atol=tol[1])


def _names(libs: Sequence[str]) -> str:
    return libs[0] if len(libs) == 1 else ", ".join(libs[:-1]) + " and " + libs[-1]


def check_lines(kind: str, expected: Expected) -> list[str]:
    """The assertion of ``kind`` on ``actual`` against ``expected``, as the oracle checks it."""
    if kind == "dtype":
        return [f"assert actual.dtype == numpy.dtype('{expected.value.dtype.name}'), actual.dtype"]
    if kind == "shape":
        return [f"assert actual.shape == {tuple(expected.value.shape)!r}, actual.shape"]
    if _exact(expected.actual, expected.value):
        lines = ["numpy.testing.assert_array_equal(actual, expected)"]
    else:
        pairs = (
            [("actual", "expected")]
            if len(_parts(expected.actual, expected.value)) == 1
            else [("actual.real", "expected.real"), ("actual.imag", "expected.imag")]
        )
        lines = [
            f"numpy.testing.assert_allclose({a}, {e}, rtol={expected.rtol!r},"
            f" atol={expected.atol!r}, equal_nan=True)"
            for a, e in pairs
        ]
    if kind == "signed-zero":
        lines += [
            "zero = (actual == 0) & (expected == 0)",
            "numpy.testing.assert_array_equal(numpy.signbit(actual[zero]),"
            " numpy.signbit(expected[zero]))",
        ]
    return lines


def _statuses(finding: Finding, outcomes: Mapping[str, Outcome] | None) -> dict[str, str]:
    """How each library's call ended ("ok", "error", ...): from the re-run of the case where
    there was one, else from the run the finding recorded (its ``outputs``; triage may have run
    out of time before re-running it, and the case's signature keeps who raised and who
    returned)."""
    if outcomes:
        return {lib: o.status for lib, o in outcomes.items()}
    return {lib: str(out.get("status", "")) for lib, out in finding.outputs.items()}


def _others_did(finding: Finding, statuses: Mapping[str, str], status: str) -> str:
    """Which other libraries ended with ``status``, for a comment ("" when none or unknown)."""
    libs = sorted(lib for lib, s in statuses.items() if lib != finding.library and s == status)
    return _names(libs) if libs else ""


def _others_error(finding: Finding, statuses: Mapping[str, str]) -> str:
    """The error type the other libraries raised, where the finding recorded one."""
    for lib, s in sorted(statuses.items()):
        out = finding.outputs.get(lib, {})
        error = out.get("error") if lib != finding.library and s == "error" else None
        if isinstance(error, dict) and isinstance(error.get("type"), str):
            return error["type"]
    return error_type(finding.error)


def short_script(
    *,
    finding: Finding,
    member: Member,
    case: Case,
    outcomes: Mapping[str, Outcome] | None,
    reference: Outcome | None,
    version: str,
) -> ShortRepro | None:
    """The short repro of ``finding`` (its minimized ``case``, the blamed library's ``member``),
    from what each library did with the case (``outcomes``, None where it was not re-run: a
    hang). None where there is none to write: a split, a gradient finding (its short script
    is :mod:`xamt.triage.grad_repro`'s), or a compared kind whose outcomes are unknown or do
    not depart at any output leaf."""
    library = finding.library
    if library not in IMPORTS or finding.kind == "gradient":
        return None
    call = bind(member, case.values, seed=case.seed)
    r = _ShortRenderer(library, call.api)
    args = [r.argument(a, call.transpose.get(str(i))) for i, a in enumerate(call.args)]
    args += [f"{k}={r.argument(v, call.transpose.get(k))}" for k, v in call.kwargs.items()]
    call_line = f"out = {call.api}({', '.join(args)})"
    blamed = outcomes.get(library) if outcomes else None
    statuses = _statuses(finding, outcomes)
    body: list[str] = []
    shows: Shows = ""
    error = ""
    if finding.kind in COMPARED_KINDS:
        expected = expected_of(finding, case, outcomes, reference) if outcomes else None
        if expected is None:
            return None
        leaf = "out" + "".join(f"[{i}]" for i in expected.leaf)
        leaves = dict(_leaves(blamed.value)) if blamed is not None else {}
        bf16 = isinstance(leaves.get(expected.leaf), BFloat16)
        convert = (TO_NUMPY_BF16 if bf16 else TO_NUMPY).get(library, TO_NUMPY[library])
        body += [call_line, f"actual = {convert.format(leaf)}"]
        out_perm = call.transpose.get("return")
        if out_perm:
            perm = tuple(out_perm)
            body.append(f"actual = numpy.transpose(actual, {perm!r})  # back to xamt's layout")
        body.append(f"# expected: {expected.source}")
        if finding.decided_by:
            body.append(f"# decided by {finding.decided_by}")
        if expected.value.size <= INLINE_LIMIT:
            body.append(f"expected = {inline_array(expected.value, expected.value.dtype.name)}")
        else:
            r.npz["expected"] = expected.value
            body.append(f"expected = {_ShortRenderer.NPZ_LOAD.format('expected')}")
        body += check_lines(finding.kind, expected)
        shows = "assertion"
    elif finding.kind == "status" and statuses.get(library) == "ok":
        raised = _others_did(finding, statuses, "error")
        said = "".join(c for c in _others_error(finding, statuses) if c.isalnum() or c in "_.")
        body += [call_line, FORCE.get(library, "")]
        body.append(
            f"raise AssertionError('{library} returned where {raised or 'the others'} raise"
            f" {said or 'an error'}')"
        )
        shows = "assertion"
    elif finding.kind == "status":
        returned = _others_did(finding, statuses, "ok")
        said = headline(finding.error)[:100].replace("'", "")
        others = f"; {returned} return" if returned else ""
        if blamed is not None and blamed.status == "ok" and blamed.value is not None:
            others += f" {summarize(blamed.value, 60)}"
        body += [call_line, FORCE.get(library, ""), READ, f"# raises {said}{others}"]
        shows, error = "error", error_type(finding.error)
    elif finding.kind in ("crash", "hang", "resource"):
        what = {
            "crash": f"the process dies here ({finding.error or 'killed'}): no Python exception",
            "hang": f"this never returns (xamt waited {HANG_SECONDS:.0f} s and more)",
            "resource": "this allocates beyond xamt's memory cap",
        }[finding.kind]
        body += [call_line, FORCE.get(library, ""), READ, f"# {what}"]
        shows = {"crash": "signal", "hang": "hang", "resource": ""}[finding.kind]  # type: ignore[assignment]
    else:
        return None
    text = short_text(finding, version, _run_says(shows, error), r, [ln for ln in body if ln])
    return ShortRepro(text=text, arrays=dict(r.npz), shows=shows, error=error)


def short_text(finding: Finding, version: str, says: str, r: _Renderer, body: Sequence[str]) -> str:
    """A short repro's text: the docstring (the finding, its detail, what a run ``says``),
    the imports, the inputs ``r`` rendered, then ``body``."""
    library = finding.library
    imports = ["import numpy", IMPORTS[library]]
    if r.npz:
        imports.insert(0, "import pathlib")
    lines = [
        f'"""xamt finding {finding.key}, with {library} {version} alone.',
        "",
        *([finding.detail, ""] if finding.detail else []),
        says,
        '"""',
        "",
        *imports,
        "",
        *r.arrays,
        *body,
    ]
    return "\n".join(lines) + "\n"


def _run_says(shows: Shows, error: str) -> str:
    return {
        "assertion": "Run it: it fails (AssertionError) while the bug is there.",
        "error": f"Run it: it raises {error or 'an error'} while the bug is there.",
        "signal": "Run it: the process dies (a signal, no traceback) while the bug is there.",
        "hang": "Run it: it never finishes while the bug is there.",
        "": "Run it to see the call.",
    }[shows]


@dataclass(frozen=True, kw_only=True)
class Ran:
    """How one standalone run of a short repro ended: its exit status (negative for a signal
    death, as :mod:`subprocess` says it), whether it was killed at its time limit, the end of
    its stderr, how long it took, and whether it ran in a forked child of a process that had
    imported the library (:mod:`xamt.triage.standalone`) rather than a fresh interpreter;
    ``failed`` says why it could not be started at all ("" where it ran)."""

    rc: int = 0
    timed_out: bool = False
    stderr: str = ""
    seconds: float = 0.0
    forked: bool = False
    failed: str = ""


def limit_of(shows: Shows) -> float:
    """The seconds a standalone run of a repro that ``shows`` gets: :data:`HANG_SECONDS` for a
    hang (still running then is the hang shown), else :data:`RUN_SECONDS`."""
    return HANG_SECONDS if shows == "hang" else RUN_SECONDS


def verdict_of(shows: Shows, error: str, ran: Ran, limit: float) -> str:
    """ "" where the run ``ran`` shows the departure (``shows``; ``error`` the error type it
    raises, if known), else why not, one line."""
    if not shows:
        return ""
    if ran.failed:
        return f"it could not be started ({ran.failed})"
    if ran.timed_out:
        return "" if shows == "hang" else f"it did not finish within {limit:.0f} s"
    rc, err = ran.rc, ran.stderr
    last = headline("\n".join(err.strip().splitlines()[-1:])) or f"exit {rc}"
    if shows == "hang":
        return f"it finished within {limit:.0f} s (exit {rc})"
    if shows == "signal":
        if rc < 0 or (rc != 0 and "Traceback" not in err):
            return ""
        return f"the process did not die (exit {rc}{': ' + last if rc else ''})"
    if rc == 0:
        return "it passed: the library gave the expected result in a fresh process"
    if shows == "assertion":
        return "" if "AssertionError" in err else f"it failed otherwise ({last[:160]})"
    if error and error not in err:
        return f"it raised something else ({last[:160]})"
    return ""


def run_fresh(path: Path, *, python: str, limit: float) -> Ran:
    """Run ``path`` in a fresh process of ``python`` in an empty folder, killed past
    ``limit`` seconds."""
    env = {**os.environ, **QUIET}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="xamt-short-") as cwd:  # mindspore writes rank_0/
        try:
            done = subprocess.run(
                [python, str(path)],
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=limit,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Ran(timed_out=True, seconds=time.monotonic() - started)
        except OSError as exc:
            return Ran(failed=str(exc))
    return Ran(rc=done.returncode, stderr=done.stderr, seconds=time.monotonic() - started)


def run_standalone(
    path: Path,
    *,
    python: str,
    shows: Shows,
    error: str = "",
    timeout: float | None = None,
) -> str:
    """Run a short repro in a fresh process of ``python`` (the blamed library's environment,
    :func:`xamt.envs.interpreter`) in an empty folder; "" where it shows the departure
    (``shows``), else why not, one line (:func:`verdict_of`). A hang's repro runs
    :data:`HANG_SECONDS`: still running then is the hang shown; any other stops at
    :data:`RUN_SECONDS`. Many repros at once: :func:`xamt.triage.standalone.run_checks`."""
    if not shows:
        return ""
    limit = timeout if timeout is not None else limit_of(shows)
    return verdict_of(shows, error, run_fresh(path, python=python, limit=limit), limit)


def hold_back_reason(library: str, verdict: str) -> str:
    """The finding's ``held_back`` line for a standalone run's verdict ("" when it showed)."""
    if not verdict:
        return ""
    return (
        f"its short repro, run standalone in a fresh {library} process, did not show the "
        f"departure: {verdict}"
    )


def interpreter_of(library: str) -> str | None:
    """The blamed library's python, or None where its environment is not usable."""
    from xamt import envs

    try:
        return envs.interpreter(library)
    except XamtError:
        return None
