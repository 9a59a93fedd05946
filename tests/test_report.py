"""Rendered reports: golden files for every template, Markdown safety, truncation, the
``report`` command, and the HTML report in a real headless browser.

Regenerate the golden files after an intended change to a template:
``XAMT_UPDATE_GOLDEN=1 python -m pytest tests/test_report.py``.
"""

from __future__ import annotations

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
from xamt.cli import handles_errors
from xamt.report import commands, render
from xamt.report.github import IssueState, run_marker, signature_marker, signature_of
from xamt.serialize import to_jsonable

GOLDEN = Path(__file__).parent / "golden" / "report"
UPDATE = os.environ.get("XAMT_UPDATE_GOLDEN") == "1"
# Group families of the fixture's groups, fixed here so a rebuilt catalog does not move them.
FAMILIES = {
    "tri": "creation",
    "add": "elementwise",
    "argsort": "other",
    "acosh": "elementwise",
    "entr": "elementwise",
    "fmod": "elementwise",
}
MENTION_OR_REFERENCE = re.compile(r"@[A-Za-z0-9]|#[0-9]|\bGH-[0-9]")


def fixture_doc() -> dict[str, Any]:
    """Findings of a real campaign (numpy, torch, jax), plus a documented difference and one
    whose library text tries every trick (mentions, references, fences, a spoofed marker)."""
    return json.loads((GOLDEN / "findings.json").read_text())


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


# -- golden files ---------------------------------------------------------------------------


@pytest.mark.parametrize("index", range(9))
def test_issue_title_and_body_golden(index: int) -> None:
    doc = fixture_doc()
    finding = doc["findings"][index]
    state = IssueState(occurrences=1, misses=0, last_run="run0")
    markers = signature_marker(finding["signature"]) + "\n" + state.marker()
    title = render.issue_title(finding, doc["libraries"])
    body = render.issue_body(finding, doc, markers=markers)
    check_golden(f"issue-{index}-{finding['kind']}.md", f"# {title}\n\n{body}")
    assert "\n" not in title and len(title) <= render.TITLE_LIMIT
    assert signature_of(body) == finding["signature"]
    assert fences_balanced(body)


