"""Render a findings document (schema 2, :mod:`xamt.findings`) with the Jinja templates in
``templates/``.

Issue titles and bodies, recurrence, regression and closing comments, the campaign summary
(Markdown, also for ``$GITHUB_STEP_SUMMARY``) and a small self-contained HTML report with an
inline SVG picture of the support matrix. Templates are presentational: everything they show is
prepared here as plain "views" (dicts of strings and numbers) from the typed records.

What a report shows, in order: the suspected bugs ranked by :meth:`~xamt.findings.Finding.rank`
(severity, confidence, occurrences), the documented differences grouped by their policy (each
policy once), the splits (no reference, an even split: no library to blame), the support
matrix (refusals are not bugs), and counts by classification and kind.

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

import base64
import dataclasses
import gzip
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2
import numpy as np
from markupsafe import Markup

import xamt
from xamt.errors import OutputError
from xamt.findings import (
    CLASSIFICATIONS,
    CONFIDENCES,
    KINDS,
    SEVERITIES,
    Document,
    Finding,
    load_document,
)
from xamt.paths import inside
from xamt.report import trackers
from xamt.report.trackers import Candidate, Tracker, UpstreamCheck
from xamt.serialize import from_jsonable
from xamt.timing import BREAKDOWN_COLUMNS, Phases, breakdown_rows, libraries_from_dict
from xamt.triage.repro import ValueCode
from xamt.workers.protocol import BFloat16, DType

if TYPE_CHECKING:
    from xamt.catalog.model import Member

# GitHub refuses an issue or comment body longer than this (characters).
GITHUB_BODY_LIMIT = 65536
# The most characters of one library's text (exception, repr) shown in one code block.
CODE_LIMIT = 4000
INLINE_LIMIT = 120
TEMPLATE_SENTINEL = "issue_body.md.j2"
# The most characters of one repro script shown in an issue.
REPRO_LIMIT = 8000
TITLE_LIMIT = 200
# The most rows of one table of the summary (the rest are counted).
SUMMARY_ROWS = 50
# A one-line reproduction longer than this is left to the full script.
REPRO_LINE_LIMIT = 240
UNKNOWN_FAMILY = "unknown"
CROSS_SCRIPT = "xamt"  # the key of the cross-library script in a finding's ``repro``
# Names of the hidden markers the GitHub filer writes; text from libraries never carries them.
MARKER_NAMES = ("xamt-signature", "xamt-state", "xamt-run")

_ZWJ = "\u200d"
_MENTION = re.compile(r"@(?=[A-Za-z0-9_])")
_REFERENCE = re.compile(r"#(?=[0-9])")
_GH_REFERENCE = re.compile(r"\b(GH)-(?=[0-9])", re.IGNORECASE)
_BACKTICKS = re.compile(r"`+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_FENCE_LINE = re.compile(r"^(`{3,})")


# -- loading findings.json ------------------------------------------------------------------


def load_findings(path: Path) -> Document:
    """Read findings.json (schema 2); :class:`~xamt.findings.FindingsError` (exit 17) naming
    the file for a missing or unreadable file, schema 1, or a field of the wrong type."""
    return load_document(Path(path))


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


# -- views of one finding -------------------------------------------------------------------

# What a kind of finding is called in a title.
KIND_NOUN = {
    "crash": "crash",
    "hang": "hang",
    "resource": "memory cap exceeded",
    "status": "raise/return disagreement",
    "shape": "shape disagreement",
    "dtype": "result dtype disagreement",
    "nan": "NaN disagreement",
    "inf": "infinity disagreement",
    "signed-zero": "signed-zero disagreement",
    "value": "value disagreement",
}
_PHRASE_NOUN = {
    "nan": "NaN positions",
    "inf": "infinities",
    "signed-zero": "signs of zeros",
    "value": "values",
}


def blamed(f: Finding) -> list[str]:
    """The libraries a finding blames: one, or for a split every side's."""
    return [lib for lib in f.library.split("+") if lib]


def case_libraries(f: Finding) -> list[str]:
    """Every library of the finding's case, in the order of its APIs, then its outputs."""
    return list(dict.fromkeys([*f.apis, *f.outputs]))


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


def result_text(output: Mapping[str, Any], limit: int = INLINE_LIMIT) -> str:
    """What a library returned or raised, on one line: ``float32[1] [1.0]``,
    ``TypeError: ...``, ``SIGSEGV``."""
    status = str(output.get("status", "missing"))
    if status == "crash":
        return str(output.get("signal") or "crashed")
    if status in ("hang", "resource"):
        return short_result(output)
    lines = [ln for ln in str(output.get("result", "")).splitlines() if ln.strip()]
    return clip(" ".join(lines[0].split()), limit) if lines else status


def _names(libs: Iterable[str]) -> str:
    libs = list(libs)
    if len(libs) <= 2:
        return " and ".join(libs)
    return ", ".join(libs[:-1]) + " and " + libs[-1]


def _most_common(values: Iterable[str]) -> str:
    counted = Counter(values).most_common(1)
    return counted[0][0] if counted else "?"


def _signal(output: Mapping[str, Any]) -> str:
    """`` (SIGSEGV)`` when a crash names its signal, else ""."""
    signal = output.get("signal")
    return f" ({signal})" if isinstance(signal, str) and signal else ""


def input_phrase(f: Finding) -> str:
    """``float32 input with nan``, ``ordinary bool input``."""
    dtype = f"{f.dtype} " if f.dtype else ""
    if f.trigger in ("", "ordinary"):
        return f"ordinary {dtype}input"
    return f"{dtype}input with {f.trigger}"


