"""The GitHub filer: one issue per suspected bug, deduplicated by a hidden signature marker.

:func:`plan` decides, without any I/O, what a run does with each finding and each issue xamt
filed before; :func:`file_findings` writes that plan (and every body it would post) into a
folder, and only with ``post=True`` carries it out through PyGithub.

Only suspected bugs are filed (a finding is one root cause in one library: the issue goes to
the people of that library). Documented differences and splits (no reference, an even split:
no library to blame) are never filed; the report lists them.

The lifecycle of an issue, for a finding with signature ``SIG``:

==================================  ==========================================================
situation                           what the filer does
==================================  ==========================================================
no issue carries SIG                opens one (labels ``xamt`` and ``suspected-bug``),
                                    highest ranked first (severity, confidence, occurrences);
                                    at most ``max_new`` per run, the rest wait for the next
                                    run ("defer")
open issue, finding seen again      comments with the occurrence count ("recur")
open issue, a verification missed   counts the miss; after ``close_after`` consecutive misses
                                    closes it as completed with a closing comment ("close")
open issue, a verification hit      resets the miss count ("reset")
closed as completed, seen again     reopens it with the ``regression`` label and a comment
closed as not planned (or any       never reopened, never commented ("skip")
other reason), seen again
==================================  ==========================================================

Verifications are re-runs of filed findings on newer library versions (``xamt repro --all``):
they come from each finding's record (its latest entry of ``verifications`` when newer than its
``last_seen``, with ``consecutive_misses``) or from a mapping the caller passes.

Note:
    Identity. Every issue body ends with ``<!-- xamt-signature: SIG -->`` and a state marker
    ``<!-- xamt-state: {"last_run": ..., "misses": ..., "occurrences": ...} -->``. Existing
    issues are found by listing the repository's issues labelled ``xamt`` in all states, every
    page (the listing is consistent right after a write, unlike the search API, which is only
    a fallback, one query per run, for issues whose ``xamt`` label people removed).

    Where the counters live. The miss counter and the occurrence count are kept in the issue
    itself (the state marker of its body), not in a local file: the scheduled Action runs on
    fresh machines, a marker travels with the issue, and people can see and reset it. The
    optional ``state_file`` is a ledger (signature -> issue number, state, counters) written
    after each write for other tools and artifacts; it is read only to plan a dry run that has
    no token.

    Re-runs. A run has a key (:func:`run_key`: a hash of the campaign, the signatures and the
    verifications, or a name given by the caller). Every write of a run records the key: the
    state marker of the issue it opened or edited, and a ``<!-- xamt-run: KEY EVENT -->`` line
    in each comment. The state edit is the last write of an action, so a run killed at any
    point and started again with the same input skips what was done (the issue's last run is
    this key), finds a comment that was posted before the kill (by its run line), and finds an
    issue that was created just before the kill (by its signature marker, in the listing).

    Faults. PyGithub's own retries are off (they would repeat a POST that GitHub may already
    have carried out). :class:`_Session` retries instead: rate-limit answers (403/429 with
    ``Retry-After``, ``x-ratelimit-remaining: 0`` until the reset, secondary limits) wait and
    retry, since GitHub did nothing; 5xx answers and dropped connections are ambiguous for a
    POST, so before posting again the session looks for what the POST would have made (the
    issue by its marker, the comment by its run line). Every retry loop is bounded
    (``max_attempts``, ``max_wait``, :data:`RATE_LIMIT_RETRIES`). Writes are spaced by
    ``write_delay`` seconds (PyGithub's ``seconds_between_writes``).

    Secrets. The token is never written to the plan, the ledger or the log, and is scrubbed
    from the text of every error this module raises.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

from xamt.errors import UsageError, XamtError
from xamt.findings import Document, Finding, FindingsError, dumps_document
from xamt.paths import write_atomic
from xamt.report import render, trackers
from xamt.report.trackers import Candidate, Tracker, UpstreamCheck

LABEL = "xamt"
REGRESSION_LABEL = "regression"
SUSPECTED_LABEL = "suspected-bug"
KNOWN_UPSTREAM_LABEL = "known-upstream"
LABELS = {
    LABEL: ("5319e7", "Filed by xamt, the cross-framework differential fuzzer"),
    SUSPECTED_LABEL: ("d73a4a", "xamt: a root cause in one library, no documented difference"),
    REGRESSION_LABEL: ("b60205", "xamt: a finding that came back after it was fixed"),
    KNOWN_UPSTREAM_LABEL: ("c5def5", "xamt: the library's own tracker already has this issue"),
}
DEFAULT_BASE_URL = "https://api.github.com"
DEFAULT_MAX_NEW = 10
DEFAULT_CLOSE_AFTER = 3
DEFAULT_WRITE_DELAY = 1.0
DEFAULT_REQUEST_DELAY = 0.25
DEFAULT_MAX_WAIT = 900.0
DEFAULT_MAX_ATTEMPTS = 6
SECONDARY_RATE_WAIT = 60.0
# The most rate-limit answers one request may get before the run gives up.
RATE_LIMIT_RETRIES = 20
SEARCH_PAGES = 10
# The most result pages one upstream search reads looking for a confident match.
UPSTREAM_PAGES = 3
PLAN_FILE = "filing-plan.json"
BODIES_DIR = "bodies"
# Ready-to-paste reports for the upstream trackers (one per finding: Gitee's, and GitHub's
# for those who prefer pasting to the prefilled link).
UPSTREAM_DIR = "upstream"
# The findings document with the confident upstream matches recorded (``upstream``).
FINDINGS_FILE = "findings.json"
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
# Room left under GitHub's body limit so the state marker can grow without a new cut.
BODY_LIMIT = render.GITHUB_BODY_LIMIT - 64
ACTIONS = (
    "create",
    "known-upstream",
    "recur",
    "regress",
    "close",
    "miss",
    "reset",
    "skip",
    "defer",
    "retired",
    "held-back",
)
WRITE_ACTIONS = ACTIONS[:7]
# The actions that open an issue (capped by ``max_new`` together).
OPENING_ACTIONS = ("create", "known-upstream")

_SIGNATURE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/+=-]{0,127}$")
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
SIGNATURE_MARKER_RE = re.compile(r"^<!-- xamt-signature: (\S+) -->[ \t]*$", re.MULTILINE)
STATE_MARKER_RE = re.compile(r"^<!-- xamt-state: (\{[^\n]*\}) -->[ \t]*$", re.MULTILINE)
RUN_MARKER_RE = re.compile(r"^<!-- xamt-run: (\S+) (\S+) -->[ \t]*$", re.MULTILINE)

T = TypeVar("T")


# -- errors ---------------------------------------------------------------------------------


class TokenError(XamtError):
    """No token, an unreadable token file, or a token GitHub refuses (401)."""

    exit_code = 13


class RepositoryError(XamtError):
    """A repository name that is malformed, unknown or invisible to the token, or whose
    issues are turned off."""

    exit_code = 14


class PermissionDenied(XamtError):
    """The token may read the repository but not write its issues (403)."""

    exit_code = 15


class GitHubUnavailable(XamtError):
    """GitHub kept failing (5xx, dropped connections, a rate limit longer than the wait
    allowed) after the bounded retries. What was done is recorded; a re-run continues it."""

    exit_code = 16


def check_base_url(base_url: str) -> str:
    """``base_url`` when it is https, or http to this machine (a local test server); else
    :class:`~xamt.errors.UsageError` (exit 2): the token would travel in clear."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(base_url.strip())
        host = (parts.hostname or "").lower()
    except ValueError:
        parts, host = None, ""
    if parts is None or not host or parts.scheme not in ("https", "http"):
        raise UsageError(f"--base-url {base_url!r} is not a URL; give https://HOST[/api/v3]")
    if parts.scheme == "http" and host not in LOCAL_HOSTS:
        raise UsageError(
            f"--base-url {base_url!r} is not https: the token would travel in clear; use "
            "https:// (plain http is allowed only for localhost, 127.0.0.1 and ::1)"
        )
    return base_url


