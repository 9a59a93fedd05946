"""A batch of short repros for :mod:`xamt.triage.standalone`, with the verdict each should get.

Used by tests/integration/test_standalone.py and bench/standalone_cost.py. Per library: a
generated sqrt repro that departs (its assertion fails) and one that agrees (it passes), as
tests/integration/test_short_repro.py builds them, and hand-written scripts that use the
library and then hang, die by a signal, or raise an error (the predicted one or another).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xamt.catalog import model
from xamt.findings import Finding
from xamt.triage.short import short_script
from xamt.triage.standalone import Check
from xamt.types import Case, Outcome

LIBRARIES = ("numpy", "torch", "tensorflow", "jax", "paddle", "mindspore", "mxnet")
X = np.array([0.25, 4.0, 2.0], np.float32)
# A line of real work in each library before the hand-written end (threads, pools, kernels).
WORK = {
    "numpy": "numpy.sqrt(numpy.ones(3, 'float32'))",
    "torch": "torch.sqrt(torch.ones(3)).numpy()",
    "tensorflow": "tensorflow.sqrt(tensorflow.ones(3)).numpy()",
    "jax": "numpy.asarray(jax.numpy.sqrt(jax.numpy.ones(3)))",
    "paddle": "paddle.sqrt(paddle.ones([3])).numpy()",
    "mindspore": "mindspore.ops.sqrt(mindspore.Tensor(numpy.ones(3, 'float32'))).asnumpy()",
    "mxnet": "mxnet.np.sqrt(mxnet.np.ones(3)).asnumpy()",
}
# Hand-written ends: (name, script tail, shows, error the finding predicts, expected verdict
# start: "" where the departure shows).
ENDS = (
    (
        "hang",
        "import os, pathlib, time\n"
        "pathlib.Path(__file__).with_name('pid').write_text(str(os.getpid()))\n"
        "time.sleep(1000)\n",
        "hang",
        "",
        "",
    ),
    ("signal", "import os\nos.kill(os.getpid(), 11)\n", "signal", "", ""),
    ("error", "raise ValueError('made up')\n", "error", "ValueError", ""),
    ("other", "raise TypeError('made up')\n", "error", "ValueError", "it raised something else"),
)


@dataclass(frozen=True, kw_only=True)
class Expected:
    """A check and how its verdict must start ("" exactly where the departure shows)."""

    check: Check
    verdict: str


def _finding(library: str) -> Finding:
    return Finding(
        signature="0123456789abcdef",
        key=f"value/{library}/{library}.sqrt/float32/ordinary",
        kind="value",
        classification="suspected-bug",
        severity="high",
        confidence="majority",
        library=library,
        callable=f"{library}.sqrt",
        group="sqrt",
        apis={},
        trigger="ordinary",
        input_classes=(),
        dtype="float32",
        detail="value: made up for the test",
    )


def _ok(library: str, value: np.ndarray) -> Outcome:
    return Outcome(library=library, api=f"{library}.f", status="ok", value=value)


def batch(folder: Path, library: str, *, ends: bool = True) -> list[Expected]:
    """The batch of ``library`` written under ``folder`` (one subfolder per script)."""
    found = [m for m in model.load().group("sqrt").members if m.library == library]
    member = next((m for m in found if not m.api.endswith("_")), found[0])
    case = Case(group="sqrt", dtype="float32", value_class="ordinary", values={"x": X}, apis={})
    true = np.sqrt(X)
    witness = "torch" if library == "numpy" else "numpy"
    out = []
    for name, mine, theirs, verdict in (
        ("departs", true, true * 2, ""),
        ("agrees", true + 1, true, "it passed"),
    ):
        short = short_script(
            finding=_finding(library),
            member=member,
            case=case,
            outcomes={library: _ok(library, mine), witness: _ok(witness, theirs)},
            reference=None,
            version="test",
        )
        assert short is not None
        path = folder / f"{library}-{name}" / f"short_{library}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(short.text)
        check = Check(key=path.parent.name, library=library, path=path, shows=short.shows)
        out.append(Expected(check=check, verdict=verdict))
    if not ends:
        return out
    for name, tail, shows, error, verdict in ENDS:
        path = folder / f"{library}-{name}" / f"short_{library}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"import numpy\nimport {library}\n\n{WORK[library]}\n{tail}")
        check = Check(
            key=path.parent.name,
            library=library,
            path=path,
            shows=shows,  # type: ignore[arg-type]
            error=error,
        )
        out.append(Expected(check=check, verdict=verdict))
    return out
