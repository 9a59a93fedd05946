"""The deep-learning core's declared groups on the real libraries, one test per family.

Each family's groups are validated as the build validates them, and then the members that
compute in another layout (tensorflow's channels-last convolution, pooling and batch norm) are
run again *without* their transform: they must then fail or disagree, so a missing transpose
cannot pass validation. Padding has no layout; there numpy's (before, after) pairs and torch's
flat last-dimension-first spelling must agree on asymmetric pads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.build import agree, to_plain
from xamt.catalog.model import Member
from xamt.workers.pool import WorkerPool

# family -> (the least number of validated groups; of libraries the widest group spans;
# channels-last members whose transform is checked)
FAMILIES = {
    "convolution": (15, 6, 4),
    "pooling": (25, 5, 6),
    "normalization": (25, 5, 3),
    "padding": (18, 7, 0),
    "resizing": (18, 5, 3),
    "loss": (18, 4, 0),
    "attention": (2, 4, 4),
    "activation": (10, 5, 3),
    "embedding": (1, 4, 0),
}


def _broken(member: Member) -> Member | None:
    """The member without its layout transform; None if it has none."""
    if member.layout:
        return dataclasses.replace(member, layout={})
    return None


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_declared_family_validates_and_its_transforms_matter(pool: WorkerPool, family: str) -> None:
    specs = [s for s in dlcore.declared() if s.family == family]
    assert specs
    validated = dlcore.validate(pool, specs)
    least, widest, transformed = FAMILIES[family]
    by_spec = {s.id: [g for g in validated.groups if g.id.split("~")[0] == s.id] for s in specs}
    for sid, groups in by_spec.items():  # every declared group keeps two libraries at least
        assert groups, (sid, validated.left_out.get(sid))
    assert len(validated.groups) >= least, (family, len(validated.groups))
    assert max(len(g.libraries) for g in validated.groups) >= widest
    # the transforms matter: undone, the member fails or disagrees with the group
    checked = 0
    for group in validated.groups:
        reference = group.members[0]
        for member in group.members[1:]:
            broken = _broken(member)
            if broken is None:
                continue
            inputs = dlcore.canonical_values(group)
            calls = {
                reference.library: [bind(reference, v) for v in inputs],
                f"{member.library}": [bind(broken, v) for v in inputs],
            }
            if reference.library == member.library:
                continue
            outs = pool.run(calls)
            want = [to_plain(o.value) for o in outs[reference.library]]
            got = outs[member.library]
            assert not all(
                o.ok and agree(to_plain(o.value), w) for o, w in zip(got, want, strict=True)
            ), (group.id, member.api)
            checked += 1
    assert checked >= transformed, family
    if family == "padding":  # two spellings of asymmetric pads agree
        both = [g.id for g in validated.groups if {"numpy", "torch"} <= set(g.libraries)]
        assert len(both) >= 12, both


def test_transposed_convolutions_with_a_kernel_shorter_than_the_stride_agree_on_length(
    pool: WorkerPool,
) -> None:
    """(L - 1) * s + k, for every member: jax's "VALID" and keras's inferred output_padding
    would give tensorflow's L * s + max(k - s, 0) (12, not 11, for L=6, s=2, k=1), so both
    are bound explicitly."""
    import numpy as np

    from xamt.catalog import model

    group = {g.id: g for g in model.load().groups}["conv_transpose1d[valid]"]
    rng = np.random.default_rng(0)
    values = {
        "x": rng.standard_normal((1, 4, 6)).astype(np.float32),
        "kernel": rng.standard_normal((4, 6, 1)).astype(np.float32),
        "stride": 2,
    }
    calls: dict[str, list[Any]] = {}
    for m in group.members:  # (both tensorflow members: keras's and tf.nn's)
        calls.setdefault(m.library, []).append(bind(m, values))
    assert {"jax", "tensorflow", "torch"} <= set(calls) and len(calls["tensorflow"]) == 2
    outs = pool.run(calls)
    shapes = {(lib, i): np.shape(o.value) for lib, got in outs.items() for i, o in enumerate(got)}
    assert all(o.ok for got in outs.values() for o in got), outs
    assert set(shapes.values()) == {(1, 6, 11)}, shapes
