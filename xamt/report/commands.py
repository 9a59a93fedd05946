"""Command functions for the CLI: ``xamt report`` and ``xamt file``.

Plain functions with Typer options, registered by ``xamt.cli`` (wrapped in its error handler).
Errors a user can cause are :class:`~xamt.errors.XamtError` subclasses with documented exit
codes: 2 (bad usage), 11 (output folder), 13 (token), 14 (repository), 15 (permission),
16 (GitHub kept failing), 17 (a findings or verification file that cannot be read: missing,
not JSON, findings.json schema 1, or a field of the wrong type).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import quote

import typer

from xamt.errors import OutputError, UsageError
from xamt.fuzz.output import write_atomic

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


def report(
    findings: Annotated[Path, typer.Argument(help="findings.json written by `xamt fuzz`.")],
    out: Annotated[
        Path, typer.Option("--out", help="Folder for summary.md and report.html.")
    ] = Path("xamt-report"),
    catalog: Annotated[
        Path | None,
        typer.Option(help="Catalog file giving group families (default: the committed one)."),
    ] = None,
    step_summary: Annotated[
        bool,
        typer.Option(
            "--step-summary/--no-step-summary",
            help="Append the summary to $GITHUB_STEP_SUMMARY when that is set.",
        ),
    ] = True,
) -> None:
    """Render a campaign's findings: summary.md (Markdown) and report.html (with a picture).

    Both list the suspected bugs by rank (severity, confidence), the documented differences by
    policy, the splits, the support matrix and the counts by classification and kind. Inside
    GitHub Actions the summary is also appended to the job's step summary.
    """
    from xamt.report import render

    # The report links the repro scripts (relative to its folder) instead of inlining them.
    doc = render.load_findings(findings)
    families = render.group_families(catalog)
    summary = render.summary_markdown(doc, families)
    html = render.report_html(doc, families, repro_base=repro_base(findings, out))
    write_atomic(out / "summary.md", summary)
    write_atomic(out / "report.html", html)
    typer.echo(f"wrote {out / 'summary.md'} and {out / 'report.html'}")
    if step_summary:
        target = append_step_summary(summary)
        if target is not None:
            typer.echo(f"appended the summary to {target}")


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


def file(
    findings: Annotated[Path, typer.Argument(help="findings.json written by `xamt fuzz`.")],
    repo: Annotated[str, typer.Option("--repo", help="Repository to file into: owner/name.")],
    post: Annotated[
        bool,
        typer.Option(
            "--post/--dry-run",
            help="Post to GitHub. The default is a dry run: write the plan and bodies only.",
        ),
    ] = False,
    token_file: Annotated[
        Path | None,
        typer.Option(help="File holding the token (default: $GITHUB_TOKEN)."),
    ] = None,
    base_url: Annotated[
        str,
        typer.Option(
            envvar="GITHUB_API_URL",
            help="GitHub API URL (GitHub Enterprise Server: https://HOST/api/v3).",
        ),
    ] = DEFAULT_BASE_URL,
    max_new: Annotated[int, typer.Option(help="Most new issues opened per run.")] = 10,
    close_after: Annotated[
        int, typer.Option(help="Close an issue after this many verifications in a row miss.")
    ] = 3,
    verifications: Annotated[
        Path | None,
        typer.Option(
            help="JSON: signature -> reproduced (true/false) for filed findings; the findings' "
            "own recorded verifications are used too."
        ),
    ] = None,
    out: Annotated[
        Path, typer.Option("--out", help="Folder for filing-plan.json and the bodies.")
    ] = Path("xamt-filing"),
    state_file: Annotated[
        Path | None, typer.Option(help="Ledger of filed issues (written; read by dry runs).")
    ] = None,
    write_delay: Annotated[float, typer.Option(help="Seconds between two writes to GitHub.")] = 1.0,
    max_wait: Annotated[
        float, typer.Option(help="Most seconds to wait for GitHub's rate limits in all.")
    ] = 900.0,
) -> None:
    """File the suspected bugs as GitHub issues, one per signature, deduplicated.

    Only suspected bugs are filed, highest ranked first (severity, confidence); documented
    differences and splits never are. A dry run (the default) writes what it would do into
    --out and touches nothing. With --post: opens issues for new findings (at most --max-new),
    comments on open ones seen
    again, reopens those closed as completed when they come back (label `regression`), never
    reopens what people closed as not planned, and closes issues whose finding missed
    --close-after verifications in a row. Re-running after a failure duplicates nothing.
    """
    from xamt.report import github, render

    if max_new < 0:
        raise UsageError("--max-new must not be negative")
    if close_after < 1:
        raise UsageError("--close-after must be at least 1")
    if write_delay < 0 or max_wait < 0:
        raise UsageError("--write-delay and --max-wait must not be negative")
    doc = render.with_repro_scripts(render.load_findings(findings), findings.parent)
    verified = load_verifications(verifications) if verifications is not None else None
    token = read_token(token_file)
    result = github.file_findings(
        doc,
        repo=repo,
        token=token,
        base_url=base_url,
        post=post,
        out_dir=out,
        max_new=max_new,
        close_after=close_after,
        verifications=verified,
        state_file=state_file,
        write_delay=write_delay,
        max_wait=max_wait,
        log=typer.echo,
    )
    mode = "posted" if result.posted else "dry run (nothing posted; --post to file)"
    counts = ", ".join(f"{k} {n}" for k, n in result.plan.counts().items() if n)
    typer.echo(f"{mode}: {counts or 'nothing to do'}; plan in {result.plan_path}")
