"""What to do with findings: ``xamt repro``, ``xamt report``, ``xamt file``, ``xamt merge``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from xamt.cli.catalog import load_catalog
from xamt.cli.common import (
    CampaignOutOpt,
    FindingsArg,
    JsonOpt,
    Variant,
    VariantOpt,
    cell,
    handles_errors,
    out,
    say,
)
from xamt.errors import StoreMissing, UsageError
from xamt.merge import STORE_NAME
from xamt.report.commands import (
    DEFAULT_BASE_URL,
    append_step_summary,
    load_verifications,
    read_token,
    repro_base,
)


def register(app: typer.Typer) -> None:
    app.command("repro")(repro)
    app.command("minimize")(minimize)
    app.command("report")(report)
    app.command("file")(file)
    app.command("merge")(merge)


def existing_store(folder: Path) -> Path:
    """The store of a campaign's output folder; StoreMissing when there is none."""
    path = folder / STORE_NAME
    if not path.is_file():
        raise StoreMissing(
            f"no store at {path}; point --out at the output folder of `xamt fuzz` or `xamt merge`"
        )
    return path


@handles_errors
def repro(
    signature: Annotated[
        str | None,
        typer.Argument(help="A finding's signature (or a unique prefix); omit with --all."),
    ] = None,
    all_: Annotated[bool, typer.Option("--all", help="Re-check every stored finding.")] = False,
    out_dir: CampaignOutOpt = Path("xamt-out"),
    runs: Annotated[int, typer.Option(help="Fresh-worker reruns per finding.")] = 1,
    variant: VariantOpt = Variant.cpu,
    as_json: JsonOpt = False,
) -> None:
    """Re-run stored findings on the installed library versions: still present, or fixed.

    Each verdict is recorded with the finding (versions and time), for the issue filer.

    Example: `xamt repro --all --out xamt-out --json > verifications.json`
    """
    from xamt.store import Store
    from xamt.triage.verify import verify_findings

    if (signature is None) == (not all_):
        raise UsageError("give a SIGNATURE or --all")
    if runs < 1:
        raise UsageError("--runs must be at least 1")
    with Store(existing_store(out_dir)) as store:
        rows = store.findings() if all_ else [store.finding(str(signature))]
        verdicts = verify_findings(
            store, rows, catalog=load_catalog(None), variant=variant.value, runs=runs
        )
    if as_json:
        say(json.dumps([v.as_dict() for v in verdicts], indent=2))
        return
    for v in verdicts:
        state = Text("still present", "red") if v.present else Text("fixed", "green")
        versions = ", ".join(f"{k} {x}" for k, x in sorted(v.versions.items()))
        out.print(Text.assemble(cell(f"{v.signature} {v.key}: "), state, cell(f" on {versions}")))
        for line in v.lines:
            say(f"    {line}")


@handles_errors
def minimize(
    out_dir: CampaignOutOpt = Path("xamt-out"),
    budget: Annotated[
        str, typer.Option(help="Time for minimization (90s, 10m): most severe first.")
    ] = "5m",
    most: Annotated[
        int | None, typer.Option("--max", help="At most this many suspected bugs.")
    ] = None,
    variant: VariantOpt = Variant.cpu,
) -> None:
    """Minimize the suspected bugs a campaign's budget left unminimized, and write findings.json.

    A time-bounded campaign minimizes only the findings its triage share reaches; the rest
    keep their original case. This takes them, most severe first, to the fewest input
    elements that keep the same root cause (key, dtype, trigger, scripts and short repro
    redone; each short repro run standalone). Run it before `xamt file`.

    Example: `xamt minimize --out xamt-out --budget 10m`
    """
    from xamt.fuzz.campaign import parse_budget
    from xamt.triage.later import minimize_left

    seconds = parse_budget(budget).seconds
    if seconds is None:
        raise UsageError(f"--budget {budget!r}: a time (90s, 10m), not a number of cases")
    left = minimize_left(out_dir, seconds=seconds, most=most, variant=variant.value, progress=say)
    if left.taken:
        moved = sum(a < b for a, b in zip(left.elements_after, left.elements_before, strict=False))
        say(
            f"minimized {left.taken} of {left.waiting} suspected bugs in {left.seconds:.0f} s "
            f"({moved} with fewer input elements); wrote {out_dir / 'findings.json'}"
        )


