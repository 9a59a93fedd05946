"""xamt.paths (strict identifiers, one checked join) and xamt.schemas (the JSON Schemas of
every file xamt reads, shipped in the package)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import jsonschema
import pytest

from xamt import schemas
from xamt.catalog import model
from xamt.catalog.model import CatalogError
from xamt.errors import OutputError
from xamt.findings import FindingsError, document_from_json
from xamt.known import DEFAULT_PATH
from xamt.oracle.signature import signature_of
from xamt.paths import GROUP_ID, check_identifier, check_signature, inside
from xamt.workers.protocol import DTYPE_NAMES

GOLDEN = Path(__file__).parent / "golden" / "report" / "findings.json"


@pytest.mark.parametrize(
    ("kind", "good", "bad"),
    [
        ("signature", ["0123456789abcdef"], ["../../x", "0123456789ABCDEF", "0123456789abcde", ""]),
        ("group id", ["sum[axis][keepdims]", "addmm[alpha]@square", "add[alpha]~2", "h(x,bins)"],
         ["..", "../sum", "a/b", "a\\b", ".hidden", "a\x00b", "x" * 201]),
        ("library", ["numpy", "torch", "cupy_x"], ["Torch", "../numpy", "a.b", "", "9lib"]),
        ("campaign name", ["fuzz-0-1", "merge", "merged-2"], ["../x", "", "a/b", ".x", "a b"]),
    ],
)  # fmt: skip
def test_identifier_patterns(kind: str, good: list[str], bad: list[str]) -> None:
    for value in good:
        assert check_identifier(kind, value, "here") == value
    for value in [*bad, 7, None]:
        with pytest.raises(OutputError, match=r"here: .* is malformed"):
            check_identifier(kind, value, "here")


def test_every_signature_xamt_makes_passes_the_pattern() -> None:
    for trigger in ("nan", "../../x", "ordinary"):
        sig, _key = signature_of(
            family="value", library="a/b", callable="..", dtype="-", trigger=trigger
        )
        assert check_signature(sig, "here") == sig


def test_every_group_id_of_the_committed_catalog_passes_the_pattern() -> None:
    assert all(GROUP_ID.fullmatch(g.id) for g in model.load().groups)


def test_inside_joins_and_refuses_what_leads_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "repro").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    assert inside(root, "repro", "0123456789abcdef") == root / "repro" / "0123456789abcdef"
    for parts in (("..", "outside"), ("repro", "..", "..", "x"), ("/etc",), ("",), ("a\x00",)):
        with pytest.raises(OutputError):
            inside(root, *parts)
    # a link inside the root that leads out, to a folder or a file, is followed and refused
    os.symlink(outside, root / "repro" / "link")
    with pytest.raises(OutputError, match="leads outside"):
        inside(root, "repro", "link", "file.py")
    os.symlink(outside / "secret", root / "leak")
    with pytest.raises(OutputError, match="leads outside"):
        inside(root, "leak")
    # a link that stays inside is fine; so is the root reached through a link
    os.symlink(root / "repro", root / "alias")
    assert inside(root, "alias", "x") == root / "alias" / "x"
    os.symlink(root, tmp_path / "root-link")
    assert inside(tmp_path / "root-link", "repro") == tmp_path / "root-link" / "repro"


def test_inside_raises_the_callers_error(tmp_path: Path) -> None:
    with pytest.raises(FindingsError):
        inside(tmp_path, "..", error=FindingsError)


@pytest.mark.parametrize("name", schemas.NAMES)
def test_each_shipped_schema_is_a_valid_json_schema(name: str) -> None:
    raw = json.loads(schemas.schema_text(name))
    jsonschema.validators.validator_for(raw).check_schema(raw)
    jsonschema.validators.validator_for(raw).check_schema(schemas.schema(name))


def test_dtype_names_of_the_schemas_are_the_protocols() -> None:
    findings = schemas.schema("findings")["$defs"]["dtype_name"]["enum"]
    catalog = schemas.schema("catalog")["$defs"]["group"]["properties"]["dtype"]["enum"]
    assert tuple(findings) == DTYPE_NAMES and tuple(catalog) == DTYPE_NAMES


def test_shipped_files_conform_to_their_schemas() -> None:
    catalog = json.loads(model.CATALOG_PATH.read_text())
    assert schemas.problems("catalog", catalog) == []
    known = tomllib.loads(DEFAULT_PATH.read_text())
    assert schemas.problems("known-differences", known) == []
    assert schemas.problems("findings", json.loads(GOLDEN.read_text())) == []


def test_problems_name_the_place_and_what_is_expected() -> None:
    data = json.loads(GOLDEN.read_text())
    data["campaign"] = "fuzz"
    data["findings"][1]["minimization"] = {"calls": "3"}
    data["findings"][2]["outputs"] = {"numpy": {"status": 3}}
    found = schemas.problems("findings", data)
    assert "field 'campaign' must be an object, not a string" in found
    assert "field 'findings[1].minimization.calls' must be an integer, not a string" in found
    assert any(p.startswith("field 'findings[1].minimization': 'seconds'") for p in found)
    assert "field 'findings[2].outputs.numpy.status' must be a string, not an integer" in found


def test_a_huge_value_is_clipped_in_the_message() -> None:
    data = json.loads(GOLDEN.read_text())
    data["findings"][0]["signature"] = "x" * 10_000_000
    with pytest.raises(FindingsError) as info:
        document_from_json(data, "f.json")
    assert len(str(info.value)) < 500


def test_a_catalog_entry_of_the_wrong_shape_names_the_group(tmp_path: Path) -> None:
    catalog = json.loads(model.CATALOG_PATH.read_text())
    catalog["groups"][3]["members"][0]["api"] = "numpy.abs; import os"
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(catalog))
    with pytest.raises(CatalogError, match=r"group #3 \(.*\): malformed entry: field 'members"):
        model.load(path)
