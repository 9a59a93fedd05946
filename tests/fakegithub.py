"""A local, stateful fake of the GitHub REST endpoints the filer uses (test support).

Standard library only: an ``http.server`` on 127.0.0.1 (random port) in a thread. Point
PyGithub at :attr:`FakeGitHub.base_url` (``http://127.0.0.1:PORT`` or, with ``prefix``,
``http://127.0.0.1:PORT/api/v3`` like GitHub Enterprise Server).

What it does like GitHub, for these endpoints:

- ``GET /user``, ``GET /rate_limit``, ``GET /repos/{owner}/{repo}`` (with ``permissions``),
  the same under ``/repositories/{id}`` (the form of GitHub's pagination links);
- issues: list (``state``, ``labels`` (all of them), ``sort``, ``direction``, ``since``,
  ``per_page``/``page`` with a ``Link`` header), get, create (labels that do not exist are
  created), edit (``title``, ``body``, ``state``, ``state_reason``, ``labels``); closing sets
  ``closed_at``, ``closed_by`` and ``state_reason`` (``completed`` by default); reopening sets
  ``state_reason`` to ``reopened``;
- issue comments (list, create), issue labels (add, replace, list), repository labels (list,
  get, create; 422 when one exists);
- ``GET /search/issues`` (quoted phrases and words, ``repo:``, ``is:issue``, ``is:open``,
  ``is:closed``, ``in:title``/``in:body``, ``label:``, ``-label:``), optionally lagging
  behind writes, across every repository the user can see (add upstream repositories with
  :meth:`FakeGitHub.add_repo`, e.g. ``add_repo("pytorch/pytorch", "read", private=False)``,
  and their issues with :meth:`FakeGitHub.add_issue`); ``total_count``,
  ``incomplete_results`` (set :attr:`FakeGitHub.search_incomplete`), pages with a ``Link``
  header; a ``repo:`` qualifier naming a repository the user cannot see is a 422 ("The
  listed users and repositories cannot be searched"), as on GitHub;
- authentication: ``Authorization: token T`` or ``Bearer T``; a wrong or missing token is a
  401 ``Bad credentials``; a repository the user cannot see is a 404; a write without push
  permission is a 403; bodies over 65536 characters are a 422;
- rate-limit headers on every answer, and a per-hour budget (``rate_limit``): past it, the
  primary limit answer (403, ``x-ratelimit-remaining: 0``, ``x-ratelimit-reset``);
- the ``search`` resource's own budget, as on GitHub: ``search_limit`` requests (30 for an
  authenticated user) per minute, counted apart from the core budget, with its own headers
  (``x-ratelimit-resource: search``); past it the same 403 answer until the minute is over.
  Time is :attr:`FakeGitHub.clock` (``time.time`` unless a test gives a clock it moves).

Faults, injected from a test with :meth:`FakeGitHub.inject` (matching method and path regex,
after ``skip`` matching requests, ``times`` times): ``"error"`` (answer ``status`` with
``message`` before doing anything), ``"5xx"`` (502 before doing anything),
``"5xx-after"`` (carry the request out, then answer 502), ``"drop"`` (close the connection
without doing anything), ``"drop-after"`` (carry it out, then close the connection without an
answer), ``"rate-primary"``, ``"rate-secondary"`` (403 with ``Retry-After``), ``"rate-429"``,
and ``"stall-after"`` (carry it out, then hold the answer until :meth:`FakeGitHub.release`).

Every request is logged (:attr:`FakeGitHub.log`) without its Authorization header.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

DOCS = "https://docs.github.com/rest"
BODY_LIMIT = 65536
FAULT_KINDS = (
    "error",
    "5xx",
    "5xx-after",
    "drop",
    "drop-after",
    "rate-primary",
    "rate-secondary",
    "rate-429",
    "stall-after",
)
PERMISSIONS = ("none", "read", "triage", "write", "admin")
STATE_REASONS = ("completed", "not_planned", "reopened", "duplicate")


@dataclass
class Fault:
    """One injected fault; see the module docstring for the kinds."""

    kind: str
    method: str = ".*"
    path: str = ".*"
    times: int = 1
    skip: int = 0
    retry_after: int = 1
    reset_in: int = 2
    status: int = 422
    message: str = "Validation Failed"
    fired: int = 0

    def matches(self, method: str, path: str) -> bool:
        return bool(re.fullmatch(self.method, method) and re.search(self.path, path))


@dataclass
class Logged:
    """One request as the fake saw it (no Authorization header)."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    status: int | None = None
    fault: str | None = None


