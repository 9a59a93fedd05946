"""Where each library's maintainers take bug reports, and how a finding names its symptom:
the reviewed data of ``trackers.toml``, loaded and checked here.

A finding is filed into the *user's* tracking repository; its body names the blamed library's
upstream tracker (:func:`tracker_for`): a GitHub repository (a prefilled new-issue link, and
an upstream search before filing), MindSpore's Gitee tracker (a ready-to-paste report file,
never posted through an API), or a retired project (mxnet: listed, never filed).

Note:
    The confident upstream match (:func:`confident_match`) is small and conservative: an
    issue matches when its title or body names the callable by one of its dotted names (the
    canonical callable, the blamed API path, or their short forms from the tracker's
    ``aliases``, as whole names) *and* its title names the symptom (a word of the kind from
    ``[symptoms]``, as a whole word). Everything else the search finds is only listed as a
    candidate.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast, get_args
from urllib.parse import quote

from xamt.errors import XamtError
from xamt.findings import KINDS, Finding

TRACKERS_FILE = Path(__file__).with_name("trackers.toml")
TrackerKind = Literal["github", "gitee", "retired"]
TRACKER_KINDS: tuple[TrackerKind, ...] = get_args(TrackerKind)
# A prefilled new-issue link longer than this (characters, URL-encoded) is cut: browsers and
# GitHub refuse much longer addresses.
NEW_ISSUE_URL_LIMIT = 6000
_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
_HTTPS = re.compile(r"^https://[A-Za-z0-9.-]+(/[^\s]*)?$")


class TrackersError(XamtError):
    """A malformed trackers file (a packaging fault: the file ships with xamt). Exit 8, like
    the other reviewed data a run cannot use (a catalog)."""

    exit_code = 8


@dataclass(frozen=True, kw_only=True)
class Tracker:
    """One upstream tracker."""

    id: str
    kind: TrackerKind
    url: str
    repo: str = ""
    aliases: tuple[tuple[str, str], ...] = ()
    reason: str
    link: str

    @property
    def label(self) -> str:
        """How the plan counts it: ``OWNER/REPO``, ``gitee (mindspore)``, ``retired (mxnet)``."""
        return self.repo if self.kind == "github" else f"{self.kind} ({self.id})"

    @property
    def new_issue_page(self) -> str:
        """The page that opens a new issue."""
        return self.url.rstrip("/") + "/new" if self.kind != "retired" else ""


@dataclass(frozen=True, kw_only=True)
class Route:
    """Findings of ``library`` whose callable or API path starts with one of ``prefixes``
    (any, when empty) go to ``tracker``."""

    library: str
    prefixes: tuple[str, ...]
    tracker: str
    reason: str
    link: str


@dataclass(frozen=True, kw_only=True)
class Symptom:
    """The words of a kind of finding that decide a confident match (``words``)."""

    kind: str
    words: tuple[str, ...]
    reason: str
    link: str


@dataclass(frozen=True, kw_only=True)
class Trackers:
    """The whole file."""

    trackers: dict[str, Tracker]
    routes: tuple[Route, ...]
    symptoms: dict[str, Symptom]


def _text(entry: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> str:
    value = entry.get(key, None if required else "")
    if not isinstance(value, str) or (required and not value.strip()):
        raise TrackersError(f"{where}: '{key}' must be a non-empty string")
    return value


def _words(entry: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = entry.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise TrackersError(f"{where}: '{key}' must be a list of non-empty strings")
    return tuple(value)


def _check_common(entry: Mapping[str, Any], where: str, allowed: Iterable[str]) -> None:
    if not isinstance(entry, dict):
        raise TrackersError(f"{where}: must be a table")
    unknown = sorted(set(entry) - set(allowed))
    if unknown:
        raise TrackersError(f"{where}: unknown key(s) {', '.join(unknown)}")
    _text(entry, "reason", where)
    if not _HTTPS.match(_text(entry, "link", where)):
        raise TrackersError(f"{where}: 'link' must be an https URL")


def parse(data: Mapping[str, Any], where: str = "trackers.toml") -> Trackers:
    """Check and read the trackers data; :class:`TrackersError` naming the entry."""
    unknown = sorted(set(data) - {"trackers", "routes", "symptoms"})
    if unknown:
        raise TrackersError(f"{where}: unknown table(s) {', '.join(unknown)}")
    trackers: dict[str, Tracker] = {}
    for tid, entry in dict(data.get("trackers", {})).items():
        at = f"{where}: trackers.{tid}"
        _check_common(entry, at, ("kind", "repo", "url", "aliases", "reason", "link"))
        kind = _text(entry, "kind", at)
        if kind not in TRACKER_KINDS:
            raise TrackersError(f"{at}: 'kind' must be one of {', '.join(TRACKER_KINDS)}")
        repo = _text(entry, "repo", at, required=kind == "github")
        if kind == "github" and not _REPO.match(repo):
            raise TrackersError(f"{at}: 'repo' must be OWNER/REPO")
        if kind != "github" and repo:
            raise TrackersError(f"{at}: only a github tracker has a 'repo'")
        url = _text(entry, "url", at)
        if not _HTTPS.match(url):
            raise TrackersError(f"{at}: 'url' must be an https URL")
        if kind == "github" and url.rstrip("/") != f"https://github.com/{repo}/issues":
            raise TrackersError(f"{at}: 'url' must be https://github.com/{repo}/issues")
        aliases = entry.get("aliases", {})
        if not isinstance(aliases, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v for k, v in aliases.items()
        ):
            raise TrackersError(f"{at}: 'aliases' must map a prefix to its short form")
        trackers[tid] = Tracker(
            id=tid,
            kind=cast(TrackerKind, kind),
            url=url,
            repo=repo,
            aliases=tuple(sorted(aliases.items(), key=lambda kv: -len(kv[0]))),
            reason=entry["reason"],
            link=entry["link"],
        )
    routes = []
    raw_routes = data.get("routes", [])
    if not isinstance(raw_routes, list):
        raise TrackersError(f"{where}: 'routes' must be an array of tables")
    for i, entry in enumerate(raw_routes):
        at = f"{where}: routes[{i}]"
        _check_common(entry, at, ("library", "prefixes", "tracker", "reason", "link"))
        tracker = _text(entry, "tracker", at)
        if tracker not in trackers:
            raise TrackersError(f"{at}: unknown tracker {tracker!r}")
        routes.append(
            Route(
                library=_text(entry, "library", at),
                prefixes=_words(entry, "prefixes", at),
                tracker=tracker,
                reason=entry["reason"],
                link=entry["link"],
            )
        )
    symptoms: dict[str, Symptom] = {}
    for kind, entry in dict(data.get("symptoms", {})).items():
        at = f"{where}: symptoms.{kind}"
        if kind not in KINDS:
            raise TrackersError(f"{at}: {kind!r} is not a kind of finding")
        _check_common(entry, at, ("words", "reason", "link"))
        words = _words(entry, "words", at)
        if not words:
            raise TrackersError(f"{at}: 'words' must not be empty")
        symptoms[kind] = Symptom(
            kind=kind,
            words=words,
            reason=entry["reason"],
            link=entry["link"],
        )
    missing = sorted(set(KINDS) - set(symptoms))
    if missing:
        raise TrackersError(f"{where}: no [symptoms] for {', '.join(missing)}")
    return Trackers(trackers=trackers, routes=tuple(routes), symptoms=symptoms)


@cache
def load(path: Path = TRACKERS_FILE) -> Trackers:
    """The shipped trackers file, read once."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise TrackersError(f"{path}: not a readable trackers file ({exc})") from None
    return parse(data, str(path))


