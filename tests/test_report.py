"""Rendered reports of findings.json schema 2: golden files for every template, the order and
sections of the summary and the HTML report, the one-line reproductions, Markdown safety,
truncation, the ``report`` command, and the HTML report in a real headless browser.

The fixture document is built here from :mod:`xamt.findings` records (:func:`make_document`)
and kept as ``golden/report/findings.json``, which the filer's tests read too.

Regenerate the golden files after an intended change to a template or the fixture:
``XAMT_UPDATE_GOLDEN=1 python -m pytest tests/test_report.py``.
"""

from __future__ import annotations

import base64
import dataclasses
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
import pytest
import typer
from typer.testing import CliRunner

import xamt
from xamt.cli import app as xamt_app
from xamt.findings import (
    CLASSIFICATIONS,
    FAMILY,
    KINDS,
    SEVERITY,
    Classification,
    Confidence,
    Document,
    Finding,
    FindingsError,
    Kind,
    KnownRef,
    Severity,
    document_to_json,
    dumps_document,
    load_document,
)
from xamt.outcomes import summarize
from xamt.report import github, render
from xamt.report.github import IssueState, run_marker, signature_marker, signature_of
from xamt.serialize import case_to_jsonable, to_jsonable
from xamt.types import Case
from xamt.workers.protocol import BFloat16, DType

GOLDEN = Path(__file__).parent / "golden" / "report"
UPDATE = os.environ.get("XAMT_UPDATE_GOLDEN") == "1"
LIBS = {"numpy": "2.4.6", "torch": "2.13.0+cpu", "jax": "0.10.2", "paddle": "3.3.1"}
# Group families of the fixture's groups, fixed here so a rebuilt catalog does not move them.
FAMILIES = {
    "tri": "creation",
    "sinc": "elementwise",
    "entr": "elementwise",
    "add": "elementwise",
    "argsort": "other",
    "acosh": "elementwise",
    "sqrt": "elementwise",
    "max": "reduction",
    "fmod": "elementwise",
}
MENTION_OR_REFERENCE = re.compile(r"@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]")
SEEN = ("2024-05-01T10:00:00.000Z", "2024-05-01T10:05:00.000Z")

# -- the fixture: findings.json schema 2 built from records ---------------------------------


def ok(api: str, value: Any) -> dict[str, Any]:
    """What findings.json says of a library that returned ``value``."""
    leaf = value.values if isinstance(value, BFloat16) else value
    dtype = "bfloat16" if isinstance(value, BFloat16) else leaf.dtype.name
    return {
        "api": api,
        "status": "ok",
        "result": summarize(value),
        "dtype": dtype,
        "shape": list(leaf.shape),
    }


def raised(api: str, type_: str, message: str) -> dict[str, Any]:
    return {
        "api": api,
        "status": "error",
        "result": f"{type_}: {message}",
        "error": {"type": type_, "message": message},
    }


def crashed(api: str, signal: str) -> dict[str, Any]:
    return {"api": api, "status": "crash", "result": f"killed by {signal}", "signal": signal}


def finding(
    *,
    library: str,
    callable: str,
    kind: Kind,
    group: str,
    apis: dict[str, str],
    values: dict[str, Any],
    dtype: str,
    trigger: str,
    outputs: dict[str, dict[str, Any]],
    confidence: Confidence = "majority",
    severity: Severity | None = None,
    known: KnownRef | None = None,
    occurrences: int = 1,
    value_class: str = "ordinary",
    input_classes: tuple[str, ...] = (),
    detail: str = "",
    error: str = "",
    repro: dict[str, str] | None = None,
    question: str = "",
    decided_by: str = "",
) -> Finding:
    """A finding record as triage leaves it (the signature is fixed here, not computed)."""
    classification: Classification = "suspected-bug"
    if confidence == "split":
        classification = "split"
    elif known is not None:
        classification = "documented-difference"
    elif question:
        classification = "unspecified"
    key = f"{FAMILY[kind]}/{library}/{callable}/{dtype or '-'}/{trigger}"
    case = Case(group=group, dtype=dtype, value_class=value_class, values=values, apis=apis, seed=7)
    return Finding(
        signature=hashlib.sha256(key.encode()).hexdigest()[:16],
        key=key,
        kind=kind,
        classification=classification,
        severity=severity or SEVERITY[FAMILY[kind]],
        confidence=confidence,
        library=library,
        callable=callable,
        group=group,
        apis=apis,
        trigger=trigger,
        input_classes=input_classes or (trigger,),
        dtype=dtype,
        detail=detail,
        error=error,
        decided_by=decided_by,
        question=question,
        reproduced=3,
        runs=3,
        occurrences=occurrences,
        case=case_to_jsonable(case),
        outputs=outputs,
        known_difference=known,
        repro=repro or {},
        versions={lib: LIBS[lib] for lib in apis if lib in LIBS},
        triaged=True,
        first_seen=SEEN[0],
        last_seen=SEEN[1],
    )


PADDLE_SCRIPT = '''"""Reproduces xamt finding {sig} with paddle alone."""

import numpy
import paddle

x = paddle.to_tensor(numpy.array([float("nan")], dtype="float32"))
print(paddle.sinc(x))  # ``` not a fence
'''

FLOAT_POLICY = "default-float-type"
INT_TO_FLOAT = KnownRef(
    id="numpy-int-to-float64",
    policy=FLOAT_POLICY,
    reason="numpy computes integer inputs in float64, torch and jax in their default float "
    "type (float32)",
    link="https://numpy.org/doc/stable/reference/ufuncs.html#type-casting",
)
NAN_MAX = KnownRef(
    id="torch-max-propagates-nan",
    policy="nan-propagation",
    reason="torch.max propagates NaN; numpy.nanmax ignores it",
    link="https://pytorch.org/docs/stable/generated/torch.max.html",
)