def phrase(f: Finding) -> str:
    """What differs, in one line (no library text beyond type and signal names)."""
    who = blamed(f)
    others = [lib for lib in case_libraries(f) if lib not in who]
    if f.classification == "split" or len(who) != 1:
        return f"{_names(who)} split evenly ({f.kind}) and no reference decides"
    lib = who[0]
    first: Mapping[str, Any] = f.outputs.get(lib, {})
    rest = _names(others) or "the others"
    if f.kind == "crash":
        return f"{lib} crashes{_signal(first)}"
    if f.kind == "hang":
        return f"{lib} hangs (misses the deadline)"
    if f.kind == "resource":
        return f"{lib} exceeds the memory cap"
    if f.kind == "status":
        if first.get("status") == "error":
            return f"{lib} raises {short_result(first)} where {rest} return"
        return f"{lib} returns {short_result(first)} where {rest} raise"
    oks = [f.outputs[o] for o in others if o in f.outputs and f.outputs[o].get("status") == "ok"]
    if f.kind == "shape":
        theirs = _most_common(_shape_text(o.get("shape")) for o in oks)
        return f"{lib} returns shape {_shape_text(first.get('shape'))} where {rest} give {theirs}"
    if f.kind == "dtype":
        theirs = _most_common(str(o.get("dtype", "?")) for o in oks)
        return f"{lib} returns {first.get('dtype', '?')} where {rest} give {theirs}"
    return f"{lib} differs from {rest} in the {_PHRASE_NOUN.get(f.kind, f.kind)}"


def headline(f: Finding) -> str:
    """The issue title without its ``[xamt]`` prefix: the library, its callable, what goes
    wrong and on which input (no library text beyond type and signal names)."""
    who = blamed(f)
    lib = who[0] if who else "?"
    name = f.callable or f.apis.get(lib, "") or f.group
    subject = name if name.split(".")[0] == f.library else f"{f.library}: {name}"
    on = input_phrase(f)
    first: Mapping[str, Any] = f.outputs.get(lib, {})
    if len(who) == 1:
        if f.kind == "crash":
            return f"{subject} crashes{_signal(first)} on {on}"
        if f.kind == "hang":
            return f"{subject} hangs on {on}"
        if f.kind == "resource":
            return f"{subject} exceeds the memory cap on {on}"
        if f.kind == "status" and first.get("status") == "error":
            return f"{subject} raises {short_result(first)} on {on} where others return"
        if f.kind == "status":
            return f"{subject} returns on {on} where others raise"
    noun = KIND_NOUN.get(f.kind, f.kind)
    if len(who) != 1:
        return f"{name}: {noun} on {on} ({_names(who)} split evenly)"
    return f"{subject}: {noun} on {on}"


# -- the one-line reproduction --------------------------------------------------------------

# How a list literal becomes a library's tensor; ``{data}`` and ``{dtype}`` are filled in.
TENSOR_CODE = {
    "numpy": "numpy.array({data}, dtype='{dtype}')",
    "torch": "torch.tensor({data}, dtype=torch.{dtype})",
    "tensorflow": "tensorflow.constant({data}, dtype=tensorflow.{dtype})",
    "jax": "jax.numpy.array({data}, dtype=jax.numpy.{dtype})",
    "paddle": "paddle.to_tensor({data}, dtype='{dtype}')",
    "mindspore": "mindspore.Tensor({data}, dtype=mindspore.{dtype})",
    "mxnet": "mxnet.nd.array({data}, dtype='{dtype}')",
}
MXNET_NP_CODE = "mxnet.np.array({data}, dtype='{dtype}')"
# A dtype given as an argument (``dtype=...``): these libraries take their own objects, the
# others a name.
DTYPE_CODE = {
    "torch": "torch.{}",
    "tensorflow": "tensorflow.{}",
    "jax": "jax.numpy.{}",
    "mindspore": "mindspore.{}",
}
DTYPE_RENAMES = {"mindspore": {"bool": "bool_"}}
# Libraries without bfloat16: the values are given as float32.
NO_BFLOAT16 = ("numpy", "mxnet")
IMPORT_LINES = {"jax": ("import jax", "jax.config.update('jax_enable_x64', True)")}


class _TooLong(Exception):
    """An input that does not fit one line (large, or empty with a shape a list loses)."""


def _scalar_code(x: Any) -> tuple[str, bool]:
    """Python code for one scalar, and whether it needs ``nan``/``inf`` from math."""
    if isinstance(x, bool | np.bool_):
        return repr(bool(x)), False
    if isinstance(x, int | np.integer):
        return repr(int(x)), False
    if isinstance(x, complex | np.complexfloating):
        re_code, a = _scalar_code(float(complex(x).real))
        im_code, b = _scalar_code(float(complex(x).imag))
        return f"complex({re_code}, {im_code})", a or b
    value = float(x)
    if math.isnan(value):
        return "nan", True
    if math.isinf(value):
        return ("inf" if value > 0 else "-inf"), True
    return repr(value), False


class _CallCode(ValueCode):
    """Turns call values into code for one library, on one line."""

    def __init__(self, library: str, api: str) -> None:
        self.library = library
        self.api = api
        self.math = False
        self.numpy = library not in TENSOR_CODE

    def _data(self, data: Any) -> str:
        if isinstance(data, list):
            return "[" + ", ".join(self._data(x) for x in data) + "]"
        code, needs = _scalar_code(data)
        self.math |= needs
        return code

    def _dtype_name(self, name: str) -> str:
        return DTYPE_RENAMES.get(self.library, {}).get(name, name)

    def tensor(self, arr: np.ndarray, dtype: str) -> str:
        if arr.size == 0 and arr.ndim != 1:
            raise _TooLong
        template = TENSOR_CODE.get(self.library, TENSOR_CODE["numpy"])
        if self.library == "mxnet" and self.api.startswith(("mxnet.np.", "mxnet.npx.")):
            template = MXNET_NP_CODE
        if dtype == "bfloat16" and self.library in NO_BFLOAT16:
            dtype = "float32"
        return template.format(data=self._data(arr.tolist()), dtype=self._dtype_name(dtype))

    def array(self, v: BFloat16 | np.ndarray) -> str:
        if isinstance(v, BFloat16):
            return self.tensor(v.values, "bfloat16")
        return self.tensor(v, v.dtype.name)

    def dtype(self, name: str) -> str:
        return DTYPE_CODE.get(self.library, "'{}'").format(self._dtype_name(name))

    def scalar(self, x: Any) -> str:
        code, needs = _scalar_code(x)
        self.math |= needs
        return code

    def imports(self) -> list[str]:
        lines = ["import numpy"] if self.numpy else []
        roots = [self.library if self.library in TENSOR_CODE else "", self.api.split(".")[0]]
        for root in dict.fromkeys(r for r in roots if r):
            lines += IMPORT_LINES.get(root, (f"import {root}",))
        if self.math:
            lines.append("from math import inf, nan")
        return list(dict.fromkeys(lines))


