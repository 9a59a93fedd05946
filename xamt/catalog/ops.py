"""What the verdict knows about operations: reviewed traits, read from ``data/ops.toml``.

A :class:`Trait` says one thing about how an operation's results may be judged (a kind of
difference that nothing decides under a named condition, a domain outside which a case is no
case, result positions no answer is held to, how values are compared), with the reason and
the document it rests on. Records name the traits of a family, an operation or a group (a
plan variant such as ``max_pool2d[ceil_mode]``); :func:`traits_of` gives a group's, family
first. Loading imports no deep-learning library and no oracle: the condition, domain and
position names are resolved by :mod:`xamt.oracle.checks`.
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xamt.catalog.model import FAMILIES, CatalogError, Group

OPS_PATH = Path(__file__).resolve().parent / "data" / "ops.toml"
# The kinds a trait may leave open: the value family's (shape and dtype are always judged).
OPENABLE = ("nan", "inf", "signed-zero", "value")
# The effects a trait may have; exactly one per trait.
EFFECTS = ("opens", "domain", "positions", "equates", "compare")
COMPARISONS = ("normwise", "componentwise", "unordered")
SCOPES = ("complex-infinities",)
BOUNDS = ("sum", "product", "matrix-product", "difference")
TRAIT_FIELDS = frozenset(
    {
        *EFFECTS,
        *("when", "question", "reason", "link", "bound", "function", "scope"),
        *("integer_results", "floating_results"),
    }
)
# Records: "every" (one record, the traits of every group), then by family, operation, group.
RECORD_KINDS = ("every", "family", "op", "group")


@dataclass(frozen=True, kw_only=True)
class Trait:
    """One reviewed fact about how an operation's results may be judged.

    Exactly one effect: ``opens`` (kinds nothing decides when the condition ``when`` holds;
    asked as ``question``), ``domain`` (a named check: outside it the case is no case),
    ``positions`` (a named rule for result positions no answer is held to), ``equates`` (a
    named rule for positions where two answers stand) or ``compare``.
    """

    name: str
    reason: str
    link: str
    opens: tuple[str, ...] = ()
    when: str = ""
    question: str = ""
    bound: str = ""  # for the "integer-may-wrap" condition: how the aggregate grows
    integer_results: bool = False  # opens only where every result is an integer
    floating_results: bool = False  # opens only where every result is floating
    scope: str = ""  # "complex-infinities": opens only where every result is one
    domain: str = ""
    positions: str = ""
    function: str = ""  # for the "exact-integer-overflow" positions: the exact function
    equates: str = ""  # a named rule: positions where a second answer is read as the first
    compare: str = ""


@dataclass(frozen=True, kw_only=True)
class OpTraits:
    """The traits file: traits by name, and the trait names of families, ops and groups."""

    traits: dict[str, Trait]
    records: dict[tuple[str, str], tuple[str, ...]]  # (record kind, name) -> trait names

    def of(self, group: Group) -> tuple[Trait, ...]:
        """A group's traits: every group's, its family's, its operation's, then its own (no
        repeats)."""
        names: dict[str, None] = {}
        keys = (("every", ""), ("family", group.family), ("op", group.op), ("group", group.id))
        for key in keys:
            names.update(dict.fromkeys(self.records.get(key, ())))
        return tuple(self.traits[n] for n in names)


def load_ops(path: Path = OPS_PATH) -> OpTraits:
    """Read and check a traits file; every problem names the file and the entry."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: not a readable traits file: {exc}") from None
    unknown = set(data) - {"trait", *RECORD_KINDS}
    if unknown:
        raise CatalogError(f"{path}: unknown table(s) {sorted(unknown)}")
    traits = {
        name: _trait(name, raw, f"{path}: trait {name!r}")
        for name, raw in dict(data.get("trait", {})).items()
    }
    records: dict[tuple[str, str], tuple[str, ...]] = {}
    tables = {kind: dict(data.get(kind, {})) for kind in RECORD_KINDS}
    tables["every"] = {"": tables["every"]} if tables["every"] else {}
    for kind, table in tables.items():
        for name, raw in table.items():
            where = f"{path}: {kind} {name!r}" if name else f"{path}: {kind}"
            if not isinstance(raw, dict) or set(raw) != {"traits"}:
                raise CatalogError(f"{where}: a record holds one key, traits (a list of names)")
            names = raw["traits"]
            if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                raise CatalogError(f"{where}: traits must be a list of trait names")
            missing = [n for n in names if n not in traits]
            if missing:
                raise CatalogError(f"{where}: unknown trait(s) {', '.join(missing)}")
            if kind == "family" and name not in FAMILIES:
                raise CatalogError(f"{where}: unknown family; families: {', '.join(FAMILIES)}")
            records[(kind, name)] = tuple(names)
    return OpTraits(traits=traits, records=records)


def _trait(name: str, raw: Any, where: str) -> Trait:
    if not isinstance(raw, dict):
        raise CatalogError(f"{where}: a trait must be a table")
    unknown = set(raw) - TRAIT_FIELDS
    if unknown:
        raise CatalogError(f"{where}: unknown field(s) {sorted(unknown)}")
    for field in ("reason", "link"):
        if not isinstance(raw.get(field), str) or not raw[field].strip():
            raise CatalogError(f"{where}: {field!r} is required (a non-empty string)")
    if not raw["link"].startswith("https://"):
        raise CatalogError(f"{where}: link must be an https URL to the document it rests on")
    effects = [e for e in EFFECTS if e in raw]
    if len(effects) != 1:
        raise CatalogError(f"{where}: give exactly one of {', '.join(EFFECTS)}")
    opens = tuple(raw.get("opens", ()))
    if "opens" in raw:
        if not opens or not set(opens) <= set(OPENABLE):
            raise CatalogError(f"{where}: opens must list kinds among {', '.join(OPENABLE)}")
        if not raw.get("when") or not raw.get("question"):
            raise CatalogError(f"{where}: an opening trait needs when and question")
    if raw.get("bound", "") not in ("", *BOUNDS):
        raise CatalogError(f"{where}: bound must be one of {', '.join(BOUNDS)}")
    if raw.get("scope", "") not in ("", *SCOPES):
        raise CatalogError(f"{where}: scope must be one of {', '.join(SCOPES)}")
    if raw.get("compare", "") not in ("", *COMPARISONS):
        raise CatalogError(f"{where}: compare must be one of {', '.join(COMPARISONS)}")
    texts = ("when", "question", "bound", "domain", "positions", "function", "equates")
    if not all(isinstance(raw.get(k, ""), str) for k in texts):
        raise CatalogError(f"{where}: {', '.join(texts)} are text")
    return Trait(
        name=name,
        reason=raw["reason"],
        link=raw["link"],
        opens=opens,
        when=str(raw.get("when", "")),
        question=str(raw.get("question", "")),
        bound=str(raw.get("bound", "")),
        integer_results=bool(raw.get("integer_results", False)),
        floating_results=bool(raw.get("floating_results", False)),
        scope=str(raw.get("scope", "")),
        domain=str(raw.get("domain", "")),
        positions=str(raw.get("positions", "")),
        function=str(raw.get("function", "")),
        equates=str(raw.get("equates", "")),
        compare=str(raw.get("compare", "")),
    )


@functools.cache
def shipped() -> OpTraits:
    """The shipped traits file, read once."""
    return load_ops()


def traits_of(group: Group) -> tuple[Trait, ...]:
    """The shipped traits of ``group`` (family, operation, then group records)."""
    return shipped().of(group)
