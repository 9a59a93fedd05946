"""The operation traits (xamt/catalog/data/ops.toml) and the judge's structure.

Meta-tests: every record names a catalog operation, group or family; every trait has a reason
and an https link, and names checks that exist; every named check has a unit test
(tests/test_checks.py) and holds on at least one labelled corpus case; the judge's modules name
no operation of the data files in code; no function there is over 80 lines; the verdict's
entry point takes at most five parameters.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from xamt import formulas
from xamt.catalog import model, ops
from xamt.catalog.model import CatalogError
from xamt.inputs.tags import input_classes
from xamt.known import load_known
from xamt.oracle import checks, verdict
from xamt.replay import _has_nan_parameter, judge_case, terms_of, view_of
from xamt.serialize import case_from_jsonable
from xamt.types import Case, Outcome

ROOT = Path(__file__).resolve().parents[1]
CORPORA = ("labelled_findings.json", "public_reports.json")
JUDGE_FILES = (ROOT / "xamt" / "replay.py", *sorted((ROOT / "xamt" / "oracle").glob("*.py")))


@pytest.fixture(scope="module")
def catalog() -> model.Catalog:
    return model.load()


def test_every_record_names_a_catalog_operation_group_or_family(catalog: model.Catalog) -> None:
    shipped = ops.shipped()
    kinds = Counter(kind for kind, _ in shipped.records)
    assert kinds["op"] >= 100 and kinds["family"] >= 10
    known = {"op": {g.op for g in catalog.groups}, "group": {g.id for g in catalog.groups}}
    for kind, name in shipped.records:
        if kind in known:
            assert name in known[kind], f"ops.toml names {kind} {name!r}, not in the catalog"


def test_every_trait_has_a_reason_a_link_and_checks_that_exist() -> None:
    used: Counter[str] = Counter()
    for trait in ops.shipped().traits.values():
        assert trait.reason.strip() and trait.link.startswith("https://"), trait.name
        if trait.opens:
            assert trait.when in checks.CONDITIONS, trait.name
            used[f"when:{trait.when}"] += 1
        if trait.domain:
            assert trait.domain in checks.DOMAINS, trait.name
            used[f"domain:{trait.domain}"] += 1
        if trait.positions:
            assert trait.positions in checks.POSITIONS, trait.name
            used[f"positions:{trait.positions}"] += 1
        if trait.equates:
            assert trait.equates in checks.EQUATES, trait.name
            used[f"equates:{trait.equates}"] += 1
        if trait.function:
            assert trait.function in formulas.EXACT_INTEGER, trait.name
    for entry in load_known():  # a known difference may hold only under a named condition
        if entry.when:
            used[f"when:{entry.when}"] += 1
    every = {
        *(f"when:{n}" for n in checks.CONDITIONS),
        *(f"domain:{n}" for n in checks.DOMAINS),
        *(f"positions:{n}" for n in checks.POSITIONS),
        *(f"equates:{n}" for n in checks.EQUATES),
    }
    assert every == set(used), f"checks no trait uses: {sorted(every - set(used))}"


def test_every_named_check_has_a_unit_test() -> None:
    source = (ROOT / "tests" / "test_checks.py").read_text()
    tests = set(re.findall(r"^def (test_\w+)\(", source, re.MULTILINE))
    for prefix, registry in (
        ("condition", checks.CONDITIONS),
        ("domain", checks.DOMAINS),
        ("positions", checks.POSITIONS),
        ("equates", checks.EQUATES),
    ):
        for name in registry:
            want = f"test_{prefix}_{name.replace('-', '_')}"
            assert want in tests, f"no unit test {want} in tests/test_checks.py"


def test_every_named_check_holds_on_a_labelled_corpus_case(catalog: model.Catalog) -> None:
    """A check no labelled case exercises is a rule nobody has seen decide anything."""
    groups = {g.id: g for g in catalog.groups}
    held: Counter[str] = Counter()
    whens = {k.when for k in load_known() if k.when}  # the conditions of known differences
    for corpus in CORPORA:
        for entry in json.loads((ROOT / "tests" / "data" / corpus).read_text())["entries"]:
            case = case_from_jsonable(entry["case"])
            group = groups.get(case.group)
            if group is None:
                continue
            view = _view(case, group)
            for t in ops.traits_of(group):
                if t.opens and checks.CONDITIONS[t.when](view, t.bound):
                    held[f"when:{t.when}"] += 1
                if t.domain and checks.DOMAINS[t.domain](view):
                    held[f"domain:{t.domain}"] += 1
                if t.positions:
                    found = checks.POSITIONS[t.positions](view, t.function)
                    if found is not None and found.any():
                        held[f"positions:{t.positions}"] += 1
                if t.equates and any(
                    (found := checks.EQUATES[t.equates](view, np.zeros_like(a))) is not None
                    and found.any()
                    for a in view.arrays
                ):
                    held[f"equates:{t.equates}"] += 1
            for when in whens:
                if checks.CONDITIONS[when](view, ""):
                    held[f"when:{when}"] += 1
    for kind, registry in (
        ("domain", checks.DOMAINS),
        ("positions", checks.POSITIONS),
        ("equates", checks.EQUATES),
        ("when", checks.CONDITIONS),
    ):
        for name in registry:
            assert held[f"{kind}:{name}"], f"no corpus entry where {kind} {name} holds"


def _view(case: Case, group: model.Group) -> checks.View:
    tags = input_classes(case, group)
    return view_of(case, group, tags, nan_parameter=_has_nan_parameter(case, group))


def _names_in_data() -> set[str]:
    """Every operation the judge's data files name: traits, special cases, formulas."""
    names = {name for kind, name in ops.shipped().records if kind in ("op", "group")}
    tables = tomllib.loads((ROOT / "xamt" / "catalog" / "data" / "special_cases.toml").read_text())
    for kind, table in tables.items():
        if kind != "shared" and isinstance(table, dict):
            names |= set(table)
    return names | set(formulas.BY_NAME) | set(formulas.EXACT_INTEGER)