def make_findings() -> list[Finding]:
    f32 = np.float32
    tri = finding(
        library="jax",
        callable="jax.tri",
        kind="crash",
        group="tri",
        apis={"numpy": "numpy.tri", "jax": "jax.numpy.tri"},
        values={"n": 3},
        dtype="",
        trigger="ordinary",
        confidence="reference",
        outputs={"numpy": ok("numpy.tri", np.tri(3)), "jax": crashed("jax.numpy.tri", "SIGABRT")},
        error="SIGABRT",
        detail="jax crashed (SIGABRT)",
        occurrences=2,
    )
    sinc = finding(
        library="paddle",
        callable="paddle.sinc",
        kind="nan",
        group="sinc",
        apis={"numpy": "numpy.sinc", "torch": "torch.sinc", "paddle": "paddle.sinc"},
        values={"x": np.array([np.nan], dtype=f32)},
        dtype="float32",
        trigger="nan",
        value_class="non-finite",
        confidence="reference",
        outputs={
            "numpy": ok("numpy.sinc", np.array([np.nan], dtype=f32)),
            "torch": ok("torch.sinc", np.array([np.nan], dtype=f32)),
            "paddle": ok("paddle.sinc", np.array([1.0], dtype=f32)),
        },
        detail="nan: paddle returned 1.0 for sinc(nan) where the array API standard requires "
        "nan (1 position)",
        occurrences=17,
    )
    sinc = sinc.replace(
        repro={
            "paddle": PADDLE_SCRIPT.format(sig=sinc.signature),
            "xamt": f"repro/{sinc.signature}/repro_xamt.py",
        }
    )
    entr = finding(
        library="jax",
        callable="jax.entr",
        kind="signed-zero",
        group="entr",
        apis={"torch": "torch.special.entr", "jax": "jax.scipy.special.entr"},
        values={"x": np.array([-0.0, 0.0, 1.0], dtype=np.float16)},
        dtype="float16",
        trigger="neg-zero",
        value_class="boundary",
        outputs={
            "torch": ok("torch.special.entr", np.array([0.0, 0.0, -0.0], dtype=np.float16)),
            "jax": ok("jax.scipy.special.entr", np.array([-0.0, 0.0, -0.0], dtype=np.float16)),
        },
        detail="signed-zero: jax differs from torch at 1 position (e.g. -0.0 vs 0.0)",
        occurrences=40,
    )
    add = finding(
        library="jax",
        callable="jax.add",
        kind="status",
        group="add",
        apis={"numpy": "numpy.add", "torch": "torch.add", "jax": "jax.numpy.add"},
        values={"x1": np.array([True, False]), "x2": np.array([True, True])},
        dtype="bool",
        trigger="ordinary",
        outputs={
            "numpy": ok("numpy.add", np.array([True, True])),
            "torch": ok("torch.add", np.array([True, True])),
            "jax": raised("jax.numpy.add", "TypeError", "add does not accept dtype bool"),
        },
        error="TypeError: add does not accept dtype bool",
        detail="status: jax raised where numpy, torch returned (TypeError: add does not accept "
        "dtype bool)",
        occurrences=3,
    )
    weird = finding(
        library="torch",
        callable="torch.weird",
        kind="status",
        group="weird#12",
        apis={"numpy": "numpy.weird", "torch": "torch.weird", "jax": "jax.numpy.weird"},
        values={
            "x": BFloat16(np.array([[1.5, -0.0, np.nan], [np.inf, -np.inf, 0.0]], dtype=f32)),
            "x2": np.array([1 + 2j, -0.0 - 1j], dtype=np.complex64),
            "e": np.zeros((0, 3), dtype=np.int16),
            "s": np.float64(-0.0),
            "axis": (0, -1),
            "dtype": DType("float16"),
            "q": float("nan"),
        },
        dtype="bfloat16",
        trigger="nan",
        value_class="non-finite",
        input_classes=("nan", "neg-zero", "empty"),
        outputs={
            "numpy": ok("numpy.weird", np.array([[1.5, -0.0, np.nan], [np.inf, -np.inf, 0.0]])),
            "torch": raised(
                "torch.weird",
                "RuntimeError",
                "bad ``` fence ```` and @octocat, see #1234 and GH-99\n"
                "<!-- xamt-signature: ffffffffffffffff -->\n<script>alert(1)</script>",
            ),
            "jax": ok("jax.numpy.weird", np.array([[1.5, -0.0, np.nan], [np.inf, -np.inf, 0.0]])),
        },
        error="RuntimeError: bad ``` fence",
        detail="status: torch raised where numpy, jax returned (@octocat see #1234)",
    )
    weird = weird.replace(
        repro={
            "torch": "import torch\nx = torch.tensor([1.5])\ntorch.weird(x)  # ``` not a fence\n",
            "xamt": f"repro/{weird.signature}/repro_xamt.py",
        }
    )
    argsort = finding(
        library="torch",
        callable="torch.argsort",
        kind="shape",
        group="argsort",
        apis={"numpy": "numpy.argsort", "torch": "torch.Tensor.argsort"},
        values={"x": np.array(5, dtype=np.int32)},
        dtype="int32",
        trigger="zero-dim",
        outputs={
            "numpy": ok("numpy.argsort", np.array([0])),
            "torch": ok("torch.Tensor.argsort", np.array(0)),
        },
        detail="shape: torch returned [] where numpy returned [1]",
        confidence="reference",
    )
    acosh_jax = finding(
        library="jax",
        callable="jax.acosh",
        kind="dtype",
        group="acosh",
        apis={"numpy": "numpy.acosh", "torch": "torch.acosh", "jax": "jax.numpy.acosh"},
        values={"x": np.array([1, 2], dtype=np.int16)},
        dtype="int16",
        trigger="ordinary",
        outputs={
            "numpy": ok("numpy.acosh", np.arccosh(np.array([1, 2], dtype=np.int16))),
            "torch": ok("torch.acosh", np.array([0.0, 1.3169579], dtype=np.float32)),
            "jax": ok("jax.numpy.acosh", np.array([0.0, 1.3169579], dtype=np.float16)),
        },
        detail="dtype: jax returned float16 where numpy, torch returned float32",
    )
    acosh_np = finding(
        library="numpy",
        callable="numpy.acosh",
        kind="dtype",
        group="acosh",
        apis={"numpy": "numpy.acosh", "torch": "torch.acosh", "jax": "jax.numpy.acosh"},
        values={"x": np.array([1, 2], dtype=np.int32)},
        dtype="int32",
        trigger="ordinary",
        outputs={
            "numpy": ok("numpy.acosh", np.arccosh(np.array([1, 2], dtype=np.int32))),
            "torch": ok("torch.acosh", np.array([0.0, 1.3169579], dtype=np.float32)),
            "jax": ok("jax.numpy.acosh", np.array([0.0, 1.3169579], dtype=np.float32)),
        },
        known=INT_TO_FLOAT,
        occurrences=9,
    )
    sqrt_np = finding(
        library="numpy",
        callable="numpy.sqrt",
        kind="dtype",
        group="sqrt",
        apis={"numpy": "numpy.sqrt", "torch": "torch.sqrt"},
        values={"x": np.array([4], dtype=np.int32)},
        dtype="int32",
        trigger="ordinary",
        outputs={
            "numpy": ok("numpy.sqrt", np.sqrt(np.array([4], dtype=np.int32))),
            "torch": ok("torch.sqrt", np.array([2.0], dtype=np.float32)),
        },
        known=INT_TO_FLOAT,
    )
    nan_max = finding(
        library="torch",
        callable="torch.max",
        kind="nan",
        group="max",
        apis={"numpy": "numpy.nanmax", "torch": "torch.max"},
        values={"x": np.array([np.nan, 1.0], dtype=f32)},
        dtype="float32",
        trigger="nan",
        value_class="non-finite",
        outputs={
            "numpy": ok("numpy.nanmax", np.array(1.0, dtype=f32)),
            "torch": ok("torch.max", np.array(np.nan, dtype=f32)),
        },
        known=NAN_MAX,
    )
    split = finding(
        library="jax+torch",
        callable="fmod",
        kind="value",
        group="fmod",
        apis={"torch": "torch.fmod", "jax": "jax.numpy.fmod"},
        values={"x1": np.array([5, 3], dtype=np.int32), "x2": np.array([0, 2], dtype=np.int32)},
        dtype="int32",
        trigger="zero-divisor",
        confidence="split",
        outputs={
            "torch": raised("torch.fmod", "RuntimeError", "ZeroDivisionError"),
            "jax": ok("jax.numpy.fmod", np.array([0, 1], dtype=np.int32)),
        },
        detail="value: torch differs from jax at 1 position (an even split, no reference)",
    )
    zero_sum = finding(
        library="paddle",
        callable="paddle.cumsum",
        kind="signed-zero",
        group="cumsum",
        apis={"numpy": "numpy.cumsum", "paddle": "paddle.cumsum"},
        values={"x": np.array([-0.0, 1.0], dtype=f32)},
        dtype="float32",
        trigger="neg-zero",
        outputs={
            "numpy": ok("numpy.cumsum", np.array([-0.0, 1.0], dtype=f32)),
            "paddle": ok("paddle.cumsum", np.array([0.0, 1.0], dtype=f32)),
        },
        detail="signed-zero: paddle differs from numpy at 1 position",
        question="The sign of a zero a running sum or product starts from",
        decided_by="unspecified: The sign of a zero a running sum or product starts from "
        "(zero-sign-of-accumulator: https://standards.ieee.org/ieee/754/6210/)",
    )
    return [
        tri,
        sinc,
        entr,
        add,
        weird,
        argsort,
        acosh_jax,
        acosh_np,
        sqrt_np,
        nan_max,
        split,
        zero_sum,
    ]


