"""Minimization logic and known differences (no library needed: predicates are plain
functions of the case)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import model
from xamt.triage.known import DEFAULT_PATH, KnownDifferencesError, classify, load_known
from xamt.triage.minimize import element_count, minimize
from xamt.types import Case

GROUP = model.Group(
    id="add",
    op="add",
    family="elementwise",
    roles=("x1", "x2"),
    dtype="float32",
    members=(
        model.Member(library="numpy", api="numpy.add", args=("x1", "x2")),
        model.Member(library="torch", api="torch.add", args=("x1", "x2")),
    ),
)


def case(x1: np.ndarray, x2: np.ndarray, **extra: object) -> Case:
    return Case(
        group="add",
        dtype=str(x1.dtype),
        value_class="non-finite",
        values={"x1": x1, "x2": x2, **extra},
        apis={"numpy": "numpy.add", "torch": "torch.add"},
    )


def nan_in_x1(cases: list[Case]) -> list[set[str]]:
    """The 'bug': shows signature S whenever x1 holds a NaN."""
    return [{"S"} if np.isnan(c.values["x1"]).any() else set() for c in cases]


def test_minimize_keeps_the_signature_and_shrinks() -> None:
    rng = np.random.default_rng(0)
    x1 = rng.standard_normal((4, 5)).astype(np.float32)
    x1[2, 3] = np.nan
    x2 = rng.standard_normal((4, 5)).astype(np.float32)
    original = case(x1, x2, keepdims=True)
    result = minimize(original, "S", GROUP, nan_in_x1)
    small = result.case
    assert nan_in_x1([small]) == [{"S"}]  # the same signature
    assert element_count(small, GROUP) <= 2 < element_count(original, GROUP)
    assert "keepdims" not in small.values  # back to defaults
    assert np.isnan(small.values["x1"]).any()  # the special value that matters survives
    assert set(np.asarray(small.values["x2"]).reshape(-1).tolist()) <= {0.0, 1.0, -1.0}
    assert result.stop == "fixpoint" and result.calls <= 160
    again = minimize(original, "S", GROUP, nan_in_x1)
    assert again.case.values["x1"].tobytes() == small.values["x1"].tobytes()  # deterministic


def test_minimize_respects_its_caps() -> None:
    x1 = np.full((6, 6), np.nan, np.float32)
    result = minimize(case(x1, x1.copy()), "S", GROUP, nan_in_x1, max_calls=5)
    assert result.calls <= 5 and result.stop == "max-calls"


def test_minimize_never_returns_a_case_without_the_signature() -> None:
    x1 = np.array([1.0, np.nan], np.float32)
    result = minimize(case(x1, x1.copy()), "OTHER", GROUP, nan_in_x1)
    assert result.case.values["x1"].tobytes() == x1.tobytes() and result.accepted == 0


def test_shipped_known_differences_load_and_classify() -> None:
    known = load_known()
    assert known and all(k.link.startswith("https://") and k.reason for k in known)
    label, entry = classify(
        known,
        kind="value",
        group="std[axis]",
        odd=["torch", "paddle"],
        dtype="float32",
        input_classes=[],
    )
    assert label == "documented-difference" and entry is not None
    assert entry.id == "std-var-bessel-correction"
    label, entry = classify(
        known, kind="value", group="std[axis]", odd=["mxnet"], dtype="float32", input_classes=[]
    )
    assert label == "suspected-bug" and entry is None


def test_known_differences_are_not_stale() -> None:
    """Every entry's group pattern still matches a group of the committed catalog."""
    groups = [g.id for g in model.load().groups]
    for entry in load_known(DEFAULT_PATH):
        if entry.group is not None:
            assert any(entry.group.search(g) for g in groups), f"stale entry {entry.id}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'https://x'\n", "at least one of"),
        ("[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'x'\nkind = 'value'\n", "link must be"),
        ("[[difference]]\nid = 'a'\nlink = 'https://x'\nkind = 'value'\n", "'reason' is required"),
        (
            "[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'https://x'\nkind = 'oops'\n",
            "unknown kind",
        ),
        (
            "[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'https://x'\ngroup = '('\n",
            "not a regular expression",
        ),
        (
            "[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'https://x'\ncolour = 'red'\n",
            "unknown field",
        ),
        (
            "[[difference]]\nid = 'a'\nreason = 'r'\nlink = 'https://x'\nkind = 'value'\n" * 2,
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
