"""Short gradient repros (xamt/triage/grad_repro.py) run standalone in the blamed library's
real environment: real gradient departures of paddle 3.3.1 (campaign 157) fail by their
assertion at the blamed position, the same script with the library's own value there passes,
and triage's standalone check holds back a gradient finding whose repro passes."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import model
from xamt.catalog.bind import bind
from xamt.findings import Finding
from xamt.oracle.gradient import GradientCheck, grad_keys
from xamt.replay import Replay, Replayed
from xamt.store import Store
from xamt.triage.grad_repro import gradient_check, short_gradient_script
from xamt.triage.pipeline import Moves, _check_standalone, write_short
from xamt.triage.short import ShortRepro, exact_scalar, run_standalone
from xamt.types import Case
from xamt.workers.pool import WorkerPool

LIBRARIES = ("numpy", "torch", "paddle", "tensorflow")
# paddle.eigvalsh's gradient of the 2x2 zero matrix (a double eigenvalue 0) at its diagonal
# element (0, 0): -0.875 where the float64 finite difference, and torch, give -0.375
EIGVALSH = Case(
    group="eigvalsh@square",
    dtype="float32",
    value_class="ordinary",
    values={"x": np.array([0, 0, 0, 0, 0, 0, 0, 1], np.float32).reshape(2, 2, 2)},
    apis={
        "numpy": "numpy.linalg.eigvalsh",
        "torch": "torch.linalg.eigvalsh",
        "paddle": "paddle.eigvalsh",
    },
    seed=1046999264,
    grad=True,
)
# paddle.prod's backward divides the product by each input: NaN at an input 0, where the
# derivative is the product of the others (1) times the cotangent, -0.875
PROD = Case(
    group="prod[axis][keepdims]",
    dtype="float32",
    value_class="boundary",
    values={"x": np.array([0.0], np.float32), "keepdims": False, "axis": 0},
    apis={"numpy": "numpy.prod", "torch": "torch.Tensor.prod", "paddle": "paddle.prod"},
    seed=1841645256,
    grad=True,
)


@pytest.fixture(scope="module")
def few(pythons: dict[str, str]) -> Iterator[tuple[WorkerPool, dict[str, str]]]:
    """Workers of the libraries these cases name (fewer to start than the session pool)."""
    with WorkerPool({lib: pythons[lib] for lib in LIBRARIES}, deadline=60) as pool:
        versions = {lib: hello.version for lib, hello in pool.start().items()}
        yield pool, versions


def rerun(pool: WorkerPool, case: Case) -> Replayed:
    (replayed,) = Replay(pool, [model.load().group(case.group)]).run([case])
    assert not replayed.failed, replayed.failed
    return replayed


def gradient_finding(case: Case, oracle: str, detail: str, library: str = "paddle") -> Finding:
    group = model.load().group(case.group)
    return Finding(
        signature="0123456789abcdef",
        key=f"gradient/{library}/{library}.{group.op}/float32/{oracle}",
        kind="gradient",
        classification="suspected-bug",
        severity="high",
        confidence="reference",
        library=library,
        callable=f"{library}.{group.op}",
        group=case.group,
        apis=dict(case.apis),
        trigger=oracle,
        input_classes=(),
        dtype="float32",
        detail=detail,
    )


def written(
    folder: Path, case: Case, oracle: str, replayed: Replayed, versions: dict[str, str]
) -> tuple[Finding, Path, ShortRepro, GradientCheck]:
    """The finding's short repro, written as triage writes it, and the check it asserts."""
    blamed = [g for g in replayed.gradients if g.library == "paddle" and g.oracle == oracle]
    assert blamed, [(g.library, g.oracle, g.detail) for g in replayed.gradients]
    f = gradient_finding(case, oracle, blamed[0].detail)
    check = gradient_check(replayed.gradients, f)
    assert check is not None
    group = model.load().group(case.group)
    members = {lib: m for lib, api in case.apis.items() for m in group.members if m.api == api}
    folder.mkdir()
    made = write_short(folder, f, members, case, replayed, versions)
    assert made is not None, "a gradient finding gets a short repro"
    path, short = made
    assert path.name == "short_paddle.py" and short.shows == "assertion"
    assert len([line for line in short.text.splitlines() if line.strip()]) <= 20, short.text
    return f, path, short, check


def with_own_value(path: Path, check: GradientCheck, name: str) -> Path:
    """The same script, the expected value replaced by the library's own one."""
    expected = exact_scalar(check.expected, "float64")
    text = path.read_text()
    assert text.count(f", {expected}, rtol=") == 1, text
    own = path.with_name(name)
    own.write_text(
        text.replace(f", {expected}, rtol=", f", {exact_scalar(check.actual, 'float64')}, rtol=")
    )
    return own