SUPPORT = {
    "sinc": {
        "numpy": {"float16": "ok", "float32": "ok", "bfloat16": "refused"},
        "paddle": {"float16": "refused", "float32": "ok", "bfloat16": "refused"},
    },
    "add": {
        "numpy": {"bool": "ok", "uint16": "ok"},
        "paddle": {"bool": "ok", "uint16": "refused"},
        "jax": {"bool": "ok", "uint16": "ok"},
    },
    "max": {"torch": {"float32": "ok", "uint32": "refused"}},
    "not-in-catalog": {"jax": {"float32": "ok"}},
}


def make_document() -> Document:
    """The fixture: a campaign's findings of every classification, kind family and rank."""
    return Document(
        xamt_version="0.1.0",
        libraries=dict(LIBS),
        campaign={
            "name": "fuzz-0-1",
            "seed": 1,
            "budget": "150 cases",
            "schedule": "variance",
            "shard": "0/1",
            "cases": 150,
            "seconds": 23.5,
        },
        findings=tuple(make_findings()),
        support=SUPPORT,
    )


def fixture_doc() -> Document:
    """The golden findings.json as the report reads it."""
    return load_document(GOLDEN / "findings.json")


def by_callable(doc: Document, name: str) -> Finding:
    return next(f for f in doc.findings if f.callable == name)


def report_details(html: str) -> dict[str, Any]:
    """The details a report embeds (signature -> details), unpacked as its script does."""
    m = re.search(
        r'<script type="text/plain" id="xamt-details"[^>]*>([A-Za-z0-9+/=]*)</script>', html
    )
    assert m is not None, "no packed details in the report"
    data: dict[str, Any] = json.loads(gzip.decompress(base64.b64decode(m.group(1))))
    return data


def readable_report(html: str) -> str:
    """The report with its packed details shown as indented JSON: what the golden file keeps
    (readable in a review, and independent of the zlib build that compressed them)."""
    details = json.dumps(report_details(html), indent=1, ensure_ascii=False)
    return re.sub(
        r'(<script type="text/plain" id="xamt-details"[^>]*>)[A-Za-z0-9+/=]*(</script>)',
        lambda m: m.group(1) + "\n" + details + "\n" + m.group(2),
        html,
    )


def check_golden(name: str, text: str) -> None:
    # ".golden" keeps formatters (ruff formats Python blocks inside .md files) off them.
    path = GOLDEN / f"{name}.golden"
    if UPDATE:
        path.write_text(text, encoding="utf-8")
        return
    assert path.exists(), f"{path} missing; XAMT_UPDATE_GOLDEN=1 python -m pytest {__file__}"
    assert text == path.read_text(encoding="utf-8"), (
        f"{name} changed; if intended: XAMT_UPDATE_GOLDEN=1 python -m pytest tests/test_report.py"
    )


def outside_code(markdown: str) -> str:
    """The Markdown with fenced blocks and inline code spans taken out."""
    out, fence = [], None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,})", stripped)
            if m:
                fence = m.group(1)
                continue
            out.append(line)
        elif stripped and set(stripped) == {"`"} and len(stripped) >= len(fence):
            fence = None
    text = "\n".join(out)
    return re.sub(r"(`+)(?!`).*?(?<!`)\1(?!`)", "", text)


def fences_balanced(markdown: str) -> bool:
    fence = None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None:
            m = re.match(r"^(`{3,})", stripped)
            if m:
                fence = m.group(1)
        elif stripped and set(stripped) == {"`"} and len(stripped) >= len(fence):
            fence = None
    return fence is None


def section(markdown: str, heading: str) -> str:
    """The text of one ``### heading`` section of the summary."""
    start = markdown.index(f"### {heading}")
    end = markdown.find("\n### ", start + 1)
    return markdown[start : end if end != -1 else len(markdown)]


# -- golden files ---------------------------------------------------------------------------


def test_fixture_findings_json_golden() -> None:
    """The fixture as findings.json (schema 2), read back to the same records."""
    doc = make_document()
    path = GOLDEN / "findings.json"
    if UPDATE:
        path.write_text(dumps_document(doc), encoding="utf-8")
    assert path.read_text(encoding="utf-8") == dumps_document(doc), (
        "findings.json changed; if intended: XAMT_UPDATE_GOLDEN=1 python -m pytest "
        "tests/test_report.py"
    )
    loaded = load_document(path)
    assert document_to_json(loaded) == document_to_json(doc)
    assert json.loads(path.read_text())["schema"] == 2


SUSPECTED = [f for f in sorted(make_findings(), key=Finding.rank) if f.suspected]


@pytest.mark.parametrize("index", range(len(SUSPECTED)))
def test_issue_title_and_body_golden(index: int) -> None:
    doc = fixture_doc()
    f = [f for f in doc.ranked() if f.suspected][index]
    state = IssueState(occurrences=1, misses=0, last_run="run0")
    markers = signature_marker(f.signature) + "\n" + state.marker()
    title = render.issue_title(f, doc.libraries)
    body = render.issue_body(f, doc, markers=markers)
    check_golden(f"issue-{index}-{f.kind}.md", f"# {title}\n\n{body}")
    assert "\n" not in title and len(title) <= render.TITLE_LIMIT
    assert title.startswith(f"[xamt] {f.callable}")
    assert signature_of(body) == f.signature
    assert fences_balanced(body)
    # The body opens with what a maintainer reads first: the defect in one line (the title
    # without its prefix), the reproduction, expected against actual, the versions.
    assert body.startswith(f"**{title.removeprefix('[xamt] ')}**\n\nReproduction with ")
    head = body[: body.index("<details>")]
    assert re.search(r"\n- \*\*Expected:\*\* .+\n- \*\*Actual:\*\* .+\n- \*\*Versions:\*\* ", head)
    assert f"**{f.library}** · `{f.callable}`" in head


def test_comments_golden() -> None:
    doc = fixture_doc()
    f = by_callable(doc, "paddle.sinc")
    check_golden(
        "comment-recurrence.md",
        render.recurrence_comment(f, doc, occurrences=4, marker=run_marker("r1", "recurrence")),
    )
    check_golden(
        "comment-regression.md",
        render.regression_comment(f, doc, occurrences=5, marker=run_marker("r2", "regression")),
    )
    check_golden(
        "comment-regression-verified.md",
        render.regression_comment(None, doc, occurrences=2, marker=run_marker("r3", "regression")),
    )
    check_golden(
        "comment-closing.md",
        render.closing_comment(doc, misses=3, marker=run_marker("r4", "closing")),
    )


def test_summary_and_html_golden() -> None:
    doc = fixture_doc()
    check_golden("summary.md", render.summary_markdown(doc, FAMILIES))
    check_golden("report.html", readable_report(render.report_html(doc, FAMILIES)))


# -- what the summary and the HTML report show, in which order -------------------------------


