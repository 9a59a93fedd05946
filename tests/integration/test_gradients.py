"""Gradients in the real libraries: each worker's vector-Jacobian product against closed forms,
and the gradient oracle on cases of the catalog's groups."""

from __future__ import annotations

import ast
import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from xamt.catalog.bind import bind
from xamt.catalog.gradients import differentiable
from xamt.catalog.model import load
from xamt.oracle.gradient import ORACLES, grad_keys
from xamt.replay import Replay, classify_blame, default_known
from xamt.triage.grad_repro import gradient_script
from xamt.triage.repro import write_repro
from xamt.types import Call, Case
from xamt.workers.pool import WorkerPool
from xamt.workers.protocol import cotangent

# one API per library for sin and for a broadcasting product
SIN = {
    "torch": "torch.sin",
    "tensorflow": "tensorflow.math.sin",
    "jax": "jax.numpy.sin",
    "paddle": "paddle.sin",
    "mindspore": "mindspore.ops.sin",
    "mxnet": "mxnet.np.sin",
}
MULTIPLY = {
    "torch": "torch.mul",
    "tensorflow": "tensorflow.math.multiply",
    "jax": "jax.numpy.multiply",
    "paddle": "paddle.multiply",
    "mindspore": "mindspore.ops.mul",
    "mxnet": "mxnet.np.multiply",
}
TOLERANCE = {"float32": 1e-6, "float64": 1e-12}


@pytest.mark.parametrize("lib", sorted(SIN))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_vjp_of_sin_is_cos_times_the_cotangent(pool: WorkerPool, lib: str, dtype: str) -> None:
    x = np.array([[0.5, -1.0, 2.0], [0.1, 3.0, -2.5]], dtype=dtype)
    out = pool.call(lib, Call(api=SIN[lib], args=(x,), seed=11, grad=("0",)))
    assert out.status == "ok" and out.grad_status == "ok", out.grad_error
    assert out.grad is not None
    (g,) = out.grad
    assert g.dtype == np.dtype(dtype) and g.shape == x.shape
    expected = np.cos(x.astype(np.float64)) * cotangent(x.shape, 11)
    np.testing.assert_allclose(g, expected, rtol=0, atol=TOLERANCE[dtype])


@pytest.mark.parametrize("lib", sorted(MULTIPLY))
def test_vjp_of_a_broadcast_product_sums_over_the_broadcast_axis(
    pool: WorkerPool, lib: str
) -> None:
    x1 = np.array([[1.0, 2.0, -3.0], [0.5, 0.25, 4.0]])
    x2 = np.array([2.0, -1.0, 0.5])
    out = pool.call(lib, Call(api=MULTIPLY[lib], args=(x1, x2), seed=2, grad=("0", "1")))
    assert out.grad_status == "ok", out.grad_error
    assert out.grad is not None
    c = cotangent((2, 3), 2)
    np.testing.assert_allclose(out.grad[0], c * x2, rtol=1e-12)
    np.testing.assert_allclose(out.grad[1], (c * x1).sum(axis=0), rtol=1e-12)


def test_numpy_has_no_autodiff_and_its_value_still_comes(pool: WorkerPool) -> None:
    x = np.array([0.5, 1.0])
    out = pool.call("numpy", Call(api="numpy.sin", args=(x,), grad=("0",)))
    assert out.status == "ok" and out.grad_status == "unsupported" and out.grad is None
    np.testing.assert_array_equal(out.value, np.sin(x))


def test_a_failing_gradient_keeps_the_value(pool: WorkerPool) -> None:
    # an integer input has no gradient in torch: the call's value stands
    x = np.array([1, 2], dtype=np.int64)
    out = pool.call("torch", Call(api="torch.abs", args=(x,), grad=("0",)))
    assert out.status == "ok" and out.grad_status == "error" and out.grad_error is not None
    np.testing.assert_array_equal(out.value, [1, 2])


@pytest.mark.parametrize("lib", sorted(SIN))
def test_a_result_with_nothing_to_differentiate_is_unsupported(pool: WorkerPool, lib: str) -> None:
    # an index result: no floating result the autodiff tracks (not a zero gradient)
    api = {"tensorflow": "tensorflow.math.argmax", "mindspore": "mindspore.ops.argmax"}.get(
        lib, SIN[lib].replace("sin", "argmax")
    )
    x = np.array([0.5, 2.0, -1.0], dtype=np.float32)
    out = pool.call(lib, Call(api=api, args=(x,), grad=("0",)))
    assert out.status == "ok" and int(np.asarray(out.value)) == 1
    assert out.grad_status == "unsupported", (out.grad_status, out.grad_error)


def case_of(op: str, values: dict[str, np.ndarray]) -> Case:
    group = next(g for g in load().groups if g.op == op and set(g.roles) == set(values))
    kept = differentiable(group)  # the members the catalog's gradient check kept
    apis: dict[str, str] = {}
    for m in group.members:
        if m.api in kept or m.library == "numpy":
            apis.setdefault(m.library, m.api)
    dtype = next(iter(values.values())).dtype.name
    return Case(
        group=group.id, dtype=dtype, value_class="ordinary", values=values, apis=apis, grad=True
    )


