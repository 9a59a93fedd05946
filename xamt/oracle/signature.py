"""Signatures: the identity of a bug, as a versioned hash of normalized facts.

A signature is the store's key and the issue filer's dedup marker: one root cause in one
library. Version 2 hashes the kind family, the one library blamed, its canonical callable, the
input dtype, the trigger (the one input class the minimized case still needs) and the
normalized error type. Never the other libraries, the full tag set or the error message: the
same misbehaviour met through many cases is one signature. Error texts are normalized by an
ordered table of replacements (addresses, paths, line numbers, shapes, tensor reprs, numbers)
for the readable parts of a finding.

Note:
    Never put library versions, seeds, raw values, shapes or paths into a signature: the same
    bug must keep its identity across runs, machines and releases. Changing the facts or the
    replacements changes every hash, so bump :data:`SIGNATURE_VERSION` when doing so and
    regenerate the golden file (``XAMT_UPDATE_GOLDEN=1 pytest tests/test_signature.py``).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import get_args

from xamt.findings import Family

SIGNATURE_VERSION = 2
# Longest normalized message kept in a signature: enough for the gist, not for a data dump.
MESSAGE_LIMIT = 160
FAMILIES: tuple[str, ...] = get_args(Family)

_NUMBER = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"

# Applied in order: earlier rules protect their matches from later, coarser ones.
REPLACEMENTS: tuple[tuple[re.Pattern[str], str], ...] = (
    # Memory addresses and other hex literals: differ on every run.
    (re.compile(r"\b0[xX][0-9a-fA-F]+\b"), "ADDR"),
    # Tensor/array reprs (one level of nested parentheses): raw values, dtypes and devices.
    (
        re.compile(
            r"(?:\b(?:tf\.)?(?:tensor|Tensor|array|ndarray|EagerTensor|Array)|<tf\.Tensor)"
            r"\((?:[^()]|\([^()]*\))*\)>?"
        ),
        "TENSOR",
    ),
    # Absolute file paths (POSIX, Windows drive, home), with the line:column that follows.
    (
        re.compile(r"(?:(?<![\w.])(?:[A-Za-z]:)?(?:[\\/][\w.+@~-]+){2,}|~(?:/[\w.+@-]+)+)"),
        "PATH",
    ),
    # Relative source files, as C++ libraries print them (paddle/phi/core/x.cc).
    (
        re.compile(r"\b[\w.-]+(?:/[\w.-]+)+\.(?:py|pyx|cc|cpp|cxx|c|h|hpp|cu|cuh|so)\b"),
        "PATH",
    ),
    (re.compile(r"PATH(?::\d+)+"), "PATH:N"),
    (re.compile(r"\b[Ll]ine \d+"), "line N"),
    # Shapes and index lists: [2, 3], (2,3), (4,), torch.Size([2]), [].
    (
        re.compile(r"\[\s*(?:-?\d+\s*,\s*)*-?\d+\s*,?\s*\]|\(\s*(?:-?\d+\s*,\s*)+(?:-?\d+)?\s*\)"),
        "SHAPE",
    ),
    (re.compile(r"(?<![\w\])])(?:\[\s*\]|\(\s*\))"), "SHAPE"),
    # Bracketed value lists as numpy prints them: [1.5 2. nan], [[0 1] [2 3]].
    (
        re.compile(rf"\[[\s\[\]]*(?:(?:{_NUMBER}|nan|inf|-inf|True|False)\.?[\s,\[\]]*)+\]"),
        "VALUES",
    ),
    # Dotted numbers: versions (2.13.0), IP addresses.
    (re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?![\w.])"), "N"),
    # Any other number (not part of a name such as float32, conv2d or SIGSEGV).
    (re.compile(rf"(?<![\w.]){_NUMBER}(?![\w.])"), "N"),
    # A quoted string that is nothing but a placeholder: 'ADDR', "PATH:N" -> 'X'.
    (re.compile(r"(['\"])(?:ADDR|TENSOR|PATH(?::N)?|SHAPE|VALUES|N)\1"), r"\1X\1"),
    (re.compile(r"\s+"), " "),
)


# The exception type (or signal name) at the head of an error text, for the readable key.
_ERROR_TYPE = re.compile(r"([A-Za-z_][\w.]*)(?::|$)")


# Lines that say nothing about the error: traceback boilerplate, frames, rules, stack headings.
SKIPPED_LINES = re.compile(
    r"^\s*(?:(?:[\w.]+: )?Traceback \(most recent call last\):?|File \".*\", line \d+.*|\[bt\].*|"
    r"[-=_*#~]{3,}.*|-? ?(?:C\+\+|Python|The Function) Call Stack.*|Stack trace:?)\s*$"
)


def headline(text: str) -> str:
    """The first informative line of a message, stripped: blank lines and traceback
    boilerplate (:data:`SKIPPED_LINES`) are passed over; if nothing is left, the first
    non-blank line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return next((ln for ln in lines if not SKIPPED_LINES.match(ln)), lines[0] if lines else "")


def normalize_message(text: str) -> str:
    """Normalize an exception message or crash text: its :func:`headline`, placeholders for
    run-specific parts (see :data:`REPLACEMENTS`), at most :data:`MESSAGE_LIMIT` characters."""
    line = headline(text)
    for pattern, replacement in REPLACEMENTS:
        line = pattern.sub(replacement, line)
    return line.strip()[:MESSAGE_LIMIT]


def error_type(error: str) -> str:
    """The exception type (or signal name) at the head of an error text; "" if none."""
    match = _ERROR_TYPE.match(normalize_message(error)) if error else None
    return match.group(1).rsplit(".", 1)[-1] if match else ""


def signature_of(
    *,
    family: str,
    library: str,
    callable: str,
    dtype: str,
    trigger: str,
    error: str = "",
) -> tuple[str, str]:
    """Return ``(hash, readable key)`` of one root cause in one library.

    Args:
        family: the kind family (:data:`xamt.findings.FAMILY` values).
        library: the one library blamed (for a split, its sides joined with ``+``).
        callable: that library's canonical callable (:func:`canonical_callable`).
        dtype: the input dtype, or ``"-"`` for a call without an array input.
        trigger: the one input class the minimized case needs (``"ordinary"`` if none).
        error: the blamed library's error text or signal; only its type is kept.

    Returns:
        The first 16 hex digits of a sha256 over the canonical JSON of the facts and
        :data:`SIGNATURE_VERSION`, and a key such as ``"value/paddle/paddle.sinc/float32/nan"``
        (``/<ExceptionType>`` appended when there is an error).

    Raises:
        ValueError: an unknown family.
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown kind family {family!r}; known: {', '.join(FAMILIES)}")
    etype = error_type(error)
    facts = {
        "version": SIGNATURE_VERSION,
        "family": family,
        "library": library,
        "callable": callable,
        "dtype": dtype,
        "trigger": trigger,
        "error": etype,
    }
    canonical = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    parts = [family, library, callable, dtype, trigger]
    if etype:
        parts.append(etype)
    return digest, "/".join(parts)


def canonical_callable(library: str, op: str) -> str:
    """One name for every alias, namespace, method and in-place variant of a library's
    function: the library and the group's operation (``torch.Tensor.acos_`` -> ``torch.acos``).
    """
    return f"{library}.{op}"