def test_an_issue_lists_the_other_callables_its_root_cause_shows_through() -> None:
    """A finding that other callables' findings joined (xamt.triage.pipeline.joined) names
    each of them, with why, before the results table; one that none joined says nothing."""
    doc = fixture_doc()
    f = by_callable(doc, "paddle.sinc")
    assert "The same root cause shows through" not in render.issue_body(f, doc)
    why = "value/paddle/paddle.sinc_/float32/nan: its source calls paddle.sinc"
    body = render.issue_body(f.replace(also=(why,)), doc)
    listed = body.index("The same root cause shows through")
    assert f"- `{why}`" in body[listed:] and listed < body.index("| library |")
    many = render.issue_body(f.replace(also=tuple(f"{why} {n}" for n in range(15))), doc)
    assert f"- `{why} 11`" in many and f"{why} 12" not in many
    assert "- and 3 more (findings.json lists them all)" in many


def test_the_flagship_issue_opens_with_its_one_line_reproduction() -> None:
    doc = fixture_doc()
    f = by_callable(doc, "paddle.sinc")
    assert render.issue_title(f, doc.libraries) == (
        "[xamt] paddle.sinc: NaN disagreement on float32 input with nan"
    )
    body = render.issue_body(f, doc)
    head = body.split("| library |")[0]
    assert "paddle.sinc(paddle.to_tensor([nan], dtype='float32'))" in head
    assert "- **Expected:** numpy and torch give `float32[1] [nan]`\n" in head
    assert "- **Actual:** paddle gives `float32[1] [1.]`\n" in head
    # Then the same call, one line per other library, with what each gave.
    assert "numpy.sinc(numpy.array([nan], dtype='float32'))  # float32[1] [nan]\n" in head
    assert "torch.sinc(torch.tensor([nan], dtype=torch.float32))  # float32[1] [nan]\n" in head
    assert head.index("paddle.sinc(paddle") < head.index("numpy.sinc(") < head.index("torch.sinc(")
    assert "severity **high**, confidence **reference**" in head
    # The full script comes after, collapsed.
    script = body.index("<details><summary>Full script: paddle</summary>")
    assert script > body.index("| library |")
    assert "print(paddle.sinc(x))" in body[script:]


def test_suspected_bugs_are_ranked_by_severity_then_confidence() -> None:
    doc = fixture_doc()
    md = render.summary_markdown(doc, FAMILIES)
    bugs = section(md, "Suspected bugs")
    rows = [line.split(" | ") for line in bugs.splitlines() if re.match(r"^\| \d+ \|", line)]
    order = [(r[1], r[2], r[4].strip("`")) for r in rows]
    assert order == [
        ("critical", "reference", "jax.tri"),
        ("high", "reference", "paddle.sinc"),  # reference beats jax.entr's 40 occurrences
        ("high", "majority", "jax.entr"),
        ("medium", "majority", "jax.add"),
        ("medium", "majority", "torch.weird"),
        ("low", "reference", "torch.argsort"),
        ("low", "majority", "jax.acosh"),
    ]
    html = render.report_html(doc, FAMILIES)
    ids = re.findall(r'<tbody id="f-([0-9a-f]{16})"><tr><td>', html)
    ranked = doc.ranked()
    assert ids == [f.signature for c in CLASSIFICATIONS for f in ranked if f.classification == c]
    assert ids[: len(order)] == [f.signature for f in ranked if f.suspected]
    # Documented differences and splits are not among the suspected bugs.
    for f in doc.findings:
        if not f.suspected:
            assert f.signature not in bugs


def test_documented_differences_are_grouped_by_policy_once() -> None:
    doc = fixture_doc()
    md = render.summary_markdown(doc, FAMILIES)
    documented = section(md, "Documented differences")
    assert md.count(f"**{FLOAT_POLICY}**") == 1
    assert f"**{FLOAT_POLICY}**: 2 findings, in numpy (`numpy.acosh`, `numpy.sqrt`)." in md
    assert documented.count(INT_TO_FLOAT.reason) == 1
    assert f"([documentation]({INT_TO_FLOAT.link}))" in documented
    assert "**nan-propagation**: 1 finding, in torch (`torch.max`)." in documented
    html = render.report_html(doc, FAMILIES)
    assert html.count(f"<h3>{FLOAT_POLICY} ") == 1
    assert f'<a href="{INT_TO_FLOAT.link}">documentation</a>' in html
    for name in ("numpy.acosh", "numpy.sqrt"):  # each policy links to its findings' rows
        assert f'<a href="#f-{by_callable(doc, name).signature}">{name}</a>' in html
    views = render.policy_views([f for f in doc.findings if f.known_difference])
    assert [(v["policy"], v["count"]) for v in views] == [
        (FLOAT_POLICY, 2),
        ("nan-propagation", 1),
    ]


def test_splits_are_listed_apart() -> None:
    doc = fixture_doc()
    split = by_callable(doc, "fmod")
    md = render.summary_markdown(doc, FAMILIES)
    splits = section(md, "Splits")
    assert f"| jax+torch | `fmod` | value | int32 | zero-divisor | `{split.signature}` |" in splits
    assert split.signature not in section(md, "Suspected bugs")
    assert render.phrase(split) == "jax and torch split evenly (value) and no reference decides"


def test_support_matrix_is_a_heatmap_of_refusals() -> None:
    doc = fixture_doc()
    rows, cols, cells = render.support_cells(doc.support, FAMILIES, list(doc.libraries))
    assert rows == ["elementwise", "reduction", "unknown"]
    assert cols == ["numpy", "torch", "jax", "paddle"]
    paddle = cells[("elementwise", "paddle")]
    assert (paddle.refused, paddle.total, paddle.groups) == (3, 5, ("add", "sinc"))
    assert ("elementwise", "torch") not in cells
    h = render.support_heatmap(doc.support, FAMILIES, list(doc.libraries))
    assert h["refusals"] == 5
    html = render.report_html(doc, FAMILIES)
    svg = html[html.index("<svg") : html.index("</svg>")]
    assert "elementwise x paddle: 3 of 5 (group, dtype) refused (add, sinc)" in svg
    assert ">60%</text>" in svg and "reduction x torch: 1 of 2 (group, dtype) refused" in svg
    assert "elementwise x torch: not tried" in svg
    md = render.summary_markdown(doc, FAMILIES)
    support = section(md, "Support matrix")
    assert "5 (group, library, dtype) refusals over 4 groups" in support
    assert "| elementwise | 20% (1 of 5) | - | 0% (0 of 2) | 60% (3 of 5) |" in support


def test_counts_by_classification_and_kind() -> None:
    doc = fixture_doc()
    counts = section(render.summary_markdown(doc, FAMILIES), "Counts")
    header = "| kind | suspected-bug | documented-difference | unspecified | split | all |"
    assert header in counts
    assert "| nan | 1 | 1 | 0 | 0 | 2 |" in counts
    assert "| dtype | 1 | 2 | 0 | 0 | 3 |" in counts
    assert "| signed-zero | 1 | 0 | 1 | 0 | 2 |" in counts
    assert "| **all** | 7 | 3 | 1 | 1 | 12 |" in counts


def test_unspecified_findings_are_shown_by_question_and_never_filed() -> None:
    """The unspecified section names each question once, the departing library and its
    callables, and the trait's document; the filer's plan leaves the finding out."""
    doc = fixture_doc()
    md = render.summary_markdown(doc, FAMILIES)
    questions = section(md, "Unspecified, by question")
    assert "**The sign of a zero a running sum or product starts from**: 1 finding" in questions
    assert "paddle (`paddle.cumsum`)" in questions
    assert "`zero-sign-of-accumulator` ([why](https://standards.ieee.org/ieee/754/6210/))" in (
        questions
    )
    assert "1 unspecified" in md.splitlines()[0]
    filing = github.plan(doc, [])
    unspecified = [f.signature for f in doc.findings if f.classification == "unspecified"]
    planned = {a.signature for a in filing.actions}
    assert unspecified and not set(unspecified) & planned
    assert any("1 unspecified" in note for note in filing.notes)


