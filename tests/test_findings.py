"""findings.json schema 2: the typed record round-trips, ranks, and refuses what it cannot
read (schema 1, wrong types) with a message that names the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xamt.findings import (
    Document,
    Finding,
    FindingsError,
    KnownRef,
    Minimization,
    document_from_json,
    document_to_json,
    from_json,
    load_document,
    merge_support,
    to_json,
)


def finding(**changes: object) -> Finding:
    base = Finding(
        signature="0123456789abcdef",
        key="value/paddle/paddle.sinc/float32/nan",
        kind="nan",
        classification="suspected-bug",
        severity="high",
        confidence="reference",
        library="paddle",
        callable="paddle.sinc",
        group="sinc",
        apis={"numpy": "numpy.sinc", "paddle": "paddle.sinc"},
        trigger="nan",
        input_classes=("nan", "size-one"),
        dtype="float32",
        occurrences=3,
        minimization=Minimization(
            calls=4,
            seconds=0.5,
            stop="fixpoint",
            accepted=2,
            elements_before=6,
            elements_after=1,
        ),
        known_difference=None,
    )
    return base.replace(**changes)


def test_round_trip() -> None:
    f = finding(known_difference=KnownRef(id="a", policy="p", reason="r", link="https://x"))
    again = from_json(json.loads(json.dumps(to_json(f))))
    assert again == f and again.family == "value"


def test_rank_orders_by_severity_then_confidence_then_occurrences() -> None:
    crash = finding(signature="1" * 16, kind="crash", severity="critical", confidence="reference")
    majority = finding(signature="2" * 16, confidence="majority", occurrences=50)
    reference = finding(signature="3" * 16, occurrences=1)
    frequent = finding(signature="4" * 16, occurrences=9)
    doc = Document(
        xamt_version="x", libraries={}, campaign={}, findings=(majority, reference, crash, frequent)
    )
    assert [f.signature for f in doc.ranked()] == ["1" * 16, "4" * 16, "3" * 16, "2" * 16]
    assert document_from_json(document_to_json(doc)).ranked() == doc.ranked()


def test_schema_1_is_refused_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "findings.json"
    path.write_text(json.dumps({"schema": 1, "findings": []}))
    with pytest.raises(FindingsError, match="schema 1") as info:
        load_document(path)
    assert str(path) in str(info.value) and info.value.exit_code == 17


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("outputs", "text", "'outputs' must be an object"),
        ("kind", "weird", "expected one of"),
        ("occurrences", "3", "'occurrences' must be an integer"),
        ("library", 7, "'library' must be a string"),
        ("minimization", {"calls": 1}, "'minimization': 'seconds', .* are required"),
        ("known_difference", {"id": 1, "policy": "p", "reason": "r", "link": "l"}, "'known_d"),
        ("verifications", [{"at": "t", "versions": {}, "present": "yes"}], "true or false"),
    ],
)
def test_wrong_types_name_the_field(field: str, value: object, message: str) -> None:
    data = document_to_json(
        Document(xamt_version="x", libraries={}, campaign={}, findings=(finding(),))
    )
    data["findings"][0][field] = value
    with pytest.raises(FindingsError, match=message) as info:
        document_from_json(data, "f.json")
    assert "findings[0]" in str(info.value)


def test_support_merges_to_ok_once_any_run_accepted() -> None:
    into = {"sinc": {"paddle": {"float16": "refused"}}}
    merge_support(into, {"sinc": {"paddle": {"float16": "ok", "int32": "refused"}}})
    merge_support(into, {"sinc": {"paddle": {"float16": "refused"}}})
    assert into == {"sinc": {"paddle": {"float16": "ok", "int32": "refused"}}}
