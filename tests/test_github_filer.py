"""The GitHub filer against the local fake of GitHub's REST endpoints (``tests/fakegithub.py``,
PyGithub pointed at it through ``base_url``): only suspected bugs filed, highest ranked first;
the issue lifecycle, idempotent re-runs, faults, rate limits, a filer killed mid-run, bad input,
and the token never showing.

The findings are the schema 2 fixture of ``tests/test_report.py`` (``golden/report/
findings.json``): suspected bugs of every severity, documented differences and a split.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
import tomllib
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import typer
from fakegithub import FakeGitHub
from typer.testing import CliRunner

from xamt.cli import app as xamt_app
from xamt.errors import UsageError
from xamt.findings import (
    Document,
    Finding,
    Minimization,
    Verification,
    dumps_document,
    load_document,
)
from xamt.report import commands, github, trackers
from xamt.report.github import (
    GitHubUnavailable,
    IssueSnapshot,
    IssueState,
    PermissionDenied,
    RepositoryError,
    TokenError,
    file_findings,
    plan,
    signature_marker,
    signature_of,
    state_of,
)

GOLDEN = Path(__file__).parent / "golden" / "report"
REPO = "octo/fuzz"
TOKEN = "ghp_fake_token_0123456789"


def campaign(name: str = "c1") -> Document:
    """The fixture findings as campaign ``name``: another name is another run."""
    doc = load_document(GOLDEN / "findings.json")
    return replace(doc, campaign={**doc.campaign, "name": name})


def suspected(doc: Document) -> list[Finding]:
    """The findings the filer files, highest ranked first."""
    return [f for f in doc.ranked() if f.suspected]


def signatures(doc: Document) -> list[str]:
    return [f.signature for f in suspected(doc)]


def with_findings(doc: Document, findings: Any) -> Document:
    return replace(doc, findings=tuple(findings))


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)


@pytest.fixture
def fake() -> Iterator[FakeGitHub]:
    with FakeGitHub(token=TOKEN, repos={REPO: "write"}, max_per_page=4) as server:
        yield server


class Sleeps:
    """A stand-in for time.sleep that records the waits."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def run(fake: FakeGitHub, doc: Document, tmp_path: Path, **options: Any) -> github.FilingResult:
    settings: dict[str, Any] = {
        "repo": REPO,
        "token": TOKEN,
        "base_url": fake.base_url,
        "post": True,
        "out_dir": tmp_path / f"out-{time.monotonic_ns()}",
        "max_new": 100,
        "close_after": 2,
        "write_delay": 0,
        "request_delay": 0,
        "backoff": 0,
        "sleep": Sleeps(),
    }
    settings.update(options)
    return file_findings(doc, **settings)


def by_signature(fake: FakeGitHub) -> dict[str, list[dict[str, Any]]]:
    found: dict[str, list[dict[str, Any]]] = {}
    for issue in fake.issues(REPO):
        sig = signature_of(issue["body"])
        if sig:
            found.setdefault(sig, []).append(issue)
    return found


def assert_each_filed_once(fake: FakeGitHub, doc: Document) -> None:
    found = by_signature(fake)
    assert sorted(found) == sorted(signatures(doc))
    assert all(len(v) == 1 for v in found.values()), {k: len(v) for k, v in found.items()}


def writes(fake: FakeGitHub) -> list[str]:
    return [f"{e.method} {e.path}" for e in fake.log if e.method != "GET"]


# -- the plan, without I/O ------------------------------------------------------------------


def snap(number: int, sig: str, **kw: Any) -> IssueSnapshot:
    state = kw.pop("xstate", IssueState())
    return IssueSnapshot(
        number=number,
        title=f"issue {number}",
        state=kw.pop("state", "open"),
        state_reason=kw.pop("state_reason", None),
        labels=("xamt",),
        body=f"text\n{signature_marker(sig)}\n{state.marker()}\n",
        **kw,
    )


def test_plan_decides_each_case() -> None:
    doc = campaign()
    sigs = signatures(doc)
    existing = [
        snap(1, sigs[0]),  # open: recurs
        snap(2, sigs[1], state="closed", state_reason="completed"),  # comes back: regression
        snap(3, sigs[2], state="closed", state_reason="not_planned"),  # stays closed
        snap(4, "gone1", xstate=IssueState(misses=1)),  # second miss of 2: closes
        snap(5, "gone2"),  # first miss: counted
        snap(6, "back1", xstate=IssueState(misses=1)),  # verified again: reset
        snap(7, "quiet"),  # nothing known: nothing done
        snap(8, "fixed", state="closed", state_reason="completed"),  # missed again: nothing
    ]
    verified = {"gone1": False, "gone2": False, "back1": True, "fixed": False}
    p = plan(doc, existing, verifications=verified, close_after=2, max_new=3, run="R")
    got = {a.signature: a for a in p.actions}
    assert got[sigs[0]].action == "recur" and got[sigs[0]].state == IssueState(
        occurrences=2, misses=0, last_run="R"
    )
    assert "occurrence **2**" in got[sigs[0]].comment
    assert got[sigs[1]].action == "regress" and got[sigs[1]].labels == ("regression",)
    assert got[sigs[2]].action == "skip" and "not_planned" in got[sigs[2]].reason
    assert got["gone1"].action == "close" and got["gone1"].close
    assert got["gone2"].action == "miss" and got["gone2"].state.misses == 1  # type: ignore[union-attr]
    assert got["back1"].action == "reset" and got["back1"].state.misses == 0  # type: ignore[union-attr]
    assert "quiet" not in got and "fixed" not in got
    counts = p.counts()
    assert counts["create"] == 3 and counts["defer"] == len(sigs) - 3 - 3
    creates = [a for a in p.actions if a.action == "create"]
    # The highest ranked first (severity, confidence, occurrences).
    assert [a.signature for a in creates] == sigs[3:6]
    assert all(a.labels == ("xamt", "suspected-bug") for a in creates)
    # A re-run of the same input (same run key) does nothing twice.
    rerun = [
        snap(1, sigs[0], xstate=IssueState(occurrences=2, last_run="R")),
    ]
    again = plan(doc, rerun, run="R")
    assert {a.signature: a.action for a in again.actions}[sigs[0]] == "skip"


