"""Short gradient repros without libraries: the position, values and tolerance a gradient
blame carries as data (xamt.oracle.gradient.GradientCheck), the assertion they make, and
the script xamt/triage/grad_repro.py writes from them."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from xamt.catalog.model import load
from xamt.findings import Finding
from xamt.oracle import gradient
from xamt.oracle.gradient import ATOL, RTOL, GradientCheck, judge_gradients
from xamt.triage.grad_repro import gradient_check, short_gradient_script
from xamt.types import Case, Outcome


def outcome(lib: str, grad: Any) -> Outcome:
    return Outcome(
        library=lib,
        api=f"{lib}.f",
        status="ok",
        value=np.zeros(3),
        grad=(np.asarray(grad, dtype=np.float32),),
        grad_status="ok",
    )


def smooth(value: Any) -> dict[str, gradient.Derivative]:
    v = np.array(value, dtype=np.float64)
    ones = np.ones(v.shape, dtype=bool)
    return {"x": gradient.Derivative(value=v, consistent=ones, smooth=ones)}


def fails(check: GradientCheck, actual: float | None = None) -> bool:
    """Whether the short repro's assertion fails on ``actual`` (the check's own by default)."""
    try:
        np.testing.assert_allclose(
            check.actual if actual is None else actual,
            check.expected,
            rtol=check.rtol,
            atol=check.atol,
        )
    except AssertionError:
        return True
    return False


def test_a_blame_carries_its_position_values_source_and_tolerance_as_data() -> None:
    values = {"x": np.array([0.3, 0.7, 1.1], dtype=np.float32)}
    outcomes = {
        "torch": outcome("torch", [0.5, -0.25, 0.125]),
        "jax": outcome("jax", [0.5, -0.25, 0.125]),
        "paddle": outcome("paddle", [0.5, 0.25, 0.125]),  # wrong sign at 1
        "mxnet": outcome("mxnet", [np.nan, -0.25, 0.125]),
    }
    blames = {
        b.library: b
        for b in judge_gradients(
            "float32", values, ("x",), outcomes, smooth([0.5, -0.25, 0.125]), {}
        )
    }
    rtol = RTOL["float32"]
    # the absolute term: the oracle's floor plus rtol times the gradient's largest magnitude
    atol = ATOL["float32"] + rtol * (0.5 + 1e-300)
    assert blames["paddle"].check == GradientCheck(
        role="x",
        position=(1,),
        actual=0.25,
        expected=-0.25,
        source="the float64 finite difference; torch, jax and mxnet agree",
        rtol=rtol,
        atol=atol,
        symmetric=False,
    )
    nan = blames["mxnet"].check
    assert nan is not None and nan.position == (0,) and math.isnan(nan.actual)
    assert nan.expected == 0.5 and nan.source.endswith("torch, jax and paddle agree")
    for check in (blames["paddle"].check, nan):
        assert check is not None and fails(check) and not fails(check, check.expected)


def test_a_kink_blame_expects_what_the_majority_gives_and_modes_has_no_position() -> None:
    values = {"x": np.array([0.0, 2.0], dtype=np.float32)}
    outcomes = {
        "torch": outcome("torch", [0.0, 0.5]),
        "paddle": outcome("paddle", [0.0, 0.5]),
        "jax": outcome("jax", [0.875, 0.5]),
    }
    kinks = {"x": np.array([True, False])}
    (blame,) = judge_gradients("float32", values, ("x",), outcomes, smooth([0.0, 0.5]), kinks)
    check = blame.check
    assert check is not None and (check.position, check.actual, check.expected) == (
        (0,),
        0.875,
        0.0,
    )
    assert check.source == "what torch and paddle give at this kink"
    assert check.atol == ATOL["float32"] + RTOL["float32"] * (0.5 + 1e-300)
    assert fails(check) and not fails(check, 0.0)
    modes = gradient.GradientBlame(library="jax", oracle="modes", confidence="reference", detail="")
    assert modes.check is None


# gradients and expected values, finite and not, near and far from each other
ACTUALS = (0.0, -0.0, 0.25, -0.25, 0.8755, 0.877, 1e-3, np.nan, np.inf, -np.inf)
EXPECTEDS = (0.0, 0.25, -0.25, 0.875, np.nan, np.inf, -np.inf)
SCALES = (1e-300, 0.875, 10.0)  # the gradient's largest magnitude


def test_the_assertion_fails_exactly_where_the_oracle_says_the_two_differ() -> None:
    tol = (RTOL["float32"], ATOL["float32"])
    wrong = []
    for actual, expected, scale in itertools.product(ACTUALS, EXPECTEDS, SCALES):
        close = bool(gradient._close(np.array(actual), np.array(expected), tol, scale))
        check = GradientCheck(
            role="x",
            position=(),
            actual=actual,
            expected=expected,
            source="",
            rtol=tol[0],
            atol=tol[1] + tol[0] * scale,
        )
        if fails(check) is close:
            wrong.append((actual, expected, scale, close))
    assert wrong == []


def symmetric_blame() -> gradient.GradientBlame:
    """jax's gradient of a symmetric input off the diagonal: 0.5 on each side where the
    others give 0.25 (derivative 0.5 along the symmetric direction, 1.0 for jax)."""
    values = {"x": np.array([[2.0, 0.3], [0.3, 1.0]])}
    lower = smooth([[0.0, 0.0], [0.5, 0.0]])
    outcomes = {
        "torch": outcome("torch", [[0, 0.25], [0.25, 0]]),
        "tensorflow": outcome("tensorflow", [[0, 0.0], [0.5, 0]]),
        "jax": outcome("jax", [[0, 0.5], [0.5, 0]]),
    }
    (blame,) = judge_gradients("float64", values, ("x",), outcomes, lower, {}, symmetric=True)
    return blame


def test_a_symmetric_input_is_checked_along_the_symmetric_direction() -> None:
    blame = symmetric_blame()
    check = blame.check
    assert blame.library == "jax" and check is not None and check.symmetric
    assert (check.position, check.actual, check.expected) == ((1, 0), 1.0, 0.5)
    group = load().group("eigvalsh@square")
    member = next(m for m in group.members if m.library == "jax")
    case = Case(
        group=group.id,
        dtype="float64",
        value_class="ordinary",
        values={"x": np.array([[2.0, 0.3], [0.3, 1.0]])},
        apis={"jax": member.api},
        seed=7,
        grad=True,
    )
    f = Finding(
        signature="0123456789abcdef",
        key="gradient/jax/jax.eigvalsh/float64/reference",
        kind="gradient",
        classification="suspected-bug",
        severity="high",
        confidence="reference",
        library="jax",
        callable="jax.eigvalsh",
        group=group.id,
        apis=dict(case.apis),
        trigger="reference",
        input_classes=(),
        dtype="float64",
        detail=blame.detail,
    )
    assert gradient_check([blame], f) == check
    assert gradient_check([blame], f.replace(trigger="nonfinite")) is None
    short = short_gradient_script(
        finding=f, member=member, case=case, check=check, outcome=None, version="v"
    )
    assert short is not None and short.shows == "assertion"
    text = short.text
    assert "jax.vjp(lambda x0:" in text and "* 5 + 7) % 8" in text
    assert "numpy.testing.assert_allclose(g[1, 0] + g[0, 1], 0.5, rtol=1e-06," in text
    assert "# expected: the float64 finite difference; torch and tensorflow agree" in text
    assert len([line for line in text.splitlines() if line.strip()]) <= 20, text
    compile(text, "short_jax.py", "exec")
    # the script's sum is the oracle's symmetrized gradient there
    g = np.array([[0, 0.5], [0.5, 0]])
    assert g[1, 0] + g[0, 1] == gradient._symmetric(g)[1, 0] == check.actual