def test_comments_golden() -> None:
    doc = fixture_doc()
    finding = doc["findings"][6]
    check_golden(
        "comment-recurrence.md",
        render.recurrence_comment(
            finding, doc, occurrences=4, marker=run_marker("r1", "recurrence")
        ),
    )
    check_golden(
        "comment-regression.md",
        render.regression_comment(
            finding, doc, occurrences=5, marker=run_marker("r2", "regression")
        ),
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
    check_golden("summary.md", render.summary_markdown(doc))
    check_golden("report.html", render.report_html(doc, FAMILIES))


def test_summary_of_an_empty_campaign() -> None:
    doc = {**fixture_doc(), "findings": []}
    text = render.summary_markdown(doc)
    assert "0 findings" in text and "No reproduced findings." in text
    html = render.report_html(doc, FAMILIES)
    assert "No reproduced findings." in html and "<svg" in html


# -- safety ---------------------------------------------------------------------------------


def test_library_text_cannot_ping_link_or_break_out() -> None:
    doc = fixture_doc()
    finding = doc["findings"][8]  # the adversarial one
    body = render.issue_body(finding, doc, markers=signature_marker(finding["signature"]))
    prose = outside_code(body)
    assert not MENTION_OR_REFERENCE.search(prose), prose
    assert "<script>" not in prose
    # The spoofed marker inside the library's text is not a marker; ours is the only one.
    assert re.findall(r"^<!-- xamt-signature: (\S+) -->$", body, re.M) == [finding["signature"]]
    # The exception text is shown whole, inside a fence longer than its backtick runs.
    assert "RuntimeError: bad ``` fence ```` and @octocat, see #1234 and GH-99" in body
    assert "`````\nRuntimeError" in body
    assert fences_balanced(body)
    title = render.issue_title(finding, doc["libraries"])
    assert not MENTION_OR_REFERENCE.search(title), title
    for comment in (
        render.recurrence_comment(finding, doc, occurrences=2),
        render.regression_comment(finding, doc, occurrences=2),
    ):
        assert not MENTION_OR_REFERENCE.search(outside_code(comment))
        assert fences_balanced(comment)


def test_neutralize_and_fences() -> None:
    assert render.neutralize("@octocat and #12, GH-3, a@b") == (
        "@\u200doctocat and #\u200d12, GH\u200d-3, a@\u200db"
    )
    assert render.neutralize("issue # 12 and @ alone") == "issue # 12 and @ alone"
    assert render.fence_for("no ticks") == "```"
    assert render.fence_for("a ```` b") == "`````"
    assert str(render.inline_code("a|b`c", in_table=True)) == "``a\\|b`c``"
    assert str(render.inline_code("`x`")) == "`` `x` ``"


def test_repro_slot_renders_only_with_a_repro_field() -> None:
    doc = fixture_doc()
    with_repro = render.issue_body(doc["findings"][8], doc)
    without = render.issue_body(doc["findings"][0], doc)
    assert "### Reproduce" in with_repro and "<summary>torch</summary>" in with_repro
    assert "`repro/a11ce0ffee000001/repro_xamt.py` in the campaign's output folder" in with_repro
    assert "### Reproduce" not in without
    one_script = {**doc["findings"][0], "repro": "import numpy\nprint(1)\n"}
    assert "### Reproduce" in render.issue_body(one_script, doc)


def test_repro_paths_are_read_only_inside_the_campaign_folder(tmp_path: Path) -> None:
    (tmp_path / "out" / "repro").mkdir(parents=True)
    (tmp_path / "out" / "repro" / "r.py").write_text("print('here')\n")
    (tmp_path / "secret.txt").write_text("token=abc\n")
    doc = {
        **fixture_doc(),
        "findings": [
            {
                **fixture_doc()["findings"][0],
                "repro": {"numpy": "repro/r.py", "jax": "../secret.txt", "torch": "/etc/hostname"},
            }
        ],
    }
    loaded = render.with_repro_scripts(doc, tmp_path / "out")["findings"][0]["repro"]
    assert loaded == {"numpy": "print('here')\n", "jax": "../secret.txt", "torch": "/etc/hostname"}
    body = render.issue_body({**doc["findings"][0], "repro": loaded}, doc)
    assert "print('here')" in body and "token=abc" not in body


def test_long_bodies_are_cut_to_githubs_limit_keeping_markers() -> None:
    doc = fixture_doc()
    finding = json.loads(json.dumps(doc["findings"][2]))
    libs = [f"lib{i}" for i in range(12)]  # libraries to come: nothing assumes seven
    finding["apis"] = {lib: f"{lib}.add" for lib in libs}
    finding["outputs"] = {
        lib: {"api": f"{lib}.add", "status": "error", "result": ("x" * 90 + "\n") * 3000}
        for lib in libs
    }
    finding["repro"] = {lib: "print('y')\n" * 20000 for lib in libs}
    markers = signature_marker(finding["signature"]) + "\n" + IssueState().marker()
    body = render.issue_body(finding, doc, markers=markers)
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
    shown = render.finding_view(doc["findings"][8], doc["libraries"])["inputs_text"]
    assert "x: bfloat16[2, 3]" in shown and "-0." in shown and "nan" in shown
    assert "x2: complex64[2]" in shown
    assert "e: int16[0, 3]" in shown
    assert "s: float64[] = -0.0" in shown
    assert "axis = (0, -1)" in shown and "dtype = dtype float16" in shown and "q = nan" in shown
    assert render.compact_value("x", {"$array": "float99", "shape": [], "b64": ""}).startswith(
        "x = <cannot decode"
    )


def test_phrases_say_what_differs() -> None:
    doc = fixture_doc()
    phrases = [render.phrase(f) for f in doc["findings"]]
    assert phrases[0] == "jax crashes (SIGABRT)"
    assert phrases[2] == "jax raises TypeError where numpy and torch return"
    assert phrases[4] == "numpy returns float64 where torch and jax give float32"


def test_heatmap_counts_findings_by_family_and_odd_library() -> None:
    doc = fixture_doc()
    h = render.heatmap(doc["findings"], FAMILIES, list(doc["libraries"]))
    cells = {(c["x"], c["y"]): c["count"] for c in h["cells"]}
    assert sum(cells.values()) == sum(len(f["odd"]) for f in doc["findings"])
    assert [r["label"] for r in h["rows"]][:8] == list(xamt.catalog.model.FAMILIES)
    assert "unknown" in [r["label"] for r in h["rows"]]  # weird#12 is in no catalog
    assert [c["label"] for c in h["cols"]] == ["numpy", "torch", "jax"]


def test_group_families_come_from_the_catalog() -> None:
    families = render.group_families()
    assert families["add"] == "elementwise" and families["sum"] == "reduction"


def test_load_findings_errors(tmp_path: Path) -> None:
    with pytest.raises(render.FindingsError, match="no such file") as info:
        render.load_findings(tmp_path / "nope.json")
    assert info.value.exit_code == 17
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(render.FindingsError, match="not a readable"):
        render.load_findings(bad)
    bad.write_text(json.dumps({"schema": 2, "findings": []}))
    with pytest.raises(render.FindingsError, match="schema 1"):
        render.load_findings(bad)
    bad.write_text(json.dumps({"schema": 1, "findings": [{"kind": "value"}]}))
    with pytest.raises(render.FindingsError, match="lacks signature"):
        render.load_findings(bad)


# -- the report command ---------------------------------------------------------------------


def report_app() -> typer.Typer:
    app = typer.Typer()
    app.command("report")(handles_errors(commands.report))
    app.command("other")(lambda: None)  # two commands: Typer keeps the command name
    return app


def test_report_command_writes_and_appends_step_summary(tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text(json.dumps(fixture_doc()))
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    result = CliRunner().invoke(
        report_app(),
        ["report", str(findings), "--out", str(tmp_path / "out")],
        env={"GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "report.html").read_text().count("<svg") == 2
    md = (tmp_path / "out" / "summary.md").read_text()
    assert summary.read_text() == "earlier step\n" + md
    result = CliRunner().invoke(
        report_app(), ["report", str(tmp_path / "missing.json")], env={"GITHUB_STEP_SUMMARY": ""}
    )
    assert result.exit_code == 17 and "no such file" in result.output


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
    assert CHROMIUM is not None
    run = subprocess.run(
        [
            CHROMIUM,
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--screenshot={shot}",
            "--window-size=1200,900",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    if os.environ.get("XAMT_SCREENSHOT_DIR"):  # keep the picture for people to look at
        kept = Path(os.environ["XAMT_SCREENSHOT_DIR"])
        kept.mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, kept / "report.png")
    # The DOM after the browser parsed it: the heatmap's cells and their numbers are there.
    dom = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert dom.returncode == 0, dom.stderr[-2000:]
    parsed = _Counter()
    parsed.feed(dom.stdout)
    h = render.heatmap(doc["findings"], FAMILIES, list(doc["libraries"]))
    assert parsed.tags.get("svg") == 2
    assert parsed.tags.get("rect", 0) >= len(h["cells"])
    assert "Findings by group family and odd library" in " ".join(parsed.texts)
