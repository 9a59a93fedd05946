"""Code several callables of one library share, read from ``data/shared_code.toml``.

A :class:`SharedCode` record says that a library's API paths run one piece of code below
Python (one kernel registered under several names, one reducer): a defect shown through any of
them is one root cause. Each record carries the reason and an https link to that code in the
library's source. Delegation the Python source shows needs no record (triage reads it).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from xamt.catalog.model import CatalogError
from xamt.libraries import library_names

SHARED_PATH = Path(__file__).resolve().parent / "data" / "shared_code.toml"
FIELDS = frozenset({"apis", "code", "reason", "link"})


@dataclass(frozen=True, kw_only=True)
class SharedCode:
    """API paths of one library that run one piece of code."""

    name: str
    library: str
    apis: tuple[str, ...]
    code: str
    reason: str
    link: str


def load_shared(path: Path = SHARED_PATH) -> dict[tuple[str, str], SharedCode]:
    """Read and check a shared-code file: (library, API path) -> its record. Every problem
    names the file and the record; an API path in two records is refused."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: not a readable shared-code file: {exc}") from None
    found: dict[tuple[str, str], SharedCode] = {}
    for library, records in data.items():
        if library not in library_names() or not isinstance(records, dict):
            raise CatalogError(f"{path}: {library!r} is not a library with records")
        for name, raw in records.items():
            record = _record(library, name, raw, f"{path}: {library}.{name}")
            for api in record.apis:
                if (library, api) in found:
                    raise CatalogError(f"{path}: {library}.{name}: {api} is in two records")
                found[(library, api)] = record
    return found


def _record(library: str, name: str, raw: object, where: str) -> SharedCode:
    if not isinstance(raw, dict) or set(raw) != FIELDS:
        raise CatalogError(f"{where}: a record holds exactly {', '.join(sorted(FIELDS))}")
    for field in ("code", "reason", "link"):
        if not isinstance(raw[field], str) or not raw[field].strip():
            raise CatalogError(f"{where}: {field!r} must be a non-empty string")
    if not raw["link"].startswith("https://"):
        raise CatalogError(f"{where}: link must be an https URL to the library's source")
    apis = raw["apis"]
    if not isinstance(apis, list) or len(apis) < 2 or not all(isinstance(a, str) for a in apis):
        raise CatalogError(f"{where}: apis must list two or more API paths")
    if any(not a.startswith(f"{library}.") for a in apis):
        raise CatalogError(f"{where}: every API path must be {library}'s")
    return SharedCode(
        name=name,
        library=library,
        apis=tuple(apis),
        code=raw["code"],
        reason=raw["reason"],
        link=raw["link"],
    )


@functools.cache
def shipped() -> dict[tuple[str, str], SharedCode]:
    """The shipped shared-code file, read once."""
    return load_shared()


def shared_code(library: str, api: str) -> SharedCode | None:
    """The shipped record of the code ``library``'s ``api`` shares, if any."""
    return shipped().get((library, api))
