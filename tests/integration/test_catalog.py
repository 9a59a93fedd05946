"""The catalog against the real libraries: committed groups still agree, the build is
deterministic, and the known false-match traps are handled."""

from __future__ import annotations

import json
import re

import pytest

from xamt.catalog import model
from xamt.catalog.build import build
from xamt.catalog.check import check, sample_groups
from xamt.libraries import library_names
from xamt.workers.pool import WorkerPool

CHECK_SAMPLE = 150  # groups re-validated per run (seeded); `xamt catalog check` does all


@pytest.fixture(scope="module")
def catalog() -> model.Catalog:
    return model.load()


def test_committed_catalog_spans_every_library(catalog: model.Catalog) -> None:
    stats = catalog.stats()
    assert stats["groups"] >= 500 and stats["matched_apis"] >= 3000
    assert stats["distinct_callables"] <= stats["matched_apis"]
    for lib in library_names():
        assert stats["groups_per_library"][lib] >= 150, (lib, stats["groups_per_library"])
    assert all(len(g.libraries) >= 2 for g in catalog.groups)
    ufuncs = {m.api for g in catalog.groups for m in g.members}
    assert {"numpy.exp", "numpy.add", "numpy.arctan2", "jax.numpy.exp"} <= ufuncs  # not functions
    # the deep-learning core: declared groups in every family, channels-last members included
    core = stats["deep_learning_core"]
    assert core["groups"] >= 130, core
    families = {"convolution", "pooling", "normalization", "padding", "resizing", "loss"}
    assert families | {"attention"} <= set(stats["per_family"])
    conv2d = catalog.group("conv2d")
    assert {"torch", "tensorflow", "jax", "paddle", "mindspore", "mxnet"} <= set(conv2d.libraries)
    tf = next(m for m in conv2d.members if m.library == "tensorflow")
    assert tf.layout["x"] == "channels_last" and tf.layout["return"] == "channels_first"


def test_committed_groups_pass_the_group_level_check(
    pool: WorkerPool, catalog: model.Catalog
) -> None:
    groups = sample_groups(catalog, CHECK_SAMPLE, seed=1)
    drifts = check(pool, groups)
    assert not drifts, drifts[:5]


def test_false_match_traps(catalog: model.Catalog) -> None:
    def group_of(api: str, roles: tuple[str, ...] = ("x",)) -> model.Group | None:
        for g in catalog.groups:
            if g.roles == roles and any(m.api == api for m in g.members):
                return g
        return None

    # reduction defaults: std is population std in numpy, sample std in torch and paddle
    np_std, torch_std = group_of("numpy.std"), group_of("torch.std")
    assert np_std is not None and torch_std is not None and np_std.id != torch_std.id
    assert group_of("paddle.std") == torch_std
    apis = {m.api for g in catalog.groups for m in g.members}
    found = {m.api for g in catalog.groups if g.shapes in model.BASE_KINDS for m in g.members}
    # random-number APIs, layout-sensitive ops and type-promotion helpers are never grouped
    # by name (layout-sensitive ops are declared, with their layouts: xamt.catalog.dlcore)
    assert not {a for a in apis if re.search(r"\.(rand\w*|normal|dropout|uniform)$", a)}
    assert not {a for a in found if re.search(r"conv\d?d|max_pool|avg_pool", a)}
    assert not {a for a in apis if re.search(r"result_type|promote_types|can_cast", a)}
    # split keeps the axis, unstack drops it: never one group
    for g in catalog.groups:
        leaves = {m.api.rsplit(".", 1)[-1] for m in g.members}
        assert not ({"split", "array_split"} & leaves and {"unstack", "unbind"} & leaves), g.id


def test_build_is_deterministic_whatever_the_order_and_restarts(
    pythons: dict[str, str], catalog: model.Catalog
) -> None:
    pick = re.compile(r"^(a|cu|lo)")
    built = []
    for shuffle in (None, 7):
        with WorkerPool(pythons, deadline=20) as pool:
            pool.start()
            killed: list[int] = []

            def kill_one(_line: str, pool: WorkerPool = pool, killed: list[int] = killed) -> None:
                if not killed and _line.startswith("executed"):  # a worker dies mid-build
                    proc = pool.workers["torch"].proc
                    assert proc is not None
                    killed.append(proc.pid)
                    pool.workers["torch"].kill()

            built.append(
                build(
                    pool,
                    ops=lambda op: bool(pick.search(op)),
                    shuffle_seed=shuffle,
                    progress=kill_one if shuffle else lambda _l: None,
                )
            )
    first, second = (model.to_json(c) for c in built)
    assert first == second
    groups = json.loads(first)["groups"]
    assert len(groups) >= 20
    committed = {g.id: g for g in catalog.groups}
    for g in built[0].groups:  # the committed catalog was built the same way
        assert committed[g.id] == g, g.id