def test_paddle_eigvalsh_gradient_repro_fails_by_its_assertion_and_passes_with_paddles_value(
    few: tuple[WorkerPool, dict[str, str]], pythons: dict[str, str], tmp_path: Path
) -> None:
    pool, versions = few
    replayed = rerun(pool, EIGVALSH)
    _, path, short, check = written(tmp_path / "repro", EIGVALSH, "reference", replayed, versions)
    # the position the detail names, as data: the eigenvalue input is compared along symmetric
    # directions (a diagonal element: the gradient there as it is)
    assert (check.role, check.position, check.actual) == ("x", (1, 0, 0), -0.875)
    assert check.expected == pytest.approx(-0.375, abs=1e-6) and check.symmetric
    assert "torch agrees" in check.source
    text = short.text
    assert "paddle.grad([out], [x0]" in text and "1046999264" in text
    assert f"assert_allclose(g[1, 0, 0], {exact_scalar(check.expected, 'float64')}, " in text
    assert "# expected: the float64 finite difference; torch agrees" in text
    verdict = run_standalone(path, python=pythons["paddle"], shows=short.shows)
    assert verdict == "", verdict  # an AssertionError while the bug is there
    # the assertion is what fails: with paddle's own value expected, the script passes
    own = with_own_value(path, check, "own.py")
    verdict = run_standalone(own, python=pythons["paddle"], shows=short.shows)
    assert verdict.startswith("it passed"), verdict


def test_paddle_prod_nan_gradient_repro_fails_and_a_nan_expected_passes(
    few: tuple[WorkerPool, dict[str, str]], pythons: dict[str, str], tmp_path: Path
) -> None:
    pool, versions = few
    replayed = rerun(pool, PROD)
    _, path, short, check = written(tmp_path / "repro", PROD, "nonfinite", replayed, versions)
    assert check.position == (0,) and np.isnan(check.actual)
    assert check.expected == pytest.approx(-0.875, abs=1e-6)
    assert f"assert_allclose(g[0], {exact_scalar(check.expected, 'float64')}, " in short.text
    assert run_standalone(path, python=pythons["paddle"], shows=short.shows) == ""
    # a NaN expected where paddle gives NaN: the oracle's _close says they agree, and so
    # does the assertion
    own = with_own_value(path, check, "own.py")
    assert "float('nan')" in own.read_text()
    verdict = run_standalone(own, python=pythons["paddle"], shows=short.shows)
    assert verdict.startswith("it passed"), verdict


def test_triage_holds_back_a_gradient_finding_whose_short_repro_passes(
    few: tuple[WorkerPool, dict[str, str]], tmp_path: Path
) -> None:
    """The standalone check of triage takes gradient short repros like any other: the real
    departure stays, a repro that passes in a fresh paddle holds its finding back."""
    pool, versions = few
    replayed = rerun(pool, EIGVALSH)
    f, path, short, check = written(tmp_path / "repro", EIGVALSH, "reference", replayed, versions)
    passing = with_own_value(path, check, "short_passing.py")
    store = Store(tmp_path / "xamt.sqlite")
    campaign = store.start_campaign(name="t", config={})
    other = f.replace(signature="fedcba9876543210", key=f.key.replace("reference", "nonfinite"))
    for finding in (f, other):
        store.upsert_finding(finding, campaign=campaign)
    said: list[str] = []
    scripts = [(f.signature, path, short), (other.signature, passing, short)]
    _check_standalone(store, Moves(store), scripts, said.append, lambda: False)
    assert store.finding(f.signature).finding.held_back == ""
    held = store.finding(other.signature).finding.held_back
    assert "did not show the departure: it passed" in held, (held, said)
    assert json.dumps(said).count("held back") == 1


def test_a_member_in_another_layout_is_differentiated_and_read_in_xamts_layout(
    few: tuple[WorkerPool, dict[str, str]], pythons: dict[str, str], tmp_path: Path
) -> None:
    """tensorflow.nn.avg_pool1d computes channels-last: the short repro passes it the input
    transposed, pulls back xamt's cotangent in that layout and reads the gradient back in
    xamt's (channels first), as the worker does: at (0, 1, 0) a gradient read in the wrong
    layout, or a cotangent left in xamt's, would give another number than the worker's."""
    pool, _ = few
    group = model.load().group("avg_pool1d")
    member = next(m for m in group.members if m.api == "tensorflow.nn.avg_pool1d")
    x = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    case = Case(
        group=group.id,
        dtype="float32",
        value_class="ordinary",
        values={"x": x, "kernel_size": 2, "stride": 2},
        apis={"tensorflow": member.api},
        seed=3,
        grad=True,
    )
    call = bind(member, case.values, seed=case.seed)
    assert call.transpose  # the member computes in another layout
    out = pool.call("tensorflow", dataclasses.replace(call, grad=grad_keys(member, ("x",))))
    assert out.grad_status == "ok" and out.grad is not None, out.grad_error
    g = out.grad[0]
    f = gradient_finding(case, "reference", "made up for the test", library="tensorflow")
    # the worker's gradient there passes; another channel's (another number) fails
    assert g[0, 1, 0] != g[0, 0, 0]
    for name, expected, passes in (("right.py", g[0, 1, 0], True), ("wrong.py", g[0, 0, 0], False)):
        check = GradientCheck(
            role="x",
            position=(0, 1, 0),
            actual=float(g[0, 1, 0]),
            expected=float(expected),
            source="the worker's own gradient",
            rtol=1e-6,
            atol=0.0,
        )
        short = short_gradient_script(
            finding=f, member=member, case=case, check=check, outcome=out, version="v"
        )
        assert short is not None and "back to xamt's layout" in short.text
        path = tmp_path / name
        path.write_text(short.text)
        verdict = run_standalone(path, python=pythons["tensorflow"], shows=short.shows)
        if passes:
            assert verdict.startswith("it passed"), (verdict, short.text)
        else:
            assert verdict == "", (verdict, short.text)
