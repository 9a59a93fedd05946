"""Short repros (xamt/triage/short.py) run standalone in every library's real environment:
each fails while the departure is there and passes where the library agrees; a real paddle
departure and a real mxnet crash show as they should."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import model
from xamt.catalog.model import Member
from xamt.findings import Finding
from xamt.triage.short import inline_array, run_standalone, short_script
from xamt.types import Case, Outcome

LIBRARIES = ("numpy", "torch", "tensorflow", "jax", "paddle", "mindspore", "mxnet")
X = np.array([0.25, 4.0, 2.0], np.float32)


def member(group: str, library: str) -> Member:
    """The group's first member of ``library`` that is not an in-place variant."""
    found = [m for m in model.load().group(group).members if m.library == library]
    return next((m for m in found if not m.api.endswith("_")), found[0])


def finding(library: str, kind: str, group: str, **changes: object) -> Finding:
    base = Finding(
        signature="0123456789abcdef",
        key=f"value/{library}/{library}.{group}/float32/ordinary",
        kind=kind,  # type: ignore[arg-type]
        classification="suspected-bug",
        severity="high",
        confidence="majority",
        library=library,
        callable=f"{library}.{group}",
        group=group,
        apis={},
        trigger="ordinary",
        input_classes=(),
        dtype="float32",
    )
    return base.replace(**changes)


def ok(library: str, value: np.ndarray) -> Outcome:
    return Outcome(library=library, api=f"{library}.f", status="ok", value=value)


def write(tmp: Path, name: str, f: Finding, m: Member, case: Case, outcomes: dict[str, Outcome]):
    short = short_script(
        finding=f, member=m, case=case, outcomes=outcomes, reference=None, version="test"
    )
    assert short is not None
    path = tmp / name
    path.write_text(short.text)
    return path, short


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_short_repro_fails_while_the_departure_is_there_and_passes_where_it_is_not(
    library: str, pythons: dict[str, str], tmp_path: Path
) -> None:
    m = member("sqrt", library)
    case = Case(group="sqrt", dtype="float32", value_class="ordinary", values={"x": X}, apis={})
    true = np.sqrt(X)
    witness = "torch" if library == "numpy" else "numpy"
    f = finding(library, "value", "sqrt", detail="value: made up for the test")
    # recorded: the library departs from the witness (a wrong expected value: departs for real)
    departs, short = write(
        tmp_path,
        "departs.py",
        f,
        m,
        case,
        {library: ok(library, true), witness: ok(witness, true * 2)},
    )
    text = short.text
    assert "assert_allclose" in text and "expected" in text and "rtol=0.0001" in text
    assert len([ln for ln in text.splitlines() if ln.strip()]) <= 20, text
    verdict = run_standalone(departs, python=pythons[library], shows=short.shows)
    assert verdict == "", verdict  # AssertionError while the departure is there
    # recorded wrongly (the library agrees with the witness when run): the repro passes
    agrees, short = write(
        tmp_path,
        "agrees.py",
        f,
        m,
        case,
        {library: ok(library, true + 1), witness: ok(witness, true)},
    )
    verdict = run_standalone(agrees, python=pythons[library], shows=short.shows)
    assert verdict.startswith("it passed"), verdict