def scrub(text: str, secret: str | None) -> str:
    """``text`` without ``secret`` (nor its URL-quoted form)."""
    if not secret:
        return text
    from urllib.parse import quote

    for form in {secret, quote(secret, safe="")}:
        text = text.replace(form, "***")
    return text


# -- records --------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class IssueState:
    """The counters kept in an issue's state marker."""

    occurrences: int = 1
    misses: int = 0
    last_run: str = ""

    def marker(self) -> str:
        data = {"last_run": self.last_run, "misses": self.misses, "occurrences": self.occurrences}
        return f"<!-- xamt-state: {json.dumps(data, sort_keys=True)} -->"


def signature_marker(signature: str) -> str:
    """The hidden line that identifies a finding's issue."""
    return f"<!-- xamt-signature: {signature} -->"


def run_marker(run: str, event: str) -> str:
    """The hidden line that identifies the run (and event) that posted a comment."""
    return f"<!-- xamt-run: {run} {event} -->"


def signature_of(body: str | None) -> str | None:
    """The signature in an issue body's marker (the last one), or None."""
    found = SIGNATURE_MARKER_RE.findall(body or "")
    return found[-1] if found else None


def state_of(body: str | None) -> IssueState:
    """The counters in an issue body's state marker; defaults when it has none."""
    found = STATE_MARKER_RE.findall(body or "")
    if not found:
        return IssueState()
    try:
        data = json.loads(found[-1])
        return IssueState(
            occurrences=max(int(data.get("occurrences", 1)), 1),
            misses=max(int(data.get("misses", 0)), 0),
            last_run=str(data.get("last_run", "")),
        )
    except (ValueError, TypeError, AttributeError):
        return IssueState()


def with_state(body: str, state: IssueState) -> str:
    """``body`` with its state marker replaced (or added after the signature marker)."""
    matches = list(STATE_MARKER_RE.finditer(body))
    if matches:
        last = matches[-1]
        new = body[: last.start()] + state.marker() + body[last.end() :]
    else:
        new = body.rstrip("\n") + "\n" + state.marker() + "\n"
    if len(new) > render.GITHUB_BODY_LIMIT:
        sig = signature_of(new)
        head = SIGNATURE_MARKER_RE.sub("", STATE_MARKER_RE.sub("", new)).rstrip("\n") + "\n"
        tail = "\n" + (signature_marker(sig) + "\n" if sig else "") + state.marker() + "\n"
        new = render.fit_body(head, BODY_LIMIT, tail=tail)
    return new


@dataclass(frozen=True, kw_only=True)
class IssueSnapshot:
    """What the filer knows of one issue (from GitHub's listing, or a ledger)."""

    number: int
    title: str
    state: str  # "open" or "closed"
    state_reason: str | None
    labels: tuple[str, ...]
    body: str
    comments: int = 0
    url: str = ""

    @property
    def signature(self) -> str | None:
        return signature_of(self.body)

    @property
    def xamt_state(self) -> IssueState:
        return state_of(self.body)


@dataclass(frozen=True, kw_only=True)
class Action:
    """One step of a plan. ``state`` is what the issue's state marker becomes; ``body`` is the
    body of a new issue; ``comment`` the comment to post (both rendered, markers included)."""

    action: str
    signature: str
    issue: int | None = None
    reason: str = ""
    title: str = ""
    body: str = ""
    comment: str = ""
    labels: tuple[str, ...] = ()
    state: IssueState | None = None
    close: bool = False
    reopen: bool = False
    # where the finding goes upstream (Tracker.label), the confident upstream match, the
    # candidates of the upstream search, and the ready-to-paste upstream report
    tracker: str = ""
    upstream: str = ""
    candidates: tuple[Candidate, ...] = ()
    upstream_body: str = ""

    @property
    def writes(self) -> bool:
        return self.action in WRITE_ACTIONS


@dataclass(frozen=True, kw_only=True)
class FilingPlan:
    """What one run does, in order: creates first (capped), then updates, then the rest."""

    repo: str
    run: str
    close_after: int
    max_new: int
    actions: tuple[Action, ...]
    notes: tuple[str, ...] = ()

    def counts(self) -> dict[str, int]:
        """Actions per kind, every kind present."""
        out = dict.fromkeys(ACTIONS, 0)
        for a in self.actions:
            out[a.action] += 1
        return out

    def by_tracker(self) -> dict[str, dict[str, int]]:
        """The new findings by upstream tracker (``OWNER/REPO``, ``gitee (mindspore)``,
        ``retired (mxnet)``), each with its actions counted: ``create``, ``known-upstream``,
        ``defer``, ``retired``, ``held-back``."""
        out: dict[str, dict[str, int]] = {}
        for a in self.actions:
            if a.tracker:
                counts = out.setdefault(a.tracker, {})
                counts[a.action] = counts.get(a.action, 0) + 1
        return dict(sorted(out.items()))