def test_summary_of_an_empty_campaign() -> None:
    doc = Document(xamt_version="0.1.0", libraries=dict(LIBS), campaign={}, findings=())
    text = render.summary_markdown(doc, FAMILIES)
    assert "0 suspected bugs" in text and "No suspected bugs." in text
    assert "No support data." in text and "No reproduced findings." in text
    html = render.report_html(doc, FAMILIES)
    assert "No findings." in html and "No support data." in html and "<svg" not in html
    assert "<tbody id=" not in html


# -- a large report ---------------------------------------------------------------------------

SEVEN = {
    "numpy": ("2.4.6", "numpy."),
    "torch": ("2.13.0+cpu", "torch."),
    "tensorflow": ("2.21.0", "tensorflow.math."),
    "jax": ("0.10.2", "jax.numpy."),
    "paddle": ("3.3.1", "paddle."),
    "mindspore": ("2.10.0", "mindspore.ops."),
    "mxnet": ("1.9.1", "mxnet.np."),
}
OPS = ("sinc", "logaddexp", "cumsum", "nanquantile", "fmod", "argsort", "special_entr", "tri")
DTYPES = ("float32", "float16", "float64", "int32", "int64", "bool")
TRIGGERS = ("ordinary", "nan", "inf", "neg-zero", "subnormal", "dtype-limit", "empty", "zero-dim")


def many_findings(n: int, seed: int = 13) -> Document:
    """``n`` synthetic findings shaped like a real campaign's: three to seven libraries per
    case, every kind and classification, long exception messages, inputs of up to 24
    elements, a repro script per library in the layout xamt writes."""
    rng = np.random.default_rng(seed)
    found = []
    for i in range(n):
        libs = ["numpy", *rng.choice(list(SEVEN)[1:], size=int(rng.integers(2, 7)), replace=False)]
        op = f"{OPS[i % len(OPS)]}{i}"
        apis = {lib: SEVEN[lib][1] + op for lib in libs}
        dtype = DTYPES[int(rng.integers(len(DTYPES)))]
        x = rng.standard_normal(int(rng.integers(1, 25))).astype(dtype)
        kind: Kind = KINDS[int(rng.integers(len(KINDS)))]
        bad = str(rng.choice(libs))
        split = rng.random() < 0.15
        known = None if split or rng.random() < 0.7 else INT_TO_FLOAT
        question = "" if split or known or rng.random() < 0.8 else f"question {i % 5}"
        outputs: dict[str, dict[str, Any]] = {}
        for lib in libs:
            if lib == bad and kind == "crash":
                outputs[lib] = crashed(apis[lib], "SIGSEGV")
            elif lib == bad and kind == "status":
                message = f"{op}(): argument 'input' (position 1) must be Tensor, not {dtype}; " * 6
                outputs[lib] = raised(apis[lib], "RuntimeError", message)
            else:
                outputs[lib] = ok(apis[lib], np.sin(x) * (3.0 if lib == bad else 1.0))
        f = finding(
            library=f"{bad}+numpy" if split else bad,
            callable=apis[bad],
            kind=kind,
            group=op,
            apis=apis,
            values={"x": x, "axis": -1} if i % 3 == 0 else {"x": x},
            dtype=dtype,
            trigger=TRIGGERS[i % len(TRIGGERS)],
            outputs=outputs,
            confidence="split" if split else ("reference" if i % 2 else "majority"),
            known=known,
            question=question,
            decided_by=f"unspecified: {question} (a-trait: https://example.org/{i % 5})"
            if question
            else "",
            occurrences=int(rng.integers(1, 60)),
            value_class="non-finite" if i % 4 == 0 else "ordinary",
            detail=f"{kind}: {bad} differs from the others at {i % 7 + 1} positions (e.g. "
            f"{float(x[0]):.6g} vs {float(x[0]) * 3:.6g}); the float64 reference agrees with "
            "the others",
        )
        found.append(
            f.replace(
                repro={lib: f"repro/{f.signature}/repro_{lib}.py" for lib in [*libs, "xamt"]},
                versions={lib: SEVEN[lib][0] for lib in libs},
            )
        )
    return Document(
        xamt_version="0.1.0",
        libraries={lib: version for lib, (version, _) in SEVEN.items()},
        campaign={"name": "fuzz-0-1", "seed": 1, "budget": "2h", "cases": 90_000, "seconds": 7200},
        findings=tuple(found),
        support=SUPPORT,
    )


def test_report_of_a_thousand_findings_stays_under_a_megabyte(tmp_path: Path) -> None:
    """Size, not time: every finding has its row and its details, and the page is < 1 MB."""
    path = tmp_path / "findings.json"
    path.write_text(dumps_document(many_findings(1000)), encoding="utf-8")
    doc = load_document(path)  # schema-valid: read back as findings.json is
    assert len(doc.findings) == 1000 and len({f.signature for f in doc.findings}) == 1000
    assert {f.classification for f in doc.findings} == set(CLASSIFICATIONS)
    html = render.report_html(doc, FAMILIES, repro_base="../")
    size = len(html.encode("utf-8"))
    assert size < 1_000_000, f"report of 1000 findings is {size} bytes"
    assert html.count("<tbody id=") == 1000
    details = report_details(html)
    assert set(details) == {f.signature for f in doc.findings}
    assert all(len(d["libs"]) >= 3 and d["scripts"] for d in details.values())


# -- the one-line reproduction --------------------------------------------------------------


def one_liner(library: str, api: str, values: dict[str, Any], group: str = "g#test") -> Any:
    f = finding(
        library=library,
        callable=api,
        kind="value",
        group=group,
        apis={library: api},
        values=values,
        dtype="float32",
        trigger="ordinary",
        outputs={library: ok(api, np.array([1.0], dtype=np.float32))},
    )
    return render.repro_line(f)


def test_repro_line_in_each_library() -> None:
    x = {"x": np.array([np.nan, -0.0], dtype=np.float32)}
    calls = {
        "numpy": "numpy.sinc(numpy.array([nan, -0.0], dtype='float32'))",
        "torch": "torch.sinc(torch.tensor([nan, -0.0], dtype=torch.float32))",
        "tensorflow": "tensorflow.math.sin(tensorflow.constant([nan, -0.0], "
        "dtype=tensorflow.float32))",
        "jax": "jax.numpy.sinc(jax.numpy.array([nan, -0.0], dtype=jax.numpy.float32))",
        "mindspore": "mindspore.ops.sinc(mindspore.Tensor([nan, -0.0], dtype=mindspore.float32))",
        "mxnet": "mxnet.np.sinc(mxnet.np.array([nan, -0.0], dtype='float32'))",
        "keras": "keras.ops.sinc(numpy.array([nan, -0.0], dtype='float32'))",
    }
    for lib, call in calls.items():
        api = call.split("(")[0]
        line = one_liner(lib, api, x)
        assert line is not None and line.call == call, (lib, line)
        assert line.imports[-1] == "from math import inf, nan"
    jax = one_liner("jax", "jax.numpy.sinc", x)
    assert jax.imports[:2] == ("import jax", "jax.config.update('jax_enable_x64', True)")
    keras = one_liner("keras", "keras.ops.sinc", x)
    assert keras.imports[:2] == ("import numpy", "import keras")
    mixed = {
        "x": np.array([[1, 2]], dtype=np.int64),
        "xs": [np.array(True), np.array([1 + 2j], dtype=np.complex64)],
        "axis": (0,),
        "keepdims": True,
        "dtype": DType("bool"),
    }
    line = one_liner("mindspore", "mindspore.ops.f", mixed)
    assert line is not None and line.call == (
        "mindspore.ops.f(mindspore.Tensor([[1, 2]], dtype=mindspore.int64), "
        "[mindspore.Tensor(True, dtype=mindspore.bool_), "
        "mindspore.Tensor([complex(1.0, 2.0)], dtype=mindspore.complex64)], "
        "axis=(0,), keepdims=True, dtype=mindspore.bool_)"
    )
    assert "from math import inf, nan" not in line.imports
    bf16 = one_liner("torch", "torch.neg", {"x": BFloat16(np.array([1.5], dtype=np.float32))})
    assert bf16.call == "torch.neg(torch.tensor([1.5], dtype=torch.bfloat16))"


