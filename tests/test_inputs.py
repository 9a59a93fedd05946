"""Drawing cases for groups of each shape kind (no library needed)."""

from __future__ import annotations

import numpy as np
import pytest

from xamt.catalog.model import Group, Member
from xamt.inputs.draw import draw_case
from xamt.inputs.tags import input_classes


def make_group(roles: tuple[str, ...], shapes: str = "any") -> Group:
    members = tuple(
        Member(library=lib, api=f"{lib}.op", args=tuple(r for r in roles if r.startswith("x")))
        for lib in ("numpy", "torch")
    )
    return Group(
        id="op",
        op="op",
        family="linalg",
        roles=roles,
        dtype="float32",
        members=members,
        shapes=shapes,
    )


def drawn_shapes(group: Group, n: int = 300) -> list[tuple[int, ...]]:
    rng = np.random.default_rng(7)
    shapes = []
    for _ in range(n):
        case = draw_case(group, rng, "float32", "ordinary", {"numpy": "numpy.op"})
        shapes += [v.shape for k, v in case.values.items() if k.startswith("x")]
    return shapes


@pytest.mark.parametrize("kind", ["square", "batched"])
def test_square_groups_draw_square_matrices(kind: str) -> None:
    shapes = drawn_shapes(make_group(("x1", "x2"), kind))
    matrices = [s for s in shapes if len(s) >= 2]
    assert len(matrices) > len(shapes) / 2  # mostly in the domain
    assert all(s[-1] == s[-2] for s in matrices)
    if kind == "batched":
        assert any(len(s) >= 3 for s in matrices)


def test_any_groups_draw_rectangular_and_vector_groups_vectors() -> None:
    assert any(len(s) == 2 and s[0] != s[1] for s in drawn_shapes(make_group(("x",))))
    vectors = drawn_shapes(make_group(("x",), "vector"))
    assert sum(len(s) == 1 for s in vectors) > len(vectors) / 2


def test_keepdims_role_is_a_bool() -> None:
    group = make_group(("x", "keepdims", "axis"))
    rng = np.random.default_rng(1)
    cases = [draw_case(group, rng, "float32", "ordinary", {}) for _ in range(50)]
    assert {c.values["keepdims"] for c in cases} == {True, False}
    tagged = [c for c in cases if "keepdims" in input_classes(c, group)]
    assert tagged and all(c.values["keepdims"] is True for c in tagged)