@dataclass(kw_only=True)
class FilingResult:
    """What :func:`file_findings` did: the plan, and per action its outcome when posted."""

    plan: FilingPlan
    posted: bool
    out_dir: Path
    outcomes: list[dict[str, Any]] = field(default_factory=list)

    @property
    def plan_path(self) -> Path:
        return self.out_dir / PLAN_FILE

    def issues(self, action: str) -> list[int]:
        """Issue numbers of the done actions of one kind."""
        return [
            int(o["issue"])
            for o in self.outcomes
            if o.get("action") == action and o.get("done") and o.get("issue") is not None
        ]


# -- planning (pure) ------------------------------------------------------------------------


def run_key(doc: Document, verifications: Mapping[str, bool] | None = None) -> str:
    """A stable name for a run over this input: the same findings (with their recorded
    verifications) and verifications give the same key, so a re-run after a kill recognizes
    its own writes."""
    data = {
        "campaign": doc.campaign,
        "libraries": doc.libraries,
        "signatures": sorted(
            f"{f.signature}:{len(f.verifications)}:{f.consecutive_misses}" for f in doc.findings
        ),
        "verifications": sorted((str(k), bool(v)) for k, v in (verifications or {}).items()),
    }
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def recorded_verification(f: Finding) -> tuple[bool, int] | None:
    """What a finding's own record says of its latest verification, when that came after its
    last sighting: ``(present, consecutive misses)``; None when it was seen since (or never
    verified)."""
    if not f.verifications:
        return None
    last = f.verifications[-1]
    if f.last_seen and last.at < f.last_seen:
        return None
    return last.present, f.consecutive_misses


def _primary(issues: Sequence[IssueSnapshot]) -> IssueSnapshot:
    """Of several issues with one signature: an open one first, then the oldest."""
    return sorted(issues, key=lambda i: (i.state != "open", i.number))[0]


def decide(
    signature: str,
    *,
    doc: Document,
    finding: Finding | None,
    sighted: bool,
    verified: bool | None,
    issue: IssueSnapshot | None,
    run: str,
    close_after: int,
    misses: int | None = None,
    check: UpstreamCheck | None = None,
) -> Action | None:
    """What to do about one signature (None: nothing).

    ``finding`` is its record when the document holds it; ``sighted`` whether the campaign met
    it (an occurrence); ``verified`` the result of re-running it, when there is one, and
    ``misses`` the consecutive misses its record counts (None: count them in the issue)."""
    seen = sighted or verified is True
    if issue is None:
        if finding is None or not seen:
            if verified is True:
                return Action(
                    action="skip",
                    signature=signature,
                    reason="verified, but no issue carries it and the findings hold no data "
                    "to file it with",
                )
            return None
        return _opening(signature, finding, doc, run=run, check=check)
    old = issue.xamt_state
    if old.last_run == run:
        if seen or verified is False:
            return Action(
                action="skip",
                signature=signature,
                issue=issue.number,
                reason="already done by this run (a re-run of the same input)",
            )
        return None
    if issue.state == "closed":
        if not seen:
            return None
        if issue.state_reason != "completed":
            reason = issue.state_reason or "no reason given"
            return Action(
                action="skip",
                signature=signature,
                issue=issue.number,
                reason=f"closed by people ({reason}); xamt never reopens it",
            )
        state = IssueState(occurrences=old.occurrences + 1, misses=0, last_run=run)
        comment = render.regression_comment(
            finding, doc, occurrences=state.occurrences, marker=run_marker(run, "regression")
        )
        return Action(
            action="regress",
            signature=signature,
            issue=issue.number,
            comment=comment,
            labels=(REGRESSION_LABEL,),
            state=state,
            reopen=True,
        )
    if sighted and finding is not None:
        state = IssueState(occurrences=old.occurrences + 1, misses=0, last_run=run)
        comment = render.recurrence_comment(
            finding, doc, occurrences=state.occurrences, marker=run_marker(run, "recurrence")
        )
        return Action(
            action="recur", signature=signature, issue=issue.number, comment=comment, state=state
        )
    if verified is True:
        if old.misses == 0:
            return None
        return Action(
            action="reset",
            signature=signature,
            issue=issue.number,
            reason=f"reproduced again after {old.misses} miss(es)",
            state=replace(old, misses=0, last_run=run),
        )
    if verified is False:
        state = replace(old, misses=old.misses + 1 if misses is None else misses, last_run=run)
        if state.misses >= close_after:
            comment = render.closing_comment(
                doc, misses=state.misses, marker=run_marker(run, "closing")
            )
            return Action(
                action="close",
                signature=signature,
                issue=issue.number,
                comment=comment,
                state=state,
                close=True,
                reason=f"not reproduced in {state.misses} consecutive verifications",
            )
        return Action(
            action="miss",
            signature=signature,
            issue=issue.number,
            reason=f"not reproduced ({state.misses} of {close_after} before closing)",
            state=state,
        )
    return None


def upstream_file(signature: str) -> str:
    """Where the ready-to-paste upstream report of a finding goes, in the filing folder."""
    return f"{UPSTREAM_DIR}/{re.sub(r'[^A-Za-z0-9_.-]', '_', signature)[:64]}.md"


def _opening(
    signature: str, finding: Finding, doc: Document, *, run: str, check: UpstreamCheck | None
) -> Action:
    """The action for a finding no issue carries yet: a new issue (``create``), a
    ``known-upstream`` note (a labelled issue that links the upstream one) when the upstream
    search found a confident match or the finding records one, or nothing but a listing for
    a retired library (``retired``), or for a finding whose short repro, run standalone in a
    fresh process, did not show the departure (``held-back``, with the reason triage
    recorded: it is listed, never filed)."""
    tracker: Tracker | None = trackers.tracker_for(finding)
    label = tracker.label if tracker else ""
    title = render.issue_title(finding, doc.libraries)
    if finding.held_back:
        return Action(
            action="held-back",
            signature=signature,
            title=title,
            tracker=label,
            reason=f"held back: {finding.held_back}",
        )
    if tracker is not None and tracker.kind == "retired":
        return Action(
            action="retired",
            signature=signature,
            title=title,
            tracker=label,
            reason=f"{finding.library} is retired ({tracker.url}): listed, never filed",
        )
    view = render.upstream_view(
        finding, doc, tracker=tracker, check=check, paste_file=upstream_file(signature)
    )
    known = view["known"]
    state = IssueState(occurrences=1, misses=0, last_run=run)
    markers = signature_marker(signature) + "\n" + state.marker()
    body = render.issue_body(finding, doc, upstream=view)
    return Action(
        action="known-upstream" if known else "create",
        signature=signature,
        title=title,
        body=render.fit_body(body, BODY_LIMIT, tail="\n" + markers + "\n"),
        labels=(LABEL, KNOWN_UPSTREAM_LABEL if known else SUSPECTED_LABEL),
        state=state,
        tracker=label,
        upstream=str(known["url"]) if known else "",
        candidates=check.candidates if check is not None else (),
        upstream_body=render.upstream_body(finding, doc) if tracker is not None else "",
        reason=f"known upstream: {known['url']}" if known else "",
    )