def test_repro_line_leaves_what_does_not_fit_to_the_script() -> None:
    assert one_liner("torch", "torch.neg", {"x": np.zeros(200, dtype=np.float32)}) is None
    assert one_liner("torch", "torch.neg", {"x": np.zeros((0, 3), dtype=np.float32)}) is None
    assert one_liner("torch", "torch.neg", {"x": np.zeros(0, dtype=np.float32)}) is not None


def test_repro_line_binds_roles_as_the_catalog_does() -> None:
    members = render._catalog_members()
    if ("argsort[axis]", "torch.Tensor.argsort") not in members:
        pytest.skip("the catalog has no torch.Tensor.argsort in argsort[axis]")
    values = {"x": np.array([3, 1], dtype=np.int32), "axis": -1}
    line = one_liner("torch", "torch.Tensor.argsort", values, group="argsort[axis]")
    assert line is not None
    assert line.call == "torch.Tensor.argsort(torch.tensor([3, 1], dtype=torch.int32), dim=-1)"


# -- safety ---------------------------------------------------------------------------------


def test_library_text_cannot_ping_link_or_break_out() -> None:
    doc = fixture_doc()
    f = by_callable(doc, "torch.weird")  # the adversarial one
    body = render.issue_body(f, doc, markers=signature_marker(f.signature))
    prose = outside_code(body)
    assert not MENTION_OR_REFERENCE.search(prose), prose
    assert "<script>" not in prose
    # The spoofed marker inside the library's text is not a marker; ours is the only one.
    assert re.findall(r"^<!-- xamt-signature: (\S+) -->$", body, re.M) == [f.signature]
    # The exception text is shown whole, inside a fence longer than its backtick runs.
    assert "RuntimeError: bad ``` fence ```` and @octocat, see #1234 and GH-99" in body
    assert "`````\nRuntimeError" in body
    assert fences_balanced(body)
    title = render.issue_title(f, doc.libraries)
    assert not MENTION_OR_REFERENCE.search(title), title
    for comment in (
        render.recurrence_comment(f, doc, occurrences=2),
        render.regression_comment(f, doc, occurrences=2),
    ):
        assert not MENTION_OR_REFERENCE.search(outside_code(comment))
        assert fences_balanced(comment)
    html = render.report_html(doc, FAMILIES)
    # In the HTML report the library's text is escaped in the rows and packed (base64) in the
    # details: the page holds exactly its own two data elements and one script.
    assert "<script>alert" not in html and "xamt-signature: ffff" not in html
    assert html.count("<script") == 3 and html.count("</script>") == 3
    assert "RuntimeError: bad ``` fence ```` and @octocat" in json.dumps(report_details(html))


def test_links_are_only_plain_https() -> None:
    doc = fixture_doc()
    bad = by_callable(doc, "torch.max").replace(
        known_difference=KnownRef(
            id="x", policy="p", reason="r", link="javascript:alert(1)//https://x"
        )
    )
    md = render.summary_markdown(
        Document(xamt_version="0", libraries={}, campaign={}, findings=(bad,)), FAMILIES
    )
    assert "javascript" not in md and "(documentation)" not in md
    assert render._safe_url("https://a.org/x?y=1#z") == "https://a.org/x?y=1#z"
    assert render._safe_url("https://a.org/x) [y](https://b") == ""


def test_neutralize_and_fences() -> None:
    assert render.neutralize("@octocat and #12, GH-3, a@b") == (
        "@\u200doctocat and #\u200d12, GH\u200d-3, a@\u200db"
    )
    assert render.neutralize("issue # 12 and @ alone") == "issue # 12 and @ alone"
    assert render.fence_for("no ticks") == "```"
    assert render.fence_for("a ```` b") == "`````"
    assert str(render.inline_code("a|b`c", in_table=True)) == "``a\\|b`c``"
    assert str(render.inline_code("`x`")) == "`` `x` ``"


def test_scripts_show_the_blamed_library_and_the_cross_library_one() -> None:
    doc = fixture_doc()
    weird = render.issue_body(by_callable(doc, "torch.weird"), doc)
    assert "<summary>Full script: torch</summary>" in weird
    sig = by_callable(doc, "torch.weird").signature
    assert f"Cross-library script: `repro/{sig}/repro_xamt.py` in the campaign's output" in weird
    without = render.issue_body(by_callable(doc, "jax.tri"), doc)
    assert "Full script" not in without and "Cross-library script" not in without


def test_repro_paths_are_read_only_inside_the_campaign_folder(tmp_path: Path) -> None:
    (tmp_path / "out" / "repro").mkdir(parents=True)
    (tmp_path / "out" / "repro" / "r.py").write_text("print('here')\n")
    (tmp_path / "secret.txt").write_text("token=abc\n")
    f = by_callable(fixture_doc(), "jax.tri").replace(
        repro={"jax": "repro/r.py", "xamt": "../secret.txt", "numpy": "/etc/hostname"}
    )
    doc = Document(xamt_version="0", libraries=dict(LIBS), campaign={}, findings=(f,))
    loaded = render.with_repro_scripts(doc, tmp_path / "out").findings[0].repro
    assert loaded == {"jax": "print('here')\n", "xamt": "../secret.txt", "numpy": "/etc/hostname"}
    body = render.issue_body(render.with_repro_scripts(doc, tmp_path / "out").findings[0], doc)
    assert "print('here')" in body and "token=abc" not in body


def test_long_bodies_are_cut_to_githubs_limit_keeping_markers() -> None:
    doc = fixture_doc()
    f = by_callable(doc, "jax.add")
    libs = [f"lib{i}" for i in range(24)]  # libraries to come: nothing assumes seven
    f = f.replace(
        library="lib0",
        apis={lib: f"{lib}.add" for lib in libs},
        outputs={
            lib: {"api": f"{lib}.add", "status": "error", "result": ("x" * 90 + "\n") * 3000}
            for lib in libs
        },
        repro={lib: "print('y')\n" * 20000 for lib in [*libs, "xamt"]},
    )
    markers = signature_marker(f.signature) + "\n" + IssueState().marker()
    body = render.issue_body(f, doc, markers=markers)
    assert len(body) <= render.GITHUB_BODY_LIMIT
    assert body.rstrip("\n").endswith(markers)
    assert "truncated" in body
    assert fences_balanced(body)
    assert body.count("<details>") == body.count("</details>")


def test_fit_body_counts_utf16_units() -> None:
    text = "😀" * 40000  # 80000 UTF-16 units
    out = render.fit_body(text, 1000, tail="\nEND\n")
    assert len(out.encode("utf-16-le")) // 2 <= 1000 and out.endswith("\nEND\n")


