"""Render findings.json with the Jinja templates in ``templates/``.

Issue titles and bodies, recurrence, regression and closing comments, the campaign summary
(Markdown, also for ``$GITHUB_STEP_SUMMARY``) and a self-contained HTML report with inline SVG
pictures (findings by group family x library, findings by kind). Templates are presentational:
everything they show is prepared here as plain "views" (dicts of strings and numbers).

Note:
    Safety of Markdown meant for GitHub. Every ``{{ expression }}`` of a Markdown template passes
    through :func:`neutralize` (``@mention`` and ``#123`` get a zero-width joiner, so an issue
    filed by a robot never pings a person nor links an unrelated issue) and has ``<``, ``>``
    and ``&`` escaped, unless a filter already made it safe: text that comes from libraries
    (exception messages, reprs) goes through :func:`code_block` (a fence longer than any run of
    backticks inside, so nothing can close it early) or :func:`inline_code`. Templates are
    rendered with ``StrictUndefined``: a misspelt field is an error, never an empty string.

    Where the templates come from: ``templates/`` of a source checkout
    (``Path(xamt.__file__).parent.parent / "templates"``) first, then the copy packaged into a
    wheel as ``xamt/_templates``.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import numpy as np
from markupsafe import Markup

import xamt
from xamt.errors import XamtError
from xamt.serialize import from_jsonable
from xamt.types import DISCREPANCY_KINDS
from xamt.workers.protocol import BFloat16, DType

FINDINGS_SCHEMA = 1
# GitHub refuses an issue or comment body longer than this (characters).
GITHUB_BODY_LIMIT = 65536
# The most characters of one library's text (exception, repr) shown in one code block.
CODE_LIMIT = 4000
INLINE_LIMIT = 120
TEMPLATE_SENTINEL = "issue_body.md.j2"
# The most characters of one repro script shown in an issue.
REPRO_LIMIT = 8000
TITLE_LIMIT = 200
SUMMARY_ROWS = 50
CLASSIFICATIONS = ("suspected-bug", "documented-difference")
# Library names are not known to be the only columns: unknown ones are appended in order.
NO_ODD_COLUMN = "(none odd)"
UNKNOWN_FAMILY = "unknown"
# Names of the hidden markers the GitHub filer writes; text from libraries never carries them.
MARKER_NAMES = ("xamt-signature", "xamt-state", "xamt-run")

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_REFERENCE = re.compile(r"#(?=[0-9])")
_GH_REFERENCE = re.compile(r"\b(GH)-(?=[0-9])", re.IGNORECASE)
_BACKTICKS = re.compile(r"`+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_FENCE_LINE = re.compile(r"^(`{3,})")


class FindingsError(XamtError):
    """A findings file (or a verification file) that cannot be read: missing, not JSON, or not
    a findings.json of a schema this xamt reads. The message names the file."""

    exit_code = 17


# -- loading findings.json ------------------------------------------------------------------


def load_findings(path: Path) -> dict[str, Any]:
    """Read and check a findings.json; every problem is a :class:`FindingsError` naming it."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FindingsError(
            f"{path}: no such file; run `xamt fuzz --out DIR` and name DIR/findings.json"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FindingsError(f"{path}: not a readable findings.json ({exc})") from None
    return check_findings(doc, str(path))


def check_findings(doc: Any, where: str = "findings") -> dict[str, Any]:
    """Check the parts of a findings document that reports rely on; return it unchanged."""
    if not isinstance(doc, dict) or doc.get("schema") != FINDINGS_SCHEMA:
        raise FindingsError(f"{where}: expected a findings.json of schema {FINDINGS_SCHEMA}")
    findings = doc.get("findings")
    if not isinstance(findings, list):
        raise FindingsError(f"{where}: 'findings' is not a list")
    if not isinstance(doc.get("libraries", {}), dict):
        raise FindingsError(f"{where}: 'libraries' is not a mapping of library to version")
    for i, f in enumerate(findings):
        if not isinstance(f, dict):
            raise FindingsError(f"{where}: finding #{i} is not an object")
        missing = [k for k in ("signature", "kind", "group", "dtype") if not f.get(k)]
        if missing:
            raise FindingsError(f"{where}: finding #{i} lacks {', '.join(missing)}")
    return doc


# -- Markdown safety ------------------------------------------------------------------------