def test_only_suspected_bugs_are_filed_highest_ranked_first() -> None:
    doc = campaign()
    p = plan(doc, [], run="R")
    creates = [a for a in p.actions if a.action == "create"]
    assert [a.signature for a in creates] == signatures(doc)
    ranks = [f.rank()[:2] for f in suspected(doc)]
    assert ranks == sorted(ranks) and ranks[0] == (0, 0)  # critical, reference first
    assert creates[0].title == "[xamt] jax.tri crashes (SIGABRT) on ordinary input"
    assert creates[1].title == "[xamt] paddle.sinc: NaN disagreement on float32 input with nan"
    planned = {a.signature for a in p.actions}
    for f in doc.findings:
        if not f.suspected:  # documented differences and the split
            assert f.signature not in planned
    assert (
        "not filed (only suspected bugs are): 3 documented-difference, 1 split, 1 unspecified"
        in (p.notes)
    )
    # An issue filed for a finding now documented: left alone.
    documented = next(f for f in doc.findings if f.classification == "documented-difference")
    later = plan(doc, [snap(1, documented.signature)], run="R2")
    assert documented.signature not in {a.signature for a in later.actions}


def test_plan_notes_duplicates() -> None:
    doc = campaign()
    sigs = signatures(doc)
    p = plan(doc, [snap(1, sigs[0]), snap(9, sigs[0], state="closed")], run="R")
    assert any("#1" in n and "#9" in n for n in p.notes)
    with pytest.raises(ValueError):
        plan(doc, [], close_after=0)


def verified_since(f: Finding, *presence: bool) -> Finding:
    """``f`` with verifications after its last sighting, the last one ``presence[-1]``."""
    history = tuple(
        Verification(at=f"2024-06-0{i + 1}T00:00:00.000Z", versions={}, present=p)
        for i, p in enumerate(presence)
    )
    misses = 0
    for p in presence:
        misses = 0 if p else misses + 1
    return f.replace(verifications=history, consecutive_misses=misses)


def test_recorded_verifications_close_and_reset() -> None:
    doc = campaign()
    first, second, third, fourth = suspected(doc)[:4]
    findings = {f.signature: f for f in doc.findings}
    findings[first.signature] = verified_since(first, True, False, False)  # 2 misses
    findings[second.signature] = verified_since(second, False)  # 1 miss
    findings[third.signature] = verified_since(third, False, True)  # back
    findings[fourth.signature] = verified_since(fourth, False, False)  # never filed
    checked = with_findings(doc, findings.values())
    assert github.recorded_verification(findings[first.signature]) == (False, 2)
    assert github.recorded_verification(first) is None
    # A verification older than the last sighting says nothing.
    assert (
        github.recorded_verification(
            first.replace(
                verifications=(
                    Verification(at="2024-01-01T00:00:00.000Z", versions={}, present=False),
                )
            )
        )
        is None
    )
    existing = [
        snap(1, first.signature),
        snap(2, second.signature),
        snap(3, third.signature, xstate=IssueState(misses=1)),
    ]
    p = plan(checked, existing, close_after=2, run="R")
    got = {a.signature: a for a in p.actions}
    assert got[first.signature].action == "close" and got[first.signature].close
    assert got[first.signature].state.misses == 2  # type: ignore[union-attr]
    assert got[second.signature].action == "miss"
    assert got[second.signature].state.misses == 1  # type: ignore[union-attr]
    assert got[third.signature].action == "reset"
    assert fourth.signature not in got  # verified absent, no issue: nothing to file
    # A verification given by the caller wins over the record.
    p = plan(checked, existing, close_after=2, run="R", verifications={first.signature: True})
    assert first.signature not in {a.signature for a in p.actions}  # a hit, no miss counted


# -- the lifecycle against the fake ---------------------------------------------------------