# -- routing --------------------------------------------------------------------------------


def _blamed(f: Finding) -> str:
    return f.library.split("+")[0]


def names_of(f: Finding) -> list[str]:
    """The dotted names of a finding's callable: the canonical one and the blamed API path."""
    api = f.apis.get(_blamed(f), "")
    return list(dict.fromkeys(n for n in (f.callable, api) if n))


def tracker_for(f: Finding, data: Trackers | None = None) -> Tracker | None:
    """The upstream tracker of a finding's blamed library (None: a library without one)."""
    data = data or load()
    lib = _blamed(f)
    names = names_of(f)
    for route in data.routes:
        if route.library != lib:
            continue
        if route.prefixes and not any(n.startswith(route.prefixes) for n in names):
            continue
        return data.trackers[route.tracker]
    return None


def name_forms(f: Finding, tracker: Tracker | None) -> list[str]:
    """Every way a report may name the callable: its dotted names and their short forms."""
    forms = names_of(f)
    for name in list(forms):
        for prefix, short in tracker.aliases if tracker else ():
            if name.startswith(prefix):
                forms.append(short + name[len(prefix) :])
                break
    return list(dict.fromkeys(forms))


def last_name(f: Finding) -> str:
    """The callable's last name (``sinc`` of ``paddle.sinc``)."""
    name = f.apis.get(_blamed(f)) or f.callable
    return name.rsplit(".", 1)[-1]


