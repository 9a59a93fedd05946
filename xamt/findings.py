"""The finding record and its one encoding: findings.json schema 2.

A :class:`Finding` is one root cause in one library: the one library blamed, its canonical
callable, the kind of misbehaviour, the input dtype and the *trigger* (the one input class the
minimized case still needs). The same root cause met in many cases is one finding with many
``occurrences``. Every stage (reproduction, triage, verification, merge, report, filer) reads
and returns these records; this module alone turns them into JSON and back, for the store's
payload column and for findings.json.

Note:
    Schema 1 (one finding per kind x odd set x tag set) is not read back as findings: its
    entries have no blamed library, callable or trigger, and cannot be converted without
    re-running their cases. :func:`load_document` says so with :class:`FindingsError` (exit
    17), naming the file and how to make a schema 2 file (``xamt repro`` on the store, or a
    new campaign).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast, get_args

from xamt import schemas
from xamt.errors import XamtError

if TYPE_CHECKING:
    from xamt.types import Case

SCHEMA = 2

Kind = Literal[
    "crash",
    "hang",
    "resource",
    "status",
    "shape",
    "dtype",
    "nan",
    "inf",
    "signed-zero",
    "value",
    "gradient",
]
Family = Literal["crash", "hang", "resource", "status", "shape", "dtype", "value", "gradient"]
Classification = Literal["suspected-bug", "documented-difference", "unspecified", "split"]
Severity = Literal["critical", "high", "medium", "low"]
Confidence = Literal["reference", "majority", "split"]

KINDS: tuple[Kind, ...] = get_args(Kind)
GRADIENT: Kind = KINDS[-1]  # the gradient oracle's kind (xamt.oracle.gradient)
CLASSIFICATIONS: tuple[Classification, ...] = get_args(Classification)
SEVERITIES: tuple[Severity, ...] = get_args(Severity)  # most severe first
CONFIDENCES: tuple[Confidence, ...] = get_args(Confidence)  # strongest first

# The kind family: NaN, inf, signed-zero and value disagreements of one library on one input
# are one wrong result, not four findings.
FAMILY: dict[Kind, Family] = {
    "crash": "crash",
    "hang": "hang",
    "resource": "resource",
    "status": "status",
    "shape": "shape",
    "dtype": "dtype",
    "nan": "value",
    "inf": "value",
    "signed-zero": "value",
    "value": "value",
    "gradient": "gradient",
}
# Severity by family: a dead process, then a silent wrong result, then an error where the
# reference returns, then a different shape or dtype.
SEVERITY: dict[Family, Severity] = {
    "crash": "critical",
    "hang": "critical",
    "resource": "critical",
    "value": "high",
    "gradient": "high",  # a wrong derivative where the value is right: silent in training
    "status": "medium",
    "shape": "low",
    "dtype": "low",
}


class FindingsError(XamtError):
    """A findings (or verifications) file that cannot be read."""

    exit_code = 17


@dataclass(frozen=True, kw_only=True)
class Minimization:
    """How a finding's case was shrunk (see :mod:`xamt.triage.minimize`)."""

    calls: int
    seconds: float
    # "fixpoint", "max-calls", "max-time", "skipped", or "lost": the minimized case no longer
    # showed the finding, which keeps its original case
    stop: str
    accepted: int
    elements_before: int
    elements_after: int


@dataclass(frozen=True, kw_only=True)
class KnownRef:
    """The reviewed known difference a finding matched."""

    id: str
    policy: str
    reason: str
    link: str


@dataclass(frozen=True, kw_only=True)
class Verification:
    """One re-run of a finding on the installed versions."""

    at: str
    versions: dict[str, str]
    present: bool