def test_templates_are_strict() -> None:
    with pytest.raises(jinja2.UndefinedError):
        render.render("comment_closing.md.j2", versions="numpy 2", marker="")


def test_templates_come_from_the_checkout_then_the_package() -> None:
    dirs = render.template_dirs()
    root = Path(xamt.__file__).resolve().parent
    assert dirs == [root.parent / "templates", root / "_templates"]
    assert (dirs[0] / "issue_body.md.j2").is_file()


# -- views ----------------------------------------------------------------------------------


def test_inputs_are_decoded_and_compact() -> None:
    big = np.arange(1000, dtype=np.float32).reshape(10, 100)
    text = render.compact_value("x", to_jsonable(big))
    assert text.startswith("x: float32[10, 100]\n") and "..." in text and len(text) < 1000
    doc = fixture_doc()
    shown = render.finding_view(by_callable(doc, "torch.weird"), doc.libraries)["inputs_text"]
    assert "x: bfloat16[2, 3]" in shown and "-0." in shown and "nan" in shown
    assert "x2: complex64[2]" in shown
    assert "e: int16[0, 3]" in shown
    assert "s: float64[] = -0.0" in shown
    assert "axis = (0, -1)" in shown and "dtype = dtype float16" in shown and "q = nan" in shown
    assert render.compact_value("x", {"$array": "float99", "shape": [], "b64": ""}).startswith(
        "x = <cannot decode"
    )


def test_phrases_and_headlines_say_what_differs() -> None:
    doc = fixture_doc()
    phrases = {f.callable: render.phrase(f) for f in doc.findings}
    assert phrases["jax.tri"] == "jax crashes (SIGABRT)"
    assert phrases["jax.add"] == "jax raises TypeError where numpy and torch return"
    assert phrases["torch.argsort"] == "torch returns shape [] where numpy give [1]"
    assert phrases["jax.acosh"] == "jax returns float16 where numpy and torch give float32"
    assert phrases["paddle.sinc"] == "paddle differs from numpy and torch in the NaN positions"
    titles = {f.callable: render.headline(f) for f in doc.findings}
    assert titles["jax.tri"] == "jax.tri crashes (SIGABRT) on ordinary input"
    assert titles["jax.add"] == (
        "jax.add raises TypeError on ordinary bool input where others return"
    )
    assert titles["jax.entr"] == "jax.entr: signed-zero disagreement on float16 input with neg-zero"


def test_group_families_come_from_the_catalog() -> None:
    families = render.group_families()
    assert families["add"] == "elementwise" and families["sum"] == "reduction"


def test_load_findings_errors(tmp_path: Path) -> None:
    with pytest.raises(FindingsError, match="no such findings file") as info:
        render.load_findings(tmp_path / "nope.json")
    assert info.value.exit_code == 17
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(FindingsError, match="not a readable"):
        render.load_findings(bad)
    bad.write_text(json.dumps({"schema": 1, "findings": []}))
    with pytest.raises(FindingsError, match="schema 1"):
        render.load_findings(bad)
    data = json.loads((GOLDEN / "findings.json").read_text())
    data["findings"][0]["outputs"] = "oops"
    bad.write_text(json.dumps(data))
    with pytest.raises(FindingsError, match=r"findings\[0\]: field 'outputs' must be"):
        render.load_findings(bad)


# -- the report command ---------------------------------------------------------------------


def report_app() -> typer.Typer:
    return xamt_app