def test_paddle_sinc_of_nan_is_a_real_departure_its_short_repro_shows(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """paddle.sinc(nan) is 1.0 where the standard and numpy, torch say NaN (paddle 3.3.1)."""
    x = np.array([np.nan], np.float32)
    case = Case(group="sinc", dtype="float32", value_class="non-finite", values={"x": x}, apis={})
    f = finding(
        "paddle",
        "nan",
        "sinc",
        confidence="reference",
        decided_by="standard: sinc(NaN) is NaN (array API standard, special cases)",
    )
    outcomes = {
        "numpy": ok("numpy", np.array([np.nan], np.float32)),
        "torch": ok("torch", np.array([np.nan], np.float32)),
        "paddle": ok("paddle", np.array([1.0], np.float32)),
    }
    path, short = write(tmp_path, "short_paddle.py", f, member("sinc", "paddle"), case, outcomes)
    assert "numpy.array([float('nan')], dtype='float32')" in short.text
    assert "numpy and torch" in short.text
    assert run_standalone(path, python=pythons["paddle"], shows=short.shows) == ""


def test_an_mxnet_crash_repro_waits_for_the_result_and_dies(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """mxnet.np.inner of two 0-d int32 arrays dies with SIGFPE, but only once something waits
    for the result or reads it: without both the script exits 0."""
    a = np.array(2, np.int32)
    case = Case(
        group="inner", dtype="int32", value_class="ordinary", values={"x1": a, "x2": a}, apis={}
    )
    f = finding("mxnet", "crash", "inner", error="SIGFPE")
    path, short = write(tmp_path, "short_mxnet.py", f, member("inner", "mxnet"), case, {})
    assert "mxnet.nd.waitall()" in short.text and short.shows == "signal"
    assert run_standalone(path, python=pythons["mxnet"], shows="signal") == ""
    unforced = tmp_path / "unforced.py"
    # without the wait and without reading the result, nothing makes mxnet run the kernel
    unforced.write_text(
        short.text.replace("mxnet.nd.waitall()", "pass").replace("print(out)", "pass")
    )
    verdict = run_standalone(unforced, python=pythons["mxnet"], shows="signal")
    assert verdict.startswith("the process did not die"), verdict


def test_a_status_repro_not_rerun_in_triage_takes_who_raised_from_the_recorded_run(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """mindspore.ops.cond of a matrix holding NaN returns a value where numpy, torch, paddle
    and mxnet raise (mindspore 2.10.0). Triage ran out of time before re-running the case: the
    short repro reads who raised from the finding's recorded outputs, asserts that the call
    should have raised (naming the others' error), and fails standalone; it once said
    "# raises" and passed."""
    a = np.array([np.inf, -1.93, np.inf, -1e-45, -4.14, 5.79, np.nan, np.nan], np.float32)
    case = Case(
        group="cond@square",
        dtype="float32",
        value_class="non-finite",
        values={"x": a.reshape(2, 1, 2, 2)},
        apis={},
    )
    error = {"type": "LinAlgError", "message": "SVD did not converge"}
    outputs = {
        "numpy": {"status": "error", "error": error},
        "torch": {"status": "error", "error": {**error, "type": "_LinAlgError"}},
        "mindspore": {"status": "ok"},
    }
    f = finding("mindspore", "status", "cond@square", outputs=outputs, error="")
    short = short_script(
        finding=f,
        member=member("cond@square", "mindspore"),
        case=case,
        outcomes=None,
        reference=None,
        version="test",
    )
    assert short is not None and short.shows == "assertion", short
    assert "mindspore returned where numpy and torch raise LinAlgError" in short.text
    path = tmp_path / "short_mindspore.py"
    path.write_text(short.text)
    assert run_standalone(path, python=pythons["mindspore"], shows=short.shows) == ""


def test_a_complex_nan_in_one_part_is_checked_part_by_part(
    pythons: dict[str, str], tmp_path: Path
) -> None:
    """nan+1j against nan+nanj: numpy's equal_nan takes either for the other, the oracle
    compares the parts; the short repro must too, or it passes while the departure is there
    (and a finding of this kind got no short repro at all)."""
    x = np.array([1 + 1j, 2 + 0j], np.complex64)
    case = Case(group="sqrt", dtype="complex64", value_class="non-finite", values={"x": x}, apis={})
    actual = np.array([complex(np.nan, 1.0), 2 + 0j], np.complex64)
    other = np.array([complex(np.nan, np.nan), 2 + 0j], np.complex64)
    f = finding("numpy", "nan", "sqrt", dtype="complex64")
    outcomes = {"numpy": ok("numpy", actual), "torch": ok("torch", other)}
    short = short_script(
        finding=f,
        member=member("sqrt", "numpy"),
        case=case,
        outcomes=outcomes,
        reference=None,
        version="test",
    )
    assert short is not None, "the departure is found at the leaf"
    assert "actual.imag, expected.imag" in short.text
    path = tmp_path / "short_numpy.py"
    # the library really returns its own sqrt: made to return the recorded value instead
    path.write_text(
        short.text.replace("out = numpy.sqrt(a0)", f"out = {inline_array(actual, 'complex64')}")
    )
    assert "out = numpy.array" in path.read_text()
    assert run_standalone(path, python=pythons["numpy"], shows=short.shows) == ""