@cache
def _catalog_members() -> dict[tuple[str, str], Member]:
    """(group id, API) -> catalog Member, from the committed catalog ({} if it is unusable)."""
    from xamt.catalog import model
    from xamt.errors import XamtError

    try:
        catalog = model.load()
    except (XamtError, OSError, ValueError):
        return {}
    return {(g.id, m.api): m for g in catalog.groups for m in g.members}


def _bound(group: str, api: str, values: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments: bound as the catalog binds the member, or (a group the catalog
    does not know) array roles by position and the other roles by keyword."""
    from xamt.catalog.bind import bind
    from xamt.catalog.model import ARRAY_ROLES, SEQUENCE_ROLE

    member = _catalog_members().get((group, api))
    if member is not None:
        try:
            call = bind(member, values)
            return list(call.args), dict(call.kwargs)
        except KeyError:
            pass
    positional = (*ARRAY_ROLES, SEQUENCE_ROLE)
    args = [values[r] for r in positional if r in values]
    kwargs = {r: v for r, v in values.items() if r not in positional}
    return args, kwargs


@dataclass(frozen=True, kw_only=True)
class ReproLine:
    """The minimal reproduction of a finding in its blamed library: imports and one call, what
    the library gave, and what the other libraries gave."""

    library: str
    imports: tuple[str, ...]
    call: str
    got: str
    expected: str
    expected_by: tuple[str, ...]

    @property
    def code(self) -> str:
        return "\n".join([*self.imports, self.call])


def _one_line(f: Finding, lib: str) -> tuple[tuple[str, ...], str] | None:
    """The imports and the one call that reproduce ``f``'s minimized case in ``lib`` (None
    when the inputs do not fit one line, or the case cannot be decoded)."""
    case_apis = f.case.get("apis") if isinstance(f.case.get("apis"), dict) else {}
    api = str(
        f.apis.get(lib) or (case_apis or {}).get(lib) or (f.callable if lib in blamed(f) else "")
    )
    raw = f.case.get("values")
    if not api or not isinstance(raw, dict):
        return None
    try:
        values = {str(role): from_jsonable(v) for role, v in raw.items()}
        args, kwargs = _bound(f.group, api, values)
        code = _CallCode(lib, api)
        parts = [code.value(a) for a in args] + [f"{k}={code.value(v)}" for k, v in kwargs.items()]
    except (_TooLong, KeyError, TypeError, ValueError):
        return None
    call = f"{api}({', '.join(parts)})"
    if len(call) > REPRO_LINE_LIMIT:
        return None
    return tuple(code.imports()), call


def repro_line(f: Finding) -> ReproLine | None:
    """The one-line reproduction of ``f`` in its blamed library, built from its minimized case
    (None when the inputs do not fit one line, or the case cannot be decoded)."""
    who = blamed(f)
    if not who:
        return None
    lib = who[0]
    line = _one_line(f, lib)
    if line is None:
        return None
    imports, call = line
    others = [o for o in case_libraries(f) if o != lib and o in f.outputs]
    said = {o: result_text(f.outputs[o]) for o in others}
    expected = _most_common(said.values()) if said else ""
    return ReproLine(
        library=lib,
        imports=imports,
        call=call,
        got=result_text(f.outputs.get(lib, {"status": "missing"})),
        expected=expected,
        expected_by=tuple(o for o in others if said[o] == expected),
    )


def other_lines(f: Finding) -> str:
    """The same call in each other library of the case, one line each with what that library
    gave as a comment, under their imports; "" when none fits one line.

    Note:
        Together with :func:`repro_line` this is the minimal reproduction per library that an
        issue opens with: the reader can paste each line into that library and compare.
    """
    first = blamed(f)[:1]
    imports: list[str] = []
    calls: list[str] = []
    for lib in case_libraries(f):
        if lib in first:
            continue
        line = _one_line(f, lib)
        if line is None:
            continue
        imports += line[0]
        got = result_text(f.outputs.get(lib, {"status": "missing"}), 80)
        calls.append(f"{line[1]}  # {got}")
    if not calls:
        return ""
    head = [i for i in dict.fromkeys(imports) if not i.startswith("from ")]
    head += [i for i in dict.fromkeys(imports) if i.startswith("from ")]
    return "\n".join([*head, *calls])


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


def _scripts(f: Finding) -> list[dict[str, str]]:
    """The blamed library's script and the cross-library one, as template rows ``{library,
    text, path}``: the text when :func:`with_repro_scripts` loaded it, else the path."""
    wanted = [*blamed(f), CROSS_SCRIPT]
    rows = []
    for library in wanted:
        value = f.repro.get(library)
        if value is None:
            continue
        text = _clean(value)
        if "\n" in text:
            rows.append({"library": library, "text": clip(text, REPRO_LIMIT), "path": ""})
        else:
            rows.append({"library": library, "text": "", "path": text})
    return rows


def _script_text(root: Path, value: str) -> str:
    """The text of the script ``value`` names (a path inside ``root``), or ``value`` itself
    when it is text already, lies outside ``root``, or cannot be read."""
    if not value or "\n" in value:
        return value
    try:  # one checked join (xamt.paths): inside the folder, links followed
        path = inside(root, value, what="a repro script")
    except OutputError:
        return value  # shown as the path it claims, never read
    if path.is_file():
        try:
            return path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            pass
    return value


def with_repro_scripts(doc: Document, base_dir: Path) -> Document:
    """A copy of ``doc`` whose ``repro`` and ``short_repro`` paths are replaced by the
    scripts' text.

    Paths are relative to ``base_dir`` (the folder of findings.json). Only files inside it are
    read, so a findings file can never make a report or an issue show another file.
    """
    root = Path(base_dir)
    findings = []
    for f in doc.findings:
        loaded = {library: _script_text(root, value) for library, value in f.repro.items()}
        findings.append(f.replace(repro=loaded, short_repro=_script_text(root, f.short_repro)))
    return dataclasses.replace(doc, findings=tuple(findings))


def _safe_url(url: str) -> str:
    """``url`` if it is a plain https URL (safe in a Markdown link and an ``href``), else ""."""
    return url if re.fullmatch(r"https://[A-Za-z0-9.-]+(?:/[^\s()<>\"'`\\]*)?", url) else ""


def _known(f: Finding) -> dict[str, str] | None:
    k = f.known_difference
    if k is None:
        return None
    return {"id": k.id, "policy": k.policy, "reason": k.reason, "link": _safe_url(k.link)}


def expected_and_actual(f: Finding) -> tuple[Markup, Markup]:
    """What the blamed library should give and what it gives, each one Markdown phrase:
    ``numpy and torch give `float32[1] [nan]` `` and ``paddle gives `float32[1] [1.]` ``."""
    who = blamed(f)
    lib = who[0] if who else f.library
    first = f.outputs.get(lib, {"status": "missing"})
    others = [o for o in case_libraries(f) if o != lib and o in f.outputs]
    said = {o: result_text(f.outputs[o]) for o in others}
    text = _markdown_text
    if f.kind == "crash":
        actual = Markup(text(f"{lib} kills its process{_signal(first)}"))
    elif f.kind == "hang":
        actual = Markup(text(f"{lib} never returns (it missed the deadline)"))
    elif f.kind == "resource":
        actual = Markup(text(f"{lib} exceeds the memory cap"))
    else:
        actual = Markup(text(f"{lib} gives ") + inline_code(result_text(first)))
    if not said:
        return Markup("what the reference decides"), actual
    common = _most_common(said.values())
    by = [o for o in others if said[o] == common]
    verb = "gives" if len(by) == 1 else "give"
    return Markup(text(f"{_names(by)} {verb} ") + inline_code(common)), actual


def finding_view(
    f: Finding, libraries: Mapping[str, str], families: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Everything the templates show of one finding, as plain strings, numbers and lists."""
    who = blamed(f)
    rows = []
    for name in case_libraries(f):
        out = f.outputs.get(name) or {}
        rows.append(
            {
                "name": name,
                "version": str(libraries.get(name) or f.versions.get(name, "?")),
                "api": str(f.apis.get(name) or out.get("api", "?")),
                "status": str(out.get("status", "missing")),
                "short": short_result(out),
                "result": result_text(out),
                "blamed": name in who,
                "text": clip(_clean(out.get("result", "")), CODE_LIMIT),
            }
        )
    values = f.case.get("values") if isinstance(f.case.get("values"), dict) else {}
    inputs_text = "\n".join(compact_value(str(r), v) for r, v in (values or {}).items())
    line = repro_line(f)
    lib = who[0] if who else f.library
    expected, actual = expected_and_actual(f)
    version = str(libraries.get(lib) or f.versions.get(lib, "?"))
    known_versions = {**f.versions, **libraries}
    others = {n: known_versions.get(n, "?") for n in case_libraries(f) if n != lib}
    short = _clean(f.short_repro) if "\n" in f.short_repro else ""
    return {
        "signature": f.signature,
        "key": f.key,
        "kind": f.kind,
        "kind_noun": KIND_NOUN.get(f.kind, f.kind),
        "family": f.family,
        "op_family": (families or {}).get(f.group, UNKNOWN_FAMILY),
        "classification": f.classification,
        "severity": f.severity,
        "confidence": f.confidence,
        "library": f.library,
        "blamed": who,
        "callable": f.callable,
        "api": str(f.apis.get(lib, f.callable)),
        "version": str(libraries.get(lib) or f.versions.get(lib, "?")),
        "group": f.group,
        "dtype": f.dtype or "-",
        "trigger": f.trigger,
        "input": input_phrase(f),
        "input_classes": list(f.input_classes),
        "reproduced": f.reproduced,
        "runs": f.runs,
        "occurrences": f.occurrences,
        "first_seen": f.first_seen,
        "last_seen": f.last_seen,
        "headline": headline(f),
        "phrase": phrase(f),
        "detail": clip(_clean(f.detail), CODE_LIMIT),
        "decided_by": clip(_clean(f.decided_by), CODE_LIMIT),
        "documentation": [clip(_clean(s), CODE_LIMIT) for s in f.documentation],
        "also": [clip(_clean(s), CODE_LIMIT) for s in f.also],
        "libraries": rows,
        "value_class": str(f.case.get("value_class", "?")),
        "seed": f.case.get("seed", "?"),
        "inputs_text": inputs_text or "(none)",
        "repro_line": None
        if line is None
        else {
            "code": line.code,
            "got": line.got,
            "expected": line.expected,
            "expected_by": _names(line.expected_by),
            "plural": len(line.expected_by) != 1,
        },
        "other_lines": other_lines(f),
        "scripts": _scripts(f),
        "known": _known(f),
        "expected": expected,
        "actual": actual,
        "versions": f"{lib} {version}" + "".join(f", {n} {v}" for n, v in others.items()),
        "short_repro": clip(short, REPRO_LIMIT),
        "short_repro_path": "" if short else f.short_repro,
        "others": _names(o for o in case_libraries(f) if o not in who) or "the other libraries",
    }


