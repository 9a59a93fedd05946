"""Known differences: documented semantics that differ between libraries, matched against
findings so that they are reported apart from suspected bugs."""

from __future__ import annotations

import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xamt.errors import XamtError
from xamt.types import DISCREPANCY_KINDS

DEFAULT_PATH = Path(__file__).resolve().with_name("known_differences.toml")
FIELDS = ("id", "reason", "link", "kind", "group", "odd", "dtype", "input_class", "error")
PATTERNS = ("kind", "group", "odd", "dtype", "input_class", "error")


class KnownDifferencesError(XamtError):
    """A known-differences file that cannot be used."""

    exit_code = 12


@dataclass(frozen=True, kw_only=True)
class KnownDifference:
    id: str
    reason: str
    link: str
    kind: str | None = None
    group: re.Pattern[str] | None = None
    odd: frozenset[str] | None = None
    dtype: re.Pattern[str] | None = None
    input_class: re.Pattern[str] | None = None
    error: re.Pattern[str] | None = None

    def matches(
        self,
        *,
        kind: str,
        group: str,
        odd: Sequence[str],
        dtype: str,
        input_classes: Sequence[str],
        error: str = "",
    ) -> bool:
        return (
            (self.kind is None or self.kind == kind)
            and (self.group is None or self.group.search(group) is not None)
            and (self.odd is None or self.odd == frozenset(odd))
            and (self.dtype is None or self.dtype.fullmatch(dtype) is not None)
            and (
                self.input_class is None
                or any(self.input_class.fullmatch(t) for t in input_classes)
            )
            and (self.error is None or self.error.search(error) is not None)
        )


def load_known(path: Path = DEFAULT_PATH) -> list[KnownDifference]:
    """Read and check a known-differences file; every problem names the file and entry."""
    try:
        data = tomllib.loads(path.read_text())
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
        where = f"{path}: entry #{i} ({raw.get('id', '?')})"
        out.append(_entry(raw, where))
        if out[-1].id in seen:
            raise KnownDifferencesError(f"{where}: duplicate id {out[-1].id!r}")
        seen.add(out[-1].id)
    return out


def _entry(raw: dict[str, Any], where: str) -> KnownDifference:
    unknown = set(raw) - set(FIELDS)
    if unknown:
        raise KnownDifferencesError(
            f"{where}: unknown field(s) {sorted(unknown)}; fields are {', '.join(FIELDS)}"
        )
    for field in ("id", "reason", "link"):
        if not isinstance(raw.get(field), str) or not raw[field].strip():
            raise KnownDifferencesError(f"{where}: {field!r} is required (a non-empty string)")
    if not raw["link"].startswith(("https://", "http://")):
        raise KnownDifferencesError(f"{where}: link must be a URL to the documentation")
    if not any(p in raw for p in PATTERNS):
        raise KnownDifferencesError(f"{where}: give at least one of {', '.join(PATTERNS)}")
    if "kind" in raw and raw["kind"] not in DISCREPANCY_KINDS:
        raise KnownDifferencesError(
            f"{where}: unknown kind {raw['kind']!r}; kinds are {', '.join(DISCREPANCY_KINDS)}"
        )
    if "odd" in raw and (
        not isinstance(raw["odd"], list) or not all(isinstance(x, str) for x in raw["odd"])
    ):
        raise KnownDifferencesError(f"{where}: odd must be a list of library names")
    compiled: dict[str, re.Pattern[str]] = {}
    for field in ("group", "dtype", "input_class", "error"):
        if field in raw:
            try:
                compiled[field] = re.compile(str(raw[field]))
            except re.error as exc:
                raise KnownDifferencesError(
                    f"{where}: {field} {raw[field]!r} is not a regular expression: {exc}"
                ) from None
    return KnownDifference(
        id=raw["id"],
        reason=raw["reason"],
        link=raw["link"],
        kind=raw.get("kind"),
        odd=frozenset(raw["odd"]) if "odd" in raw else None,
        **compiled,
    )


def classify(
    known: Sequence[KnownDifference],
    *,
    kind: str,
    group: str,
    odd: Sequence[str],
    dtype: str,
    input_classes: Sequence[str],
    error: str = "",
) -> tuple[str, KnownDifference | None]:
    """("documented-difference", entry) for the first entry that matches, else
    ("suspected-bug", None)."""
    for entry in known:
        if entry.matches(
            kind=kind, group=group, odd=odd, dtype=dtype, input_classes=input_classes, error=error
        ):
            return "documented-difference", entry
    return "suspected-bug", None