@dataclass(frozen=True, kw_only=True)
class Finding:
    """One root cause in one library, as reported.

    ``library`` is the library blamed; for a ``split`` (no reference, an even split) it names
    the libraries of every side joined with ``+``. ``case`` is the minimized case in the
    serialized form of :mod:`xamt.serialize` (``group``, ``dtype``, ``value_class``, ``values``,
    ``apis``, ``seed``), and ``outputs`` what each library did with it.
    """

    signature: str
    key: str
    kind: Kind
    classification: Classification
    severity: Severity
    confidence: Confidence
    library: str
    callable: str
    group: str
    apis: dict[str, str]
    trigger: str
    input_classes: tuple[str, ...]
    dtype: str
    detail: str = ""
    error: str = ""
    # what decides it: "<standard|reference|documentation|process|majority>: ...", or for an
    # unspecified finding "unspecified: <question> (<trait>: <link>)"
    decided_by: str = ""
    # for an unspecified finding, the question nothing decides (the report groups by it)
    question: str = ""
    # the sentences of the blamed callable's documentation that speak of the finding's dtype,
    # trigger or parameters (xamt.triage.docs)
    documentation: tuple[str, ...] = ()
    # the other callables (or kinds) this root cause was met through, each "<key>: <why>"
    # (the same code by a reviewed record, the same callable, a delegation its source shows)
    also: tuple[str, ...] = ()
    reproduced: int = 0
    runs: int = 0
    occurrences: int = 1
    case: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, dict[str, Any]] = field(default_factory=dict)
    original_case: dict[str, Any] | None = None
    minimization: Minimization | None = None
    known_difference: KnownRef | None = None
    repro: dict[str, str] = field(default_factory=dict)
    # the short repro in the blamed library's own idiom (inline inputs, the one call, expected
    # against actual as a failing assertion), a path relative to the folder of findings.json;
    # "" when none was written
    short_repro: str = ""
    # a confident match in the blamed library's upstream tracker (same callable, same symptom):
    # the URL; "" when none was found or no search ran
    upstream: str = ""
    # why the finding is held back from filing (e.g. its short repro, run standalone in a fresh
    # process of the blamed library's environment, did not show the departure); "" when fileable
    held_back: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    verifications: tuple[Verification, ...] = ()
    consecutive_misses: int = 0
    triaged: bool = False
    first_seen: str = ""
    last_seen: str = ""

    @property
    def family(self) -> Family:
        return FAMILY[self.kind]

    @property
    def suspected(self) -> bool:
        return self.classification == "suspected-bug"

    def rank(self) -> tuple[int, int, int, str]:
        """Sort key: most severe, most confident, most frequent first."""
        return (
            SEVERITIES.index(self.severity),
            CONFIDENCES.index(self.confidence),
            -self.occurrences,
            self.signature,
        )

    def replace(self, **changes: Any) -> Finding:
        return dataclasses.replace(self, **changes)


# --------------------------------------------------------------------------------------------
# Encoding


def to_json(f: Finding) -> dict[str, Any]:
    """The findings.json entry of a finding (also the store's payload)."""
    return {
        "signature": f.signature,
        "key": f.key,
        "kind": f.kind,
        "family": f.family,
        "classification": f.classification,
        "severity": f.severity,
        "confidence": f.confidence,
        "library": f.library,
        "callable": f.callable,
        "group": f.group,
        "apis": dict(f.apis),
        "trigger": f.trigger,
        "input_classes": list(f.input_classes),
        "dtype": f.dtype,
        "detail": f.detail,
        "error": f.error,
        "decided_by": f.decided_by,
        "question": f.question,
        "documentation": list(f.documentation),
        "also": list(f.also),
        "reproduced": f.reproduced,
        "runs": f.runs,
        "occurrences": f.occurrences,
        "case": f.case,
        "outputs": f.outputs,
        "original_case": f.original_case,
        "minimization": None if f.minimization is None else dataclasses.asdict(f.minimization),
        "known_difference": None
        if f.known_difference is None
        else dataclasses.asdict(f.known_difference),
        "repro": dict(f.repro),
        "short_repro": f.short_repro,
        "upstream": f.upstream,
        "held_back": f.held_back,
        "versions": dict(f.versions),
        "verifications": [dataclasses.asdict(v) for v in f.verifications],
        "consecutive_misses": f.consecutive_misses,
        "triaged": f.triaged,
        "first_seen": f.first_seen,
        "last_seen": f.last_seen,
    }


