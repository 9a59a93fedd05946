"""Signatures: the identity of a bug, as a versioned hash of normalized facts.

A signature is the shrinker's predicate (a smaller case must keep it), the store's key and the
issue filer's dedup marker. It is computed from the kind of discrepancy, the API group, the odd
libraries, the dtype, the input class and the odd side's error text after normalization by an
ordered table of replacements (addresses, paths, line numbers, shapes, tensor reprs, numbers).

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
from collections.abc import Iterable

from xamt.types import DISCREPANCY_KINDS

SIGNATURE_VERSION = 1
# Longest normalized message kept in a signature: enough for the gist, not for a data dump.
MESSAGE_LIMIT = 160

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


def signature_of(
    *,
    kind: str,
    group: str,
    odd: Iterable[str],
    dtype: str,
    input_class: str | Iterable[str],
    error: str = "",
) -> tuple[str, str]:
    """Return ``(hash, readable key)`` of a discrepancy's normalized facts.

    Args:
        kind: one of :data:`xamt.types.DISCREPANCY_KINDS`.
        group: the API group id.
        odd: the odd libraries (order and repeats do not matter).
        dtype: the case's input dtype name.
        input_class: the input class tag, or several tags (sorted and joined with ``+``).
        error: the odd side's error text, e.g. ``"ValueError: bad axis 3"`` or ``"SIGSEGV"``.

    Returns:
        The first 16 hex digits of a sha256 over the canonical JSON of the facts and
        :data:`SIGNATURE_VERSION`, and a key such as ``"value/abs/torch/float32/nan"``
        (``/<ExceptionType>`` appended when there is an error).

    Raises:
        ValueError: an unknown kind.
    """
    if kind not in DISCREPANCY_KINDS:
        raise ValueError(
            f"unknown discrepancy kind {kind!r}; known: {', '.join(DISCREPANCY_KINDS)}"
        )
    libs = sorted(set(odd))
    tags = [input_class] if isinstance(input_class, str) else sorted(set(input_class))
    classes = "+".join(tags)
    message = normalize_message(error)
    facts = {
        "version": SIGNATURE_VERSION,
        "kind": kind,
        "group": group,
        "odd": libs,
        "dtype": dtype,
        "input_class": classes,
        "error": message,
    }
    canonical = json.dumps(facts, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:16]
    parts = [kind, group, "+".join(libs) or "-", dtype, classes or "-"]
    error_type = _ERROR_TYPE.match(message)
    if error_type:
        parts.append(error_type.group(1))
    return digest, "/".join(parts)
