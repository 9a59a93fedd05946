"""What ``xamt report`` and ``xamt file`` (in :mod:`xamt.cli.findings`) read and append to:
the job's step summary, the GitHub token, a verifications file.

Errors a user can cause are :class:`~xamt.errors.XamtError` subclasses with documented exit
codes: 2 (bad usage), 11 (output folder), 13 (token), 14 (repository), 15 (permission),
16 (GitHub kept failing), 17 (a findings or verification file that cannot be read: missing,
not JSON, findings.json schema 1, or a field of the wrong type).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from xamt.errors import OutputError

DEFAULT_BASE_URL = "https://api.github.com"
# GitHub keeps at most 1 MiB of step summary per step.
STEP_SUMMARY_LIMIT = 1024 * 1024


def append_step_summary(markdown: str, path: str | None = None) -> Path | None:
    """Append ``markdown`` to the file named by ``$GITHUB_STEP_SUMMARY`` (when set)."""
    target = path if path is not None else os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        return None
    data = markdown.encode("utf-8")
    if len(data) > STEP_SUMMARY_LIMIT - 1024:
        cut = data[: STEP_SUMMARY_LIMIT - 1024].decode("utf-8", errors="ignore")
        markdown = cut[: cut.rfind("\n") + 1] + "\n… (cut to fit the step summary)\n"
    try:
        with open(target, "a", encoding="utf-8") as fh:
            fh.write(markdown if markdown.endswith("\n") else markdown + "\n")
    except OSError as exc:
        raise OutputError(f"{target} ($GITHUB_STEP_SUMMARY): cannot append ({exc})") from None
    return Path(target)


def repro_base(findings: Path, out: Path) -> str:
    """The URL of the folder of ``findings`` relative to the report folder ``out``, ending in
    ``/`` (``../`` for the usual ``OUT/report`` beside ``OUT/findings.json``); "" when they are
    the same folder."""
    rel = os.path.relpath(Path(findings).resolve().parent, Path(out).resolve())
    return "" if rel == "." else quote(Path(rel).as_posix()) + "/"


def read_token(token_file: Path | None, env: dict[str, str] | None = None) -> str | None:
    """The token from ``token_file``, else from ``$GITHUB_TOKEN``; None when neither has one."""
    from xamt.report.github import TokenError

    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenError(
                f"{token_file}: cannot read the token file ({type(exc).__name__}); "
                "name a readable file holding the token"
            ) from None
        if not token:
            raise TokenError(f"{token_file}: the token file is empty")
        if any(ch.isspace() for ch in token):
            raise TokenError(f"{token_file}: the token file holds more than one word")
        return token
    token = (env if env is not None else os.environ).get("GITHUB_TOKEN", "").strip()
    return token or None


def load_verifications(path: Path) -> dict[str, bool]:
    """Read ``signature -> reproduced`` from a JSON file.

    Accepted: ``{"SIG": true, ...}``, ``{"verifications": {...}}``, or a list of
    ``{"signature": "SIG", "reproduced": true}`` or ``{"signature": "SIG", "present": true}``
    (what ``xamt repro --all --json`` prints).
    """
    from xamt.findings import FindingsError

    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FindingsError(f"{path}: not a readable verification file ({exc})") from None
    if isinstance(data, dict) and isinstance(data.get("verifications"), dict | list):
        data = data["verifications"]
    if isinstance(data, list):
        try:
            data = {
                str(e["signature"]): e["reproduced"] if "reproduced" in e else e["present"]
                for e in data
            }
        except (KeyError, TypeError):
            raise FindingsError(
                f"{path}: a list of verifications needs 'signature' and 'reproduced' (or "
                "'present') in each"
            ) from None
    if not isinstance(data, dict) or not all(isinstance(v, bool) for v in data.values()):
        raise FindingsError(f"{path}: expected a mapping of signature to true/false")
    return {str(k): bool(v) for k, v in data.items()}