def plan(
    findings_doc: Document,
    existing_issues: Sequence[IssueSnapshot],
    *,
    verifications: Mapping[str, bool] | None = None,
    close_after: int = DEFAULT_CLOSE_AFTER,
    max_new: int = DEFAULT_MAX_NEW,
    run: str | None = None,
    repo: str = "",
    checks: Mapping[str, UpstreamCheck] | None = None,
) -> FilingPlan:
    """Decide what to do with each finding and each filed issue; no I/O.

    Only suspected bugs are filed: documented differences and splits never are (a note counts
    them). ``existing_issues`` are the repository's issues (those without a signature marker
    are ignored). Verifications come from ``verifications`` (signature -> reproduced, e.g.
    from ``xamt repro --all --json``) and from each finding's own record (its latest
    verification, when newer than its last sighting, with its ``consecutive_misses``); the
    mapping wins where both speak. New issues are opened highest ranked first
    (:meth:`~xamt.findings.Finding.rank`: severity, confidence, occurrences), at most
    ``max_new``; the others are deferred to the next run. ``checks`` are the upstream
    searches (signature -> :class:`~xamt.report.trackers.UpstreamCheck`): a confident match
    makes a ``known-upstream`` note instead of a new defect. Findings of a retired library
    (mxnet) are listed (``retired``), never filed; nor are those triage held back (their
    short repro did not show the departure standalone: ``held-back``).
    """
    if close_after < 1:
        raise ValueError("close_after must be at least 1")
    if max_new < 0:
        raise ValueError("max_new must not be negative")
    given = dict(verifications or {})
    run = run or run_key(findings_doc, given)
    notes: list[str] = []
    by_signature: dict[str, list[IssueSnapshot]] = {}
    for issue in existing_issues:
        sig = issue.signature
        if sig is not None:
            by_signature.setdefault(sig, []).append(issue)
    for sig, carriers in sorted(by_signature.items()):
        if len(carriers) > 1:
            keep = _primary(carriers)
            rest = ", ".join(f"#{i.number}" for i in carriers if i is not keep)
            notes.append(f"{sig}: several issues carry it; using #{keep.number}, not {rest}")
    findings: dict[str, Finding] = {}
    sighted: set[str] = set()
    verified: dict[str, bool] = {}
    misses: dict[str, int] = {}
    not_filed: Counter[str] = Counter()
    for f in findings_doc.ranked():
        if not f.suspected:
            not_filed[f.classification] += 1
            continue
        if not _SIGNATURE.match(f.signature):
            notes.append(f"a finding with an unusable signature {f.signature[:40]!r} is not filed")
            continue
        if f.signature in findings:
            continue
        findings[f.signature] = f
        recorded = recorded_verification(f)
        if recorded is None:
            sighted.add(f.signature)
        else:
            verified[f.signature], misses[f.signature] = recorded
    if not_filed:
        notes.append(
            "not filed (only suspected bugs are): "
            + ", ".join(f"{n} {c}" for c, n in sorted(not_filed.items()))
        )
    for sig, present in given.items():
        verified[sig] = present
        misses.pop(sig, None)
    creates: list[tuple[Finding, Action]] = []
    updates: list[Action] = []
    others: list[Action] = []
    signatures = list(findings) + sorted((set(verified) | set(by_signature)) - set(findings))
    for sig in signatures:
        found = by_signature.get(sig)
        action = decide(
            sig,
            doc=findings_doc,
            finding=findings.get(sig),
            sighted=sig in sighted,
            verified=verified.get(sig),
            misses=misses.get(sig),
            issue=_primary(found) if found else None,
            run=run,
            close_after=close_after,
            check=(checks or {}).get(sig),
        )
        if action is None:
            continue
        if action.action in OPENING_ACTIONS:
            creates.append((findings[sig], action))
        elif action.writes:
            updates.append(action)
        else:
            others.append(action)
    creates.sort(key=lambda fa: fa[0].rank())
    ordered = [a for _, a in creates[:max_new]]
    deferred = [
        Action(
            action="defer",
            signature=a.signature,
            title=a.title,
            tracker=a.tracker,
            reason=f"over the cap of {max_new} new issues per run; filed by a later run",
        )
        for _, a in creates[max_new:]
    ]
    return FilingPlan(
        repo=repo,
        run=run,
        close_after=close_after,
        max_new=max_new,
        actions=tuple(ordered + updates + others + deferred),
        notes=tuple(notes),
    )


# -- the plan on disk -----------------------------------------------------------------------


def _body_files(plan: FilingPlan) -> list[dict[str, str]]:
    files = []
    for i, a in enumerate(plan.actions, 1):
        names: dict[str, str] = {}
        stem = f"{i:03d}-{a.action}-{re.sub(r'[^A-Za-z0-9_.-]', '_', a.signature)[:64]}"
        if a.body:
            names["body"] = f"{BODIES_DIR}/{stem}.md"
        if a.comment:
            names["comment"] = f"{BODIES_DIR}/{stem}-comment.md"
        if a.upstream_body:
            names["upstream"] = upstream_file(a.signature)
        files.append(names)
    return files