@dataclass
class _Repo:
    id: int
    owner: str
    name: str
    permission: str
    private: bool
    has_issues: bool = True
    next_number: int = 1
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    labels: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


class _Answer(Exception):
    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(status)
        self.status = status
        self.body = body
        self.headers = headers or {}


def _now_iso(t: float) -> str:
    return datetime.fromtimestamp(int(t), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _error(code: int, message: str, **extra: Any) -> _Answer:
    return _Answer(code, {"message": message, "documentation_url": DOCS, **extra})


class FakeGitHub:
    """The fake server. Use as a context manager, or call :meth:`start` and :meth:`stop`.

    ``repos`` maps ``owner/name`` to the user's permission there: ``"none"`` (a private
    repository the user cannot see: 404), ``"read"`` (403 on writes), ``"triage"``,
    ``"write"`` or ``"admin"``.
    """

    def __init__(
        self,
        *,
        token: str = "ghp_fake_token_0123456789",
        login: str = "xamt-bot",
        repos: dict[str, str] | None = None,
        prefix: str = "",
        max_per_page: int = 100,
        rate_limit: int = 5000,
        search_lag: float = 0.0,
        search_limit: int = 30,
        clock: Any = None,
    ) -> None:
        self.token = token
        self.login = login
        self.prefix = prefix.rstrip("/")
        self.max_per_page = max_per_page
        self.rate_limit = rate_limit
        self.rate_used = 0
        self.rate_reset = int(time.time()) + 3600
        self.search_lag = search_lag
        self.clock = clock or time.time
        self.search_limit = search_limit
        self.search_used = 0
        self.search_reset = int(self.clock()) + 60
        self.search_incomplete = False
        # Pages of repositories, issues and comments are on github.com, as on GitHub (the API
        # is elsewhere: base_url).
        self.html_root = "https://github.com"
        self.log: list[Logged] = []
        self.faults: list[Fault] = []
        self._lock = threading.RLock()
        self._release = threading.Event()
        self._ids = 1000
        self._repos: dict[str, _Repo] = {}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.user_id = self._next_id()
        for name, permission in (repos or {"octo/fuzz": "write"}).items():
            self.add_repo(name, permission)

    # -- lifetime ---------------------------------------------------------------------------

    def start(self) -> FakeGitHub:
        """Listen on 127.0.0.1 at a random free port, in a daemon thread."""
        server = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeGitHub:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "start the fake first"
        return int(self._server.server_address[1])

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """What to give PyGithub as ``base_url``."""
        return self.root + self.prefix

    # -- test controls ----------------------------------------------------------------------

    def add_repo(self, full_name: str, permission: str = "write", *, private: bool = True) -> None:
        if permission not in PERMISSIONS:
            raise ValueError(f"permission {permission!r} is not one of {PERMISSIONS}")
        owner, name = full_name.split("/")
        with self._lock:
            self._repos[full_name.lower()] = _Repo(
                id=self._next_id(), owner=owner, name=name, permission=permission, private=private
            )

    def inject(self, kind: str, *, method: str = ".*", path: str = ".*", **options: Any) -> Fault:
        """Add a fault (``times``, ``skip``, ``retry_after``, ``reset_in``, ``status``,
        ``message`` as options)."""
        if kind not in FAULT_KINDS:
            raise ValueError(f"fault {kind!r} is not one of {FAULT_KINDS}")
        fault = Fault(kind=kind, method=method, path=path, **options)
        if kind == "stall-after":
            self._release.clear()
        with self._lock:
            self.faults.append(fault)
        return fault

    def release(self) -> None:
        """Let requests held by a ``stall-after`` fault answer."""
        self._release.set()

    def issues(self, repo: str = "octo/fuzz") -> list[dict[str, Any]]:
        """All issues of a repository (GitHub's JSON), by number."""
        with self._lock:
            r = self._repos[repo.lower()]
            return [self._issue_json(r, r.issues[n]) for n in sorted(r.issues)]

    def comments(self, repo: str, number: int) -> list[dict[str, Any]]:
        with self._lock:
            r = self._repos[repo.lower()]
            return [dict(c) for c in r.comments.get(number, [])]

    def labels(self, repo: str = "octo/fuzz") -> list[str]:
        with self._lock:
            return sorted(label["name"] for label in self._repos[repo.lower()].labels.values())

    def add_issue(
        self,
        repo: str,
        *,
        title: str,
        body: str = "",
        labels: tuple[str, ...] = (),
        state: str = "open",
        state_reason: str | None = None,
        login: str | None = None,
    ) -> int:
        """Make an issue directly (as a person would); return its number."""
        with self._lock:
            r = self._repos[repo.lower()]
            issue = self._new_issue(r, title, body, list(labels), login or "someone")
            if state == "closed":
                self._close(issue, state_reason or "completed", login or "someone")
            return int(issue["number"])

    def set_state(self, repo: str, number: int, state: str, state_reason: str | None) -> None:
        """Close or reopen an issue as a person would."""
        with self._lock:
            issue = self._repos[repo.lower()].issues[number]
            if state == "closed":
                self._close(issue, state_reason or "completed", "someone")
            else:
                self._reopen(issue)

    def requests(self, method: str | None = None, path: str = "") -> list[Logged]:
        """Logged requests, filtered by method and a path regex."""
        with self._lock:
            return [
                entry
                for entry in self.log
                if (method is None or entry.method == method) and re.search(path, entry.path)
            ]

    # -- internals --------------------------------------------------------------------------

    def _next_id(self) -> int:
        self._ids += 1
        return self._ids

    def _user_json(self, login: str) -> dict[str, Any]:
        api = self.base_url
        uid = self.user_id if login == self.login else 4242
        return {
            "login": login,
            "id": uid,
            "node_id": "U_" + base64.b64encode(f"User{uid}".encode()).decode().rstrip("="),
            "avatar_url": f"{self.root}/avatars/{login}",
            "gravatar_id": "",
            "url": f"{api}/users/{login}",
            "html_url": f"{self.root}/{login}",
            "followers_url": f"{api}/users/{login}/followers",
            "following_url": f"{api}/users/{login}/following{{/other_user}}",
            "gists_url": f"{api}/users/{login}/gists{{/gist_id}}",
            "starred_url": f"{api}/users/{login}/starred{{/owner}}{{/repo}}",
            "subscriptions_url": f"{api}/users/{login}/subscriptions",
            "organizations_url": f"{api}/users/{login}/orgs",
            "repos_url": f"{api}/users/{login}/repos",
            "events_url": f"{api}/users/{login}/events{{/privacy}}",
            "received_events_url": f"{api}/users/{login}/received_events",
            "type": "User",
            "user_view_type": "public",
            "site_admin": False,
        }

    def _label_json(self, r: _Repo, label: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": label["id"],
            "node_id": "LA_" + str(label["id"]),
            "url": f"{self.base_url}/repos/{r.full_name}/labels/{quote(label['name'], safe='')}",
            "name": label["name"],
            "color": label["color"],
            "default": False,
            "description": label.get("description"),
        }

    def _repo_json(self, r: _Repo) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{r.full_name}"
        level = PERMISSIONS.index(r.permission)
        return {
            "id": r.id,
            "node_id": "R_" + str(r.id),
            "name": r.name,
            "full_name": r.full_name,
            "private": r.private,
            "owner": {**self._user_json(r.owner), "type": "Organization"},
            "html_url": f"{self.html_root}/{r.full_name}",
            "description": "a repository of the fake GitHub",
            "fork": False,
            "url": api,
            "issues_url": api + "/issues{/number}",
            "issue_comment_url": api + "/issues/comments{/number}",
            "labels_url": api + "/labels{/name}",
            "comments_url": api + "/comments{/number}",
            "created_at": "2024-01-01T00:00:00Z",
            "updated_at": "2024-01-01T00:00:00Z",
            "pushed_at": "2024-01-01T00:00:00Z",
            "homepage": None,
            "size": 1,
            "stargazers_count": 0,
            "watchers_count": 0,
            "language": "Python",
            "has_issues": r.has_issues,
            "has_projects": True,
            "has_downloads": True,
            "has_wiki": False,
            "has_pages": False,
            "has_discussions": False,
            "forks_count": 0,
            "archived": False,
            "disabled": False,
            "open_issues_count": sum(1 for i in r.issues.values() if i["state"] == "open"),
            "license": None,
            "allow_forking": True,
            "is_template": False,
            "topics": [],
            "visibility": "private" if r.private else "public",
            "forks": 0,
            "open_issues": sum(1 for i in r.issues.values() if i["state"] == "open"),
            "watchers": 0,
            "default_branch": "main",
            "permissions": {
                "admin": level >= PERMISSIONS.index("admin"),
                "maintain": level >= PERMISSIONS.index("admin"),
                "push": level >= PERMISSIONS.index("write"),
                "triage": level >= PERMISSIONS.index("triage"),
                "pull": level >= PERMISSIONS.index("read"),
            },
            "network_count": 0,
            "subscribers_count": 1,
        }

    def _issue_json(self, r: _Repo, issue: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{r.full_name}"
        n = issue["number"]
        url = f"{api}/issues/{n}"
        return {
            "url": url,
            "repository_url": api,
            "labels_url": url + "/labels{/name}",
            "comments_url": url + "/comments",
            "events_url": url + "/events",
            "html_url": f"{self.html_root}/{r.full_name}/issues/{n}",
            "id": issue["id"],
            "node_id": "I_" + base64.b64encode(f"Issue{issue['id']}".encode()).decode(),
            "number": n,
            "title": issue["title"],
            "user": self._user_json(issue["login"]),
            "labels": [self._label_json(r, r.labels[name.lower()]) for name in issue["labels"]],
            "state": issue["state"],
            "locked": False,
            "assignee": None,
            "assignees": [],
            "milestone": None,
            "comments": len(r.comments.get(n, [])),
            "created_at": _now_iso(issue["created"]),
            "updated_at": _now_iso(issue["updated"]),
            "closed_at": _now_iso(issue["closed"]) if issue["closed"] else None,
            "author_association": "MEMBER" if issue["login"] == self.login else "NONE",
            "type": None,
            "active_lock_reason": None,
            "sub_issues_summary": {"total": 0, "completed": 0, "percent_completed": 0},
            "body": issue["body"] or None,
            "closed_by": self._user_json(issue["closed_by"]) if issue["closed_by"] else None,
            "reactions": {
                "url": url + "/reactions",
                "total_count": 0,
                "+1": 0,
                "-1": 0,
                "laugh": 0,
                "hooray": 0,
                "confused": 0,
                "heart": 0,
                "rocket": 0,
                "eyes": 0,
            },
            "timeline_url": url + "/timeline",
            "performed_via_github_app": None,
            "state_reason": issue["state_reason"],
        }

    def _comment_json(self, r: _Repo, number: int, comment: dict[str, Any]) -> dict[str, Any]:
        api = f"{self.base_url}/repos/{r.full_name}"
        return {
            "url": f"{api}/issues/comments/{comment['id']}",
            "html_url": f"{self.html_root}/{r.full_name}/issues/{number}"
            f"#issuecomment-{comment['id']}",
            "issue_url": f"{api}/issues/{number}",
            "id": comment["id"],
            "node_id": "IC_" + str(comment["id"]),
            "user": self._user_json(comment["login"]),
            "created_at": _now_iso(comment["created"]),
            "updated_at": _now_iso(comment["created"]),
            "author_association": "MEMBER",
            "body": comment["body"],
            "reactions": {
                "url": f"{api}/issues/comments/{comment['id']}/reactions",
                "total_count": 0,
            },
            "performed_via_github_app": None,
        }

    def _ensure_label(self, r: _Repo, name: str) -> str:
        key = name.lower()
        if key not in r.labels:
            r.labels[key] = {"id": self._next_id(), "name": name, "color": "ededed"}
        return str(r.labels[key]["name"])

    def _new_issue(
        self, r: _Repo, title: str, body: str, labels: list[str], login: str
    ) -> dict[str, Any]:
        now = time.time()
        number = r.next_number
        r.next_number += 1
        issue = {
            "id": self._next_id(),
            "number": number,
            "title": title,
            "body": body,
            "labels": list(dict.fromkeys(self._ensure_label(r, n) for n in labels)),
            "state": "open",
            "state_reason": None,
            "login": login,
            "created": now,
            "updated": now,
            "closed": None,
            "closed_by": None,
            "seq": number,
        }
        r.issues[number] = issue
        return issue

    @staticmethod
    def _close(issue: dict[str, Any], reason: str, login: str) -> None:
        now = time.time()
        issue.update(state="closed", state_reason=reason, closed=now, closed_by=login, updated=now)

    @staticmethod
    def _reopen(issue: dict[str, Any]) -> None:
        issue.update(
            state="open", state_reason="reopened", closed=None, closed_by=None, updated=time.time()
        )

    def _rate_headers(self, resource: str) -> dict[str, str]:
        if resource == "search":
            return {
                "x-ratelimit-limit": str(self.search_limit),
                "x-ratelimit-remaining": str(max(self.search_limit - self.search_used, 0)),
                "x-ratelimit-reset": str(self.search_reset),
                "x-ratelimit-used": str(self.search_used),
                "x-ratelimit-resource": resource,
            }
        return {
            "x-ratelimit-limit": str(self.rate_limit),
            "x-ratelimit-remaining": str(max(self.rate_limit - self.rate_used, 0)),
            "x-ratelimit-reset": str(self.rate_reset),
            "x-ratelimit-used": str(self.rate_used),
            "x-ratelimit-resource": resource,
        }

    def _count(self, resource: str) -> bool:
        """Count one request against its resource's budget; True when past it."""
        if resource == "search":
            now = self.clock()
            if now >= self.search_reset:
                self.search_used = 0
                self.search_reset = int(now) + 60
            self.search_used += 1
            return self.search_used > self.search_limit
        self.rate_used += 1
        return self.rate_used > self.rate_limit

    def _fault_for(self, method: str, path: str) -> Fault | None:
        for fault in self.faults:
            if fault.fired >= fault.times or not fault.matches(method, path):
                continue
            if fault.skip > 0:
                fault.skip -= 1
                continue
            fault.fired += 1
            return fault
        return None

    # -- the API ----------------------------------------------------------------------------

    def dispatch(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: dict[str, str],
        body: Any,
    ) -> tuple[int, Any, dict[str, str]]:
        """Answer one request: (status, JSON body, extra headers). Raises _Answer for errors."""
        auth = headers.get("authorization", "")
        scheme, _, given = auth.partition(" ")
        if not auth:
            raise _error(401, "Requires authentication")
        if scheme.lower() not in ("token", "bearer") or given != self.token:
            raise _error(401, "Bad credentials", status="401")
        if not path.startswith(self.prefix + "/"):
            raise _error(404, "Not Found", status="404")
        route = path[len(self.prefix) :]
        if route == "/user" and method == "GET":
            return 200, {**self._user_json(self.login), "name": "xamt bot"}, {}
        if route == "/rate_limit" and method == "GET":
            core = {
                "limit": self.rate_limit,
                "remaining": max(self.rate_limit - self.rate_used, 0),
                "reset": self.rate_reset,
                "used": self.rate_used,
            }
            search = {
                "limit": self.search_limit,
                "remaining": max(self.search_limit - self.search_used, 0),
                "reset": self.search_reset,
                "used": self.search_used,
            }
            return 200, {"resources": {"core": core, "search": search}, "rate": core}, {}
        if route == "/search/issues" and method == "GET":
            return self._search(query)
        match = re.fullmatch(r"/repos/([^/]+)/([^/]+)(/.*)?", route) or re.fullmatch(
            r"/repositories/(\d+)()(/.*)?", route
        )
        if not match:
            raise _error(404, "Not Found", status="404")
        if route.startswith("/repositories/"):
            repo = next((r for r in self._repos.values() if str(r.id) == match.group(1)), None)
        else:
            repo = self._repos.get(f"{match.group(1)}/{match.group(2)}".lower())
        if repo is None or repo.permission == "none":
            raise _error(404, "Not Found", status="404")
        return self._repo_route(repo, method, match.group(3) or "", query, body, path)

    def _need(self, r: _Repo, level: str) -> None:
        if PERMISSIONS.index(r.permission) < PERMISSIONS.index(level):
            raise _error(403, "Resource not accessible by personal access token", status="403")

    def _repo_route(
        self, r: _Repo, method: str, sub: str, query: dict[str, list[str]], body: Any, path: str
    ) -> tuple[int, Any, dict[str, str]]:
        if sub == "" and method == "GET":
            return 200, self._repo_json(r), {}
        if sub == "/labels":
            if method == "GET":
                labels = [self._label_json(r, lab) for lab in r.labels.values()]
                return self._page(labels, query, path)
            if method == "POST":
                self._need(r, "write")
                name = str((body or {}).get("name", ""))
                if not name:
                    raise _error(422, "Validation Failed", errors=[{"code": "missing_field"}])
                if name.lower() in r.labels:
                    raise _error(
                        422,
                        "Validation Failed",
                        errors=[{"resource": "Label", "code": "already_exists", "field": "name"}],
                    )
                r.labels[name.lower()] = {
                    "id": self._next_id(),
                    "name": name,
                    "color": str(body.get("color", "ededed")),
                    "description": body.get("description"),
                }
                return 201, self._label_json(r, r.labels[name.lower()]), {}
        label = re.fullmatch(r"/labels/([^/]+)", sub)
        if label and method == "GET":
            found = r.labels.get(unquote(label.group(1)).lower())
            if found is None:
                raise _error(404, "Not Found", status="404")
            return 200, self._label_json(r, found), {}
        if sub == "/issues":
            if not r.has_issues:
                raise _error(410, "Issues are disabled for this repo")
            if method == "GET":
                return self._list_issues(r, query, path)
            if method == "POST":
                return self._create_issue(r, body)
        one = re.fullmatch(r"/issues/(\d+)(/[a-z]+)?", sub)
        if one:
            number = int(one.group(1))
            issue = r.issues.get(number)
            if issue is None:
                raise _error(404, "Not Found", status="404")
            what = one.group(2) or ""
            if what == "" and method == "GET":
                return 200, self._issue_json(r, issue), {}
            if what == "" and method == "PATCH":
                return self._edit_issue(r, issue, body)
            if what == "/comments":
                if method == "GET":
                    items = [self._comment_json(r, number, c) for c in r.comments.get(number, [])]
                    return self._page(items, query, path)
                if method == "POST":
                    self._need(r, "triage")
                    text = (body or {}).get("body")
                    if not isinstance(text, str) or not text:
                        raise _error(422, "Validation Failed", errors=[{"code": "missing_field"}])
                    self._check_length(text, "IssueComment")
                    comment = {
                        "id": self._next_id(),
                        "body": text,
                        "login": self.login,
                        "created": time.time(),
                    }
                    r.comments.setdefault(number, []).append(comment)
                    issue["updated"] = time.time()
                    return 201, self._comment_json(r, number, comment), {}
            if what == "/labels":
                if method == "GET":
                    return (
                        200,
                        [self._label_json(r, r.labels[n.lower()]) for n in issue["labels"]],
                        {},
                    )
                if method in ("POST", "PUT"):
                    self._need(r, "triage")
                    names = body.get("labels", []) if isinstance(body, dict) else body
                    if not isinstance(names, list):
                        raise _error(422, "Validation Failed")
                    added = [self._ensure_label(r, str(n)) for n in names]
                    current = [] if method == "PUT" else list(issue["labels"])
                    issue["labels"] = list(dict.fromkeys(current + added))
                    issue["updated"] = time.time()
                    return (
                        200,
                        [self._label_json(r, r.labels[n.lower()]) for n in issue["labels"]],
                        {},
                    )
        raise _error(404, "Not Found", status="404")

    @staticmethod
    def _check_length(text: str, resource: str) -> None:
        if len(text) > BODY_LIMIT:
            raise _error(
                422,
                "Validation Failed",
                errors=[
                    {
                        "resource": resource,
                        "code": "custom",
                        "field": "body",
                        "message": f"body is too long (maximum is {BODY_LIMIT} characters)",
                    }
                ],
            )

    def _create_issue(self, r: _Repo, body: Any) -> tuple[int, Any, dict[str, str]]:
        self._need(r, "write")
        if not isinstance(body, dict) or not body.get("title"):
            raise _error(
                422,
                "Validation Failed",
                errors=[{"resource": "Issue", "code": "missing_field", "field": "title"}],
            )
        text = body.get("body") or ""
        self._check_length(str(text), "Issue")
        labels = [
            (lab["name"] if isinstance(lab, dict) else str(lab)) for lab in body.get("labels", [])
        ]
        issue = self._new_issue(r, str(body["title"]), str(text), labels, self.login)
        data = self._issue_json(r, issue)
        return 201, data, {"location": data["url"]}

    def _edit_issue(
        self, r: _Repo, issue: dict[str, Any], body: Any
    ) -> tuple[int, Any, dict[str, str]]:
        self._need(r, "triage")
        if not isinstance(body, dict):
            raise _error(400, "Problems parsing JSON")
        if "body" in body:
            self._check_length(str(body["body"] or ""), "Issue")
            issue["body"] = body["body"] or ""
        if "title" in body:
            issue["title"] = str(body["title"])
        if "labels" in body:
            issue["labels"] = list(
                dict.fromkeys(self._ensure_label(r, str(n)) for n in body["labels"])
            )
        reason = body.get("state_reason")
        if reason is not None and reason not in STATE_REASONS:
            raise _error(422, "Validation Failed", errors=[{"field": "state_reason"}])
        state = body.get("state")
        if state not in (None, "open", "closed"):
            raise _error(422, "Validation Failed", errors=[{"field": "state"}])
        if state == "closed" and issue["state"] != "closed":
            self._close(issue, reason or "completed", self.login)
        elif state == "closed" and reason:
            issue["state_reason"] = reason
        elif state == "open" and issue["state"] == "closed":
            self._reopen(issue)
        issue["updated"] = time.time()
        return 200, self._issue_json(r, issue), {}

    def _list_issues(
        self, r: _Repo, query: dict[str, list[str]], path: str
    ) -> tuple[int, Any, dict[str, str]]:
        state = query.get("state", ["open"])[0]
        wanted = [x.strip().lower() for x in query.get("labels", [""])[0].split(",") if x.strip()]
        items = list(r.issues.values())
        if state in ("open", "closed"):
            items = [i for i in items if i["state"] == state]
        if wanted:
            items = [i for i in items if set(wanted) <= {n.lower() for n in i["labels"]}]
        since = query.get("since", [""])[0]
        if since:
            t = datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC).timestamp()
            items = [i for i in items if i["updated"] >= t]
        sort = query.get("sort", ["created"])[0]
        key = {
            "created": lambda i: (i["created"], i["seq"]),
            "updated": lambda i: (i["updated"], i["seq"]),
            "comments": lambda i: (len(r.comments.get(i["number"], [])), i["seq"]),
        }.get(sort, lambda i: (i["created"], i["seq"]))
        items.sort(key=key, reverse=query.get("direction", ["desc"])[0] != "asc")
        data = [self._issue_json(r, i) for i in items]
        link_path = f"{self.prefix}/repositories/{r.id}/issues"
        return self._page(data, query, link_path)

    def _search(self, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        q = query.get("q", [""])[0]
        if not q.strip():
            raise _error(422, "Validation Failed", errors=[{"field": "q", "code": "missing"}])
        terms: list[str] = []
        quals: dict[str, list[str]] = {}
        for phrase, word in re.findall(r'"([^"]*)"|(\S+)', q):
            if phrase:
                terms.append(phrase.lower())
            elif ":" in word and not word.startswith(":"):
                k, _, v = word.partition(":")
                quals.setdefault(k.lower(), []).append(v)
            else:
                terms.append(word.lower())
        fields = quals.get("in", ["title,body"])[0].split(",")
        for name in quals.get("repo", []):
            known = self._repos.get(name.lower())
            if known is None or known.permission == "none":
                raise _error(
                    422,
                    "Validation Failed",
                    errors=[
                        {
                            "message": "The listed users and repositories cannot be searched "
                            "either because the resources do not exist or you do not have "
                            "permission to view them.",
                            "resource": "Search",
                            "field": "q",
                            "code": "invalid",
                        }
                    ],
                )
        now = time.time()
        hits: list[dict[str, Any]] = []
        for r in self._repos.values():
            if r.permission == "none":
                continue
            if "repo" in quals and r.full_name.lower() not in [v.lower() for v in quals["repo"]]:
                continue
            for issue in sorted(r.issues.values(), key=lambda i: i["seq"]):
                if now - issue["created"] < self.search_lag:
                    continue
                if "is" in quals:
                    if "open" in quals["is"] and issue["state"] != "open":
                        continue
                    if "closed" in quals["is"] and issue["state"] != "closed":
                        continue
                have = {n.lower() for n in issue["labels"]}
                if not {v.lower() for v in quals.get("label", [])} <= have:
                    continue
                if {v.lower() for v in quals.get("-label", [])} & have:
                    continue
                text = " ".join(str(issue[f]) for f in ("title", "body") if f in fields).lower()
                if all(t in text for t in terms):
                    hits.append({**self._issue_json(r, issue), "score": 1.0})
        per_page, page = self._paging(query)
        chunk = hits[(page - 1) * per_page : page * per_page]
        body = {
            "total_count": len(hits),
            "incomplete_results": self.search_incomplete,
            "items": chunk,
        }
        headers = self._links(f"{self.prefix}/search/issues", query, page, per_page, len(hits))
        return 200, body, headers

    def _paging(self, query: dict[str, list[str]]) -> tuple[int, int]:
        try:
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
        except ValueError:
            raise _error(422, "Validation Failed") from None
        return max(1, min(per_page, 100, self.max_per_page)), max(page, 1)

    def _links(
        self, path: str, query: dict[str, list[str]], page: int, per_page: int, total: int
    ) -> dict[str, str]:
        last = max(1, -(-total // per_page))
        if last == 1:
            return {}

        def url(p: int) -> str:
            params = {k: v[0] for k, v in query.items() if k != "page"}
            params["page"] = str(p)
            return f"{self.root}{path}?{urlencode(params)}"

        rels = []
        if page < last:
            rels += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            rels += [f'<{url(page - 1)}>; rel="prev"', f'<{url(1)}>; rel="first"']
        return {"link": ", ".join(rels)} if rels else {}

    def _page(
        self, items: list[Any], query: dict[str, list[str]], path: str
    ) -> tuple[int, Any, dict[str, str]]:
        per_page, page = self._paging(query)
        chunk = items[(page - 1) * per_page : page * per_page]
        return 200, chunk, self._links(path, query, page, per_page, len(items))


class _QuietServer(ThreadingHTTPServer):
    """A client that went away (killed, or dropped by a fault) is no error worth a traceback."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        import sys

        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _handler_for(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "GitHub.com"
        sys_version = ""

        def setup(self) -> None:
            super().setup()
            # Answers go out as headers and body in two writes: without this, Nagle's algorithm
            # and delayed ACKs add 40 ms to each request.
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            return

        def do_GET(self) -> None:
            self._handle("GET")

        def do_POST(self) -> None:
            self._handle("POST")

        def do_PATCH(self) -> None:
            self._handle("PATCH")

        def do_PUT(self) -> None:
            self._handle("PUT")

        def do_DELETE(self) -> None:
            self._handle("DELETE")

        def _drop(self) -> None:
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

        def _send(self, status: int, body: Any, headers: dict[str, str]) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.send_header("x-github-api-version-selected", "2022-11-28")
            self.send_header("x-github-request-id", f"FAKE:{len(fake.log):06d}")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)

        def _handle(self, method: str) -> None:
            split = urlsplit(self.path)
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            headers = {k.lower(): v for k, v in self.headers.items()}
            logged = Logged(
                method=method,
                path=split.path,
                query=parse_qs(split.query),
                headers={k: v for k, v in headers.items() if k != "authorization"},
                body=body,
            )
            resource = "search" if "/search/" in split.path else "core"
            with fake._lock:
                fake.log.append(logged)
                fault = fake._fault_for(method, split.path)
                logged.fault = fault.kind if fault else None
                over = fake._count(resource)
                rate = fake._rate_headers(resource)
            if fault is not None and fault.kind == "drop":
                return self._drop()
            if fault is not None and fault.kind == "error":
                logged.status = fault.status
                return self._send(
                    fault.status, {"message": fault.message, "documentation_url": DOCS}, rate
                )
            if fault is not None and fault.kind == "5xx":
                logged.status = 502
                return self._send(502, {"message": "Server Error"}, rate)
            if (fault is not None and fault.kind.startswith("rate-")) or over:
                return self._rate_limited(fault, logged, rate)
            try:
                with fake._lock:
                    status, data, extra = fake.dispatch(
                        method, split.path, logged.query, headers, body
                    )
            except _Answer as answer:
                status, data, extra = answer.status, answer.body, answer.headers
            logged.status = status
            if fault is not None and fault.kind == "drop-after":
                return self._drop()
            if fault is not None and fault.kind == "5xx-after":
                logged.status = 502
                return self._send(502, {"message": "Server Error"}, rate)
            if fault is not None and fault.kind == "stall-after":
                fake._release.wait(timeout=120)
            self._send(status, data, {**rate, **extra})

        def _rate_limited(self, fault: Fault | None, logged: Logged, rate: dict[str, str]) -> None:
            kind = fault.kind if fault is not None else "rate-primary"
            if kind == "rate-primary":
                if fault is None and rate.get("x-ratelimit-resource") == "search":
                    reset = int(rate["x-ratelimit-reset"])
                else:
                    reset = int(time.time()) + (fault.reset_in if fault else 2)
                logged.status = 403
                return self._send(
                    403,
                    {
                        "message": "API rate limit exceeded for user ID "
                        f"{fake.user_id}. If you reach out to GitHub Support for help, please "
                        "include the request ID.",
                        "documentation_url": DOCS + "/overview/rate-limits-for-the-rest-api",
                        "status": "403",
                    },
                    {**rate, "x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
                )
            assert fault is not None
            status = 429 if kind == "rate-429" else 403
            logged.status = status
            return self._send(
                status,
                {
                    "message": "You have exceeded a secondary rate limit. Please wait a few "
                    "minutes before you try again. If you reach out to GitHub Support for "
                    "help, please include the request ID.",
                    "documentation_url": DOCS + "/overview/rate-limits-for-the-rest-api",
                    "status": str(status),
                },
                {**rate, "retry-after": str(fault.retry_after)},
            )

    return Handler