def test_report_command_writes_and_appends_step_summary(tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    shutil.copy(GOLDEN / "findings.json", findings)
    sinc = by_callable(fixture_doc(), "paddle.sinc")
    script = tmp_path / "repro" / sinc.signature / "repro_xamt.py"
    script.parent.mkdir(parents=True)
    script.write_text("print('the cross-library script')\n")
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    result = CliRunner().invoke(
        report_app(),
        ["report", str(findings), "--out", str(tmp_path / "out")],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.exit_code == 0, result.output
    html = (tmp_path / "out" / "report.html").read_text()
    assert html.count("<svg") == 1 and html.count("<tbody id=") == 12
    # The scripts are linked from the report's folder to the campaign's, not inlined.
    assert '"base":"../"' in html
    sinc = by_callable(fixture_doc(), "paddle.sinc")
    assert report_details(html)[sinc.signature]["scripts"][1] == "xamt"
    assert "the cross-library script" not in json.dumps(report_details(html))
    md = (tmp_path / "out" / "summary.md").read_text()
    assert summary.read_text() == "earlier step\n" + md
    assert "### Suspected bugs" in md and "### Support matrix" in md


@pytest.mark.parametrize(
    ("problem", "message"),
    [
        ("missing", "no such findings file"),
        ("schema-1", "schema 1"),
        ("outputs-a-string", "field 'outputs' must be an object"),
        ("severity-unknown", "field 'severity' is 'urgent'"),
    ],
)
def test_report_command_refuses_unreadable_findings(
    tmp_path: Path, problem: str, message: str
) -> None:
    findings = tmp_path / "findings.json"
    data = json.loads((GOLDEN / "findings.json").read_text())
    if problem == "schema-1":
        data = {"schema": 1, "findings": [{"signature": "a", "odd": ["torch"]}]}
    elif problem == "outputs-a-string":
        data["findings"][2]["outputs"] = "oops"
    elif problem == "severity-unknown":
        data["findings"][0]["severity"] = "urgent"
    if problem != "missing":
        findings.write_text(json.dumps(data))
    result = CliRunner().invoke(
        report_app(),
        ["report", str(findings), "--out", str(tmp_path / "out")],
        env={"GITHUB_STEP_SUMMARY": ""},
    )
    assert result.exit_code == 17, result.output
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output
    assert not (tmp_path / "out").exists()


# -- the HTML report in a real browser ------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Headless chromium on ``page``; the virtual time budget lets the page's script finish
    (the details are unpacked asynchronously) before a dump or a screenshot."""
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def keep_screenshot(shot: Path) -> None:
    """Check that ``shot`` is a picture of something, and keep a copy in
    ``$XAMT_SCREENSHOT_DIR`` (when set) for people to look at."""
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    if os.environ.get("XAMT_SCREENSHOT_DIR"):
        kept = Path(os.environ["XAMT_SCREENSHOT_DIR"])
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, kept / shot.name)


class _Counter(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_data(self, data: str) -> None:
        self.texts.append(data)


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get update && apt-get install -y chromium)",
)
def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    doc = fixture_doc()
    page = tmp_path / "report.html"
    page.write_text(render.report_html(doc, FAMILIES), encoding="utf-8")
    shot = tmp_path / "report.png"
    profile = tmp_path / "profile"
    run = chromium(page, profile, f"--screenshot={shot}", "--window-size=1200,900", page.as_uri())
    assert run.returncode == 0, run.stderr[-2000:]
    keep_screenshot(shot)
    # The DOM after the browser parsed it: the heatmap's cells are there.
    dom = chromium(page, profile, "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = _Counter()
    parsed.feed(dom.stdout)
    h = render.support_heatmap(doc.support, FAMILIES, list(doc.libraries))
    assert parsed.tags.get("svg") == 1
    assert parsed.tags.get("rect", 0) >= len(h["cells"])
    assert "Support matrix: share of dtypes refused" in " ".join(parsed.texts)


class _Table(HTMLParser):
    """The findings table of a browser's DOM: each finding's id, hidden or not, and the text
    of its cells (the opened details in the last entry of ``cells``), in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[dict[str, Any]] = []
        self.scripts = 0
        self.shown = ""
        self._in: dict[str, Any] | None = None
        self._depth = 0
        self._shown = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "span" and a.get("id") == "shown":
            self._shown = True
        if tag == "tbody" and (a.get("id") or "").startswith("f-"):
            self._in = {"id": a["id"], "hidden": "hidden" in a, "cells": []}
            self.rows.append(self._in)
        elif tag == "tbody" and self._in is not None:
            self._depth += 1  # the details' own table
        elif tag == "td" and self._in is not None:
            self._in["cells"].append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody" and self._depth:
            self._depth -= 1
        elif tag == "tbody":
            self._in = None
        self._shown = False

    def handle_data(self, data: str) -> None:
        if self._in is not None and self._in["cells"]:
            self._in["cells"][-1] += data
        if self._shown:
            self.shown += data


@pytest.mark.skipif(
    CHROMIUM is None,
    reason="chromium is not installed (apt-get update && apt-get install -y chromium)",
)
def test_html_report_sorts_filters_and_opens_in_headless_chromium(tmp_path: Path) -> None:
    """The report's script in a real browser: a view named in the address (filter by library,
    sort by cases, one finding opened) is what the page shows, and library text stays text."""
    doc = fixture_doc()
    page = tmp_path / "report.html"
    page.write_text(render.report_html(doc, FAMILIES), encoding="utf-8")
    entr = by_callable(doc, "jax.entr")
    view = f"{page.as_uri()}#library=jax&sort=-cases&f-{entr.signature}"
    dom = chromium(page, tmp_path / "profile", "--dump-dom", view)
    assert dom.returncode == 0, dom.stderr[-2000:]
    table = _Table()
    table.feed(dom.stdout)
    jax = [f for f in doc.findings if "jax" in f.library.split("+")]
    shown = [r for r in table.rows if not r["hidden"]]
    n = {r["signature"]: r["n"] for r in render.report_rows(doc)}  # ties keep the table's order
    assert [r["id"] for r in shown] == [
        f"f-{f.signature}" for f in sorted(jax, key=lambda f: (-f.occurrences, n[f.signature]))
    ]
    assert [int(r["cells"][7]) for r in shown] == sorted((f.occurrences for f in jax), reverse=True)
    assert len(table.rows) == len(doc.findings) and " ".join(table.shown.split()) == (
        f"{len(jax)} of {len(doc.findings)} findings shown"
    )
    # The opened finding's details were unpacked and built: its one-line reproduction.
    (opened,) = [r for r in shown if r["id"] == f"f-{entr.signature}"]
    assert len(opened["cells"]) == 8 + 1 + 2 * 4  # its row, the details, a table of 2 libraries
    details = " ".join(opened["cells"][8:])
    assert "Minimal reproduction with jax 0.10.2:" in details
    assert "jax.scipy.special.entr(jax.numpy.array([-0.0, 0.0, 1.0], dtype=jax.numpy.float16))" in (
        details
    )
    assert "torch.special.entr(torch.tensor([-0.0, 0.0, 1.0], dtype=torch.float16))  #" in details
    assert f"Signature {entr.signature}" in details
    # Library text in the details is text: markup in an exception adds no element.
    hostile = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    weird = by_callable(doc, "torch.weird")
    weird = weird.replace(
        outputs={**weird.outputs, "torch": raised("torch.weird", "<b>Error</b>", hostile)},
        detail=f"<i>{hostile}</i>",
    )
    evil = tmp_path / "evil.html"
    evil.write_text(
        render.report_html(
            Document(xamt_version="0", libraries=doc.libraries, campaign={}, findings=(weird,)),
            FAMILIES,
        ),
        encoding="utf-8",
    )
    dom = chromium(evil, tmp_path / "profile", "--dump-dom", f"{evil.as_uri()}#f-{weird.signature}")
    table = _Table()
    table.feed(dom.stdout)
    (opened,) = table.rows
    assert f"<b>Error</b>: {hostile}" in "".join(opened["cells"])
    assert f"<i>{hostile}</i>" in "".join(opened["cells"])
    assert table.scripts == 3 and "<img" not in dom.stdout and "<b>Error" not in dom.stdout
    # A picture of the filtered, sorted view.
    shot = tmp_path / "report-filtered.png"
    filtered = f"{page.as_uri()}#library=jax&sort=-cases"
    run = chromium(
        page, tmp_path / "profile", f"--screenshot={shot}", "--window-size=1200,900", filtered
    )
    assert run.returncode == 0, run.stderr[-2000:]
    keep_screenshot(shot)


def test_report_shows_where_the_time_went() -> None:
    base = make_document()
    timed = dataclasses.replace(
        base,
        campaign={
            **base.campaign,
            "time": {
                "phases": {"startup": 5.0, "fuzz": 20.0, "reproduce": 9.0},
                "libraries": {
                    "jax": {"calls": 40, "first_calls": 38, "first_seconds": 16.0, "hangs": 1},
                    "numpy": {"calls": 90, "warm_seconds": 0.5},
                },
            },
        },
    )
    html = render.report_html(timed, FAMILIES)
    assert "Where the time went" in html and "34 s in all" in html
    cells = re.findall(r"<td[^>]*>([^<]*)", html[html.index("Where the time went") :])
    assert cells[:4] == ["jax", "40", "0.0", "16.0 (38)"] and "80%" in cells  # 16 s of 20
    assert "Where the time went" not in render.report_html(base, FAMILIES)


def test_an_issue_body_says_what_decides_it_and_what_the_documentation_says() -> None:
    doc = fixture_doc()
    f = by_callable(doc, "paddle.sinc").replace(
        decided_by="standard: sinc(nan) is NaN",
        documentation=("The data type should be float32, float64.", "NaN in, <b>NaN</b> out."),
    )
    body = render.issue_body(f, doc)
    assert "- **Decided by:** standard: sinc(nan) is NaN\n" in body
    assert "<details><summary>What the documentation of `paddle.sinc` says</summary>" in body
    assert "> The data type should be float32, float64." in body
    assert "<b>" not in body  # text from a library is shown literally


def test_an_issue_opens_with_the_short_repro_file(tmp_path: Path) -> None:
    """The short repro (``short_repro``: a file beside findings.json) is the body's first code
    block, before the one-line reproduction; a path outside the folder is never read."""
    doc = fixture_doc()
    f = by_callable(doc, "paddle.sinc").replace(short_repro="repro/s/short_paddle.py")
    script = "import paddle\nassert paddle.sinc(paddle.to_tensor(float('nan'))).isnan()\n"
    (tmp_path / "repro" / "s").mkdir(parents=True)
    (tmp_path / "repro" / "s" / "short_paddle.py").write_text(script)
    loaded = render.with_repro_scripts(dataclasses.replace(doc, findings=(f,)), tmp_path)
    body = render.issue_body(loaded.findings[0], loaded)
    lines = body.splitlines()
    assert lines[0] == "**paddle.sinc: NaN disagreement on float32 input with nan**"
    assert lines[2:5] == ["Reproduction with paddle 3.3.1:", "", "```python"]
    assert body.index("isnan()") < body.index("- **Expected:**") < body.index("<details>")
    outside = f.replace(short_repro="../secret.py")
    (tmp_path.parent / "secret.py").write_text("SECRET = 1\n")
    kept = render.with_repro_scripts(dataclasses.replace(doc, findings=(outside,)), tmp_path)
    assert kept.findings[0].short_repro == "../secret.py"
    assert "SECRET" not in render.issue_body(kept.findings[0], kept)
