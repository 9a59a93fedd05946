"""The known-differences baseline: its loader, its matching, and the shipped file."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from xamt.catalog import model
from xamt.known import DEFAULT_PATH, Facts, KnownDifferencesError, classify, load_known

ENTRY = """
[[difference]]
id = "torch-int-float32"
policy = "default-float-type"
reason = "torch computes integer input in its default float type, float32"
link = "https://pytorch.org/docs/stable/generated/torch.get_default_dtype.html"
kind = "dtype"
library = ["torch", "paddle"]
dtype = "u?int(8|16|32|64)|bool"
output = "returned float32"
"""


def facts(**changes: Any) -> Facts:
    base = Facts(
        kind="dtype",
        library="torch",
        api="torch.acos",
        op="acos",
        dtype="int32",
        trigger="ordinary",
        error="",
        output="dtype: torch returned float32 where numpy returned float64",
    )
    return dataclasses.replace(base, **changes)


def test_an_entry_matches_only_what_it_names(tmp_path: Path) -> None:
    path = tmp_path / "known.toml"
    path.write_text(ENTRY)
    known = load_known(path)
    label, ref = classify(known, facts())
    assert label == "documented-difference" and ref is not None
    assert ref.policy == "default-float-type" and ref.link.startswith("https://")
    # another library, kind, dtype or output: not this policy
    for change in (
        {"library": "mxnet"},
        {"kind": "value"},
        {"dtype": "float32"},
        {"output": "dtype: torch returned int64 where numpy returned int32"},
    ):
        assert classify(known, facts(**change)) == ("suspected-bug", None), change
    assert classify(known, facts(library="mxnet"), split=True) == ("split", None)


def test_an_entry_with_a_condition_matches_only_where_the_case_meets_it(tmp_path: Path) -> None:
    """`when` names a check of xamt/oracle/checks.py: the entry holds only where the case
    meets it (the facts say which conditions hold); an unknown name is refused on loading."""
    path = tmp_path / "known.toml"
    path.write_text(ENTRY + 'when = "parameter-beyond-dtype"\n')
    known = load_known(path)
    assert known[0].when == "parameter-beyond-dtype"
    met = dataclasses.replace(facts(), holds=lambda name: name == "parameter-beyond-dtype")
    assert classify(known, met)[0] == "documented-difference"
    assert classify(known, facts()) == ("suspected-bug", None)
    path.write_text(ENTRY + 'when = "a-condition-nobody-wrote"\n')
    with pytest.raises(KnownDifferencesError, match="unknown condition 'a-condition-nobody-wrote'"):
        load_known(path)


def test_shipped_known_differences_load_and_are_not_stale() -> None:
    """Every shipped entry cites https documentation, belongs to a policy, and its operation
    pattern still matches an operation of the committed catalog."""
    known = load_known(DEFAULT_PATH)
    assert known
    ops = {g.op for g in model.load().groups}
    for entry in known:
        assert entry.link.startswith("https://") and entry.reason and entry.policy
        for name, pattern in entry.patterns:
            if name == "op":
                assert any(pattern.fullmatch(op) for op in ops), f"stale entry {entry.id}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\n", "at least one of"),
        ("[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='x'\nkind='value'\n", "link must"),
        ("[[difference]]\nid='a'\npolicy='p'\nlink='https://x'\nkind='value'\n", "'reason' is"),
        ("[[difference]]\nid='a'\nreason='r'\nlink='https://x'\nkind='value'\n", "'policy' is"),
        (
            "[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\nkind='oops'\n",
            "unknown kind",
        ),
        (
            "[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\nop='('\n",
            "not a regular expression",
        ),
        (
            "[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\nop='x'\n"
            "library='keras'\n",
            "unknown library",
        ),
        (
            "[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\ncolour='red'\n",
            "unknown field",
        ),
        (
            "[[difference]]\nid='a'\npolicy='p'\nreason='r'\nlink='https://x'\nkind='value'\n" * 2,
            "duplicate id",
        ),
        ("this is = not toml [", "not a readable TOML"),
    ],
)
def test_malformed_known_differences_name_the_file_and_entry(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "known.toml"
    path.write_text(text)
    with pytest.raises(KnownDifferencesError, match=message) as info:
        load_known(path)
    assert str(path) in str(info.value)