def plan_document(
    plan: FilingPlan, *, posted: bool, outcomes: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """The JSON of ``filing-plan.json``: the actions, where their texts are, their outcomes."""
    files = _body_files(plan)
    actions = []
    for i, (a, names) in enumerate(zip(plan.actions, files, strict=True)):
        entry: dict[str, Any] = {
            "action": a.action,
            "signature": a.signature,
            "issue": a.issue,
            "reason": a.reason,
        }
        if a.title:
            entry["title"] = a.title
        if a.labels:
            entry["labels"] = list(a.labels)
        if a.state is not None:
            entry["state"] = asdict(a.state)
        if a.close:
            entry["close"] = "completed"
        if a.reopen:
            entry["reopen"] = True
        if a.tracker:
            entry["tracker"] = a.tracker
        if a.upstream:
            entry["upstream"] = a.upstream
        if a.candidates:
            entry["candidates"] = [asdict(c) for c in a.candidates]
        entry.update({f"{k}_file": v for k, v in names.items()})
        if i < len(outcomes):
            entry["outcome"] = dict(outcomes[i])
        actions.append(entry)
    return {
        "schema": 1,
        "repo": plan.repo,
        "run": plan.run,
        "mode": "post" if posted else "dry-run",
        "close_after": plan.close_after,
        "max_new": plan.max_new,
        "counts": plan.counts(),
        "trackers": plan.by_tracker(),
        "notes": list(plan.notes),
        "actions": actions,
    }


def write_plan(
    plan: FilingPlan,
    out_dir: Path,
    *,
    posted: bool,
    outcomes: Sequence[Mapping[str, Any]] = (),
    bodies: bool = True,
) -> Path:
    """Write ``filing-plan.json`` and (with ``bodies``) each rendered title, body and comment."""
    if bodies:
        for a, names in zip(plan.actions, _body_files(plan), strict=True):
            if "body" in names:
                write_atomic(out_dir / names["body"], f"# {a.title}\n\n{a.body}")
            if "comment" in names:
                write_atomic(out_dir / names["comment"], a.comment)
            if "upstream" in names:
                write_atomic(
                    out_dir / names["upstream"],
                    f"# {a.title.removeprefix('[xamt] ')}\n\n{a.upstream_body}",
                )
    path = out_dir / PLAN_FILE
    doc = plan_document(plan, posted=posted, outcomes=outcomes)
    write_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return path


def _ledger_snapshots(state_file: Path | None) -> list[IssueSnapshot]:
    if state_file is None or not state_file.exists():
        return []
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
        entries = data["issues"]
        return [
            IssueSnapshot(
                number=int(e["number"]),
                title=str(e.get("title", "")),
                state=str(e.get("state", "open")),
                state_reason=e.get("state_reason"),
                labels=tuple(e.get("labels", (LABEL,))),
                body=signature_marker(sig)
                + "\n"
                + IssueState(
                    occurrences=int(e.get("occurrences", 1)),
                    misses=int(e.get("misses", 0)),
                    last_run=str(e.get("last_run", "")),
                ).marker(),
                comments=int(e.get("comments", 0)),
                url=str(e.get("url", "")),
            )
            for sig, e in entries.items()
        ]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise FindingsError(
            f"{state_file}: not a readable xamt filing ledger ({exc}); remove it or name another"
        ) from None


def _ledger_entry(snap: IssueSnapshot) -> dict[str, Any]:
    st = snap.xamt_state
    return {
        "number": snap.number,
        "title": snap.title,
        "url": snap.url,
        "state": snap.state,
        "state_reason": snap.state_reason,
        "labels": list(snap.labels),
        "comments": snap.comments,
        "occurrences": st.occurrences,
        "misses": st.misses,
        "last_run": st.last_run,
    }


def _write_ledger(path: Path, repo: str, snapshots: Mapping[str, IssueSnapshot]) -> None:
    doc = {
        "schema": 1,
        "repo": repo,
        "issues": {sig: _ledger_entry(s) for sig, s in sorted(snapshots.items())},
    }
    write_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")


# -- talking to GitHub ----------------------------------------------------------------------


def _rate_limit_wait(
    status: int, headers: Mapping[str, Any], message: str, now: float
) -> float | None:
    """Seconds to wait before retrying a rate-limited request, or None if it was not one."""
    if status not in (403, 429):
        return None
    lower = {str(k).lower(): str(v) for k, v in (headers or {}).items()}
    retry_after = lower.get("retry-after")
    if retry_after:
        try:
            return max(float(retry_after), 0.0)
        except ValueError:
            return SECONDARY_RATE_WAIT
    if lower.get("x-ratelimit-remaining") == "0" and lower.get("x-ratelimit-reset", "").isdigit():
        return max(int(lower["x-ratelimit-reset"]) - now, 0.0) + 1.0
    text = message.lower()
    if status == 429 or "rate limit" in text or text.endswith("try again later."):
        return SECONDARY_RATE_WAIT
    return None


class _Unsearchable(Exception):
    """GitHub refuses to search a repository (422)."""


class _Ambiguous(Exception):
    """A request whose effect is unknown (5xx, a dropped connection)."""


class _Session:
    """PyGithub with xamt's retry policy, error mapping and token scrubbing."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str,
        repo: str,
        write_delay: float,
        request_delay: float,
        max_wait: float,
        max_attempts: int,
        backoff: float,
        sleep: Callable[[float], None],
        log: Callable[[str], None],
        timeout: int,
        per_page: int,
        clock: Callable[[], float] = time.time,
    ) -> None:
        import github

        self._github_module = github
        self.token = token
        self.repo_name = repo
        self.max_wait = max_wait
        self.max_attempts = max(1, max_attempts)
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock
        self._log = log
        self.gh = github.Github(
            auth=github.Auth.Token(token),
            base_url=base_url.rstrip("/"),
            retry=None,
            timeout=timeout,
            per_page=per_page,
            seconds_between_requests=request_delay,
            seconds_between_writes=write_delay,
        )
        self.repo: Any = None
        self.per_page = per_page

    def log(self, message: str) -> None:
        self._log(scrub(message, self.token))

    def close(self) -> None:
        self.gh.close()

    # The one place requests are retried.
    def call(
        self,
        what: str,
        fn: Callable[[], T],
        *,
        recover: Callable[[], T | None] | None = None,
    ) -> T:
        """Run ``fn`` (one or more requests) with bounded retries.

        Rate-limit answers wait and retry. 5xx answers and dropped connections retry after a
        backoff, but first call ``recover`` (when given), which looks for what ``fn`` would
        have made and returns it (or None)."""
        from github import GithubException

        waited = 0.0
        attempt = 0  # failed attempts of the ambiguous kind (5xx, dropped connection)
        limited = 0  # rate-limit answers (GitHub did nothing)
        while True:
            try:
                return fn()
            except GithubException as exc:
                message = _message(exc)
                wait = _rate_limit_wait(exc.status, exc.headers or {}, message, self.clock())
                if wait is not None:
                    limited += 1
                    if waited + wait > self.max_wait or limited > RATE_LIMIT_RETRIES:
                        raise GitHubUnavailable(
                            self._text(
                                f"{what}: GitHub's rate limit asks to wait {wait:.0f} s more "
                                f"(waited {waited:.0f} s of the {self.max_wait:.0f} s allowed); "
                                "re-run later (a re-run continues where this one stopped and "
                                "duplicates nothing)"
                            )
                        ) from None
                    self.log(f"{what}: rate limited ({exc.status}); waiting {wait:.0f} s")
                    waited += wait
                    self.sleep(wait)
                    continue
                if exc.status is None or exc.status < 500:
                    raise self._error(what, exc.status, message) from None
                problem = f"GitHub answered {exc.status}"
            except (OSError, http.client.HTTPException) as exc:  # requests' errors are OSErrors
                problem = f"connection failed ({type(exc).__name__})"
            attempt += 1
            if recover is not None:
                found = recover()
                if found is not None:
                    self.log(f"{what}: {problem}, but it had been done")
                    return found
            if attempt >= self.max_attempts:
                raise GitHubUnavailable(
                    self._text(
                        f"{what}: {problem}, {self.max_attempts} attempts; re-run later (a "
                        "re-run continues where this one stopped and duplicates nothing)"
                    )
                )
            self.log(f"{what}: {problem}; retrying")
            self.sleep(min(self.backoff * 2 ** (attempt - 1), 30.0))

    def _text(self, message: str) -> str:
        return scrub(message, self.token)

    def _error(self, what: str, status: int | None, message: str) -> XamtError:
        repo = self.repo_name
        if status == 401:
            return TokenError(
                self._text(
                    f"{what}: GitHub refused the token ({message or 'bad credentials'}); "
                    "check GITHUB_TOKEN or the token file"
                )
            )
        if status == 403:
            return PermissionDenied(
                self._text(
                    f"{what}: the token may not do this in {repo} ({message}); give it "
                    "'issues: write' (fine-grained) or the 'repo' scope (classic)"
                )
            )
        if status == 404:
            return RepositoryError(
                self._text(
                    f"{what}: {repo} not found, or not visible to this token; check the "
                    "owner/name and the token's repository access"
                )
            )
        if status == 410:
            return RepositoryError(self._text(f"{what}: issues are turned off in {repo}"))
        return GitHubUnavailable(self._text(f"{what}: GitHub answered {status}: {message}"))

    # -- operations -------------------------------------------------------------------------

    def open_repo(self) -> None:
        repo = self.call("open the repository", lambda: self.gh.get_repo(self.repo_name))
        if not repo.has_issues:
            raise RepositoryError(f"issues are turned off in {self.repo_name}; turn them on")
        perms = repo.permissions
        if perms is not None and not (perms.push or perms.triage or perms.maintain or perms.admin):
            raise PermissionDenied(
                f"the token can read {self.repo_name} but not write its issues; give it "
                "'issues: write' (fine-grained) or the 'repo' scope (classic)"
            )
        self.repo = repo

    def list_issues(self) -> list[tuple[IssueSnapshot, Any]]:
        """Every issue labelled ``xamt``, in all states, oldest first (all pages)."""

        def fetch() -> list[tuple[IssueSnapshot, Any]]:
            paged = self.repo.get_issues(
                state="all", labels=[LABEL], sort="created", direction="asc"
            )
            return [(snapshot(i), i) for i in paged if "/pull/" not in (i.html_url or "")]

        return self.call("list the xamt issues", fetch)

    def find_recent(self, signature: str) -> Any | None:
        """The newest xamt issue carrying ``signature`` (first page, newest first), or None."""

        def fetch() -> Any | None:
            page = self.repo.get_issues(
                state="all", labels=[LABEL], sort="created", direction="desc"
            ).get_page(0)
            for issue in page:
                if signature_of(issue.body) == signature:
                    return issue
            return None

        return self.call(f"look for the issue of {signature}", fetch)

    def search_unlabelled(self) -> list[Any]:
        """The search API, as a fallback: issues whose body carries a signature marker but
        which lack the ``xamt`` label (people removed it). One query per run, at most
        :data:`SEARCH_PAGES` pages; a failing search is logged and yields nothing."""
        query = f'"xamt-signature" repo:{self.repo_name} is:issue in:body -label:{LABEL}'

        def fetch() -> list[Any]:
            found: list[Any] = []
            results = self.gh.search_issues(query)
            seen = 0
            for page in range(SEARCH_PAGES):
                items = results.get_page(page)
                seen += len(items)
                found += [i for i in items if signature_of(i.body) is not None]
                if not items or seen >= results.totalCount:
                    break
            return found

        try:
            return self.call("search for issues that lost the xamt label", fetch)
        except (GitHubUnavailable, PermissionDenied) as exc:
            self.log(f"the search fallback failed ({exc}); going on without it")
            return []

    def search_upstream(self, f: Finding, tracker: Tracker) -> UpstreamCheck:
        """Search ``tracker``'s repository for issues (open and closed) about ``f``: the
        callable's last name (:func:`~xamt.report.trackers.search_query`); the symptom is read
        in the results (:func:`~xamt.report.trackers.confident_match`).
        Reads pages until a confident match or :data:`UPSTREAM_PAGES` pages; rate-limit answers
        (the search API allows 30 requests a minute) wait and retry like every request. A
        search GitHub refuses (422: a repository it cannot search) or that keeps failing gives
        a check with ``error``; filing goes on."""
        from github import GithubException

        query = trackers.search_query(f, tracker)
        seen: list[Candidate] = []
        try:
            results = self.gh.search_issues(query)
            total = 0
            for page in range(UPSTREAM_PAGES):

                def fetch(page: int = page) -> list[Any]:
                    try:
                        return list(results.get_page(page))
                    except GithubException as exc:
                        if exc.status == 422:
                            raise _Unsearchable(_message(exc) or "422") from None
                        raise

                items = self.call(f"search {tracker.repo} for {trackers.last_name(f)}", fetch)
                total = int(results.totalCount or 0)
                for item in items:
                    if "/pull/" in str(item.html_url or ""):
                        continue
                    title, body = str(item.title or ""), str(item.body or "")
                    seen.append(
                        Candidate(
                            title=title,
                            url=str(item.html_url or ""),
                            state=str(item.state or ""),
                            match=trackers.confident_match(f, tracker, title, body),
                        )
                    )
                if not items or any(c.match for c in seen) or (page + 1) * self.per_page >= total:
                    break
            incomplete = bool(results.incomplete_results)
        except _Unsearchable as exc:
            return UpstreamCheck(query=query, error=f"GitHub cannot search {tracker.repo} ({exc})")
        except (GitHubUnavailable, PermissionDenied, TokenError) as exc:
            self.log(f"the upstream search for {f.signature} failed ({exc}); filing without it")
            return UpstreamCheck(query=query, error=scrub(str(exc), self.token))
        ordered = sorted(seen, key=lambda c: not c.match)
        return UpstreamCheck(
            query=query, candidates=tuple(ordered), total=total, incomplete=incomplete
        )

    def ensure_labels(self, names: Iterable[str]) -> None:
        wanted = [n for n in dict.fromkeys(names) if n in LABELS]
        if not wanted:
            return
        have = self.call(
            "list the labels", lambda: {label.name for label in self.repo.get_labels()}
        )
        from github import GithubException

        for name in wanted:
            if name in have:
                continue
            color, description = LABELS[name]

            def create(
                name: str = name, color: str = color, description: str = description
            ) -> bool:
                try:
                    self.repo.create_label(name, color, description)
                except GithubException as exc:
                    if exc.status != 422:  # 422: it exists (made meanwhile)
                        raise
                return True

            self.call(f"create the label {name!r}", create)
            self.log(f"created the label {name!r}")

    def find_comment(self, issue: Any, run: str, event: str) -> Any | None:
        def fetch() -> Any | None:
            for comment in issue.get_comments():
                for found_run, found_event in RUN_MARKER_RE.findall(comment.body or ""):
                    if (found_run, found_event) == (run, event):
                        return comment
            return None

        return self.call(f"read the comments of #{issue.number}", fetch)


def _message(exc: Any) -> str:
    data = getattr(exc, "data", None)
    if isinstance(data, dict):
        return str(data.get("message", ""))
    return str(data or "")


def snapshot(issue: Any) -> IssueSnapshot:
    """An :class:`IssueSnapshot` of a PyGithub issue (only fields every listing carries)."""
    return IssueSnapshot(
        number=int(issue.number),
        title=str(issue.title or ""),
        state=str(issue.state),
        state_reason=issue.state_reason,
        labels=tuple(label.name for label in issue.labels),
        body=str(issue.body or ""),
        comments=int(issue.comments or 0),
        url=str(issue.html_url or ""),
    )


# -- carrying a plan out --------------------------------------------------------------------


def _execute(
    session: _Session,
    action: Action,
    *,
    run: str,
    issues: dict[int, Any],
    snapshots: dict[int, IssueSnapshot],
) -> dict[str, Any]:
    """Carry out one write action; return its outcome (issue number, url)."""
    sig = action.signature
    if action.action in OPENING_ACTIONS:
        issue = session.call(
            f"open the issue of {sig}",
            lambda: session.repo.create_issue(
                title=action.title, body=action.body, labels=list(action.labels)
            ),
            recover=lambda: session.find_recent(sig),
        )
        issues[issue.number] = issue
        snapshots[issue.number] = snapshot(issue)
        return {"issue": issue.number, "url": issue.html_url}
    assert action.issue is not None and action.state is not None
    issue = issues[action.issue]
    snap = snapshots[action.issue]
    event = {"recur": "recurrence", "regress": "regression", "close": "closing"}.get(action.action)
    if action.comment and event:
        posted = snap.comments > 0 and session.find_comment(issue, run, event) is not None
        if not posted:
            session.call(
                f"comment on #{issue.number}",
                lambda: issue.create_comment(action.comment),
                recover=lambda: session.find_comment(issue, run, event),
            )
    for label in action.labels:
        if label not in snap.labels:

            def add(label: str = label) -> None:
                issue.add_to_labels(label)

            session.call(f"label #{issue.number}", add)
    edit: dict[str, Any] = {"body": with_state(snap.body, action.state)}
    if action.close:
        edit.update(state="closed", state_reason="completed")
    if action.reopen:
        edit.update(state="open")
    session.call(f"update #{issue.number}", lambda: issue.edit(**edit))
    snapshots[action.issue] = snapshot(issue)
    return {"issue": issue.number, "url": issue.html_url}


def file_findings(
    doc: Document,
    *,
    repo: str,
    token: str | None = None,
    base_url: str = DEFAULT_BASE_URL,
    post: bool = False,
    out_dir: Path = Path("xamt-filing"),
    max_new: int = DEFAULT_MAX_NEW,
    close_after: int = DEFAULT_CLOSE_AFTER,
    verifications: Mapping[str, bool] | None = None,
    state_file: Path | None = None,
    run: str | None = None,
    write_delay: float = DEFAULT_WRITE_DELAY,
    request_delay: float = DEFAULT_REQUEST_DELAY,
    max_wait: float = DEFAULT_MAX_WAIT,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    backoff: float = 1.0,
    search_fallback: bool = True,
    upstream_check: bool = True,
    record: Document | None = None,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.time,
    log: Callable[[str], None] | None = None,
    timeout: int = 30,
    per_page: int = 100,
) -> FilingResult:
    """Plan the filing of a findings document into ``repo``; with ``post``, carry it out.

    Dry run (the default) writes ``out_dir/filing-plan.json`` and every rendered body and
    comment under ``out_dir/bodies/``, and writes nothing anywhere else. With a token it plans
    against the repository's live issues (reading only); without one, against the ledger in
    ``state_file`` if there is one, else as if no issue existed.

    With ``post=True`` (a token required) it checks the token, the repository and the
    permission before any write (nothing is half-filed on bad input), creates the labels it
    needs, and carries out the plan, recording each outcome in ``filing-plan.json`` (and the
    ledger) as it goes. See the module's notes for re-runs, faults and rate limits.

    Upstream check (with a token and ``upstream_check``): before filing, each finding about to
    get a new issue is searched for in its library's GitHub tracker
    (:mod:`xamt.report.trackers`); the candidates are listed in its body, and a confident match
    makes a ``known-upstream`` note instead of a new defect. The matches are recorded as
    ``upstream`` in ``out_dir/findings.json``: ``record`` (by default ``doc``; the CLI gives
    the document as read, before the scripts' text replaced their paths) with every finding
    kept and only ``upstream`` filled in. The input findings.json is never rewritten.

    ``base_url`` must be https (plain http only to localhost: a test server), else
    :class:`~xamt.errors.UsageError`.

    Raises :class:`TokenError`, :class:`RepositoryError`, :class:`PermissionDenied`,
    :class:`GitHubUnavailable`, ``OutputError``.
    """
    say = log or (lambda message: None)
    check_base_url(base_url)
    if not _REPO.match(repo or ""):
        raise RepositoryError(f"{repo!r} is not a repository name; write it as owner/name")
    token = (token or "").strip() or None
    if post and token is None:
        raise TokenError(
            "posting needs a token: set GITHUB_TOKEN or pass --token-file "
            "(or leave out --post for a dry run)"
        )
    verifications = dict(verifications or {})
    run = run or run_key(doc, verifications)
    out_dir = Path(out_dir)
    if token is None:
        snapshots_list = _ledger_snapshots(state_file)
        the_plan = plan(
            doc,
            snapshots_list,
            verifications=verifications,
            close_after=close_after,
            max_new=max_new,
            run=run,
            repo=repo,
        )
        if upstream_check and any(a.action in OPENING_ACTIONS for a in the_plan.actions):
            the_plan = replace(
                the_plan, notes=(*the_plan.notes, "no upstream check: it needs a token")
            )
        write_plan(the_plan, out_dir, posted=False)
        return FilingResult(plan=the_plan, posted=False, out_dir=out_dir)
    session = _Session(
        token=token,
        base_url=base_url,
        repo=repo,
        write_delay=write_delay,
        request_delay=request_delay,
        max_wait=max_wait,
        max_attempts=max_attempts,
        backoff=backoff,
        sleep=sleep,
        log=say,
        timeout=timeout,
        per_page=per_page,
        clock=clock,
    )
    try:
        return _file_with(
            session,
            doc,
            post=post,
            out_dir=out_dir,
            max_new=max_new,
            close_after=close_after,
            verifications=verifications,
            state_file=state_file,
            run=run,
            search_fallback=search_fallback,
            upstream_check=upstream_check,
            record_doc=record if record is not None else doc,
        )
    except XamtError as exc:
        # The token must not leak through any message, whatever raised it.
        exc.args = tuple(scrub(str(a), token) for a in exc.args)
        raise
    finally:
        session.close()


def _check_upstream(
    session: _Session, doc: Document, the_plan: FilingPlan
) -> dict[str, UpstreamCheck]:
    """The upstream search of each finding the plan opens an issue for (GitHub trackers only;
    one with a recorded ``upstream`` needs none)."""
    findings = {f.signature: f for f in doc.findings}
    checks: dict[str, UpstreamCheck] = {}
    for action in the_plan.actions:
        f = findings.get(action.signature)
        if action.action not in OPENING_ACTIONS or f is None or f.upstream:
            continue
        tracker = trackers.tracker_for(f)
        if tracker is None or tracker.kind != "github":
            continue
        check = session.search_upstream(f, tracker)
        checks[f.signature] = check
        found = check.match
        if found is not None:
            session.log(f"{f.signature}: known upstream, {found.url}")
    return checks


def with_upstream(doc: Document, checks: Mapping[str, UpstreamCheck]) -> Document:
    """``doc`` with the confident matches of ``checks`` recorded as ``upstream`` (a finding
    that records one already keeps it); every other field as it was."""
    findings = []
    for f in doc.findings:
        found = checks[f.signature].match if f.signature in checks else None
        findings.append(f.replace(upstream=found.url) if found and not f.upstream else f)
    return replace(doc, findings=tuple(findings))


def _write_record(doc: Document, checks: Mapping[str, UpstreamCheck], out_dir: Path) -> None:
    write_atomic(out_dir / FINDINGS_FILE, dumps_document(with_upstream(doc, checks)))


def _counts_text(the_plan: FilingPlan) -> str:
    counts = the_plan.counts()
    return ", ".join(f"{k} {n}" for k, n in counts.items() if n) or "nothing to do"


def _file_with(
    session: _Session,
    doc: Document,
    *,
    post: bool,
    out_dir: Path,
    max_new: int,
    close_after: int,
    verifications: Mapping[str, bool],
    state_file: Path | None,
    run: str,
    search_fallback: bool,
    upstream_check: bool,
    record_doc: Document,
) -> FilingResult:
    session.open_repo()
    listed = session.list_issues()
    issues = {snap.number: obj for snap, obj in listed}
    snapshots = {snap.number: snap for snap, _ in listed}
    session.log(f"{session.repo_name}: {len(listed)} issue(s) labelled {LABEL!r}")

    checks: dict[str, UpstreamCheck] = {}

    def make_plan() -> FilingPlan:
        return plan(
            doc,
            list(snapshots.values()),
            verifications=verifications,
            close_after=close_after,
            max_new=max_new,
            run=run,
            repo=session.repo_name,
            checks=checks,
        )

    the_plan = make_plan()
    wanted = {a.signature for a in the_plan.actions if a.action in ("create", "defer")}
    if search_fallback and post and wanted:
        found_any = False
        for found in session.search_unlabelled():
            sig = signature_of(found.body)
            if sig in wanted and found.number not in snapshots:
                session.log(f"{sig}: found #{found.number} by search (it lost the xamt label)")
                issues[found.number] = found
                snapshots[found.number] = snapshot(found)
                found_any = True
        if found_any:
            the_plan = make_plan()
    if upstream_check:
        checks.update(_check_upstream(session, doc, the_plan))
        if checks:
            the_plan = make_plan()
            _write_record(record_doc, checks, out_dir)
    elif any(a.action in OPENING_ACTIONS for a in the_plan.actions):
        the_plan = replace(the_plan, notes=(*the_plan.notes, "no upstream check (turned off)"))
    result = FilingResult(plan=the_plan, posted=post, out_dir=out_dir)
    write_plan(the_plan, out_dir, posted=post)
    if not post:
        return result
    by_signature = {s.signature: s for s in snapshots.values() if s.signature}

    def record() -> None:
        write_plan(the_plan, out_dir, posted=True, outcomes=result.outcomes, bodies=False)
        if state_file is not None:
            current = {s.signature: s for s in snapshots.values() if s.signature}
            _write_ledger(state_file, session.repo_name, {**by_signature, **current})

    session.ensure_labels(label for a in the_plan.actions if a.writes for label in a.labels)
    for action in the_plan.actions:
        outcome: dict[str, Any] = {"action": action.action, "signature": action.signature}
        if action.writes:
            try:
                outcome.update(
                    _execute(session, action, run=run, issues=issues, snapshots=snapshots)
                )
            except XamtError as exc:
                outcome.update(done=False, error=scrub(str(exc), session.token))
                result.outcomes.append(outcome)
                record()
                raise
            outcome["done"] = True
            session.log(f"{action.action} #{outcome['issue']} ({action.signature})")
        else:
            outcome.update(done=False, issue=action.issue, reason=action.reason)
        result.outcomes.append(outcome)
        record()
    return result