@handles_errors
def report(
    findings: FindingsArg,
    out_dir: Annotated[
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

    Example: `xamt report xamt-out/findings.json --out xamt-report`
    """
    from xamt.paths import write_atomic
    from xamt.report import render

    # The report links the repro scripts (relative to its folder) instead of inlining them.
    doc = render.load_findings(findings)
    families = render.group_families(catalog)
    summary = render.summary_markdown(doc, families)
    html = render.report_html(doc, families, repro_base=repro_base(findings, out_dir))
    write_atomic(out_dir / "summary.md", summary)
    write_atomic(out_dir / "report.html", html)
    say(f"wrote {out_dir / 'summary.md'} and {out_dir / 'report.html'}")
    if step_summary:
        target = append_step_summary(summary)
        if target is not None:
            say(f"appended the summary to {target}")


@handles_errors
def file(
    findings: FindingsArg,
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
    out_dir: Annotated[
        Path, typer.Option("--out", help="Folder for filing-plan.json and the bodies.")
    ] = Path("xamt-filing"),
    state_file: Annotated[
        Path | None, typer.Option(help="Ledger of filed issues (written; read by dry runs).")
    ] = None,
    write_delay: Annotated[float, typer.Option(help="Seconds between two writes to GitHub.")] = 1.0,
    max_wait: Annotated[
        float, typer.Option(help="Most seconds to wait for GitHub's rate limits in all.")
    ] = 900.0,
    upstream_check: Annotated[
        bool,
        typer.Option(
            "--upstream-check/--no-upstream-check",
            help="Search each new finding's library tracker on GitHub before filing (needs a "
            "token; --no-upstream-check for offline use).",
        ),
    ] = True,
) -> None:
    """File the suspected bugs as GitHub issues, one per signature, deduplicated.

    Only suspected bugs are filed, highest ranked first (severity, confidence); documented
    differences and splits never are. A dry run (the default) writes what it would do into
    --out and touches nothing. With --post: opens issues for new findings (at most --max-new),
    comments on open ones seen again, reopens those closed as completed when they come back
    (label `regression`), never reopens what people closed as not planned, and closes issues
    whose finding missed --close-after verifications in a row. Re-running after a failure
    duplicates nothing.

    Each body opens with the defect, its short reproduction, expected against actual and the
    versions, and names the library's own tracker: a prefilled new-issue link on GitHub,
    MindSpore's Gitee page with a ready-to-paste report under --out/upstream/; mxnet is
    retired and never filed. Before filing, the library's GitHub tracker is searched: a
    confident match is filed as a `known-upstream` note and recorded as `upstream` in
    --out/findings.json. --base-url must be https (http only for localhost).

    Example: `xamt file xamt-out/findings.json --repo me/bugs --post`
    """
    from xamt.report import github, render

    if max_new < 0:
        raise UsageError("--max-new must not be negative")
    if close_after < 1:
        raise UsageError("--close-after must be at least 1")
    if write_delay < 0 or max_wait < 0:
        raise UsageError("--write-delay and --max-wait must not be negative")
    github.check_base_url(base_url)
    original = render.load_findings(findings)
    unminimized = sum(
        1
        for f in original.findings
        if f.suspected and f.minimization is not None and f.minimization.stop == "skipped"
    )
    if unminimized:
        say(
            f"note: {unminimized} suspected bug(s) were never minimized (the campaign's time ran "
            f"out): `xamt minimize --out {findings.parent}` takes them to fewer elements first"
        )
    doc = render.with_repro_scripts(original, findings.parent)
    verified = load_verifications(verifications) if verifications is not None else None
    token = read_token(token_file)
    result = github.file_findings(
        doc,
        repo=repo,
        token=token,
        base_url=base_url,
        post=post,
        out_dir=out_dir,
        max_new=max_new,
        close_after=close_after,
        verifications=verified,
        state_file=state_file,
        write_delay=write_delay,
        max_wait=max_wait,
        upstream_check=upstream_check,
        record=original,
        log=say,
    )
    mode = "posted" if result.posted else "dry run (nothing posted; --post to file)"
    counts = ", ".join(f"{k} {n}" for k, n in result.plan.counts().items() if n)
    say(f"{mode}: {counts or 'nothing to do'}; plan in {result.plan_path}")
    by_tracker = result.plan.by_tracker()
    if by_tracker:
        say(
            "by upstream tracker: "
            + "; ".join(
                f"{name} " + ", ".join(f"{k} {n}" for k, n in acts.items())
                for name, acts in by_tracker.items()
            )
        )


@handles_errors
def merge(
    inputs: Annotated[
        list[Path],
        typer.Argument(help="Output folders of `xamt fuzz` (one per shard) to merge."),
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", help="Folder to write the merged store and findings.json to."),
    ] = Path("xamt-merged"),
) -> None:
    """Merge the output folders of sharded campaigns into one, one finding per signature.

    The merged folder holds findings.json (schema 2: one finding per root cause, occurrences
    summed, support matrices merged), xamt.sqlite and repro/, for `xamt report` and
    `xamt file`.

    Example: `xamt merge shard-0 shard-1 shard-2 --out xamt-merged`
    """
    from xamt.merge import merge as merge_folders

    summary = merge_folders(inputs, out_dir)
    libs = ", ".join(f"{lib} {version}" for lib, version in sorted(summary.libraries.items()))
    say(
        f"merged {summary.inputs} folders ({summary.campaigns} campaigns, {summary.cases} "
        f"cases): {summary.findings} findings, {summary.shared} seen in more than one folder, "
        f"{summary.occurrences} occurrences"
    )
    say(f"libraries: {libs or '-'}")
    say(f"wrote {summary.findings_path} and {summary.store}")