def campaign_view(doc: Document) -> dict[str, Any]:
    """The campaign fields the templates show, with defaults for absent ones."""
    camp = doc.campaign
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


def issue_title(f: Finding, libraries: Mapping[str, str]) -> str:
    """The issue title: one line naming the library and its callable, at most
    :data:`TITLE_LIMIT` characters."""
    text = " ".join(render("issue_title.txt.j2", "title", f=finding_view(f, libraries)).split())
    return text if len(text) <= TITLE_LIMIT else text[: TITLE_LIMIT - 1] + "…"


# The most upstream candidates an issue lists.
CANDIDATES_SHOWN = 5


def upstream_view(
    f: Finding,
    doc: Document,
    *,
    tracker: Tracker | None = None,
    check: UpstreamCheck | None = None,
    paste_file: str = "",
) -> dict[str, Any]:
    """Where a finding's report goes upstream (``tracker``, by default its library's), the
    prefilled new-issue link (GitHub) or page (Gitee), and what the upstream search found."""
    if tracker is None:
        tracker = trackers.tracker_for(f)
    known = check.match if check is not None else None
    if known is None and f.upstream and _safe_url(f.upstream):
        known = Candidate(title="(recorded in findings.json)", url=f.upstream, state="known")
    view: dict[str, Any] = {
        "kind": tracker.kind if tracker else "none",
        "label": tracker.label if tracker else (blamed(f) or [f.library])[0],
        "url": Markup(_safe_url(tracker.url)) if tracker else "",
        "new_issue": "",
        "paste_file": paste_file,
        "searched": check is not None and not check.error,
        "error": check.error if check is not None else "",
        "query": check.query if check is not None else "",
        "total": check.total if check is not None else 0,
        "incomplete": bool(check and check.incomplete),
        "candidates": [
            {"title": c.title, "url": Markup(_safe_url(c.url)), "state": c.state, "match": c.match}
            for c in (check.candidates[:CANDIDATES_SHOWN] if check is not None else ())
        ],
        "known": None
        if known is None
        else {"title": known.title, "url": Markup(_safe_url(known.url)), "state": known.state},
    }
    if tracker is not None and tracker.kind == "github":
        url = trackers.new_issue_url(tracker, upstream_title(f), upstream_body(f, doc))
        view["new_issue"] = Markup(_safe_url(url))
    elif tracker is not None and tracker.kind == "gitee":
        view["new_issue"] = Markup(_safe_url(tracker.new_issue_page))
    return view