def _literals(path: Path) -> set[str]:
    """The string literals of a module outside docstrings, and the alternatives of each (a
    regular expression's ``a|b(c)``)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.FunctionDef | ast.ClassDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found |= {node.value, *(p.strip() for p in re.split(r"[|()]", node.value))}
    return found


def test_the_judge_names_no_operation_in_code() -> None:
    names = _names_in_data()
    assert len(names) > 150
    for path in JUDGE_FILES:
        named = sorted(_literals(path) & names)
        assert not named, f"{path.name} names operations in code: {named}"


def test_no_judge_function_is_over_80_lines_and_the_verdict_takes_five_parameters() -> None:
    for path in JUDGE_FILES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                assert length <= 80, f"{path.name}:{node.lineno} {node.name} has {length} lines"
    assert len(inspect.signature(verdict.judge).parameters) <= 5


def test_a_malformed_traits_file_names_the_entry(tmp_path: Path) -> None:
    good = '[trait.t]\nopens = ["value"]\nwhen = "always"\nquestion = "q"\nreason = "r"\n'
    cases = {
        good + 'link = "http://example.org"\n': "link must be an https URL",
        good.replace('reason = "r"\n', "") + 'link = "https://e.org"\n': "'reason' is required",
        good + 'link = "https://e.org"\nbogus = 1\n': "unknown field(s) ['bogus']",
        good + 'link = "https://e.org"\n[op.abs]\ntraits = ["nope"]\n': "op 'abs': unknown trait",
        good + 'link = "https://e.org"\n[family.nofamily]\ntraits = ["t"]\n': "unknown family",
        good.replace('"value"', '"shape"') + 'link = "https://e.org"\n': "opens must list",
        '[trait.t]\ndomain = "d"\ncompare = "normwise"\nreason = "r"\nlink = "https://e.org"\n': (
            "exactly one of"
        ),
    }
    for text, message in cases.items():
        path = tmp_path / "ops.toml"
        path.write_text(text)
        with pytest.raises(CatalogError, match=re.escape(message)) as info:
            ops.load_ops(path)
        assert str(path) in str(info.value)


def test_an_open_kind_is_classified_unspecified_with_its_question(catalog: model.Catalog) -> None:
    """cumsum's running sum of [-0.0]: numpy keeps -0.0, a library starting at +0 returns
    +0.0; IEEE 754 fixes no sum of one term, so the difference is asked, never blamed."""
    group = next(g for g in catalog.groups if g.op == "cumsum" and g.roles == ("x",))
    libs = ("numpy", "jax", "paddle")
    assert set(libs) <= set(group.libraries)
    case = Case(
        group=group.id,
        dtype="float32",
        value_class="boundary",
        values={"x": np.array([-0.0, 1.0], np.float32)},
        apis={m.library: m.api for m in group.members if m.library in libs},
        seed=0,
    )
    keep, flip = np.array([-0.0, 1.0], np.float32), np.array([0.0, 1.0], np.float32)
    outs = {lib: Outcome(library=lib, api=case.apis[lib], status="ok", value=keep) for lib in libs}
    outs["paddle"] = Outcome(library="paddle", api=case.apis["paddle"], status="ok", value=flip)
    run = judge_case(case, group, outs, None, known=[])
    assert not run.decided
    assert {(s.blame.kind, s.blame.library) for s in run.questions} == {("signed-zero", "paddle")}
    asked = run.questions[0].blame
    assert asked.question.startswith("The sign of a zero a running sum")
    assert "zero-sign-of-accumulator" in asked.basis and "https://" in asked.basis
    terms = terms_of(case, group, view_of(case, group, run.tags))
    assert {o.name for o in terms.openings} >= {"zero-sign-of-accumulator"}