def symptom_of(f: Finding, data: Trackers | None = None) -> Symptom:
    return (data or load()).symptoms[f.kind]


def search_query(f: Finding, tracker: Tracker) -> str:
    """The upstream issue search: the callable's last name alone, in the tracker's
    repository, issues only, open and closed. The symptom is not in the query: GitHub's
    search requires every word, and reports name one symptom in many ways ("Floating point
    exception on torch.lcm" says neither crash nor SIGFPE); :func:`confident_match` reads the
    symptom's words in what the search returns."""
    return f"{last_name(f)} repo:{tracker.repo} is:issue"


def _mentions(text: str, phrase: str) -> bool:
    pattern = r"(?<![\w.])" + re.escape(phrase.lower()) + r"(?![\w])"
    return re.search(pattern, text.lower()) is not None


def confident_match(
    f: Finding, tracker: Tracker | None, title: str, body: str, data: Trackers | None = None
) -> bool:
    """Whether an upstream issue reports this finding (see the module's note for the rule)."""
    text = f"{title}\n{body or ''}"
    named = any(_mentions(text, form) for form in name_forms(f, tracker))
    said = any(_mentions(title, word) for word in symptom_of(f, data).words)
    return named and said


def new_issue_url(tracker: Tracker, title: str, body: str) -> str:
    """A prefilled new-issue link of a GitHub tracker, at most :data:`NEW_ISSUE_URL_LIMIT`
    characters: the body is cut (at a line) with a note when it does not fit."""
    base = f"https://github.com/{tracker.repo}/issues/new?title={quote(title, safe='')}&body="
    note = "\n\n(cut to fit a link; the tracking issue has the rest)\n"
    url = base + quote(body, safe="")
    if len(url) <= NEW_ISSUE_URL_LIMIT:
        return url
    cut = body
    while cut and len(base) + len(quote(cut + "\n```" + note, safe="")) > NEW_ISSUE_URL_LIMIT:
        keep = max(len(cut) - max((len(base + quote(cut, safe="")) - NEW_ISSUE_URL_LIMIT), 16), 0)
        cut = cut[:keep]
        if "\n" in cut:
            cut = cut[: cut.rfind("\n")]
    fence = "\n```" if cut.count("```") % 2 else ""
    return base + quote(cut + fence + note, safe="")


# -- what an upstream search found ----------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One upstream issue the search found; ``match`` when it is a confident match."""

    title: str
    url: str
    state: str
    match: bool = False


@dataclass(frozen=True, kw_only=True)
class UpstreamCheck:
    """The upstream search of one finding: its query, the candidates (matches first), the
    total GitHub counted, whether GitHub said its results were incomplete, and ``error``
    when the search could not run (the finding is then filed as if nothing was found)."""

    query: str
    candidates: tuple[Candidate, ...] = ()
    total: int = 0
    incomplete: bool = False
    error: str = ""

    @property
    def match(self) -> Candidate | None:
        return next((c for c in self.candidates if c.match), None)