def upstream_title(f: Finding) -> str:
    """The title of the report for the upstream tracker: the defect in one line."""
    text = " ".join(_clean(headline(f)).split())
    return text if len(text) <= TITLE_LIMIT else text[: TITLE_LIMIT - 1] + "…"


def upstream_body(f: Finding, doc: Document) -> str:
    """The report for the upstream tracker: what a maintainer reads first, and no more."""
    text = render(
        "upstream_issue.md.j2", f=finding_view(f, doc.libraries), xamt_version=doc.xamt_version
    )
    return text.rstrip("\n") + "\n"


def issue_body(
    f: Finding,
    doc: Document,
    *,
    markers: str = "",
    upstream: Mapping[str, Any] | None = None,
) -> str:
    """The issue body of a finding, fitted to GitHub's limit with ``markers`` kept at the end.

    It opens with what a maintainer reads first (:func:`upstream_body`'s text), then the
    upstream tracker and the upstream search's candidates (``upstream``, an
    :func:`upstream_view`; by default the tracker alone, no search), then the rest collapsed.
    """
    text = render(
        "issue_body.md.j2",
        f=finding_view(f, doc.libraries),
        upstream=upstream if upstream is not None else upstream_view(f, doc),
        campaign=campaign_view(doc),
        xamt_version=doc.xamt_version,
        markers=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(markers))


def _tail(markers: str) -> str:
    return f"\n{markers.strip()}\n" if markers.strip() else ""


def recurrence_comment(f: Finding, doc: Document, *, occurrences: int, marker: str = "") -> str:
    """The comment on an open issue whose finding was seen again."""
    text = render(
        "comment_recurrence.md.j2",
        f=finding_view(f, doc.libraries),
        campaign=campaign_view(doc),
        xamt_version=doc.xamt_version,
        occurrences=occurrences,
        marker=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(marker))


def regression_comment(
    f: Finding | None, doc: Document, *, occurrences: int, marker: str = ""
) -> str:
    """The comment on a reopened issue (``f`` is None when only a verification saw it)."""
    text = render(
        "comment_regression.md.j2",
        f=finding_view(f, doc.libraries) if f is not None else None,
        versions=versions_text(doc.libraries),
        occurrences=occurrences,
        marker=Markup(""),
    )
    return fit_body(text.rstrip("\n") + "\n", tail=_tail(marker))


