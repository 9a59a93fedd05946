"""Known differences: documented, intended behaviours in which libraries differ.

A finding that matches an entry of the reviewed baseline (``known_differences.toml``) is
classified ``documented-difference``, with the entry's reason and the link to the
documentation that states the behaviour, instead of ``suspected-bug``. Entries belong to a
*policy* (default float type, index dtype, NaN policy, ...), and the report shows each policy
once with the operations it affects.

Note:
    An entry suppresses a behaviour because its documentation says it is intended, never a
    kind of finding because it is noisy: every entry needs a link, and its patterns must be
    narrow enough that a real bug of the same library does not match. A user may pass their
    own file: a pattern that could backtrack exponentially is refused at load
    (:mod:`xamt.regexes`).
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xamt import schemas
from xamt.errors import XamtError
from xamt.findings import KINDS, Classification, KnownRef
from xamt.libraries import library_names
from xamt.oracle.checks import CONDITIONS
from xamt.regexes import UnboundedPattern, compile_bounded

DEFAULT_PATH = Path(__file__).resolve().parent / "triage" / "known_differences.toml"
REQUIRED = ("id", "policy", "reason", "link")
PATTERNS = ("kind", "library", "api", "op", "group", "dtype", "trigger", "error", "output")
FIELDS = (*REQUIRED, *PATTERNS, "when")
# Patterns searched anywhere in their text; the others must match the whole text.
SEARCHED = ("api", "error", "output")


class KnownDifferencesError(XamtError):
    """A known-differences file that cannot be used."""

    exit_code = 12


@dataclass(frozen=True, kw_only=True)
class Facts:
    """What a known difference is matched against: one blamed library's departure."""

    kind: str
    library: str
    api: str  # the blamed library's API path in the case
    op: str  # the group's operation
    dtype: str
    trigger: str
    error: str = ""
    output: str = ""  # the finding's detail line
    group: str = ""  # the catalog group's id ("max_pool2d[ceil_mode]")
    # whether a named condition of xamt/oracle/checks.py holds for the case
    holds: Callable[[str], bool] = lambda name: False


@dataclass(frozen=True, kw_only=True)
class KnownDifference:
    id: str
    policy: str
    reason: str
    link: str
    kinds: frozenset[str] | None = None
    libraries: frozenset[str] | None = None
    patterns: tuple[tuple[str, re.Pattern[str]], ...] = ()
    when: str = ""  # a condition of xamt/oracle/checks.py that must hold for the case

    def matches(self, facts: Facts) -> bool:
        if self.kinds is not None and facts.kind not in self.kinds:
            return False
        if self.libraries is not None and facts.library not in self.libraries:
            return False
        for name, pattern in self.patterns:
            text = getattr(facts, name)
            found = pattern.search(text) if name in SEARCHED else pattern.fullmatch(text)
            if found is None:
                return False
        return not self.when or facts.holds(self.when)

    def ref(self) -> KnownRef:
        return KnownRef(id=self.id, policy=self.policy, reason=self.reason, link=self.link)


def load_known(path: Path = DEFAULT_PATH) -> list[KnownDifference]:
    """Read and check a known-differences file; every problem names the file and entry."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KnownDifferencesError(f"{path}: no such known-differences file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise KnownDifferencesError(f"{path}: not a readable TOML file: {exc}") from None
    entries = data.get("difference", [])
    unknown_top = set(data) - {"difference"}
    if unknown_top or not isinstance(entries, list):
        raise KnownDifferencesError(
            f"{path}: expected only [[difference]] entries, found {sorted(unknown_top)}"
        )
    out, seen = [], set()
    for i, raw in enumerate(entries):
        ident = str(raw.get("id", "?")) if isinstance(raw, dict) else "?"
        where = f"{path}: entry #{i} ({ident if len(ident) <= 60 else ident[:57] + '...'})"
        if not isinstance(raw, dict):
            raise KnownDifferencesError(f"{where}: an entry must be a table")
        # shape and types (xamt/schemas/known-differences.schema.json), then meaning
        schemas.validate("known-differences", raw, where, KnownDifferencesError, definition="entry")
        entry = _entry(raw, where)
        if entry.id in seen:
            raise KnownDifferencesError(f"{where}: duplicate id {entry.id!r}")
        seen.add(entry.id)
        out.append(entry)
    return out


def _names(raw: dict[str, Any], field: str, allowed: Sequence[str], where: str) -> frozenset[str]:
    value = raw[field]
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(x, str) for x in items):
        raise KnownDifferencesError(f"{where}: {field} must be a name or a list of names")
    unknown = sorted(set(items) - set(allowed))
    if unknown:
        raise KnownDifferencesError(
            f"{where}: unknown {field} {', '.join(unknown)}; known: {', '.join(allowed)}"
        )
    return frozenset(items)


def _entry(raw: dict[str, Any], where: str) -> KnownDifference:
    unknown = set(raw) - set(FIELDS)
    if unknown:
        raise KnownDifferencesError(
            f"{where}: unknown field(s) {sorted(unknown)}; fields are {', '.join(FIELDS)}"
        )
    for field in REQUIRED:
        if not isinstance(raw.get(field), str) or not raw[field].strip():
            raise KnownDifferencesError(f"{where}: {field!r} is required (a non-empty string)")
    if not raw["link"].startswith("https://"):
        raise KnownDifferencesError(f"{where}: link must be an https URL to the documentation")
    if not any(p in raw for p in PATTERNS if p != "library"):
        raise KnownDifferencesError(
            f"{where}: give at least one of {', '.join(p for p in PATTERNS if p != 'library')}"
        )
    when = raw.get("when", "")
    if when and when not in CONDITIONS:
        raise KnownDifferencesError(
            f"{where}: unknown condition {when!r}; known: {', '.join(sorted(CONDITIONS))}"
        )
    patterns = []
    for field in ("api", "op", "group", "dtype", "trigger", "error", "output"):
        if field in raw:
            if not isinstance(raw[field], str):
                raise KnownDifferencesError(f"{where}: {field} must be a regular expression")
            try:
                patterns.append((field, compile_bounded(raw[field])))
            except UnboundedPattern as exc:
                raise KnownDifferencesError(
                    f"{where}: {field} {raw[field]!r} is refused: {exc}; write it so that "
                    "each round of a repetition starts with what the last cannot end with"
                ) from None
            except (re.error, RecursionError, OverflowError) as exc:
                raise KnownDifferencesError(
                    f"{where}: {field} {raw[field]!r} is not a regular expression: {exc}"
                ) from None
    return KnownDifference(
        id=raw["id"],
        policy=raw["policy"],
        reason=raw["reason"],
        link=raw["link"],
        kinds=_names(raw, "kind", KINDS, where) if "kind" in raw else None,
        libraries=_names(raw, "library", library_names(), where) if "library" in raw else None,
        patterns=tuple(patterns),
        when=when,
    )


def classify(
    known: Sequence[KnownDifference], facts: Facts, *, split: bool = False
) -> tuple[Classification, KnownRef | None]:
    """("documented-difference", entry) for the first entry that matches, else "split" for a
    split and "suspected-bug" otherwise."""
    for entry in known:
        if entry.matches(facts):
            return "documented-difference", entry.ref()
    return ("split" if split else "suspected-bug"), None
