"""Documentation as evidence: the sentences of a docstring that speak about a finding.

A worker returns a callable's docstring (:meth:`xamt.workers.pool.WorkerPool.docs`); the
functions here read it as plain text. :func:`sentences` picks the sentences that mention a
finding's dtype, its trigger, its parameters or a dtype restriction; :func:`documented_dtypes`
reads the dtypes a docstring states as the accepted ones.

Note:
    A docstring is read as prose: doctests (``>>>``/``...`` lines and their output), code
    blocks (``::`` literal blocks, ``.. code-block::``, ``.. math::``, fenced blocks), tables
    and the "See Also" and "References" sections are left out. Section headers, list items
    and parameter entries (numpydoc, Google, mindspore's ``- **x** (Tensor) - ...``) each start
    a unit of their own, so that no sentence runs across them; a numpydoc entry
    ``x : array_like`` reads as ``x (array_like):``.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator, Sequence

# The subject of each trigger (xamt.replay.TRIGGERS, and ORDINARY, which has none) in words.
TRIGGER_WORDS: dict[str, str] = {
    "nan": r"nans?|not[- ]a[- ]number",
    "inf": r"infs?|infinit(?:y|ies|e)|\\infty|non-?finite",
    "neg-zero": r"signed zeros?|negative zeros?|sign of (?:the )?zero|signbit|-0(?:\.0+)?(?!\.?\d)",
    "subnormal": r"subnormals?|denormal(?:s|ized)?|flush(?:es|ed|ing)?(?: to zero)?|ftz",
    "dtype-limit": r"overflows?|underflows?|wrap(?:s|ped|ping)?(?: around)?|saturat\w*|"
    r"representable|iinfo|finfo|(?:largest|smallest|maximum|minimum|max|min) "
    r"(?:finite |representable )?(?:value|number|integer)s?",
    "zero-divisor": r"zeros?|divi(?:de|ded|sion) by zero|divisors?",
    "empty": r"empty|zero[- ]size[d]?|size[- ](?:0|zero)|zero[- ]length|no elements|0 elements",
    "scalar": r"0-?d|0-dim\w*|zero[- ]dim\w*|scalars?|rank[- ]0",
    "out-of-range-axis": r"ax[ie]s|dims?|out of (?:range|bounds)|in the range|valid range|"
    r"negative (?:axis|axes|dims?)",
    "out-of-range-index": r"index|indices|out of (?:range|bounds)|in the range|valid range|"
    r"negative ind\w*",
    "param-boundary": r"positive|non-?negative|greater than|less than|at least|at most|"
    r"between|in the range|must not be",
    "kernel-beyond-input": r"kernels?|kernel_size|windows?|padd\w*|strides?|"
    r"larger than (?:the )?input|output size",
    "ordinary": "",
}
# Other names of a dtype, and the words for its kind (by the start of its name).
DTYPE_ALIASES = {
    "float16": "fp16|half-precision",
    "bfloat16": "bf16",
    "float32": "fp32",
    "float64": "double|fp64",
}
KIND_WORDS = (
    ("bfloat", r"float|floating(?:[- ]point)?"),
    ("float", r"float|floating(?:[- ]point)?"),
    ("complex", r"complex"),
    ("bool", r"bool_?|boolean"),
    ("uint", r"unsigned|integers?|integral|int"),
    ("int", r"integers?|integral|int"),
)
RESTRICTION = r"must(?: not)? be|should(?: not)? be|(?:not |un)?supported|supports?|only|neither"
# What a sentence mentions, and how much that weighs when more sentences mention something
# than ``limit`` allows.
WEIGHTS = {"trigger": 4, "dtype": 3, "param": 1, "restriction": 1}

SECTION_NAMES = frozenset(
    {"args", "arguments", "parameters", "params", "keyword args", "keyword arguments",
     "other parameters", "returns", "return", "yields", "raises", "warns", "see also",
     "notes", "note", "warning", "warnings", "examples", "example", "references", "inputs",
     "outputs", "attributes", "shape", "supported platforms"}
)  # fmt: skip
SKIPPED_SECTIONS = frozenset({"see also", "references"})
OUTPUT_SECTIONS = frozenset({"returns", "return", "yields", "outputs"})
PROSE_DIRECTIVES = frozenset(
    {"note", "warning", "attention", "caution", "danger", "important", "tip", "hint",
     "admonition", "versionadded", "versionchanged", "deprecated"}
)  # fmt: skip
DIRECTIVE = re.compile(r"^\.\.\s+([\w-]+)::\s*(.*)$")
# A border of a simple reStructuredText table: columns of "=" separated by spaces.
TABLE_BORDER = re.compile(r"={2,}(?:\s+={2,})+")
UNDERLINE = re.compile(r"^(?:[-=~^]{3,}|[+|].*[+|])$")  # section underlines, table rules/rows
BULLET = re.compile(r"^(?:[-*+•]|\d+[.)]|\(\d+\))\s+")
# "x (Tensor): ...", "dim (Union[int, tuple(int)]):...", "TypeError: If ..."
GOOGLE_ENTRY = re.compile(r"^\*{0,2}\w+\*{0,2}(?:\s*\((?:[^()]|\([^()]*\))*\))?:(?!:)")
NUMPY_ENTRY = re.compile(r"^(\*{0,2}\w+(?:\s*,\s*\*{0,2}\w+)*)(?:\s+:(?:\s+(.*))?)?$")
ROLE = re.compile(r":[\w:+-]+:`([^`]*)`")  # :math:`x`, :attr:`input` -> `x`, `input`
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'`(\[*]?[A-Z0-9])")
ABBREVIATION = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|eqs?|fig|ref|resp|approx|viz)\.$", re.I)

DTYPE_NAMES = (
    r"bfloat16|float16|float32|float64|complex64|complex128|"
    r"uint8|uint16|uint32|uint64|int8|int16|int32|int64|bool"
)
# One dtype name as docs write it: torch.float32, ``mindspore.float16``, np.bool_.
DTYPE_TOKEN = rf"(?<!\w)`*(?:[A-Za-z]+\.)*(?:{DTYPE_NAMES})_?(?!\w)`*"
DTYPE_LIST = (
    rf"{DTYPE_TOKEN}(?:\s*(?:,|/|\bor\b|\band\b|\bnor\b)\s*(?:(?:or|and|nor)\s+)?{DTYPE_TOKEN})*"
)
# "data type of `x` must be", "Supported dtypes:", "dtype of x is not", "must be", "only supports"
ACCEPTED = re.compile(
    r"(?<!\w)(?:(?:data\s*types?|dtypes?|types?)(?:\s+of\s+\S+(?:\s+\S+){0,2}?)?\s*"
    r"(?:(?:must|should|can|shall)\s+(?:only\s+)?be|(?:is|are)(?:\s+not)?|includes?)?"
    r"|(?:must|should|can)\s+(?:only\s+)?be|only\s+supports?|supports?\s+only)"
    rf"\s*(?:(?:one|any)\s+of|either|neither|of|in)?\s*:?\s*(?P<list>{DTYPE_LIST})",
    re.IGNORECASE,
)
DTYPE_NAME = re.compile(rf"(?<![\w])(?:[A-Za-z]+\.)*({DTYPE_NAMES})(?!\d)", re.IGNORECASE)
DTYPE_PARAM = re.compile(r"^\w*dtype\b", re.IGNORECASE)  # an entry for a ``dtype`` parameter


def sentences(
    doc: str, *, dtype: str, trigger: str, params: Sequence[str] = (), limit: int = 4
) -> tuple[str, ...]:
    """The sentences of ``doc`` that speak about a finding, at most ``limit``, in document order.

    A sentence is kept when it mentions the dtype (its name, another name for it, the words
    for its kind: ``int``, ``integer``, ``floating``...), the subject of the trigger
    (:data:`TRIGGER_WORDS`; an unknown trigger has none), one of ``params`` by name or a
    dtype restriction ("must be", "supported", "only"). When more are kept than ``limit``,
    those mentioning more (by :data:`WEIGHTS`: the trigger first, then the dtype) win.
    """
    checks = {
        "trigger": _words(TRIGGER_WORDS.get(trigger, "")),
        "dtype": _words(_dtype_words(dtype)),
        "param": _names(params),
        "restriction": _words(RESTRICTION),
    }
    scored = []
    for index, sentence in enumerate(dict.fromkeys(_sentences(doc))):
        hits = {name for name, check in checks.items() if check and check.search(sentence)}
        if ACCEPTED.search(sentence):  # a restriction naming other dtypes speaks of this one
            hits.add("dtype")
        if hits:
            scored.append((-sum(WEIGHTS[h] for h in hits), index, sentence))
    best = sorted(scored)[: max(limit, 0)]
    return tuple(sentence for _, _, sentence in sorted(best, key=lambda s: s[1]))


def documented_dtypes(doc: str) -> frozenset[str] | None:
    """The dtype names ``doc`` states as accepted ("must be float16 or float32", "Supported
    dtypes: float32, float64", "The data type should be float32, float64", "If dtype of `x`
    is not float16 or float32"), over all its inputs; None when it states none.

    Note:
        Output sections (Returns, Outputs) and the entry of a ``dtype`` parameter (which lists
        the dtypes it can ask for, not those the inputs may have) are not read.
    """
    found: set[str] = set()
    for section, text in _units(doc):
        if section in OUTPUT_SECTIONS or DTYPE_PARAM.match(text):
            continue
        for match in ACCEPTED.finditer(text):
            found.update(name.lower() for name in DTYPE_NAME.findall(match["list"]))
    return frozenset(found) or None


def _words(alternatives: str) -> re.Pattern[str] | None:
    """Whole words (or phrases) out of regex alternatives, any case; None for none."""
    if not alternatives:
        return None
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


def _names(params: Sequence[str]) -> re.Pattern[str] | None:
    """Parameter names as they are written: whole, case kept, not part of ``x-axis``."""
    names = "|".join(re.escape(p) for p in params if p)
    return re.compile(rf"(?<![\w-])(?:{names})(?![\w-])") if names else None


def _dtype_words(dtype: str) -> str:
    """Regex alternatives for a dtype: its name, its other names, the words for its kind."""
    kind = next((words for start, words in KIND_WORDS if dtype.startswith(start)), "")
    return "|".join(w for w in (re.escape(dtype), DTYPE_ALIASES.get(dtype, ""), kind) if w)


def _sentences(doc: str) -> Iterator[str]:
    """The prose sentences of a docstring, whitespace collapsed."""
    for section, text in _units(doc):
        if section in SKIPPED_SECTIONS:
            continue
        pieces: list[str] = []
        for piece in SENTENCE_END.split(text):
            if pieces and ABBREVIATION.search(pieces[-1]):
                pieces[-1] += " " + piece
            else:
                pieces.append(piece)
        yield from (p for p in pieces if any(c.isalpha() for c in p))


def _units(doc: str) -> list[tuple[str, str]]:
    """The docstring's units of prose as (section, text): paragraphs, list items and
    parameter entries (a numpydoc entry rewritten in Google's form)."""
    units: list[tuple[str, list[str]]] = []
    open_unit = False
    for section, text in _prose_lines(doc):
        if not text or BULLET.match(text) or GOOGLE_ENTRY.match(text) or NUMPY_ENTRY.match(text):
            open_unit = False
        if text:
            if not open_unit:
                units.append((section, []))
                open_unit = True
            units[-1][1].append(NUMPY_ENTRY.sub(_entry, BULLET.sub("", text)))
    return [(section, _clean(" ".join(parts))) for section, parts in units]


def _prose_lines(doc: str) -> Iterator[tuple[str, str]]:
    """(section, stripped line) for each line of prose; "" where a unit ends (a blank line,
    a header, left-out code). Leaves out what the module's Note says."""
    lines = inspect.cleandoc(doc or "").splitlines()
    section = ""
    code_indent: int | None = None  # the lines deeper than this belong to a code block
    doctest = fenced = False
    table = 0  # the borders of a simple table met so far (top, header rule, bottom)
    for i, line in enumerate(lines):
        text, indent = line.strip(), len(line) - len(line.lstrip())
        if TABLE_BORDER.fullmatch(text):
            table = (table + 1) % 3
            yield section, ""
            continue
        if table:
            continue
        if text.startswith("```"):
            fenced = not fenced
        if fenced or text.startswith("```"):
            yield section, ""
            continue
        if code_indent is not None and (not text or indent > code_indent):
            continue
        code_indent = None
        doctest = bool(text) and (doctest or text.startswith((">>>", "...", "In [")))
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if re.fullmatch(r"[-=~^]{3,}", nxt) or (
            text.endswith(":") and text[:-1].strip().lower() in SECTION_NAMES
        ):
            section, text = text.rstrip(":").strip().lower(), ""
        elif text.startswith(".. "):
            directive = DIRECTIVE.match(text)
            if directive is None or directive[1] not in PROSE_DIRECTIVES:
                code_indent, text = indent, ""
            else:  # a note's own text stays, a version number goes
                yield section, ""
                text = re.sub(r"^v?\d+(?:\.\d+)*\s*", "", directive[2])
        elif text.endswith("::"):  # a literal block follows
            code_indent, text = indent, text[:-2].rstrip() + ":"
        yield section, "" if doctest or UNDERLINE.match(text) else text


def _entry(match: re.Match[str]) -> str:
    """A numpydoc entry ``x : array_like`` as ``x (array_like):``."""
    return f"{match[1]} ({match[2]}):" if match[2] else f"{match[1]}:"


def _clean(text: str) -> str:
    """Inline markup reduced to backticks, whitespace collapsed."""
    text = ROLE.sub(r"`\1`", text).replace("``", "`").replace("**", "")
    return " ".join(text.split())


# paddle names bfloat16 "uint16" in its dtype lists (numpy has no bfloat16).
DOC_DTYPE_NAMES: dict[str, dict[str, str]] = {"paddle": {"uint16": "bfloat16"}}


# Sentences that exclude a kind of dtype ("Currently, complex numbers are not supported",
# "does not support bool"), and the dtypes each kind covers.
EXCLUDED = re.compile(
    r"(?P<a>complex|bool(?:ean)?)\s+(?:numbers?\s+|inputs?\s+|tensors?\s+|values?\s+|"
    r"(?:data\s+)?types?\s+|dtypes?\s+)?(?:are|is)\s+not\s+supported|"
    r"(?:does not|do not|doesn't)\s+support\s+(?P<b>complex|bool(?:ean)?)",
    re.IGNORECASE,
)
EXCLUDED_KINDS = {
    "complex": ("complex64", "complex128"),
    "bool": ("bool",),
    "boolean": ("bool",),
}


def documented_exclusions(doc: str) -> frozenset[str]:
    """The dtypes a docstring excludes in words ("complex numbers are not supported")."""
    found: set[str] = set()
    for _section, text in _units(doc):
        for match in EXCLUDED.finditer(text):
            found.update(EXCLUDED_KINDS[(match["a"] or match["b"]).lower()])
    return frozenset(found)


def outside_documented(doc: str, dtype: str, library: str, known: Sequence[str]) -> str:
    """The dtypes ``doc`` states as accepted, joined, where ``dtype`` is not among them and
    every name stated is one of ``known`` (a dtype name xamt knows), or "anything but DTYPE"
    where it excludes ``dtype`` in words; "" otherwise (nothing stated, a name such as
    "float" that could mean several, or ``dtype`` among them)."""
    if dtype in documented_exclusions(doc):
        return f"anything but {dtype}"
    stated = documented_dtypes(doc)
    if stated is None:
        return ""
    renamed = DOC_DTYPE_NAMES.get(library, {})
    names = {renamed.get(name, name) for name in stated}
    if not names <= set(known) or dtype in names or dtype not in known:
        return ""
    return ", ".join(sorted(names))
