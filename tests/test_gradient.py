"""The gradient oracle without libraries: the finite-difference reference on functions with
known derivatives, the verdict on made-up gradients, the reviewed data and its conventions."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from xamt.catalog.model import CatalogError, load
from xamt.oracle import gradient
from xamt.oracle.gradient import (
    KINK_QUESTION,
    OpGradient,
    Probe,
    finite_difference,
    judge_gradients,
    kink_mask,
    probed,
    probes,
    scalar,
)
from xamt.oracle.verdict import Blame
from xamt.replay import classify_blame, default_known, sign
from xamt.serialize import case_from_jsonable, case_to_jsonable
from xamt.types import Case, Outcome
from xamt.workers.protocol import cotangent

SEED = 5


def reference(fn: Any, values: dict[str, Any], roles: tuple[str, ...]) -> dict[str, Any]:
    """The finite difference of ``fn`` (numpy, float64) as the judge computes it."""
    up = {k: np.asarray(v, dtype=np.float64) for k, v in values.items()}
    base = scalar(fn(*up.values()), SEED)
    at = [scalar(fn(*probed(up, p).values()), SEED) for p in probes(values, roles)]
    return finite_difference(values, roles, base, at)


def test_finite_difference_matches_known_derivatives() -> None:
    x = np.array([[0.3, -1.2, 2.5], [4.0, -0.7, 0.05]], dtype=np.float32)
    c = cotangent(x.shape, SEED)
    for fn, derivative in [
        (np.sin, np.cos),
        (np.exp, np.exp),
        (np.tanh, lambda v: 1 - np.tanh(v) ** 2),
        (lambda v: v**3, lambda v: 3 * v**2),
    ]:
        ref = reference(fn, {"x": x}, ("x",))["x"]
        expected = c * derivative(x.astype(np.float64))
        np.testing.assert_allclose(ref.value, expected, rtol=1e-7, atol=1e-9)
        assert ref.consistent.all() and ref.smooth.all()


def test_finite_difference_of_two_inputs_with_broadcasting() -> None:
    x1 = np.array([[1.0, 2.0, -3.0], [0.5, 0.25, 4.0]])
    x2 = np.array([2.0, -1.0, 0.5])
    ref = reference(lambda x1, x2: x1 * x2, {"x1": x1, "x2": x2}, ("x1", "x2"))
    c = cotangent((2, 3), SEED)
    np.testing.assert_allclose(ref["x1"].value, c * x2, rtol=1e-7)
    np.testing.assert_allclose(ref["x2"].value, (c * x1).sum(axis=0), rtol=1e-7)


def test_finite_difference_sees_kinks_and_jumps() -> None:
    x = np.array([0.0, 1.5, -2.0])
    ref = reference(lambda x: np.abs(x), {"x": x}, ("x",))["x"]
    # |x| at 0: the central differences agree (0), one-sided ones keep their jump: a kink
    assert list(ref.smooth) == [False, True, True]
    jump = reference(lambda x: np.floor(x), {"x": np.array([2.0, 0.5])}, ("x",))["x"]
    # floor at an integer: the central difference grows as the step shrinks: not judged
    assert list(jump.consistent) == [False, True]
    assert jump.value[1] == 0


def test_probes_move_one_element_at_two_steps() -> None:
    values = {"x": np.array([3.0, -0.5], dtype=np.float32)}
    found = probes(values, ("x",))
    assert len(found) == 8
    assert found[0] == Probe("x", 0, 3 * 1e-5)
    moved = probed(values, found[1])["x"]
    assert moved.dtype == np.float64 and moved[0] == 3.0 - 3 * 1e-5 and moved[1] == -0.5


def outcome(lib: str, *grads: Any, status: str = "ok") -> Outcome:
    return Outcome(
        library=lib,
        api=f"{lib}.f",
        status="ok",
        value=np.zeros(3),
        grad=tuple(np.asarray(g, dtype=np.float32) if g is not None else None for g in grads),
        grad_status=status,
    )


def smooth_reference(value: list[float]) -> dict[str, Any]:
    v = np.array(value)
    ones = np.ones(v.shape, dtype=bool)
    return {"x": gradient.Derivative(value=v, consistent=ones, smooth=ones)}


def test_a_departing_gradient_is_blamed_by_reference() -> None:
    values = {"x": np.array([0.3, 0.7, 1.1], dtype=np.float32)}
    ref = smooth_reference([0.5, -0.25, 0.125])
    outcomes = {
        "torch": outcome("torch", [0.5, -0.25, 0.125]),
        "jax": outcome("jax", [0.5, -0.25, 0.125]),
        "paddle": outcome("paddle", [0.5, 0.25, 0.125]),  # wrong sign at 1
        "mxnet": outcome("mxnet", [np.nan, -0.25, 0.125]),
    }
    no_kinks = {"x": np.zeros(3, bool)}
    blames = {
        b.library: b for b in judge_gradients("float32", values, ("x",), outcomes, ref, no_kinks)
    }
    assert set(blames) == {"paddle", "mxnet"}
    assert blames["paddle"].oracle == "reference" and blames["paddle"].confidence == "reference"
    assert "at (1) is 0.25 where the float64 finite difference is -0.25" in blames["paddle"].detail
    assert blames["mxnet"].oracle == "nonfinite"
    # the libraries the value oracle blamed are not judged
    skipped = judge_gradients(
        "float32", values, ("x",), outcomes, ref, no_kinks, skip=frozenset({"paddle"})
    )
    assert {b.library for b in skipped} == {"mxnet"}


def test_tolerance_none_as_zeros_and_failures() -> None:
    values = {"x": np.array([0.3, 0.7], dtype=np.float32)}
    outcomes = {
        "torch": outcome("torch", [1.0002, 0.0]),  # float32: 1e-3 of the largest magnitude
        "tensorflow": outcome("tensorflow", None),  # None: no dependence, read as zeros
        "jax": outcome("jax", [1.0, 1e-4]),
        "paddle": outcome("paddle", None, status="error"),  # a failure is not judged
    }
    blames = judge_gradients("float32", values, ("x",), outcomes, smooth_reference([1.0, 0]), {})
    assert [b.library for b in blames] == ["tensorflow"]
    # where the reference is zero, None is the right answer
    zero = smooth_reference([0.0, 0.0])
    outcomes["jax"] = outcome("jax", [0.0, 0.0])
    assert judge_gradients("float32", values, ("x",), outcomes, zero, {})[0].library == "torch"
    del outcomes["torch"]
    assert judge_gradients("float32", values, ("x",), outcomes, zero, {}) == []
    # without a reference nothing is judged at smooth points
    assert judge_gradients("float32", values, ("x",), outcomes, None, {}) == []


def test_a_kink_departure_is_a_question_for_the_minority() -> None:
    values = {"x": np.array([0.0, 2.0], dtype=np.float32)}
    ref = smooth_reference([0.0, 0.5])
    kinks = {"x": np.array([True, False])}
    outcomes = {
        "torch": outcome("torch", [0.0, 0.5]),
        "paddle": outcome("paddle", [0.0, 0.5]),
        "jax": outcome("jax", [0.875, 0.5]),
    }
    blames = judge_gradients("float32", values, ("x",), outcomes, ref, kinks)
    assert [(b.library, b.oracle, b.question) for b in blames] == [("jax", "kink", KINK_QUESTION)]
    # an even split at a kink blames nobody
    even = {k: outcomes[k] for k in ("torch", "jax")}
    assert judge_gradients("float32", values, ("x",), even, ref, kinks) == []


def test_kink_mask_and_moving_off_kinks() -> None:
    record = OpGradient(kinks=(0.0, 6.0))
    x = np.array([0.0, 5.9995, 3.0, -0.0004], dtype=np.float32)
    assert list(kink_mask(x, record)) == [True, True, False, True]
    moved = gradient.away_from_kinks(x, record)
    assert not kink_mask(moved, record).any() and moved[2] == 3.0 and moved.dtype == np.float32
    ties = OpGradient(ties=True)
    assert list(kink_mask(np.array([1.0, 2.0, 1.0]), ties)) == [True, False, True]
    assert list(kink_mask(np.array([1.0, 2.0]), ties, [np.array([2.0])])) == [False, True]


def test_the_shipped_data_names_catalog_operations_with_links() -> None:
    data = gradient.load_gradients()
    ops = {g.op for g in load().groups}
    assert set(data.ops) <= ops, sorted(set(data.ops) - ops)
    assert data.ops["abs"].kinks == (0.0,) and data.ops["maximum"].ties
    assert all(r.link.startswith("https://") and r.reason for r in data.ops.values())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('[op.abs]\nkinks = [0]\nreason = "r"\nlink = "http://x"\n', "https URL"),
        ('[op.abs]\nkinks = ["zero"]\nreason = "r"\nlink = "https://x"\n', "finite numbers"),
        ('[op.abs]\nkinks = [0]\nlink = "https://x"\n', "'reason' is required"),
        ('[differentiable]\nfamilies = ["nope"]\n', "unknown nope"),
        ("[ops]\n", "unknown table"),
    ],
)
def test_malformed_gradient_data_names_the_entry(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "gradients.toml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=problem):
        gradient.load_gradients(path)


def abs_case(**changes: Any) -> Case:
    group = next(g for g in load().groups if g.op == "abs")
    apis = {m.library: m.api for m in reversed(group.members)}
    base = Case(
        group=group.id,
        dtype="float32",
        value_class="ordinary",
        values={"x": np.array([0.0, 2.0], dtype=np.float32)},
        apis=apis,
        seed=3,
        grad=True,
    )
    return dataclasses.replace(base, **changes)


def test_conventions_are_known_differences() -> None:
    case = abs_case()
    group = load().group(case.group)
    for lib, expected in [("torch", "documented-difference"), ("jax", "unspecified")]:
        blame = Blame(
            kind="gradient",
            library=lib,
            confidence="majority",
            detail="gradient at a kink",
            question=KINK_QUESTION,
        )
        signed = sign(case, group, blame, "kink")
        assert signed.key == f"gradient/{lib}/{lib}.abs/float32/kink"
        classification, entry = classify_blame(default_known(), signed, case, group)
        assert classification == expected
        assert (entry is not None) == (lib == "torch")


def test_gradient_cases_keep_off_kinks_and_round_trip() -> None:
    group = load().group(abs_case().group)
    plain = abs_case(grad=False, values={"x": np.array([0.0002, -3.0], dtype=np.float32)})
    rng = np.random.default_rng(0)
    cases = [gradient.gradient_case(plain, group, rng) for _ in range(40)]
    assert all(c.grad for c in cases)
    on_kink = [c for c in cases if (c.values["x"] == 0).any()]
    off = [c for c in cases if not (c.values["x"] == 0).any()]
    assert on_kink and off  # a share of the cases sits on the kink, the rest keep 1e-3 away
    assert all(np.abs(c.values["x"]).min() >= 1e-3 for c in off)
    assert case_from_jsonable(case_to_jsonable(cases[0])).grad
    assert "grad" not in case_to_jsonable(plain)
    # an input with a NaN, or an integer input, makes no gradient case
    nan = abs_case(grad=False, values={"x": np.array([np.nan], dtype=np.float32)})
    assert not gradient.gradient_case(nan, group, rng).grad
    ints = abs_case(grad=False, dtype="int32", values={"x": np.array([1], dtype=np.int32)})
    assert not gradient.gradient_case(ints, group, rng).grad


def test_the_gradient_check_file_round_trips(tmp_path: Path) -> None:
    from xamt.catalog import gradients as members

    found = {
        "sin": members.GroupGradients(kept=("torch.sin", "jax.numpy.sin"), dropped={}),
        "abs": members.GroupGradients(kept=(), dropped={"mxnet.np.abs": "no gradient (error)"}),
    }
    path = tmp_path / "gradient_members.json"
    members.save(found, path)
    assert members.load_members(path) == found
    assert members.load_members(tmp_path / "missing.json") == {}
    path.write_text('{"schema": 1, "groups": {"sin": {"kept": 3}}}')
    with pytest.raises(CatalogError, match="group 'sin': malformed"):
        members.load_members(path)


def test_why_a_member_is_dropped() -> None:
    from xamt.catalog.gradients import _dropped
    from xamt.types import ErrorInfo

    ok = outcome("torch", [1.0])
    assert _dropped(ok, None, "") is None
    assert _dropped(ok, "gradient: torch's d/dx ...", "").startswith("gradient:")
    failed = dataclasses.replace(
        ok, grad=None, grad_status="error", grad_error=ErrorInfo(type="RuntimeError", message="no")
    )
    assert _dropped(failed, None, "") == "no gradient (error: RuntimeError: no)"
    assert _dropped(dataclasses.replace(ok, status="crash"), None, "").startswith("the call")


def test_symmetric_inputs_compare_along_symmetric_directions() -> None:
    # f(A) reads A[1, 0] only; one library symmetrizes the gradient (halves on both sides)
    values = {"x": np.array([[2.0, 0.3], [0.3, 1.0]])}
    ones = np.ones((2, 2), dtype=bool)
    lower = {
        "x": gradient.Derivative(value=np.array([[0, 0], [1.0, 0]]), consistent=ones, smooth=ones)
    }
    outcomes = {
        "torch": outcome("torch", [[0, 0.5], [0.5, 0]]),
        "jax": outcome("jax", [[0, 0.5], [0.5, 0]]),
        "tensorflow": outcome("tensorflow", [[0, 0], [1.0, 0]]),
    }
    outcomes = {
        k: dataclasses.replace(o, grad=(o.grad[0].astype(np.float64),)) for k, o in outcomes.items()
    }
    plain = judge_gradients("float64", values, ("x",), outcomes, lower, {})
    assert {b.library for b in plain} == {"torch", "jax"}
    assert judge_gradients("float64", values, ("x",), outcomes, lower, {}, symmetric=True) == []
    outcomes["jax"] = outcome("jax", [[0, -0.5], [-0.5, 0]])
    blamed = judge_gradients("float64", values, ("x",), outcomes, lower, {}, symmetric=True)
    assert [b.library for b in blamed] == ["jax"]


def test_forward_mode_is_checked_against_reverse_mode_off_kinks() -> None:
    from xamt.workers.protocol import tangent

    x = np.array([0.3, 0.7, 1.1], dtype=np.float32)
    values = {"x": x}
    ref = smooth_reference([0.5, -0.25, 0.125])
    g = np.array([0.5, -0.25, 0.125])
    # out = x * w elementwise with J = diag(w); choose w so that J^T c = g
    c = cotangent((3,), SEED)
    w = g / c
    right = w * tangent((3,), SEED)  # J t, the result's tangent
    agree = dataclasses.replace(
        outcome("torch", g), tangent=right.astype(np.float32), tangent_status="ok"
    )
    wrong = dataclasses.replace(
        outcome("jax", g), tangent=(2 * right).astype(np.float32), tangent_status="ok"
    )
    plain = outcome("paddle", g)  # no forward mode: nothing to compare
    outcomes = {"torch": agree, "jax": wrong, "paddle": plain}
    blames = judge_gradients("float32", values, ("x",), outcomes, ref, {}, seed=SEED)
    assert [(b.library, b.oracle) for b in blames] == [("jax", "modes")]
    # at a kink the two modes may take different one-sided derivatives: not judged
    kinks = {"x": np.array([True, False, False])}
    at_kink = judge_gradients("float32", values, ("x",), outcomes, ref, kinks, seed=SEED)
    assert all(b.oracle != "modes" for b in at_kink)


def test_a_scalar_result_is_differenced_like_a_0d_array() -> None:
    x = np.array([[0.3, -1.2], [2.5, 4.0]], dtype=np.float32)
    as_float = reference(lambda v: float(np.sum(v**2)), {"x": x}, ("x",))["x"]
    as_array = reference(lambda v: np.sum(v**2), {"x": x}, ("x",))["x"]
    np.testing.assert_allclose(as_float.value, as_array.value, rtol=1e-12)
    np.testing.assert_allclose(as_float.value, cotangent((), SEED) * 2 * x, rtol=1e-6)
    assert scalar(3, SEED) == 0.0 and scalar((np.array([1, 2]), 2.0), SEED) == 2.0 * float(
        cotangent((), SEED + 1)
    )


def test_short_gradient_scripts_use_each_librarys_own_api() -> None:
    from xamt.triage.grad_repro import gradient_script

    group = next(g for g in load().groups if g.op == "maximum")
    case = abs_case(
        group=group.id,
        values={
            "x1": np.array([1.0, -0.0], dtype=np.float32),
            "x2": np.array([1.0, 0.5], dtype=np.float32),
        },
    )
    wanted = {
        "torch": "torch.autograd.grad(out, [x0, x1]",
        "tensorflow": "tape.gradient(out, [x0, x1]",
        "jax": "jax.vjp(lambda x0, x1:",
        "paddle": "paddle.grad([out], [x0, x1]",
        "mindspore": "mindspore.vjp(lambda x0, x1:",
        "mxnet": "out.backward(",
    }
    for lib, api_call in wanted.items():
        member = next(m for m in group.members if m.library == lib and not m.kwargs)
        text = gradient_script(
            library=lib, member=member, case=case, version="1.0", key="k", detail="why"
        )
        assert text is not None and api_call in text, (lib, text)
        assert "numpy.array([1.0, -0.0], dtype='float32')" in text
        assert f"cot = cotangent(tuple(out.shape), {case.seed})" in text
        compile(text, f"grad_{lib}.py", "exec")
    numpy_member = next(m for m in group.members if m.library == "numpy")
    assert (
        gradient_script(
            library="numpy", member=numpy_member, case=case, version="", key="", detail=""
        )
        is None
    )


def test_no_derivative_is_judged_off_the_domain_or_below_the_value_tolerance() -> None:
    from xamt.workers.protocol import tangent

    values = {"x": np.array([0.5, -2.0], dtype=np.float32)}
    g = np.array([0.25, -0.125])
    # the forward value is NaN at -2 (log of a negative number): its forward mode's NaN is no
    # departure from its reverse mode
    nan_value = np.array([-0.69, np.nan], dtype=np.float32)
    odd = dataclasses.replace(
        outcome("tensorflow", g),
        value=nan_value,
        tangent=np.array([0.1, np.nan], dtype=np.float32),
        tangent_status="ok",
    )
    assert judge_gradients("float32", values, ("x",), {"tensorflow": odd}, None, {}) == []
    assert not gradient.finite_result((nan_value,)) and gradient.finite_result(np.zeros(2))
    # a float32 gradient a rounding away from an exact 0 is within the value tolerance (1e-5)
    ref = smooth_reference([0.0, 0.0])
    near = {"mxnet": outcome("mxnet", [-8.94e-7, 0.0]), "torch": outcome("torch", [0.0, 0.0])}
    assert judge_gradients("float32", values, ("x",), near, ref, {}) == []
    far = {"mxnet": outcome("mxnet", [-3e-5, 0.0]), "torch": outcome("torch", [0.0, 0.0])}
    assert [b.library for b in judge_gradients("float32", values, ("x",), far, ref, {})] == [
        "mxnet"
    ]
    assert tangent((2,), 0).tolist() == [-0.625, 0.125]


def test_no_gradient_is_judged_where_the_value_overflowed_nor_modes_in_low_precision() -> None:
    values = {"x": np.array([0.3, 0.7], dtype=np.float16)}
    ref = smooth_reference([0.5, 0.25])
    overflowed = dataclasses.replace(
        outcome("mindspore", [-np.inf, np.nan]), value=np.array([np.inf], dtype=np.float16)
    )
    outcomes = {
        "mindspore": overflowed,
        "torch": outcome("torch", [0.5, 0.25]),
        "jax": outcome("jax", [0.5, 0.25]),
    }
    assert judge_gradients("float16", values, ("x",), outcomes, ref, {}) == []
    # infinite where the reference's value is finite: an overflow; NaN is no overflow
    assert gradient.overflowed(np.array([np.inf]), np.array([5.7e8]))
    assert not gradient.overflowed(np.array([np.inf]), np.array([np.inf]))
    assert not gradient.overflowed(np.array([np.nan, 1.0]), np.array([1.0, 1.0]))
    # the forward mode of a bfloat16 case is not compared with its reverse mode
    wrong = dataclasses.replace(
        outcome("torch", [0.5, 0.25]), tangent=np.array([9.0, 9.0]), tangent_status="ok"
    )
    assert judge_gradients("bfloat16", values, ("x",), {"torch": wrong}, ref, {}) == []
    assert [
        b.oracle for b in judge_gradients("float32", values, ("x",), {"torch": wrong}, ref, {})
    ] == ["modes"]