def test_the_oracle_on_smooth_and_kinked_cases(pool: WorkerPool) -> None:
    catalog = load()
    smooth = case_of("tanh", {"x": np.array([[0.3, -2.0], [1.0, 4.0]])})
    kinked = case_of("abs", {"x": np.array([0.0, -1.5, 2.0], dtype=np.float32)})
    replay = Replay(pool, catalog.groups)
    first, second = replay.run([smooth, kinked])
    # every library differentiates tanh as the finite difference does
    assert not first.failed and len(first.probes) == 4 * 4
    assert [s.key for s in first.signed] == []
    assert {lib: o.grad_status for lib, o in first.outcomes.items()} == {
        lib: "" if lib == "numpy" else "ok"
        for lib in smooth.apis  # numpy is not asked
    }
    assert len(smooth.apis) == 7
    # |x| at 0: jax's 1 against the others' 0, a convention nobody documents for jax
    assert not second.failed
    keys = {s.key: s for s in second.signed}
    assert "gradient/jax/jax.abs/float32/kink" in keys
    group = catalog.group(kinked.group)
    signed = keys["gradient/jax/jax.abs/float32/kink"]
    assert classify_blame(default_known(), signed, kinked, group)[0] == "unspecified"
    # the cotangent's first number is -7/8: jax's derivative 1 times it, the others' 0
    assert "d/dx at (0) is -0.875 where" in signed.blame.detail


def test_the_short_gradient_scripts_run_alone(
    pool: WorkerPool, pythons: dict[str, str], tmp_path: Path
) -> None:
    """Each library's gradient script, run in its own environment, prints what the worker's
    gradient call returned."""
    case = case_of(
        "maximum",
        {
            "x1": np.array([1.0, 2.0, -0.5], dtype=np.float32),
            "x2": np.array([1.0, 0.5, 3.0], dtype=np.float32),
        },
    )
    group = load().group(case.group)
    seen = set()
    for member in group.members:
        if member.library in seen or member.library == "numpy":
            continue
        seen.add(member.library)
        text = gradient_script(
            library=member.library, member=member, case=case, version="v", key="k", detail="d"
        )
        assert text is not None
        script = tmp_path / f"grad_{member.library}.py"
        script.write_text(text)
        run = subprocess.run(
            [pythons[member.library], str(script)], capture_output=True, text=True, timeout=300
        )
        assert run.returncode == 0, run.stderr[-2000:]
        printed = [line.split(" ", 1) for line in run.stdout.splitlines() if line[:1] in "xy"]
        call = bind(member, case.values, seed=case.seed)
        keys = grad_keys(member, ("x1", "x2"))
        out = pool.call(member.library, dataclasses.replace(call, grad=keys))
        assert out.grad is not None and len(printed) == 2
        for (_, shown), g in zip(printed, out.grad, strict=True):
            np.testing.assert_array_equal(np.array(ast.literal_eval(shown)), g)


def test_a_gradient_script_reads_large_inputs_from_beside_it(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """Past the inline limit the inputs go to inputs.npz beside the scripts; the gradient
    script reads them from its own folder (it once named an undefined _HERE and died)."""
    rng = np.random.default_rng(0)
    x1, x2 = (rng.standard_normal(80).astype(np.float32) for _ in range(2))
    case = case_of("maximum", {"x1": x1, "x2": x2})
    group = load().group(case.group)
    member = next(m for m in group.members if m.api == case.apis["torch"])
    scripts = write_repro(
        tmp_path / "f",
        case=case,
        members={"torch": member},
        versions={},
        signature="0123456789abcdef",
        key="gradient/torch/torch.maximum/float32/reference",
        gradient_detail="d",
    )
    script = Path(scripts["torch"])
    assert "inputs.npz" in script.read_text() and (script.parent / "inputs.npz").is_file()
    run = subprocess.run(
        [pythons["torch"], str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    printed = [line for line in run.stdout.splitlines() if line[:1] in "xy"]
    assert len(printed) == 2 and all(" [" in line for line in printed), run.stdout[-500:]


def test_a_campaign_finds_prods_nan_gradient_at_zero_and_keys_it_by_oracle(
    tmp_path: Path,
) -> None:
    """A short campaign on prod (gradients on by default): paddle's and mxnet's backward
    divide the product by each input, NaN at an input 0 (a reviewed bug, tests/data L520,
    L521); triage keeps the gradient findings' oracle as their trigger."""
    out = tmp_path / "run"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "xamt",
            "fuzz",
            "--group",
            "^prod$",
            "--libs",
            "numpy,torch,paddle,mxnet",
            "--budget",
            "240",
            "--seed",
            "3",
            "--reproduce",
            "1",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    document = json.loads((out / "findings.json").read_text())
    assert document["campaign"]["oracles"] == ["values", "gradients"]
    assert document["campaign"]["gradients"]["cases"] > 0
    grads = [f for f in document["findings"] if f["kind"] == "gradient"]
    assert grads and all(f["trigger"] in ORACLES for f in grads)
    blamed = [
        f
        for f in grads
        if f["library"] in ("paddle", "mxnet") and f["classification"] == "suspected-bug"
    ]
    assert blamed, [f["key"] for f in grads]
    # the short repro differentiates with the library's own autodiff
    script = (out / blamed[0]["repro"][blamed[0]["library"]]).read_text()
    assert "paddle.grad(" in script or ".backward(" in script
