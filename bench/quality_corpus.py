"""Classification quality on a hand-labelled corpus of (case, library) pairs.

A labelled entry says what one library's behaviour on one case *is*: a ``bug`` in that
library, a ``documented-difference`` (intended, with the documentation's link), or a
``fuzzer-fault`` (the library is right: the call is invalid for everyone, an overflow
artefact, a support refusal, a wrong binding, the majority is wrong). :func:`evaluate` replays
every case through the same engine as a campaign and asks whether the verdict makes that
library a *suspected bug* (of any kind: a library that returns garbage where it should raise
may be labelled a wrong value and found as a status departure). Precision is the share of predicted
suspected bugs that are labelled ``bug``; recall the share of ``bug`` entries predicted.

Used by ``bench/quality.py`` and ``tests/integration/test_quality.py``, which put this folder on
``sys.path``; no module of xamt imports it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast, get_args

from xamt.catalog.model import Catalog, CatalogError
from xamt.findings import FAMILY, Kind
from xamt.known import KnownDifference
from xamt.replay import Replay, classify_blame
from xamt.serialize import case_from_jsonable
from xamt.types import Case

BATCH = 24

Label = Literal["bug", "documented-difference", "unspecified", "fuzzer-fault"]
LABELS: tuple[Label, ...] = get_args(Label)


@dataclass(frozen=True, kw_only=True)
class Labelled:
    """One hand-labelled (case, library) pair."""

    id: str
    case: Case
    library: str
    kind: Kind
    label: Label
    reason: str
    link: str = ""


@dataclass(frozen=True, kw_only=True)
class Judged:
    """What the classifier made of one labelled entry."""

    entry: Labelled
    suspected: bool  # the library is a suspected bug in this case
    classification: str  # how its blames were classified ("suspected-bug" if any), or "none"


@dataclass(frozen=True, kw_only=True)
class Quality:
    judged: tuple[Judged, ...]

    @property
    def precision(self) -> float:
        predicted = [j for j in self.judged if j.suspected]
        return sum(j.entry.label == "bug" for j in predicted) / max(len(predicted), 1)

    @property
    def recall(self) -> float:
        bugs = [j for j in self.judged if j.entry.label == "bug"]
        return sum(j.suspected for j in bugs) / max(len(bugs), 1)

    def wrong(self) -> list[Judged]:
        """Entries the classifier got wrong: a bug not suspected, or a non-bug suspected."""
        return [j for j in self.judged if j.suspected != (j.entry.label == "bug")]

    def lines(self) -> list[str]:
        counts = {label: sum(j.entry.label == label for j in self.judged) for label in LABELS}
        out = [
            f"labelled corpus: {len(self.judged)} entries ("
            + ", ".join(f"{n} {label}" for label, n in counts.items())
            + f"); precision of suspected-bug {self.precision:.1%}, recall of bugs "
            f"{self.recall:.1%}"
        ]
        for j in self.wrong():
            e = j.entry
            out.append(
                f"  {e.id}: labelled {e.label}, classified {j.classification}: {e.library} "
                f"{e.kind} on {e.case.group} ({e.reason[:90]})"
            )
        return out


def load_corpus(path: Path) -> list[Labelled]:
    """Read a labelled corpus (``tests/data/labelled_findings.json`` format)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    out = []
    for i, raw in enumerate(data["entries"]):
        where = f"{path}: entries[{i}]"
        if raw.get("label") not in LABELS or raw.get("kind") not in FAMILY:
            raise ValueError(f"{where}: label must be one of {LABELS} and kind a finding kind")
        out.append(
            Labelled(
                id=str(raw.get("id", i)),
                case=case_from_jsonable(raw["case"]),
                library=str(raw["library"]),
                kind=cast(Kind, raw["kind"]),
                label=cast(Label, raw["label"]),
                reason=str(raw.get("reason", "")),
                link=str(raw.get("link", "")),
            )
        )
    return out


def evaluate(
    entries: Sequence[Labelled],
    replay: Replay,
    known: Sequence[KnownDifference],
) -> Quality:
    """Replay every entry's case and judge its library (cases run in batches of
    :data:`BATCH`, as a campaign runs them). A member the catalog no longer holds (split off
    by a later build) is left out of its cases; an entry whose own library's member left is
    classified ``left-catalog``."""
    cases = [
        dataclasses.replace(
            e.case,
            apis={
                lib: api
                for lib, api in e.case.apis.items()
                if (e.case.group, api) in replay.members
            },
        )
        for e in entries
    ]
    results = [
        r for start in range(0, len(cases), BATCH) for r in replay.run(cases[start : start + BATCH])
    ]
    judged = []
    for entry, case, result in zip(entries, cases, results, strict=True):
        if entry.library not in case.apis:
            judged.append(Judged(entry=entry, suspected=False, classification="left-catalog"))
            continue
        group = replay.groups[entry.case.group]
        # the library's blames in this case, of the entry's kind family first
        mine = sorted(
            (s for s in result.signed if s.blame.library == entry.library),
            key=lambda s: s.blame.family != FAMILY[entry.kind],
        )
        labels = [classify_blame(known, s, entry.case, group)[0] for s in mine]
        classification = (
            "suspected-bug" if "suspected-bug" in labels else next(iter(labels), "none")
        )
        if classification == "none" and result.judgement.support.get(entry.library) == "refused":
            classification = "refused"
        judged.append(
            Judged(
                entry=entry,
                suspected=classification == "suspected-bug",
                classification=classification,
            )
        )
    return Quality(judged=tuple(judged))


def corpus_groups(entries: Sequence[Labelled], catalog: Catalog) -> dict[str, Any]:
    """The catalog groups the corpus needs (a CatalogError names a missing one)."""
    found: dict[str, Any] = {}
    for e in entries:
        if e.case.group not in found:
            try:
                found[e.case.group] = catalog.group(e.case.group)
            except CatalogError:
                raise CatalogError(
                    f"labelled entry {e.id} is of group {e.case.group!r}, which the catalog "
                    "no longer has"
                ) from None
    return found


def libraries_of(entries: Sequence[Labelled]) -> list[str]:
    return sorted({lib for e in entries for lib in e.case.apis})


def interpreters(entries: Sequence[Labelled], pythons: Mapping[str, str]) -> dict[str, str]:
    return {lib: pythons[lib] for lib in libraries_of(entries)}