def neutralize(text: str) -> str:
    """Keep GitHub from turning ``@name`` into a mention and ``#12``/``GH-12`` into a link."""
    text = _MENTION.sub("@" + _ZWJ, text)
    text = _REFERENCE.sub("#" + _ZWJ, text)
    return _GH_REFERENCE.sub(lambda m: m.group(1) + _ZWJ + "-", text)


def _hide_markers(text: str) -> str:
    for name in MARKER_NAMES:
        text = text.replace(name, name.replace("-", _ZWJ + "-", 1))
    return text


def clip(text: str, limit: int) -> str:
    """At most ``limit`` characters, saying how many were left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"… ({len(text) - limit} more characters)"


def _clean(text: Any) -> str:
    return _CONTROL.sub("\ufffd", str(text).replace("\r\n", "\n").replace("\r", "\n"))


def fence_for(text: str) -> str:
    """A backtick fence longer than any run of backticks in ``text`` (at least three)."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(text)), default=0)
    return "`" * max(3, longest + 1)


def code_block(text: Any, lang: str = "", limit: int = CODE_LIMIT) -> Markup:
    """A fenced code block no content can break out of, clipped to ``limit`` characters."""
    body = _hide_markers(clip(_clean(text), limit)).rstrip("\n")
    fence = fence_for(body)
    return Markup(f"{fence}{lang}\n{body}\n{fence}")


def inline_code(text: Any, limit: int = INLINE_LIMIT, *, in_table: bool = False) -> Markup:
    """An inline code span on one line; ``in_table`` also escapes ``|`` for GFM tables."""
    body = _hide_markers(clip(" ".join(_clean(text).split()), limit))
    if in_table:
        body = body.replace("|", "\\|")
    if not body:
        return Markup("")
    ticks = "`" * (max((len(m.group()) for m in _BACKTICKS.finditer(body)), default=0) + 1)
    pad = " " if body.startswith("`") or body.endswith("`") else ""
    return Markup(f"{ticks}{pad}{body}{pad}{ticks}")


def table_cell(text: Any) -> Markup:
    """A value for a Markdown table cell: inline code, pipes escaped."""
    return inline_code(text, in_table=True)


def _markdown_text(value: Any) -> str:
    """``finalize`` of the Markdown templates: plain values are neutralized and escaped."""
    if isinstance(value, Markup):
        return str(value)
    text = neutralize(_hide_markers(_clean(value)))
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _title_text(value: Any) -> str:
    if isinstance(value, Markup):
        return str(value)
    return neutralize(_hide_markers(" ".join(_clean(value).split())))