class _Reader:
    """Typed access to one raw entry; every problem names where it is."""

    def __init__(self, raw: Any, where: str) -> None:
        if not isinstance(raw, dict):
            raise FindingsError(f"{where}: a finding must be an object, not {_type(raw)}")
        self.raw = raw
        self.where = where

    def _bad(self, name: str, want: str) -> FindingsError:
        return FindingsError(
            f"{self.where}: field {name!r} must be {want}, not {_type(self.raw.get(name))}"
        )

    def text(self, name: str, default: str | None = None) -> str:
        value = self.raw.get(name, default)
        if not isinstance(value, str):
            raise self._bad(name, "a string")
        return value

    def choice(self, name: str, choices: Sequence[str], default: str | None = None) -> str:
        value = self.text(name, default)
        if value not in choices:
            raise FindingsError(
                f"{self.where}: field {name!r} is {value!r}; expected one of {', '.join(choices)}"
            )
        return value

    def integer(self, name: str, default: int | None = None) -> int:
        value = self.raw.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(name, "an integer")
        return value

    def flag(self, name: str, default: bool) -> bool:
        value = self.raw.get(name, default)
        if not isinstance(value, bool):
            raise self._bad(name, "true or false")
        return value

    def obj(self, name: str, default: dict[str, Any] | None = None) -> dict[str, Any]:
        value = self.raw.get(name, default)
        if not isinstance(value, dict):
            raise self._bad(name, "an object")
        return value

    def optional_obj(self, name: str) -> dict[str, Any] | None:
        value = self.raw.get(name)
        if value is not None and not isinstance(value, dict):
            raise self._bad(name, "an object or null")
        return value

    def str_map(self, name: str) -> dict[str, str]:
        value = self.obj(name, {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise self._bad(name, "an object of strings")
        return dict(value)

    def str_list(self, name: str) -> tuple[str, ...]:
        value = self.raw.get(name, [])
        if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
            raise self._bad(name, "a list of strings")
        return tuple(value)

    def items(self, name: str) -> list[Any]:
        value = self.raw.get(name, [])
        if not isinstance(value, list):
            raise self._bad(name, "a list")
        return value


def _type(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def from_json(raw: Any, where: str = "finding") -> Finding:
    """Read one schema 2 entry; :class:`FindingsError` naming ``where`` if it is malformed
    (checked against ``#/$defs/finding`` of ``xamt/schemas/findings.schema.json``)."""
    if not isinstance(raw, dict):
        raise FindingsError(f"{where}: a finding must be an object, not {_type(raw)}")
    schemas.validate("findings", raw, where, FindingsError, definition="finding")
    return _from_checked(raw, where)


def _from_checked(raw: Any, where: str) -> Finding:
    r = _Reader(raw, where)
    outputs = r.obj("outputs", {})
    if not all(isinstance(v, dict) for v in outputs.values()):
        raise r._bad("outputs", "an object of objects")
    minimization = r.optional_obj("minimization")
    known = r.optional_obj("known_difference")
    try:
        mini = None if minimization is None else Minimization(**minimization)
        known_ref = None if known is None else KnownRef(**known)
        verifications = tuple(Verification(**v) for v in r.items("verifications"))
    except TypeError as exc:
        raise FindingsError(f"{where}: malformed nested record: {exc}") from None
    return Finding(
        signature=r.text("signature"),
        key=r.text("key", ""),
        kind=cast(Kind, r.choice("kind", KINDS)),
        classification=cast(
            Classification, r.choice("classification", CLASSIFICATIONS, "suspected-bug")
        ),
        severity=cast(Severity, r.choice("severity", SEVERITIES)),
        confidence=cast(Confidence, r.choice("confidence", CONFIDENCES)),
        library=r.text("library"),
        callable=r.text("callable"),
        group=r.text("group"),
        apis=r.str_map("apis"),
        trigger=r.text("trigger"),
        input_classes=r.str_list("input_classes"),
        dtype=r.text("dtype"),
        detail=r.text("detail", ""),
        decided_by=r.text("decided_by", ""),
        question=r.text("question", ""),
        documentation=r.str_list("documentation"),
        also=r.str_list("also"),
        error=r.text("error", ""),
        reproduced=r.integer("reproduced", 0),
        runs=r.integer("runs", 0),
        occurrences=r.integer("occurrences", 1),
        case=r.obj("case", {}),
        outputs=outputs,
        original_case=r.optional_obj("original_case"),
        minimization=mini,
        known_difference=known_ref,
        repro=r.str_map("repro"),
        short_repro=r.text("short_repro", ""),
        upstream=r.text("upstream", ""),
        held_back=r.text("held_back", ""),
        versions=r.str_map("versions"),
        verifications=verifications,
        consecutive_misses=r.integer("consecutive_misses", 0),
        triaged=r.flag("triaged", False),
        first_seen=r.text("first_seen", ""),
        last_seen=r.text("last_seen", ""),
    )


def decode_case(data: Any, where: str, error: type[XamtError] = FindingsError) -> Case:
    """The :class:`~xamt.types.Case` a finding's ``case`` (or ``original_case``, or a
    candidate's) holds; ``error`` naming ``where`` if it is malformed or cannot be decoded
    (arrays whose bytes do not fit their shape, unknown dtypes)."""
    from xamt.serialize import case_from_jsonable
    from xamt.workers.protocol import ProtocolError

    if not isinstance(data, dict):
        raise error(f"{where}: the case must be an object, not {_type(data)}")
    schemas.validate("findings", data, where, error, definition="full_case")
    try:
        return case_from_jsonable(data)
    except (KeyError, IndexError, TypeError, ValueError, ProtocolError) as exc:
        raise error(f"{where}: the case cannot be decoded ({type(exc).__name__}: {exc})") from None


# --------------------------------------------------------------------------------------------
# The document


@dataclass(frozen=True, kw_only=True)
class Document:
    """A findings.json document: the campaign, the library versions, findings, support."""

    xamt_version: str
    libraries: dict[str, str]
    campaign: dict[str, Any]
    findings: tuple[Finding, ...]
    # group -> library -> dtype -> "ok" | "refused"
    support: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)

    def ranked(self) -> list[Finding]:
        return sorted(self.findings, key=Finding.rank)


def document_to_json(doc: Document) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "xamt_version": doc.xamt_version,
        "libraries": dict(doc.libraries),
        "campaign": doc.campaign,
        "findings": [to_json(f) for f in doc.ranked()],
        "support": doc.support,
    }


def document_from_json(data: Any, where: str = "findings.json") -> Document:
    """Read a schema 2 document (schema 1 is refused with a clear message)."""
    if not isinstance(data, dict):
        raise FindingsError(f"{where}: not a findings document (expected a JSON object)")
    schema = data.get("schema")
    if schema == 1:
        raise FindingsError(
            f"{where}: findings.json schema 1 (made by an older xamt) cannot be read: its "
            "findings name no blamed library, callable or trigger. Run `xamt repro --all --out "
            "FOLDER` on the campaign's store with this xamt, or run a new campaign, to get a "
            "schema 2 file"
        )
    if schema != SCHEMA:
        raise FindingsError(
            f"{where}: unknown findings schema {schema!r}; this xamt reads schema {SCHEMA}"
        )
    _check_document(data, where)
    r = _Reader(data, where)
    libraries = r.str_map("libraries")
    campaign = r.obj("campaign", {})
    raw_findings = r.items("findings")
    support = r.obj("support", {})
    findings = tuple(
        _from_checked(f, f"{where}: findings[{i}]") for i, f in enumerate(raw_findings)
    )
    return Document(
        xamt_version=r.text("xamt_version", "?"),
        libraries=libraries,
        campaign=campaign,
        findings=findings,
        support=support,
    )


def _check_document(data: dict[str, Any], where: str) -> None:
    """Check a document against ``xamt/schemas/findings.schema.json``; a problem inside a
    finding is reported as that finding's (``findings[3]: field 'outputs' must be an object,
    not a string (signature 0123456789abcdef)``)."""
    if not schemas.problems("findings", data):
        return
    raw_findings = data.get("findings")
    for i, raw in enumerate(raw_findings if isinstance(raw_findings, list) else []):
        if not isinstance(raw, dict):
            raise FindingsError(
                f"{where}: findings[{i}]: a finding must be an object, not {_type(raw)}"
            )
        try:
            schemas.validate(
                "findings", raw, f"{where}: findings[{i}]", FindingsError, definition="finding"
            )
        except FindingsError as exc:
            sig = raw.get("signature")
            label = f" (signature {sig})" if isinstance(sig, str) and len(sig) <= 64 else ""
            raise FindingsError(f"{exc}{label}") from None
    schemas.validate("findings", data, where, FindingsError)


def load_document(path: Path) -> Document:
    """Read findings.json; :class:`FindingsError` (exit 17) for anything unusable."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FindingsError(f"{path}: no such findings file") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise FindingsError(f"{path}: not a readable findings.json: {exc}") from None
    return document_from_json(data, str(path))


def dumps_document(doc: Document) -> str:
    return json.dumps(document_to_json(doc), indent=1) + "\n"


def merge_support(
    into: dict[str, dict[str, dict[str, str]]], more: Mapping[str, Mapping[str, Mapping[str, str]]]
) -> None:
    """Fold ``more`` into ``into``: a (group, library, dtype) that worked once is "ok"."""
    for group, libs in more.items():
        for lib, dtypes in libs.items():
            mine = into.setdefault(group, {}).setdefault(lib, {})
            for dtype, state in dtypes.items():
                if mine.get(dtype) != "ok":
                    mine[dtype] = state
