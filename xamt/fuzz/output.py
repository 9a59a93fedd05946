"""The terminal summary of a campaign's findings.json (written by
:func:`xamt.findings_io.write_findings`)."""

from __future__ import annotations

from collections import Counter

from xamt.findings import CLASSIFICATIONS, Document


def summary_lines(document: Document, top: int = 15) -> list[str]:
    """The terminal summary: counts by classification and kind, then the suspected bugs by
    rank (severity, confidence, occurrences)."""
    findings = document.findings
    camp = document.campaign
    cases, seconds = camp.get("cases", 0), camp.get("seconds", 0.0)
    by_class = Counter(f.classification for f in findings)
    lines = [
        f"{cases} cases in {seconds:.0f} s ({cases / max(seconds, 1e-9):.0f}/s); "
        f"{len(findings)} root causes: "
        + ", ".join(f"{by_class.get(c, 0)} {c}" for c in CLASSIFICATIONS)
    ]
    for c in CLASSIFICATIONS:
        kinds = Counter(f.kind for f in findings if f.classification == c)
        if kinds:
            lines.append(f"  {c}: " + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())))
    bugs = [f for f in document.ranked() if f.suspected]
    refused = sum(
        state == "refused"
        for libs in document.support.values()
        for dtypes in libs.values()
        for state in dtypes.values()
    )
    if refused:
        lines.append(f"  support matrix: {refused} (group, library, dtype) refusals, not bugs")
    grads = camp.get("gradients")
    if isinstance(grads, dict):
        per_lib = ", ".join(f"{lib} {n}" for lib, n in sorted(grads.items()) if lib != "cases")
        lines.append(
            f"  gradients: {grads.get('cases', 0)} gradient cases; gradients returned by "
            f"{per_lib or 'no library'}"
        )
    if bugs:
        lines.append("suspected bugs, most severe first:")
    for f in bugs[:top]:
        lines.append(
            f"  {f.severity:8} {f.confidence:9} {f.kind:11} {f.callable:32} {f.dtype:9} "
            f"{f.trigger:14} x{f.occurrences}"
        )
    if len(bugs) > top:
        lines.append(f"  ... and {len(bugs) - top} more in findings.json")
    return lines