def test_first_run_files_each_finding_once(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign()
    result = run(fake, doc, tmp_path)
    assert_each_filed_once(fake, doc)
    assert len(result.issues("create")) == len(signatures(doc))
    # Issues were opened highest ranked first.
    assert [signature_of(i["body"]) for i in fake.issues(REPO)] == signatures(doc)
    issues = {signature_of(i["body"]): i for i in fake.issues(REPO)}
    crash = issues[signatures(doc)[0]]
    assert all(
        {lab["name"] for lab in i["labels"]} == {"xamt", "suspected-bug"} for i in issues.values()
    )
    assert crash["title"] == "[xamt] jax.tri crashes (SIGABRT) on ordinary input"
    assert crash["body"].startswith("**jax.tri crashes (SIGABRT) on ordinary input**")
    assert state_of(crash["body"]).occurrences == 1
    assert set(fake.labels(REPO)) == {"xamt", "suspected-bug"}
    plan_doc = json.loads(result.plan_path.read_text())
    assert plan_doc["mode"] == "post"
    assert all(a["outcome"]["done"] for a in plan_doc["actions"])


def test_second_campaign_comments_instead_of_opening(fake: FakeGitHub, tmp_path: Path) -> None:
    run(fake, campaign("c1"), tmp_path)
    before = len(fake.issues(REPO))
    result = run(fake, campaign("c2"), tmp_path)
    assert len(fake.issues(REPO)) == before
    assert result.plan.counts()["recur"] == before
    for issue in fake.issues(REPO):
        comments = fake.comments(REPO, issue["number"])
        assert len(comments) == 1 and "occurrence **2**" in comments[0]["body"]
        assert state_of(issue["body"]).occurrences == 2
    # The same input again: nothing new, nothing posted twice.
    log_size = len(fake.log)
    again = run(fake, campaign("c2"), tmp_path)
    assert again.plan.counts()["skip"] == before
    assert [e for e in fake.log[log_size:] if e.method != "GET"] == []


def test_absent_for_k_verifications_closes_and_return_reopens(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    doc = campaign("c1")
    run(fake, doc, tmp_path)
    gone = signatures(doc)[6]
    number = by_signature(fake)[gone][0]["number"]
    empty = with_findings(campaign("v1"), [])
    r1 = run(fake, empty, tmp_path, verifications={gone: False}, close_after=2)
    assert r1.plan.counts()["miss"] == 1
    issue = fake.issues(REPO)[number - 1]
    assert issue["state"] == "open" and state_of(issue["body"]).misses == 1
    r2 = run(fake, replace(empty, campaign={"name": "v2"}), tmp_path, verifications={gone: False})
    assert r2.issues("close") == [number]
    issue = fake.issues(REPO)[number - 1]
    assert (issue["state"], issue["state_reason"]) == ("closed", "completed")
    assert "consecutive verifications" in fake.comments(REPO, number)[-1]["body"]
    # It comes back: reopened, labelled regression, commented.
    r3 = run(fake, campaign("c3"), tmp_path)
    assert r3.issues("regress") == [number]
    issue = fake.issues(REPO)[number - 1]
    assert issue["state"] == "open" and issue["state_reason"] == "reopened"
    assert "regression" in {lab["name"] for lab in issue["labels"]}
    assert fake.comments(REPO, number)[-1]["body"].startswith("**Regression:**")
    assert_each_filed_once(fake, doc)


def test_a_hit_resets_the_miss_counter(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign("c1")
    run(fake, doc, tmp_path)
    sig = signatures(doc)[0]
    empty = with_findings(campaign("v1"), [])
    run(fake, empty, tmp_path, verifications={sig: False}, close_after=3)
    run(fake, replace(empty, campaign={"name": "v2"}), tmp_path, verifications={sig: True})
    issue = by_signature(fake)[sig][0]
    assert state_of(issue["body"]).misses == 0 and issue["state"] == "open"


def test_not_planned_stays_closed(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign("c1")
    run(fake, doc, tmp_path)
    sig = signatures(doc)[2]
    number = by_signature(fake)[sig][0]["number"]
    fake.set_state(REPO, number, "closed", "not_planned")  # a person decided
    comments = len(fake.comments(REPO, number))
    result = run(fake, campaign("c2"), tmp_path, verifications={sig: True})
    issue = fake.issues(REPO)[number - 1]
    assert (issue["state"], issue["state_reason"]) == ("closed", "not_planned")
    assert len(fake.comments(REPO, number)) == comments
    assert [a.action for a in result.plan.actions if a.signature == sig] == ["skip"]
    assert_each_filed_once(fake, doc)


def test_new_issues_are_capped_per_run(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign("c1")
    first = run(fake, doc, tmp_path, max_new=4)
    assert len(fake.issues(REPO)) == 4 and first.plan.counts()["defer"] == len(signatures(doc)) - 4
    # The cap keeps the highest ranked.
    assert [signature_of(i["body"]) for i in fake.issues(REPO)] == signatures(doc)[:4]
    run(fake, campaign("c2"), tmp_path, max_new=4)
    run(fake, campaign("c3"), tmp_path, max_new=4)
    assert_each_filed_once(fake, doc)


def test_pagination_and_an_enterprise_base_url(tmp_path: Path) -> None:
    with FakeGitHub(token=TOKEN, repos={REPO: "write"}, prefix="/api/v3", max_per_page=2) as f:
        doc = campaign("c1")
        run(f, doc, tmp_path)
        run(f, campaign("c2"), tmp_path)
        assert_each_filed_once(f, doc)
        pages = {e.query.get("page", ["1"])[0] for e in f.requests("GET", r"/issues$")}
        assert len(pages) == -(-len(signatures(doc)) // 2)  # every page was read
        assert all(e.path.startswith("/api/v3/") for e in f.log)


def test_an_issue_that_lost_its_label_is_found_by_search(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign("c1")
    sig = signatures(doc)[0]
    body = "filed by hand, label removed\n" + signature_marker(sig) + "\n"
    number = fake.add_issue(REPO, title="an old one", body=body)
    run(fake, doc, tmp_path)
    assert [i["number"] for i in fake.issues(REPO) if signature_of(i["body"]) == sig] == [number]
    assert "occurrence **2**" in fake.comments(REPO, number)[0]["body"]
    assert fake.requests("GET", r"/search/issues$")


def test_bodies_over_githubs_limit_are_cut(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign("c1")
    big = suspected(doc)[2]
    libs = [f"lib{i}" for i in range(20)]
    big = big.replace(
        library="lib0",
        apis={lib: f"{lib}.add" for lib in libs},
        outputs={
            lib: {"api": f"{lib}.add", "status": "error", "result": "E" * 9000} for lib in libs
        },
        repro={lib: "x = 1\n" * 2000 for lib in [*libs, "xamt"]},
    )
    doc = with_findings(doc, [big if f.signature == big.signature else f for f in doc.findings])
    run(fake, doc, tmp_path)
    issue = by_signature(fake)[big.signature][0]
    assert 60000 < len(issue["body"]) <= 65536 and "truncated" in issue["body"]
    run(fake, campaign("c2"), tmp_path)  # the state edit still fits
    assert_each_filed_once(fake, doc)
    assert state_of(by_signature(fake)[big.signature][0]["body"]).occurrences == 2


# -- faults and rate limits -----------------------------------------------------------------


@pytest.mark.parametrize(
    "faults",
    [
        [("5xx", "POST", r"/issues$", {"times": 2})],
        [("5xx-after", "POST", r"/issues$", {"times": 2, "skip": 1})],
        [("drop", ".*", ".*", {"times": 3, "skip": 2})],
        [("drop-after", "POST", r"/issues$", {"times": 2, "skip": 3})],
        [("drop-after", "POST", r"/comments$", {"times": 2})],
        [("5xx-after", "PATCH", ".*", {"times": 2})],
        [("rate-primary", "POST", r"/issues$", {"skip": 2, "reset_in": 3})],
        [("rate-secondary", "POST", ".*", {"times": 2, "retry_after": 7})],
        [("rate-429", ".*", ".*", {"times": 2, "skip": 4, "retry_after": 2})],
        [("5xx", "GET", r"/issues$", {"times": 2}), ("drop-after", "POST", ".*", {"times": 4})],
    ],
    ids=[
        "5xx-on-create",
        "5xx-after-create",
        "dropped-connections",
        "dropped-after-create",
        "dropped-after-comment",
        "5xx-after-edit",
        "primary-rate-limit",
        "secondary-rate-limit",
        "429",
        "mixed",
    ],
)
def test_faults_never_duplicate_nor_lose(
    fake: FakeGitHub, tmp_path: Path, faults: list[tuple[str, str, str, dict[str, Any]]]
) -> None:
    sleeps = Sleeps()
    for kind, method, path, options in faults:
        fake.inject(kind, method=method, path=path, **options)
    doc = campaign("c1")
    run(fake, doc, tmp_path, sleep=sleeps)
    run(fake, campaign("c2"), tmp_path, sleep=sleeps)  # comments, edits
    assert_each_filed_once(fake, doc)
    for issue in fake.issues(REPO):
        bodies = [c["body"] for c in fake.comments(REPO, issue["number"])]
        assert len(bodies) == 1, bodies  # one recurrence comment, never two
        assert state_of(issue["body"]).occurrences == 2
    assert all(f.fired == f.times for f in fake.faults)
    kinds = {k for k, *_ in faults}
    if "rate-secondary" in kinds:
        assert 7 in sleeps.waits
    if "rate-429" in kinds:
        assert 2 in sleeps.waits
    if "rate-primary" in kinds:
        assert any(2 <= w <= 5 for w in sleeps.waits)


def test_a_rate_limit_beyond_the_wait_allowed_stops_cleanly(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    fake.inject("rate-primary", method="POST", path=r"/issues$", skip=3, reset_in=3600)
    doc = campaign("c1")
    with pytest.raises(GitHubUnavailable, match="re-run later") as info:
        run(fake, doc, tmp_path, max_wait=60)
    assert info.value.exit_code == 16
    assert len(fake.issues(REPO)) == 3
    run(fake, doc, tmp_path)  # the re-run finishes the job
    assert_each_filed_once(fake, doc)


def test_endless_rate_limit_answers_are_bounded(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.inject("rate-429", method="POST", path=r"/issues$", times=1000, retry_after=0)
    with pytest.raises(GitHubUnavailable, match="rate limit"):
        run(fake, campaign("c1"), tmp_path)
    assert len(fake.requests("POST", r"/issues$")) == github.RATE_LIMIT_RETRIES + 1
    assert fake.issues(REPO) == []


def test_github_failing_for_good_is_bounded(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.inject("5xx", method="POST", path=r"/issues$", times=1000, skip=2)
    doc = campaign("c1")
    with pytest.raises(GitHubUnavailable, match="5 attempts"):
        run(fake, doc, tmp_path, max_attempts=5)
    assert len(fake.requests("POST", r"/issues$")) == 2 + 5
    fake.faults.clear()
    run(fake, doc, tmp_path)
    assert_each_filed_once(fake, doc)


FILER = """
import sys
from pathlib import Path
from xamt.findings import load_document
from xamt.report.github import file_findings
doc = load_document(Path(sys.argv[1]))
file_findings(doc, repo=sys.argv[2], token=sys.argv[3], base_url=sys.argv[4], post=True,
              out_dir=Path(sys.argv[5]), max_new=100, write_delay=float(sys.argv[6]),
              request_delay=0, backoff=0)
print("finished")
"""


def start_filer(
    fake: FakeGitHub, doc_path: Path, out: Path, write_delay: float
) -> subprocess.Popen[str]:
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost"}
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            FILER,
            str(doc_path),
            REPO,
            TOKEN,
            fake.base_url,
            str(out),
            str(write_delay),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def wait_for(predicate: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.mark.parametrize("moment", ["create-answer-pending", "between-writes"])
def test_a_filer_killed_midway_and_run_again(fake: FakeGitHub, tmp_path: Path, moment: str) -> None:
    doc = campaign("c1")
    doc_path = tmp_path / "findings.json"
    doc_path.write_text(dumps_document(doc))
    if moment == "create-answer-pending":
        # The first issue is created, but its answer never reaches the filer.
        fake.inject("stall-after", method="POST", path=r"/issues$")
        proc = start_filer(fake, doc_path, tmp_path / "out1", 0)
        wait_for(lambda: len(fake.issues(REPO)) >= 1)
        time.sleep(0.1)
    else:
        proc = start_filer(fake, doc_path, tmp_path / "out1", 0.3)
        wait_for(lambda: len(fake.issues(REPO)) >= 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    fake.release()
    filed = len(fake.issues(REPO))
    assert 1 <= filed < len(signatures(doc))
    again = start_filer(fake, doc_path, tmp_path / "out2", 0)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err[-3000:]
    assert "finished" in out
    assert_each_filed_once(fake, doc)


# -- bad input ------------------------------------------------------------------------------


def test_a_bad_token_is_refused_before_any_write(fake: FakeGitHub, tmp_path: Path) -> None:
    with pytest.raises(TokenError, match="refused the token") as info:
        run(fake, campaign(), tmp_path, token="ghp_wrong_token_abcdef")
    assert info.value.exit_code == 13
    assert "ghp_wrong_token_abcdef" not in str(info.value)
    assert writes(fake) == [] and fake.issues(REPO) == []
    with pytest.raises(TokenError, match="needs a token"):
        run(fake, campaign(), tmp_path, token=None)


def test_an_unknown_or_invisible_repository(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_repo("octo/secret", "none")
    for name in ("octo/nope", "octo/secret"):
        with pytest.raises(RepositoryError, match="not found") as info:
            run(fake, campaign(), tmp_path, repo=name)
        assert info.value.exit_code == 14
    with pytest.raises(RepositoryError, match="owner/name"):
        run(fake, campaign(), tmp_path, repo="not a repo")
    assert writes(fake) == []


def test_no_permission_files_nothing(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_repo("octo/readonly", "read")
    with pytest.raises(PermissionDenied, match="issues: write") as info:
        run(fake, campaign(), tmp_path, repo="octo/readonly")
    assert info.value.exit_code == 15
    assert writes(fake) == [] and fake.issues("octo/readonly") == []


def test_a_403_at_the_first_write_is_a_permission_error(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.inject("error", method="POST", path=".*", status=403, message="Resource not accessible")
    with pytest.raises(PermissionDenied):
        run(fake, campaign(), tmp_path)
    assert fake.issues(REPO) == []


# -- dry runs and secrets -------------------------------------------------------------------


def test_dry_run_touches_nothing(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = campaign()
    result = run(fake, doc, tmp_path, post=False, out_dir=tmp_path / "dry")
    assert not result.posted and writes(fake) == []
    plan_doc = json.loads((tmp_path / "dry" / "filing-plan.json").read_text())
    assert plan_doc["mode"] == "dry-run" and plan_doc["counts"]["create"] == len(signatures(doc))
    first = plan_doc["actions"][0]
    body = (tmp_path / "dry" / first["body_file"]).read_text()
    assert body.startswith("# [xamt] jax.tri crashes") and signature_of(body) == first["signature"]
    # Without a token: no request at all, planned against the ledger when given.
    n = len(fake.log)
    ledger = tmp_path / "ledger.json"
    run(fake, doc, tmp_path, state_file=ledger)  # posting writes the ledger
    assert set(json.loads(ledger.read_text())["issues"]) == set(signatures(doc))
    n = len(fake.log)
    offline = file_findings(
        campaign("c2"), repo=REPO, out_dir=tmp_path / "offline", state_file=ledger
    )
    assert len(fake.log) == n
    assert offline.plan.counts()["recur"] == len(signatures(doc))


def test_the_token_never_shows(
    fake: FakeGitHub, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.inject("drop-after", method="POST", path=r"/issues$", times=2)
    fake.inject("rate-secondary", method="POST", path=r"/comments$", retry_after=1)
    lines: list[str] = []
    out = tmp_path / "out"
    ledger = tmp_path / "ledger.json"
    run(fake, campaign("c1"), tmp_path, out_dir=out, log=lines.append, state_file=ledger)
    run(fake, campaign("c2"), tmp_path, out_dir=out, log=lines.append, state_file=ledger)
    # An answer that (absurdly) repeats the token: scrubbed from the error.
    fake.inject("error", method="POST", path=".*", status=422, message=f"bad {TOKEN} here")
    with pytest.raises(GitHubUnavailable) as info:
        run(fake, campaign("c3"), tmp_path, out_dir=out, log=lines.append, max_new=100)
    assert TOKEN not in str(info.value) and "***" in str(info.value)
    texts = [*lines, capsys.readouterr().out, str(info.value)]
    texts += [p.read_text() for p in out.rglob("*") if p.is_file()] + [ledger.read_text()]
    assert lines and not [t for t in texts if TOKEN in t]
    assert all("authorization" not in e.headers for e in fake.log)


# -- the `file` command ---------------------------------------------------------------------


def file_app() -> typer.Typer:
    return xamt_app


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(file_app(), ["file", *args], env=env)
    text = result.output
    assert "Traceback" not in text, text
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, text


def test_file_command_dry_run_and_post(fake: FakeGitHub, tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text(dumps_document(campaign()))
    out = str(tmp_path / "out")
    code, text = invoke(str(findings), "--repo", REPO, "--out", out, env={"GITHUB_TOKEN": ""})
    assert code == 0 and "dry run" in text and writes(fake) == []
    assert "never minimized" not in text
    # suspected bugs the campaign's time left unminimized: the filer says how to take them down
    skipped = Minimization(
        calls=0, seconds=0.0, stop="skipped", accepted=0, elements_before=8, elements_after=8
    )
    left = [f.replace(minimization=skipped) if f.suspected else f for f in campaign().findings]
    unminimized = tmp_path / "left" / "findings.json"
    unminimized.parent.mkdir()
    unminimized.write_text(dumps_document(with_findings(campaign(), left)))
    code, text = invoke(str(unminimized), "--repo", REPO, "--out", out, env={"GITHUB_TOKEN": ""})
    n = len(signatures(campaign()))
    assert code == 0 and f"{n} suspected bug(s) were never minimized" in " ".join(text.split())
    assert f"xamt minimize --out {unminimized.parent}" in " ".join(text.split())
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    args = [str(findings), "--repo", REPO, "--out", out, "--post", "--write-delay", "0"]
    code, text = invoke(
        *args, "--token-file", str(token_file), "--base-url", fake.base_url, "--max-new", "3"
    )
    assert code == 0, text
    assert "posted: create 3" in text and TOKEN not in text
    assert len(fake.issues(REPO)) == 3
    code, text = invoke(*args, env={"GITHUB_TOKEN": TOKEN, "GITHUB_API_URL": fake.base_url})
    assert code == 0 and len(fake.issues(REPO)) == len(signatures(campaign()))


@pytest.mark.parametrize(
    ("setup", "code", "message"),
    [
        ("no-token", 13, "needs a token"),
        ("bad-token", 13, "refused the token"),
        ("unreadable-token-file", 13, "cannot read the token file"),
        ("empty-token-file", 13, "token file is empty"),
        ("unknown-repo", 14, "not found"),
        ("malformed-repo", 14, "owner/name"),
        ("read-only", 15, "issues: write"),
        ("bad-findings", 17, "not a readable findings.json"),
        ("schema-1-findings", 17, "schema 1"),
        ("wrong-typed-findings", 17, "field 'outputs' must be an object"),
        ("bad-verifications", 17, "signature to true/false"),
        ("bad-cap", 2, "--max-new"),
    ],
)
def test_file_command_bad_input(
    fake: FakeGitHub, tmp_path: Path, setup: str, code: int, message: str
) -> None:
    fake.add_repo("octo/readonly", "read")
    findings = tmp_path / "findings.json"
    findings.write_text(dumps_document(campaign()))
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    repo = {"unknown-repo": "octo/nope", "malformed-repo": "nope", "read-only": "octo/readonly"}
    args = [
        str(findings),
        "--repo",
        repo.get(setup, REPO),
        "--post",
        "--base-url",
        fake.base_url,
        "--out",
        str(tmp_path / "out"),
    ]
    env = {"GITHUB_TOKEN": TOKEN}
    if setup == "no-token":
        env = {"GITHUB_TOKEN": ""}
    elif setup == "bad-token":
        env = {"GITHUB_TOKEN": "ghp_not_the_token"}
    elif setup == "unreadable-token-file":
        args += ["--token-file", str(tmp_path / "missing-token")]
    elif setup == "empty-token-file":
        token_file.write_text("\n")
        args += ["--token-file", str(token_file)]
    elif setup == "bad-findings":
        findings.write_text("{not json")
    elif setup == "schema-1-findings":
        findings.write_text(json.dumps({"schema": 1, "findings": [{"signature": "a"}]}))
    elif setup == "wrong-typed-findings":
        data = json.loads(findings.read_text())
        data["findings"][0]["outputs"] = "a string"
        findings.write_text(json.dumps(data))
    elif setup == "bad-verifications":
        bad = tmp_path / "v.json"
        bad.write_text(json.dumps({"abc": "yes"}))
        args += ["--verifications", str(bad)]
    elif setup == "bad-cap":
        args += ["--max-new", "-1"]
    exit_code, text = invoke(*args, env=env)
    assert exit_code == code, text
    assert message in " ".join(text.split())
    assert TOKEN not in text and "ghp_not_the_token" not in text
    assert writes(fake) == [] and fake.issues(REPO) == []


def test_verification_files(tmp_path: Path) -> None:
    path = tmp_path / "v.json"
    for data in (
        {"a": True, "b": False},
        {"verifications": {"a": True, "b": False}},
        [{"signature": "a", "reproduced": True}, {"signature": "b", "reproduced": False}],
        [
            {"signature": "a", "key": "k", "present": True, "versions": {}, "lines": []},
            {"signature": "b", "key": "k", "present": False, "versions": {}, "lines": []},
        ],
    ):
        path.write_text(json.dumps(data))
        assert commands.load_verifications(path) == {"a": True, "b": False}


def test_request_counts_stay_small(fake: FakeGitHub, tmp_path: Path) -> None:
    """A second campaign over N filed issues: one listing (paged), no search, no issue GETs."""
    run(fake, campaign("c1"), tmp_path)
    n = len(fake.log)
    run(fake, campaign("c2"), tmp_path)
    calls = Counter(
        (e.method, re.sub(r"/\d+", "/N", e.path.split("/fuzz")[-1])) for e in fake.log[n:]
    )
    issues = len(fake.issues(REPO))
    assert calls[("POST", "/issues/N/comments")] == issues
    assert calls[("PATCH", "/issues/N")] == issues
    assert calls[("GET", "/issues/N")] == 0  # listings carry every field PyGithub reads
    assert not any("search" in path for _, path in calls)


# -- upstream trackers, the upstream check, https only ----------------------------------------


class Clock:
    """A clock the fake and the filer share: sleeping moves it, so a rate limit's minute passes
    at once."""

    def __init__(self) -> None:
        self.now = time.time()
        self.waits: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def blamed_on(f: Finding, library: str, api: str, *, kind: str | None = None) -> Finding:
    """``f`` as a finding of ``library`` (its callable ``api``), with its own signature."""
    old = f.library
    outputs = {library if k == old else k: v for k, v in f.outputs.items()}
    apis = {library if k == old else k: v for k, v in f.apis.items()}
    apis[library] = api
    sig = hashlib.sha256(f"{library}/{api}/{kind or f.kind}".encode()).hexdigest()[:16]
    return f.replace(
        library=library,
        callable=f"{library}.{api.rsplit('.', 1)[-1]}",
        apis=apis,
        outputs=outputs,
        signature=sig,
        key=f"{f.family}/{library}/{api}",
        kind=kind or f.kind,
        repro={},
    )


def argsort(doc: Document) -> Finding:
    return next(f for f in doc.findings if f.callable == "torch.argsort")


ROUTES = [
    ("numpy", "numpy.argsort", "numpy/numpy"),
    ("torch", "torch.argsort", "pytorch/pytorch"),
    ("tensorflow", "tensorflow.argsort", "tensorflow/tensorflow"),
    ("tensorflow", "tensorflow.keras.ops.argsort", "keras-team/keras"),
    ("jax", "jax.numpy.argsort", "jax-ml/jax"),
    ("paddle", "paddle.argsort", "PaddlePaddle/Paddle"),
    ("mindspore", "mindspore.ops.argsort", "gitee (mindspore)"),
    ("mxnet", "mxnet.np.argsort", "retired (mxnet)"),
]


def routed_doc() -> Document:
    doc = campaign()
    base = argsort(doc)
    return with_findings(doc, [blamed_on(base, lib, api) for lib, api, _ in ROUTES])


def test_each_library_goes_to_its_own_tracker() -> None:
    doc = routed_doc()
    for f, (_, _, label) in zip(doc.findings, ROUTES, strict=True):
        tracker = trackers.tracker_for(f)
        assert tracker is not None and tracker.label == label, (f.apis, label)
    p = plan(doc, [], run="R")
    got = {a.tracker: a.action for a in p.actions}
    assert got["retired (mxnet)"] == "retired"
    assert {t for t, a in got.items() if a == "create"} == {label for *_, label in ROUTES[:-1]}
    assert p.by_tracker()["keras-team/keras"] == {"create": 1}
    assert p.by_tracker()["retired (mxnet)"] == {"retired": 1}


def test_a_finding_triage_held_back_is_listed_never_filed(fake: FakeGitHub, tmp_path: Path) -> None:
    """Its short repro passed in a fresh process: not filed, listed with the reason."""
    doc = routed_doc()
    why = "its short repro, run standalone in a fresh torch process, passed"
    held = [f.replace(held_back=why) if f.library == "torch" else f for f in doc.findings]
    doc = with_findings(doc, held)
    p = plan(doc, [], run="R")
    got = {a.tracker: a for a in p.actions}
    assert got["pytorch/pytorch"].action == "held-back" and why in got["pytorch/pytorch"].reason
    assert not got["pytorch/pytorch"].body and p.counts()["create"] == len(ROUTES) - 2
    result = run(fake, doc, tmp_path, out_dir=tmp_path / "out")
    titles = [i["title"] for i in fake.issues(REPO)]
    assert not any("torch" in t for t in titles) and len(titles) == len(ROUTES) - 2
    assert result.plan.by_tracker()["pytorch/pytorch"] == {"held-back": 1}


def test_the_trackers_file_is_checked() -> None:
    data = tomllib.loads(trackers.TRACKERS_FILE.read_text(encoding="utf-8"))
    for tracker in data["trackers"].values():
        assert tracker["reason"] and tracker["link"].startswith("https://")
    bad = {**data, "trackers": {**data["trackers"], "x": {**data["trackers"]["numpy"]}}}
    bad["trackers"]["x"]["repo"] = "numpy/other"  # its url names another repository
    with pytest.raises(trackers.TrackersError, match=r"trackers\.x: 'url'"):
        trackers.parse(bad)
    no_link = {**data, "routes": [{**data["routes"][0], "link": "http://example.com"}]}
    with pytest.raises(trackers.TrackersError, match=r"routes\[0\]: 'link'"):
        trackers.parse(no_link)


def test_the_body_links_a_prefilled_upstream_issue() -> None:
    doc = routed_doc()
    p = plan(doc, [], run="R")
    torch_action = next(a for a in p.actions if a.tracker == "pytorch/pytorch")
    first = torch_action.body.splitlines()[0]
    assert first == f"**{torch_action.title.removeprefix('[xamt] ')}**"
    links = re.findall(
        r"\((https://github\.com/pytorch/pytorch/issues/new\?[^)\s]+)\)", torch_action.body
    )
    assert len(links) == 1 and len(links[0]) <= trackers.NEW_ISSUE_URL_LIMIT
    query = parse_qs(urlsplit(links[0]).query)
    assert query["title"] == [torch_action.title.removeprefix("[xamt] ")]
    body = query["body"][0]
    assert body.startswith(first) and "- **Expected:**" in body and "- **Actual:**" in body
    assert "xamt-signature" not in body and "<details>" not in body
    # A body too long for a link is cut at a line, with a note, the fences closed.
    tracker = trackers.tracker_for(argsort(doc))
    assert tracker is not None
    long = trackers.new_issue_url(tracker, "t", "```python\n" + "x = 1\n" * 4000)
    text = parse_qs(urlsplit(long).query)["body"][0]
    assert len(long) <= trackers.NEW_ISSUE_URL_LIMIT and "cut to fit a link" in text
    assert text.count("```") % 2 == 0


def test_mindspore_gets_a_gitee_report_and_mxnet_no_issue(fake: FakeGitHub, tmp_path: Path) -> None:
    doc = routed_doc()
    out = tmp_path / "out"
    result = run(fake, doc, tmp_path, out_dir=out)
    titles = [i["title"] for i in fake.issues(REPO)]
    assert any("mindspore" in t for t in titles) and not any("mxnet" in t for t in titles)
    assert len(titles) == len(ROUTES) - 1
    plan_doc = json.loads((out / "filing-plan.json").read_text())
    ms = next(a for a in plan_doc["actions"] if a["tracker"] == "gitee (mindspore)")
    paste = (out / ms["upstream_file"]).read_text()
    assert paste.startswith("# mindspore.argsort") and "- **Actual:** mindspore" in paste
    body = next(i["body"] for i in fake.issues(REPO) if "mindspore" in i["title"])
    assert "https://gitee.com/mindspore/mindspore/issues/new" in body
    assert ms["upstream_file"] in body
    mx = next(a for a in plan_doc["actions"] if a["tracker"] == "retired (mxnet)")
    assert mx["action"] == "retired" and "outcome" in mx and not mx["outcome"]["done"]
    assert result.plan.counts()["retired"] == 1
    # No search for Gitee nor the retired library: GitHub search only for GitHub trackers.
    searched = " ".join(e.query["q"][0] for e in fake.requests("GET", "/search/issues"))
    assert "mindspore" not in searched and "mxnet" not in searched
    assert "repo:pytorch/pytorch" in searched and "repo:keras-team/keras" in searched


def test_a_known_upstream_issue_is_noted_not_filed_again(fake: FakeGitHub, tmp_path: Path) -> None:
    fake.add_repo("pytorch/pytorch", "read", private=False)
    fake.add_repo("jax-ml/jax", "read", private=False)
    match = fake.add_issue(
        "pytorch/pytorch",
        title="torch.argsort returns the wrong shape for a 2-d input",
        body="Calling `torch.argsort(x)` gives shape (2, 2)",
        state="closed",
    )
    # A near miss: the callable, but no symptom in the title.
    fake.add_issue("jax-ml/jax", title="jnp.argsort is slow", body="argsort shape (4,) takes 1s")
    # Noise the search must not return: another repository.
    fake.add_issue(REPO, title="torch.argsort shape", body="not upstream")
    doc = with_findings(
        campaign(),
        [argsort(campaign()), blamed_on(argsort(campaign()), "jax", "jax.numpy.argsort")],
    )
    findings = tmp_path / "findings.json"
    findings.write_text(dumps_document(doc))
    out = tmp_path / "out"
    result = run(fake, doc, tmp_path, out_dir=out, record=load_document(findings))
    torch_sig, jax_sig = doc.findings[0].signature, doc.findings[1].signature
    actions = {a.signature: a for a in result.plan.actions}
    url = f"https://github.com/pytorch/pytorch/issues/{match}"
    assert actions[torch_sig].action == "known-upstream" and actions[torch_sig].upstream == url
    assert actions[jax_sig].action == "create" and actions[jax_sig].upstream == ""
    assert [c.title for c in actions[jax_sig].candidates] == ["jnp.argsort is slow"]
    issues = {signature_of(i["body"]): i for i in fake.issues(REPO) if signature_of(i["body"])}
    note = issues[torch_sig]
    assert {lab["name"] for lab in note["labels"]} == {"xamt", "known-upstream"}
    assert (
        f"**Known upstream:** `{fake.issues('pytorch/pytorch')[0]['title']}` (closed, {url})"
        in note["body"]
    )
    assert "Open a prefilled issue" not in note["body"]
    plain = issues[jax_sig]["body"]
    assert {lab["name"] for lab in issues[jax_sig]["labels"]} == {"xamt", "suspected-bug"}
    assert "- open: `jnp.argsort is slow`" in plain and "Open a prefilled issue" in plain
    # Recorded in findings.json of the filing folder, every finding kept, the input untouched.
    recorded = load_document(out / "findings.json")
    assert {f.signature: f.upstream for f in recorded.findings} == {torch_sig: url, jax_sig: ""}
    assert recorded.findings[0].replace(upstream="") == load_document(findings).findings[0]
    assert load_document(findings).findings[0].upstream == ""
    assert fake.issues("pytorch/pytorch")[0]["comments"] == 0  # nothing written upstream

    # Offline: no search at all.
    def upstream_searches() -> int:
        return sum(f"repo:{REPO}" not in e.query["q"][0] for e in fake.requests("GET", "/search"))

    n = upstream_searches()
    run(fake, campaign("c2"), tmp_path, upstream_check=False)
    assert upstream_searches() == n


def test_a_report_naming_the_symptom_otherwise_is_still_found(
    fake: FakeGitHub, tmp_path: Path
) -> None:
    """pytorch/pytorch#121343, as titled upstream: "Floating point exception on torch.lcm"
    (neither "crash" nor "SIGFPE" anywhere). The search asks for the callable's name alone and
    the symptom is read in the results: a confident match for a torch.lcm crash; an issue
    that names lcm without a crash word in its title is only a candidate."""
    fake.add_repo("pytorch/pytorch", "read", private=False)
    fake.add_issue(
        "pytorch/pytorch",
        title="torch.lcm docs: the result sign for negative inputs",
        body="torch.lcm(-4, 6) gives 12",
    )
    report = fake.add_issue(
        "pytorch/pytorch",
        title="Floating point exception on torch.lcm",
        body="```\ninput = torch.tensor([-9223372036854775808], dtype=torch.int64)\n"
        "out = torch.lcm(input, torch.tensor(215, dtype=torch.uint8))\n```\n"
        "And the torch.lcm will throw a floating point exception error.",
    )
    crash = blamed_on(argsort(campaign()), "torch", "torch.lcm", kind="crash")
    result = run(fake, with_findings(campaign(), [crash]), tmp_path)
    (action,) = [a for a in result.plan.actions if a.signature == crash.signature]
    assert action.action == "known-upstream"
    assert action.upstream == f"https://github.com/pytorch/pytorch/issues/{report}"
    assert [c.match for c in action.candidates] == [True, False]
    (query,) = [
        e.query["q"][0]
        for e in fake.requests("GET", "/search/issues")
        if "repo:pytorch/pytorch" in e.query["q"][0]
    ]
    assert query == "lcm repo:pytorch/pytorch is:issue"


def test_the_search_rate_limit_waits_and_loses_nothing(tmp_path: Path) -> None:
    clock = Clock()
    with FakeGitHub(token=TOKEN, repos={REPO: "write"}, clock=clock.time) as server:
        server.add_repo("pytorch/pytorch", "read", private=False)
        base = argsort(campaign())
        many = [blamed_on(base, "torch", f"torch.op{i}") for i in range(34)]
        result = run(
            server, with_findings(campaign(), many), tmp_path, sleep=clock.sleep, clock=clock.time
        )
        searches = [
            e
            for e in server.requests("GET", "/search/issues")
            if "repo:pytorch/pytorch" in e.query["q"][0]
        ]
        limited = [e for e in searches if e.status == 403]
        assert len(limited) == 1 and limited[0].headers is not None
        assert len([e for e in searches if e.status == 200]) == 34
        assert len(result.issues("create")) == 34 and len(server.issues(REPO)) == 34
        assert clock.waits and 0 < max(clock.waits) <= 61
        # What the fake answered past the budget: GitHub's primary-limit answer for search.
        assert server.search_limit == 30


def test_the_fake_search_spans_repositories_and_pages(fake: FakeGitHub) -> None:
    import urllib.request

    fake.add_repo("pytorch/pytorch", "read", private=False)
    for i in range(6):
        fake.add_issue("pytorch/pytorch", title=f"argsort nan {i}")
    fake.search_incomplete = True

    def get(q: str, page: int = 1) -> tuple[int, dict[str, Any], Any]:
        url = f"{fake.base_url}/search/issues?" + urlencode({"q": q, "page": page, "per_page": 4})
        req = urllib.request.Request(url, headers={"Authorization": f"token {TOKEN}"})
        try:
            with urllib.request.urlopen(req) as answer:
                return answer.status, json.loads(answer.read()), answer.headers
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read()), exc.headers

    status, data, headers = get("argsort nan repo:pytorch/pytorch is:issue")
    assert status == 200 and data["total_count"] == 6 and len(data["items"]) == 4
    assert data["incomplete_results"] is True and 'rel="next"' in headers["link"]
    assert headers["x-ratelimit-resource"] == "search" and headers["x-ratelimit-limit"] == "30"
    _, second, _ = get("argsort nan repo:pytorch/pytorch is:issue", page=2)
    assert len(second["items"]) == 2
    status, data, _ = get("argsort repo:nobody/nothing")
    assert status == 422 and "cannot be searched" in data["errors"][0]["message"]
    for _ in range(27):
        get("argsort")
    status, data, headers = get("argsort")
    assert status == 403 and headers["x-ratelimit-remaining"] == "0"
    assert "rate limit" in data["message"]


def test_plain_http_base_urls_are_refused(fake: FakeGitHub, tmp_path: Path) -> None:
    for url in ("http://github.example.com/api/v3", "ftp://x", "not a url"):
        with pytest.raises(UsageError) as info:
            github.check_base_url(url)
        assert info.value.exit_code == 2
    for url in (
        "https://api.github.com",
        "http://127.0.0.1:9",
        "http://localhost/",
        "http://[::1]:80",
    ):
        assert github.check_base_url(url) == url
    findings = tmp_path / "findings.json"
    findings.write_text(dumps_document(campaign()))
    code, text = invoke(
        str(findings),
        "--repo",
        REPO,
        "--post",
        "--base-url",
        "http://api.example.com",
        "--out",
        str(tmp_path / "out"),
        env={"GITHUB_TOKEN": TOKEN},
    )
    assert code == 2 and "not https" in text and len(text.strip().splitlines()) == 1
    assert TOKEN not in text and fake.log == []


def test_the_dry_run_counts_issues_by_tracker(fake: FakeGitHub, tmp_path: Path) -> None:
    findings = tmp_path / "findings.json"
    findings.write_text(dumps_document(routed_doc()))
    out = tmp_path / "dry"
    code, text = invoke(str(findings), "--repo", REPO, "--out", str(out), env={"GITHUB_TOKEN": ""})
    assert code == 0, text
    plan_doc = json.loads((out / "filing-plan.json").read_text())
    assert plan_doc["trackers"] == {
        "PaddlePaddle/Paddle": {"create": 1},
        "gitee (mindspore)": {"create": 1},
        "jax-ml/jax": {"create": 1},
        "keras-team/keras": {"create": 1},
        "numpy/numpy": {"create": 1},
        "pytorch/pytorch": {"create": 1},
        "retired (mxnet)": {"retired": 1},
        "tensorflow/tensorflow": {"create": 1},
    }
    assert plan_doc["counts"]["create"] == 7 and plan_doc["counts"]["retired"] == 1
    assert "no upstream check: it needs a token" in plan_doc["notes"]
    assert "retired (mxnet) retired 1" in " ".join(text.split())