def closing_comment(doc: Document, *, misses: int, marker: str = "") -> str:
    """The comment on an issue closed because its finding no longer reproduces."""
    text = render(
        "comment_closing.md.j2",
        misses=misses,
        versions=versions_text(doc.libraries),
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
    """Sort key of a kind: the order of :data:`xamt.findings.KINDS` (crash first)."""
    return (KINDS.index(kind) if kind in KINDS else 99, kind)


def _row(f: Finding, rank: int = 0) -> dict[str, Any]:
    """One line of a findings table."""
    return {
        "rank": rank,
        "severity": f.severity,
        "confidence": f.confidence,
        "library": f.library,
        "callable": f.callable,
        "kind": f.kind,
        "dtype": f.dtype or "-",
        "trigger": f.trigger,
        "occurrences": f.occurrences,
        "signature": f.signature,
        "headline": headline(f),
        "phrase": phrase(f),
    }


def policy_views(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The documented differences grouped by policy, each policy once: its entries (id,
    reason, link), the libraries and callables it affects, and its findings."""
    by_policy: dict[str, list[Finding]] = {}
    for f in findings:
        policy = f.known_difference.policy if f.known_difference else "(no policy)"
        by_policy.setdefault(policy, []).append(f)
    views = []
    for policy in sorted(by_policy):
        group = by_policy[policy]
        entries: dict[str, dict[str, str]] = {}
        affects: dict[str, set[str]] = {}
        for f in group:
            known = _known(f)
            if known is not None:
                entries.setdefault(known["id"], known)
            for lib in blamed(f):
                affects.setdefault(lib, set()).add(f.callable or f.group)
        views.append(
            {
                "policy": policy,
                "count": len(group),
                "entries": [entries[k] for k in sorted(entries)],
                "affects": [
                    {"library": lib, "callables": sorted(affects[lib])} for lib in sorted(affects)
                ],
                "findings": [_row(f) for f in group],
            }
        )
    return views


_LINK = re.compile(r"\((?P<trait>[\w-]+): (?P<link>https://[^\s)]+)\)$")


def question_views(findings: Sequence[Finding]) -> list[dict[str, Any]]:
    """The unspecified findings grouped by the question nothing decides, each question once:
    the trait and document that say it is open, and on each side the libraries (the one
    departing, with its callables, against the others of the case)."""
    by_question: dict[str, list[Finding]] = {}
    for f in findings:
        by_question.setdefault(f.question or "(no question)", []).append(f)
    views = []
    for question in sorted(by_question, key=lambda q: (-len(by_question[q]), q)):
        group = by_question[question]
        found = _LINK.search(group[0].decided_by)
        departing: dict[str, set[str]] = {}
        for f in group:
            for lib in blamed(f):
                departing.setdefault(lib, set()).add(f.callable or f.group)
        views.append(
            {
                "question": question,
                "count": len(group),
                "trait": found["trait"] if found else "",
                "link": found["link"] if found else "",
                "sides": [
                    {"library": lib, "callables": sorted(departing[lib])}
                    for lib in sorted(departing)
                ],
                "findings": [_row(f) for f in group],
            }
        )
    return views


@dataclass(frozen=True, kw_only=True)
class SupportCell:
    """Refusals of one (row, library): dtypes refused and tried over the row's groups."""

    refused: int
    total: int
    groups: tuple[str, ...]  # the groups with a refusal

    @property
    def share(self) -> float:
        return self.refused / self.total if self.total else 0.0


def support_cells(
    support: Mapping[str, Mapping[str, Mapping[str, str]]],
    families: Mapping[str, str],
    libraries: Sequence[str],
) -> tuple[list[str], list[str], dict[tuple[str, str], SupportCell]]:
    """The support matrix folded by group family: rows (families, in the catalog's order, then
    ``unknown``), columns (libraries) and a cell for each (family, library) with data."""
    from xamt.catalog.model import FAMILIES

    refused: Counter[tuple[str, str]] = Counter()
    total: Counter[tuple[str, str]] = Counter()
    groups: dict[tuple[str, str], set[str]] = {}
    cols = list(dict.fromkeys(libraries))
    for group, libs in support.items():
        family = families.get(group, UNKNOWN_FAMILY)
        for lib, dtypes in libs.items():
            if lib not in cols:
                cols.append(lib)
            for state in dtypes.values():
                total[(family, lib)] += 1
                if state == "refused":
                    refused[(family, lib)] += 1
                    groups.setdefault((family, lib), set()).add(group)
    present = {fam for fam, _ in total}
    rows = [fam for fam in FAMILIES if fam in present]
    rows += sorted(present - set(rows))
    cells = {
        key: SupportCell(refused=refused[key], total=n, groups=tuple(sorted(groups.get(key, ()))))
        for key, n in total.items()
    }
    return rows, cols, cells


def _share_text(cell: SupportCell | None) -> str:
    if cell is None:
        return "-"
    return f"{cell.share:.0%} ({cell.refused} of {cell.total})"


def summary_view(
    doc: Document, families: Mapping[str, str] | None = None, rows: int = SUMMARY_ROWS
) -> dict[str, Any]:
    """Everything the summary and the HTML report show of a campaign."""
    families = families or {}
    ranked = doc.ranked()
    bugs = [f for f in ranked if f.suspected]
    documented = [f for f in ranked if f.classification == "documented-difference"]
    splits = [f for f in ranked if f.classification == "split"]
    unspecified = [f for f in ranked if f.classification == "unspecified"]
    camp = doc.campaign
    seconds = camp.get("seconds")
    by_lib = Counter(lib for f in bugs for lib in blamed(f))
    sup_rows, sup_cols, cells = support_cells(doc.support, families, list(doc.libraries))
    refusals = sum(c.refused for c in cells.values())
    counts = []
    class_totals = [0] * len(CLASSIFICATIONS)
    for kind in sorted({f.kind for f in doc.findings}, key=kind_order):
        n = [
            sum(1 for f in doc.findings if f.kind == kind and f.classification == c)
            for c in CLASSIFICATIONS
        ]
        class_totals = [a + b for a, b in zip(class_totals, n, strict=True)]
        counts.append({"kind": kind, "cells": n, "total": sum(n)})
    return {
        "total": len(doc.findings),
        "suspected": len(bugs),
        "documented": len(documented),
        "splits": len(splits),
        "unspecified": len(unspecified),
        "cases": camp.get("cases", "?"),
        "seconds": f"{seconds:.0f}" if isinstance(seconds, int | float) else "?",
        "name": str(camp.get("name", "?")),
        "seed": camp.get("seed", "?"),
        "budget": str(camp.get("budget", "?")),
        "schedule": str(camp.get("schedule", "")),
        "shard": str(camp.get("shard", "")),
        "xamt_version": doc.xamt_version,
        "libraries": [
            {"name": lib, "version": str(v), "bugs": by_lib.get(lib, 0)}
            for lib, v in doc.libraries.items()
        ],
        "bugs": [_row(f, i) for i, f in enumerate(bugs[:rows], 1)],
        "more_bugs": max(len(bugs) - rows, 0),
        "policies": policy_views(documented),
        "questions": question_views(unspecified),
        "split_rows": [_row(f) for f in splits[:rows]],
        "more_splits": max(len(splits) - rows, 0),
        "support": {
            "cols": sup_cols,
            "rows": [
                {"family": fam, "cells": [_share_text(cells.get((fam, lib))) for lib in sup_cols]}
                for fam in sup_rows
            ],
            "refusals": refusals,
            "groups": len(doc.support),
        },
        "classifications": list(CLASSIFICATIONS),
        "class_totals": class_totals,
        "counts": counts,
        "time": time_view(camp.get("time")),
    }


def time_view(data: Any) -> dict[str, Any] | None:
    """Where the run's wall time went (findings.json ``campaign.time``): phases, and each
    library's table while fuzzing; None when the file has no such record."""
    if not isinstance(data, Mapping):
        return None
    phases = Phases.from_dict(
        data.get("phases", {}) if isinstance(data.get("phases"), Mapping) else {}
    )
    libraries = data.get("libraries")
    times = libraries_from_dict(libraries if isinstance(libraries, Mapping) else {})
    fuzz = phases.seconds.get("fuzz", 0.0)
    return {
        "phases": [(name, f"{s:.0f}") for name, s in phases.seconds.items()],
        "total": f"{sum(phases.seconds.values()):.0f}",
        "columns": list(BREAKDOWN_COLUMNS),
        "rows": [list(r) for r in breakdown_rows(times, fuzz)],
    }


def summary_markdown(doc: Document, families: Mapping[str, str] | None = None) -> str:
    """The campaign summary in Markdown (what goes to ``$GITHUB_STEP_SUMMARY``)."""
    return render("summary.md.j2", s=summary_view(doc, families)).rstrip("\n") + "\n"


_EMPTY_FILL = "#eef1f4"
_LOW = (236, 244, 238)  # no dtype refused
_HIGH = (179, 38, 30)  # every dtype refused


def _fill(share: float | None) -> tuple[str, str]:
    """Cell colour and text colour for a share of refusals (None: no data)."""
    if share is None:
        return _EMPTY_FILL, "#59636e"
    t = min(max(share, 0.0), 1.0)
    rgb = tuple(round(lo + (hi - lo) * t) for lo, hi in zip(_LOW, _HIGH, strict=True))
    return "#{:02x}{:02x}{:02x}".format(*rgb), ("#ffffff" if t > 0.5 else "#1f2328")


def support_heatmap(
    support: Mapping[str, Mapping[str, Mapping[str, str]]],
    families: Mapping[str, str],
    libraries: Sequence[str],
) -> dict[str, Any]:
    """Geometry of the SVG heatmap of the support matrix: group family (rows) x library
    (columns), each cell coloured by the share of (group, dtype) pairs the library refused."""
    rows, cols, cells = support_cells(support, families, libraries)
    left, header, cw, ch = 112, 34, 82, 34
    out_cells = []
    for r, family in enumerate(rows):
        for c, lib in enumerate(cols):
            cell = cells.get((family, lib))
            fill, ink = _fill(None if cell is None else cell.share)
            x, y = left + c * cw, header + r * ch
            if cell is None:
                tooltip = f"{family} x {lib}: not tried"
            else:
                tooltip = f"{family} x {lib}: {cell.refused} of {cell.total} (group, dtype) refused"
                if cell.groups:
                    tooltip += " (" + clip(", ".join(cell.groups), 160) + ")"
            out_cells.append(
                {
                    "x": x,
                    "y": y,
                    "w": cw,
                    "h": ch,
                    "cx": x + cw // 2,
                    "cy": y + ch // 2,
                    "label": "" if cell is None else f"{cell.share:.0%}",
                    "fill": fill,
                    "ink": ink,
                    "tooltip": tooltip,
                }
            )
    grid_bottom = header + len(rows) * ch
    steps, legend_w = 8, 200
    legend = {
        "x": left,
        "y": grid_bottom + 30,
        "width": legend_w,
        "steps": [
            {
                "x": left + i * legend_w // steps,
                "w": legend_w // steps,
                "fill": _fill(i / (steps - 1))[0],
            }
            for i in range(steps)
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
        "cells": out_cells,
        "legend": legend,
        "refusals": sum(c.refused for c in cells.values()),
        "empty": not rows,
    }


# The most characters of one finding's inputs or detail in the HTML report (findings.json and
# the repro scripts hold everything).
HTML_TEXT_LIMIT = 600
# A repro path the HTML report links to: relative, plain names, no "..".
_LINKABLE = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*(?:/[A-Za-z0-9_-][A-Za-z0-9_.-]*)*")


def script_link(path: str) -> str:
    """``path`` if it can be a link relative to the campaign folder: plain names joined by
    ``/``, none starting with a dot (so no ``..``), no scheme, no query; else ""."""
    return path if _LINKABLE.fullmatch(path) else ""


def _script_entries(f: Finding) -> list[Any]:
    """The HTML report's script entries of a finding, each library's and the cross-library one:
    ``lib`` alone where the script is at ``repro/<signature>/repro_<lib>.py`` (the layout xamt
    writes), ``[lib, path]`` for another linkable path, ``[lib, "", text]`` for a script held
    in findings.json itself; a path that cannot be a safe link is left out."""
    entries: list[Any] = []
    for library, value in f.repro.items():
        text = _clean(value)
        if "\n" in text:
            entries.append([library, "", clip(text, REPRO_LIMIT)])
        elif text == f"repro/{f.signature}/repro_{library}.py" and script_link(text):
            entries.append(library)
        elif script_link(text):
            entries.append([library, text])
    return entries


def report_details(f: Finding, libraries: Mapping[str, str]) -> dict[str, Any]:
    """What the HTML report shows when a finding is opened, as compact JSON-ready data.

    Keys: ``line`` (the blamed library's one-line reproduction, or absent), ``got``,
    ``expected`` and ``by`` (what it gave, what most others gave, and which), ``others``
    (the same call in each other library), ``detail``, ``libs`` (rows ``[library, version,
    API, status, result, blamed]``; the version only where it differs from the campaign's),
    ``inputs``, ``vc`` (value class), ``seed``, ``tags`` (input classes), ``scripts`` (see
    :func:`_script_entries`), ``key``, ``rep`` (reproduced, runs) and ``known`` (``[id,
    reason, link]`` of a documented difference).
    """
    who = blamed(f)
    rows = []
    for name in case_libraries(f):
        out = f.outputs.get(name) or {}
        version = str(f.versions.get(name) or libraries.get(name) or "?")
        rows.append(
            [
                name,
                "" if version == str(libraries.get(name, "")) else version,
                str(f.apis.get(name) or out.get("api", "?")),
                str(out.get("status", "missing")),
                result_text(out),
                1 if name in who else 0,
            ]
        )
    values = f.case.get("values") if isinstance(f.case.get("values"), dict) else {}
    inputs = "\n".join(compact_value(str(r), v) for r, v in (values or {}).items())
    seed = f.case.get("seed", "?")
    view: dict[str, Any] = {}
    line = repro_line(f)
    if line is not None:
        view.update(line=line.code, got=line.got)
        if line.expected:
            view.update(expected=line.expected, by=list(line.expected_by))
    others = other_lines(f)
    if others:
        view["others"] = others
    if f.detail:
        view["detail"] = clip(_clean(f.detail), HTML_TEXT_LIMIT)
    view.update(
        libs=rows,
        inputs=clip(inputs, HTML_TEXT_LIMIT) or "(none)",
        vc=str(f.case.get("value_class", "?")),
        seed=seed if isinstance(seed, int) else str(seed),
        tags=list(f.input_classes),
        scripts=_script_entries(f),
        key=f.key,
        rep=[f.reproduced, f.runs],
    )
    known = _known(f)
    if known is not None:
        view["known"] = [known["id"], known["reason"], known["link"]]
    return view


def script_json(data: Any) -> Markup:
    """``data`` as compact JSON that is safe inside an HTML ``<script>`` element: ``<``, ``>``
    and ``&`` are written as ``\\u`` escapes, so no text can close the element or open a
    comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return Markup(text)


def pack_details(details: Mapping[str, Any]) -> str:
    """The details of every finding (signature -> :func:`report_details`) as gzip-compressed
    JSON in base64: what the report embeds, and its script unpacks (``DecompressionStream``)
    when the first finding is opened.

    Note:
        Compression is what keeps a report of a thousand findings under a megabyte: the
        details repeat library names, APIs, dtypes and results, which gzip folds away (about
        a fifth of the JSON's size). Base64 holds no ``<``, ``&`` or quote, so the blob is inert
        in the page whatever the libraries said. ``mtime=0`` keeps the output reproducible.
    """
    raw = json.dumps(details, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    packed = gzip.compress(raw.encode("utf-8"), compresslevel=9, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def report_rows(doc: Document) -> list[dict[str, Any]]:
    """The rows of the HTML report's findings table: the suspected bugs ranked, then the
    documented differences, then the splits (each ranked)."""
    ranked = doc.ranked()
    ordered = [f for c in CLASSIFICATIONS for f in ranked if f.classification == c]
    return [
        {
            "n": n,
            "signature": f.signature,
            "severity": f.severity,
            "confidence": f.confidence,
            "classification": f.classification,
            "kind": f.kind,
            "library": f.library,
            "headline": headline(f),
            "occurrences": f.occurrences,
        }
        for n, f in enumerate(ordered, 1)
    ]


def report_filters(doc: Document) -> list[dict[str, Any]]:
    """The report's filters, each with the values present in order: kind, library,
    classification, severity."""
    present: dict[str, set[str]] = {
        "kind": {f.kind for f in doc.findings},
        "library": {lib for f in doc.findings for lib in blamed(f)},
        "classification": {f.classification for f in doc.findings},
        "severity": {f.severity for f in doc.findings},
    }
    order: dict[str, Sequence[str]] = {
        "kind": KINDS,
        "library": [*doc.libraries, *sorted(present["library"] - set(doc.libraries))],
        "classification": CLASSIFICATIONS,
        "severity": SEVERITIES,
    }
    return [
        {"name": name, "values": [v for v in order[name] if v in present[name]]}
        for name in ("kind", "library", "classification", "severity")
    ]


def report_html(
    doc: Document, families: Mapping[str, str] | None = None, *, repro_base: str = ""
) -> str:
    """The self-contained HTML report: inline CSS, SVG and a small script, nothing fetched.

    One table holds every finding (sortable; filterable by kind, library, classification and
    severity); a finding's details (:func:`report_details`) are embedded compressed
    (:func:`pack_details`) and built only when it is opened, and its repro scripts are linked,
    not inlined, so the report stays small. ``repro_base`` is the URL of the folder of
    findings.json relative to the report (where the ``repro/`` paths start). ``families`` maps
    group ids to families; by default they come from the catalog.

    Note:
        Library text reaches the page only through Jinja's autoescaping or inside the packed
        details, which the script puts into the page with ``textContent``, never as HTML.
    """
    if families is None:
        families = group_families()
    page = {
        "base": repro_base,
        "versions": dict(doc.libraries),
        "order": {
            "severity": list(SEVERITIES),
            "confidence": list(CONFIDENCES),
            "classification": list(CLASSIFICATIONS),
            "kind": list(KINDS),
        },
    }
    details = {f.signature: report_details(f, doc.libraries) for f in doc.ranked()}
    return render(
        "report.html.j2",
        "html",
        s=summary_view(doc, families),
        h=support_heatmap(doc.support, families, list(doc.libraries)),
        rows=report_rows(doc),
        filters=report_filters(doc),
        page=script_json(page),
        details=pack_details(details),
    )