def _utf16_units(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


def fit_body(text: str, limit: int = GITHUB_BODY_LIMIT, *, tail: str = "") -> str:
    """``text + tail`` cut to GitHub's body limit, keeping ``tail`` (the hidden markers) whole.

    A cut inside a code block or a ``<details>`` element closes them, and a line says how much
    was left out. Lengths are counted in UTF-16 units, never fewer than GitHub counts.
    """
    full = text + tail
    if _utf16_units(full) <= limit:
        return full
    budget = limit - _utf16_units(tail) - 200
    while True:
        head = text[: max(budget, 0)]
        if "\n" in head:
            head = head[: head.rfind("\n") + 1]
        closing = _closers(head)
        notice = (
            f"\n*… truncated: {len(text) - len(head)} characters left out to fit GitHub's limit "
            f"of {limit} characters; the full text is in the filing plan's files.*\n\n"
        )
        result = head + closing + notice + tail
        excess = _utf16_units(result) - limit
        if excess <= 0:
            return result
        budget -= excess + 16


def _closers(head: str) -> str:
    fence: str | None = None
    details = 0
    for line in head.splitlines():
        match = _FENCE_LINE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
            elif line.startswith("<details"):
                details += 1
            elif line.startswith("</details>"):
                details = max(details - 1, 0)
        else:
            stripped = line.strip()
            if stripped and set(stripped) == {"`"} and len(stripped) >= len(fence):
                fence = None
    out = "" if head.endswith("\n") or not head else "\n"
    if fence is not None:
        out += fence + "\n"
    out += "\n</details>\n" * details
    return out


# -- templates ------------------------------------------------------------------------------


def template_dirs() -> list[Path]:
    """Where templates are looked for, in order: the checkout's ``templates/``, then the copy
    packaged as ``xamt/_templates``."""
    package = Path(xamt.__file__).resolve().parent
    return [package.parent / "templates", package / "_templates"]


@cache
def _environment(kind: str) -> jinja2.Environment:
    """``kind``: 'md' (GitHub Markdown), 'title' (one plain line) or 'html'."""
    # A folder counts only if it holds xamt's templates (site-packages/templates could be
    # another package's).
    dirs = [str(d) for d in template_dirs() if (d / TEMPLATE_SENTINEL).is_file()]
    if not dirs:
        raise FileNotFoundError(
            "xamt's templates are missing (looked in "
            + ", ".join(str(d) for d in template_dirs())
            + "); reinstall xamt"
        )
    options: dict[str, Any] = {
        "loader": jinja2.FileSystemLoader(dirs),
        "undefined": jinja2.StrictUndefined,
        "keep_trailing_newline": True,
        "trim_blocks": False,
        "lstrip_blocks": False,
    }
    if kind == "html":
        env = jinja2.Environment(autoescape=True, **options)
    else:
        finalize = _title_text if kind == "title" else _markdown_text
        env = jinja2.Environment(autoescape=False, finalize=finalize, **options)
    env.filters["code"] = code_block
    env.filters["inline"] = inline_code
    env.filters["cell"] = table_cell
    return env


def render(template: str, kind: str = "md", **context: Any) -> str:
    """Render one template of ``templates/`` (``kind`` as in :func:`_environment`)."""
    return _environment(kind).get_template(template).render(**context)


# -- views ----------------------------------------------------------------------------------

_PHRASE_NOUN = {
    "nan": "NaN positions",
    "inf": "infinities",
    "signed-zero": "signs of zeros",
    "value": "values",
}


def _shape_text(shape: Any) -> str:
    if isinstance(shape, list | tuple):
        return "[" + ", ".join(str(s) for s in shape) + "]"
    return "[?]"


def short_result(output: Mapping[str, Any]) -> str:
    """One short phrase for what a library did: ``int8[4, 4]``, ``TypeError``, ``SIGABRT``."""
    status = str(output.get("status", "missing"))
    error = output.get("error") if isinstance(output.get("error"), dict) else {}
    if status == "ok" and "dtype" in output:
        return f"{output['dtype']}{_shape_text(output.get('shape'))}"
    if status == "error" and error:
        return str(error.get("type", "error"))
    if status == "crash":
        return str(output.get("signal") or "crashed")
    if status == "hang":
        return "missed the deadline"
    if status == "resource":
        return "exceeded the memory cap"
    first = str(output.get("result", "")).splitlines()[:1]
    return clip(first[0], 60) if first else status


def _names(libs: Iterable[str]) -> str:
    libs = list(libs)
    if len(libs) <= 2:
        return " and ".join(libs)
    return ", ".join(libs[:-1]) + " and " + libs[-1]


def _most_common(values: Iterable[str]) -> str:
    counted = Counter(values).most_common(1)
    return counted[0][0] if counted else "?"


def phrase(finding: Mapping[str, Any]) -> str:
    """What differs, in one line (no library text beyond type and signal names)."""
    kind = str(finding.get("kind", "?"))
    outputs: Mapping[str, Any] = finding.get("outputs") or {}
    odd = [str(x) for x in finding.get("odd") or []]
    others = [lib for lib in outputs if lib not in odd]
    if not odd:
        return f"the libraries disagree ({kind})"
    who = _names(odd)
    plural = len(odd) > 1
    first = outputs.get(odd[0], {})
    if kind == "crash":
        return f"{who} crash{'' if plural else 'es'} ({short_result(first)})"
    if kind == "hang":
        return f"{who} hang{'' if plural else 's'} (missed the deadline)"
    if kind == "resource":
        return f"{who} exceed{'' if plural else 's'} the memory cap"
    verb = "return" if plural else "returns"
    rest = _names(others) or "the others"
    if kind == "status":
        if first.get("status") == "error":
            return f"{who} raise{'' if plural else 's'} {short_result(first)} where {rest} return"
        return f"{who} {verb} {short_result(first)} where {rest} raise"
    if kind == "shape":
        theirs = _most_common(_shape_text(outputs[o].get("shape")) for o in others)
        return f"{who} {verb} shape {_shape_text(first.get('shape'))} where {rest} give {theirs}"
    if kind == "dtype":
        theirs = _most_common(str(outputs[o].get("dtype", "?")) for o in others)
        return f"{who} {verb} {first.get('dtype', '?')} where {rest} give {theirs}"
    noun = _PHRASE_NOUN.get(kind, kind)
    return f"{who} differ{'' if plural else 's'} from {rest} in the {noun}"


def _array_text(name: str, arr: np.ndarray, dtype_name: str) -> str:
    if arr.ndim == 0:
        return f"{name}: {dtype_name}[] = {arr.item()!r}"
    body = np.array2string(
        np.asarray(arr),
        separator=", ",
        threshold=30,
        edgeitems=3,
        max_line_width=88,
        precision=8,
        floatmode="maxprec",
    )
    return f"{name}: {dtype_name}{_shape_text(list(arr.shape))}\n{body}"


def compact_value(role: str, data: Any) -> str:
    """One input, decoded with :func:`xamt.serialize.from_jsonable` and shown compactly."""
    try:
        value = from_jsonable(data)
    except (KeyError, TypeError, ValueError) as exc:
        return f"{role} = <cannot decode: {exc}> {clip(json.dumps(data), 200)}"
    return _value_text(role, value)


def _value_text(role: str, value: Any) -> str:
    if isinstance(value, BFloat16):
        return _array_text(role, value.values, "bfloat16")
    if isinstance(value, np.ndarray):
        return _array_text(role, value, value.dtype.name)
    if isinstance(value, np.generic):
        return f"{role} = {value.dtype.name}({value.item()!r})"
    if isinstance(value, DType):
        return f"{role} = dtype {value.name}"
    if isinstance(value, list | tuple) and any(isinstance(v, np.ndarray | BFloat16) for v in value):
        return "\n".join(_value_text(f"{role}[{i}]", v) for i, v in enumerate(value))
    return f"{role} = {value!r}"


def _repro_scripts(repro: Any) -> list[dict[str, Any]]:
    """The finding's ``repro`` field as template rows ``{library, text, path}``.

    ``repro`` maps a library (or ``xamt``, the cross-library script) to a script: its text
    (see :func:`with_repro_scripts`) or its path in the campaign's output folder. A single
    string is one script.
    """
    if not repro:
        return []
    items = repro.items() if isinstance(repro, dict) else [(None, repro)]
    rows = []
    for library, value in items:
        text = _clean(value)
        if "\n" in text:
            rows.append({"library": library, "text": clip(text, REPRO_LIMIT), "path": ""})
        else:
            rows.append({"library": library, "text": "", "path": text})
    return rows


def with_repro_scripts(doc: Mapping[str, Any], base_dir: Path) -> dict[str, Any]:
    """A copy of ``doc`` whose ``repro`` paths are replaced by the scripts' text.

    Paths are relative to ``base_dir`` (the folder of findings.json). Only files inside it are
    read, so a findings file can never make a report or an issue show another file.
    """
    root = Path(base_dir).resolve()
    findings = []
    for f in doc.get("findings") or []:
        repro = f.get("repro")
        if isinstance(repro, dict):
            loaded = {}
            for library, value in repro.items():
                loaded[library] = value
                if isinstance(value, str) and "\n" not in value:
                    path = (root / value).resolve()
                    if path.is_relative_to(root) and path.is_file():
                        try:
                            loaded[library] = path.read_text(encoding="utf-8")
                        except (OSError, UnicodeDecodeError):
                            pass
            f = {**f, "repro": loaded}
        findings.append(f)
    return {**doc, "findings": findings}


def _known(finding: Mapping[str, Any]) -> dict[str, str] | None:
    known = finding.get("known_difference")
    if isinstance(known, dict):
        return {k: str(known.get(k) or "") for k in ("id", "reason", "link")}
    return None


def finding_view(
    finding: Mapping[str, Any],
    libraries: Mapping[str, str],
    families: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Everything the templates show of one finding, as plain strings, numbers and lists."""
    outputs: Mapping[str, Any] = finding.get("outputs") or {}
    apis: Mapping[str, Any] = finding.get("apis") or {}
    odd = [str(x) for x in finding.get("odd") or []]
    rows = []
    for name in dict.fromkeys([*apis, *outputs]):
        out = outputs.get(name) or {}
        rows.append(
            {
                "name": name,
                "version": str(libraries.get(name, "?")),
                "api": str(apis.get(name) or out.get("api", "?")),
                "status": str(out.get("status", "missing")),
                "short": short_result(out),
                "odd": name in odd,
                "text": clip(_clean(out.get("result", "")), CODE_LIMIT),
            }
        )
    case = finding.get("case") or {}
    values = case.get("values") or {}
    inputs_text = "\n".join(compact_value(role, v) for role, v in values.items()) or "(none)"
    group = str(finding["group"])
    return {
        "signature": str(finding["signature"]),
        "kind": str(finding["kind"]),
        "classification": str(finding.get("classification", "suspected-bug")),
        "known": _known(finding),
        "group": group,
        "family": (families or {}).get(group, UNKNOWN_FAMILY),
        "dtype": str(finding["dtype"]),
        "odd": odd,
        "input_classes": [str(t) for t in finding.get("input_classes") or []],
        "reproduced": finding.get("reproduced", "?"),
        "runs": finding.get("runs", finding.get("reproduced", "?")),
        "occurrences": finding.get("occurrences", 1),
        "phrase": phrase(finding),
        "detail": clip(_clean(finding.get("detail", "")), CODE_LIMIT),
        "libraries": rows,
        "value_class": str(case.get("value_class", "?")),
        "seed": case.get("seed", "?"),
        "inputs_text": inputs_text,
        "repro": sorted(  # the odd libraries' scripts first, the cross-library one last
            _repro_scripts(finding.get("repro")),
            key=lambda r: (r["library"] not in odd, r["library"] == "xamt"),
        ),
    }


def campaign_view(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The campaign fields the templates show, with defaults for absent ones."""
    camp: Mapping[str, Any] = doc.get("campaign") or {}
    return {
        "name": str(camp.get("name", "?")),
        "seed": camp.get("seed", "?"),
        "cases": camp.get("cases", "?"),
        "budget": str(camp.get("budget", "?")),
    }


def versions_text(libraries: Mapping[str, str]) -> str:
    """``numpy 2.4.6, torch 2.13.0``."""
    return ", ".join(f"{lib} {version}" for lib, version in libraries.items()) or "no libraries"


# -- issue bodies and comments --------------------------------------------------------------


def issue_title(finding: Mapping[str, Any], libraries: Mapping[str, str]) -> str:
    """The issue title: one line, at most :data:`TITLE_LIMIT` characters."""
    text = " ".join(
        render("issue_title.txt.j2", "title", f=finding_view(finding, libraries)).split()
    )
    return text if len(text) <= TITLE_LIMIT else text[: TITLE_LIMIT - 1] + "…"


def issue_body(finding: Mapping[str, Any], doc: Mapping[str, Any], *, markers: str = "") -> str:
    """The issue body of a finding, fitted to GitHub's limit with ``markers`` kept at the end."""
    libraries = doc.get("libraries") or {}
    text = render(
        "issue_body.md.j2",
        f=finding_view(finding, libraries),
        campaign=campaign_view(doc),
        xamt_version=str(doc.get("xamt_version", xamt.__version__)),
        markers=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(markers))


def _tail(markers: str) -> str:
    return f"\n{markers.strip()}\n" if markers.strip() else ""


def recurrence_comment(
    finding: Mapping[str, Any], doc: Mapping[str, Any], *, occurrences: int, marker: str = ""
) -> str:
    """The comment on an open issue whose finding was seen again."""
    text = render(
        "comment_recurrence.md.j2",
        f=finding_view(finding, doc.get("libraries") or {}),
        campaign=campaign_view(doc),
        xamt_version=str(doc.get("xamt_version", xamt.__version__)),
        occurrences=occurrences,
        marker=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(marker))


def regression_comment(
    finding: Mapping[str, Any] | None,
    doc: Mapping[str, Any],
    *,
    occurrences: int,
    marker: str = "",
) -> str:
    """The comment on a reopened issue (``finding`` is None when only a verification saw it)."""
    libraries = doc.get("libraries") or {}
    text = render(
        "comment_regression.md.j2",
        f=finding_view(finding, libraries) if finding is not None else None,
        versions=versions_text(libraries),
        occurrences=occurrences,
        marker=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(marker))


def closing_comment(doc: Mapping[str, Any], *, misses: int, marker: str = "") -> str:
    """The comment on an issue closed because its finding no longer reproduces."""
    text = render(
        "comment_closing.md.j2",
        misses=misses,
        versions=versions_text(doc.get("libraries") or {}),
        marker=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(marker))


# -- campaign summary and HTML report -------------------------------------------------------


def group_families(catalog_path: Path | None = None) -> dict[str, str]:
    """Group id -> family, from the catalog (``xamt.catalog.model.load``)."""
    from xamt.catalog import model

    catalog = model.load(catalog_path) if catalog_path else model.load()
    return {g.id: g.family for g in catalog.groups}


def kind_order(kind: str) -> tuple[int, str]:
    """Sort key of a discrepancy kind: the order of ``xamt.types.DISCREPANCY_KINDS``."""
    return (DISCREPANCY_KINDS.index(kind) if kind in DISCREPANCY_KINDS else 99, kind)


def summary_view(doc: Mapping[str, Any], rows: int = SUMMARY_ROWS) -> dict[str, Any]:
    """Totals of a campaign for the summary and the HTML report."""
    findings: Sequence[Mapping[str, Any]] = doc.get("findings") or []
    camp: Mapping[str, Any] = doc.get("campaign") or {}
    libraries: Mapping[str, str] = doc.get("libraries") or {}
    odd_counts = Counter(lib for f in findings for lib in f.get("odd") or [])
    documented = sum(1 for f in findings if f.get("classification") == "documented-difference")
    seconds = camp.get("seconds")
    kinds = Counter(str(f["kind"]) for f in findings)
    return {
        "total": len(findings),
        "suspected": len(findings) - documented,
        "documented": documented,
        "cases": camp.get("cases", "?"),
        "seconds": f"{seconds:.0f}" if isinstance(seconds, int | float) else "?",
        "name": str(camp.get("name", "?")),
        "seed": camp.get("seed", "?"),
        "budget": str(camp.get("budget", "?")),
        "schedule": str(camp.get("schedule", "")),
        "shard": str(camp.get("shard", "")),
        "xamt_version": str(doc.get("xamt_version", "?")),
        "schema": doc.get("schema", "?"),
        "libraries": [
            {"name": lib, "version": str(v), "odd": odd_counts.get(lib, 0)}
            for lib, v in libraries.items()
        ],
        "kinds": sorted(kinds.items(), key=lambda kv: kind_order(kv[0])),
        "rows": [
            {
                "kind": str(f["kind"]),
                "classification": str(f.get("classification", "suspected-bug")),
                "group": str(f["group"]),
                "dtype": str(f["dtype"]),
                "odd": [str(x) for x in f.get("odd") or []],
                "input_classes": [str(t) for t in f.get("input_classes") or []],
                "signature": str(f["signature"]),
            }
            for f in list(findings)[:rows]
        ],
        "more": max(len(findings) - rows, 0),
    }


def summary_markdown(doc: Mapping[str, Any]) -> str:
    """The campaign summary in Markdown (what goes to ``$GITHUB_STEP_SUMMARY``)."""
    return render("summary.md.j2", s=summary_view(doc)).rstrip("\n") + "\n"


_EMPTY_FILL = "#eef1f4"
_LOW = (253, 224, 197)
_HIGH = (179, 38, 30)
_KIND_FILL = {
    "crash": "#b3261e",
    "hang": "#b3261e",
    "resource": "#b3261e",
    "status": "#d4761c",
}
_OUTPUT_FILL = "#2f6fb5"


def _fill(count: int, top: int) -> tuple[str, str]:
    """Cell colour and text colour: light orange to deep red on a square-root scale."""
    if count <= 0 or top <= 0:
        return _EMPTY_FILL, "#59636e"
    t = math.sqrt(count / top)
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(_LOW, _HIGH, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("#ffffff" if t > 0.55 else "#1f2328")


def heatmap(
    findings: Sequence[Mapping[str, Any]],
    families: Mapping[str, str],
    libraries: Sequence[str],
) -> dict[str, Any]:
    """Geometry of the SVG heatmap: findings by group family (rows) x odd library (columns).

    A finding counts once in each column of its odd libraries; one without an odd library
    counts in a ``(none odd)`` column, shown only when there is such a finding. Every family of
    the catalog is a row (empty rows show where nothing was found); groups the catalog does not
    know fall in ``unknown``.
    """
    from xamt.catalog.model import FAMILIES

    counts: Counter[tuple[str, str]] = Counter()
    groups: dict[tuple[str, str], set[str]] = {}
    cols = list(dict.fromkeys(libraries))
    for f in findings:
        family = families.get(str(f["group"]), UNKNOWN_FAMILY)
        odd = [str(x) for x in f.get("odd") or []] or [NO_ODD_COLUMN]
        for lib in odd:
            if lib not in cols and lib != NO_ODD_COLUMN:
                cols.append(lib)
            counts[(family, lib)] += 1
            groups.setdefault((family, lib), set()).add(str(f["group"]))
    if any(lib == NO_ODD_COLUMN for _, lib in counts):
        cols.append(NO_ODD_COLUMN)
    rows = list(FAMILIES)
    rows += sorted({fam for fam, _ in counts} - set(rows))
    top = max(counts.values(), default=0)
    left, header, cw, ch = 112, 34, 82, 34
    cells = []
    for r, family in enumerate(rows):
        for c, lib in enumerate(cols):
            n = counts.get((family, lib), 0)
            fill, ink = _fill(n, top)
            x, y = left + c * cw, header + r * ch
            names = sorted(groups.get((family, lib), ()))
            tooltip = f"{family} x {lib}: {n} finding{'' if n == 1 else 's'}"
            if names:
                tooltip += " (" + clip(", ".join(names), 160) + ")"
            cells.append(
                {
                    "x": x,
                    "y": y,
                    "w": cw,
                    "h": ch,
                    "cx": x + cw // 2,
                    "cy": y + ch // 2,
                    "count": n,
                    "fill": fill,
                    "ink": ink,
                    "tooltip": tooltip,
                }
            )
    grid_bottom = header + len(rows) * ch
    legend_steps = 8
    legend_w = 200
    legend = {
        "x": left,
        "y": grid_bottom + 30,
        "width": legend_w,
        "steps": [
            {
                "x": left + i * legend_w // legend_steps,
                "w": legend_w // legend_steps,
                "fill": _fill(
                    max(1, round(top * ((i + 1) / legend_steps) ** 2)) if top else 0, top
                )[0],
            }
            for i in range(legend_steps)
        ],
    }
    return {
        "width": max(left + len(cols) * cw + 16, left + legend_w + 24),
        "height": grid_bottom + 70,
        "cols": [
            {"label": lib, "x": left + c * cw + cw // 2, "y": header - 12}
            for c, lib in enumerate(cols)
        ],
        "rows": [
            {"label": fam, "x": left - 10, "y": header + r * ch + ch // 2}
            for r, fam in enumerate(rows)
        ],
        "cells": cells,
        "legend": legend,
        "max": top,
        "total": len(findings),
    }


def kind_bars(findings: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Geometry of the bar chart of findings by kind."""
    counts = Counter(str(f["kind"]) for f in findings)
    kinds = sorted(counts, key=kind_order)
    top = max(counts.values(), default=1)
    label_w, bar_max, bh, gap = 96, 240, 20, 8
    rows = []
    for i, kind in enumerate(kinds):
        y = 8 + i * (bh + gap)
        rows.append(
            {
                "label": kind,
                "label_x": label_w - 8,
                "x": label_w,
                "y": y,
                "w": max(2, round(bar_max * counts[kind] / top)),
                "h": bh,
                "cy": y + bh // 2,
                "count": counts[kind],
                "fill": _KIND_FILL.get(kind, _OUTPUT_FILL),
            }
        )
    return {"rows": rows, "width": label_w + bar_max + 48, "height": 16 + len(kinds) * (bh + gap)}


def report_html(doc: Mapping[str, Any], families: Mapping[str, str] | None = None) -> str:
    """The self-contained HTML report (inline CSS and SVG, no script).

    ``families`` maps group ids to families; by default they come from the catalog.
    """
    if families is None:
        families = group_families()
    findings: Sequence[Mapping[str, Any]] = doc.get("findings") or []
    libraries: Mapping[str, str] = doc.get("libraries") or {}
    views = sorted(
        (finding_view(f, libraries, families) for f in findings),
        key=lambda v: (kind_order(v["kind"]), v["group"], v["signature"]),
    )
    return render(
        "report.html.j2",
        "html",
        s=summary_view(doc),
        h=heatmap(findings, families, list(libraries)),
        bars=kind_bars(findings),
        findings=views,
    )
