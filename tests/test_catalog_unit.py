"""Catalog records, tables and normalization (no library needed)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from xamt.catalog import model
from xamt.catalog.build import Plan, agree, candidates, canonical_inputs, form_groups, to_plain
from xamt.catalog.model import CatalogError
from xamt.catalog.normalize import binding_of, canonical_op, exclusion_reason


def write(tmp_path: Path, groups: list[dict[str, object]]) -> Path:
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps({"schema": 1, "libraries": {}, "groups": groups}))
    return path


def group(gid: str = "abs", **over: object) -> dict[str, object]:
    g: dict[str, object] = {
        "id": gid,
        "op": "abs",
        "family": "elementwise",
        "roles": ["x"],
        "dtype": "float32",
        "members": [
            {"library": "numpy", "api": "numpy.abs", "args": ["x"]},
            {"library": "torch", "api": "torch.abs", "args": ["x"]},
        ],
    }
    g.update(over)
    return g


def test_committed_catalog_loads_and_round_trips(tmp_path: Path) -> None:
    catalog = model.load()
    assert catalog.groups and all(len(g.libraries) >= 2 for g in catalog.groups)
    copy = tmp_path / "copy.json"
    model.save(catalog, copy)
    assert model.load(copy) == catalog
    assert copy.read_text() == model.CATALOG_PATH.read_text()  # saving is stable


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([group(roles=["x", "frobnicate"])], "unknown role 'frobnicate'"),
        ([group(), group()], "duplicate group id 'abs'"),
        (
            [
                group(
                    members=[
                        {"library": "numpy", "api": "numpy.abs"},
                        {"library": "cupyx", "api": "cupyx.abs"},
                    ]
                )
            ],
            "unknown library 'cupyx'",
        ),
        (
            [
                group(
                    members=[
                        {"library": "numpy", "api": "numpy.abs", "args": ["y"]},
                        {"library": "torch", "api": "torch.abs"},
                    ]
                )
            ],
            "uses unknown role 'y'",
        ),
        ([group(members=[{"library": "numpy", "api": "numpy.abs"}])], "two libraries"),
        ([{"id": "broken"}], "malformed entry"),
        ([group(shapes="triangular")], "unknown shapes 'triangular'"),
    ],
)
def test_bad_catalog_entries_name_the_file_and_entry(
    tmp_path: Path, groups: list[dict[str, object]], message: str
) -> None:
    path = write(tmp_path, groups)
    with pytest.raises(CatalogError, match=message) as info:
        model.load(path)
    assert str(path) in str(info.value) and "group #" in str(info.value)


def test_unreadable_catalog(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CatalogError, match="not a readable JSON catalog"):
        model.load(bad)
    with pytest.raises(CatalogError, match="xamt catalog build"):
        model.load(tmp_path / "missing.json")


@pytest.mark.parametrize(
    ("path", "op"),
    [
        ("numpy.absolute", "abs"),
        ("tensorflow.math.reduce_max", "max"),
        ("numpy.amax", "max"),
        ("torch.clamp", "clip"),
        ("tensorflow.clip_by_value", "clip"),
        ("torch.cat", "concat"),
        ("tensorflow.raw_ops.ArgMax", "argmax"),
        ("tensorflow.raw_ops.RealDiv", "divide"),
        ("mxnet.nd.broadcast_add", "add"),
        ("torch.abs_", "abs"),
        ("numpy.arccos", "acos"),
        ("paddle.bitwise_invert", "bitwise_not"),  # alias matched without its underscores
        ("torch.float_power_", "float_power"),
        ("mxnet.nd.linalg_det", "det"),  # mxnet's linalg_ prefix
        ("tensorflow.raw_ops.BatchMatMul", "matmul"),  # tensorflow's batch_ prefix
        ("mindspore.ops.softmax_ext", "softmax"),  # mindspore's _ext suffix
        ("tensorflow.raw_ops.TopKV2", "topk"),
    ],
)
def test_names_normalize_to_one_operation(path: str, op: str) -> None:
    assert canonical_op(path) == op


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("torch.rand", "random"),
        ("numpy.random_sample", "random"),
        ("torch.dropout", "random"),
        ("torch.set_default_dtype", "global"),
        ("torch.manual_seed", "global"),
        ("numpy.result_type", "type-promotion"),
        ("jax.numpy.promote_types", "type-promotion"),
        ("torch.nn.functional.conv2d", "layout"),
        ("tensorflow.nn.max_pool2d", "layout"),
        ("numpy.save", "input/output"),
        ("torch.empty_like", "uninitialized"),
        ("torch.svd_lowrank", "randomized"),
        ("mindspore.Tensor.searchsorted", "call order"),  # one API, by full path
    ],
)
def test_traps_are_excluded_with_a_reason(path: str, why: str) -> None:
    reason = exclusion_reason(path)
    assert reason is not None and why in reason


def test_deterministic_functions_are_not_excluded() -> None:
    for path in ("torch.nn.functional.normalize", "numpy.add", "numpy.std", "torch.abs_"):
        assert exclusion_reason(path) is None, path


def test_parameter_roles() -> None:
    ufunc = binding_of(
        [
            {"name": "x1", "kind": "positional_only"},
            {"name": "x2", "kind": "positional_only"},
            {"name": "out", "kind": "keyword_only", "default": "None"},
            {"name": "dtype", "kind": "keyword_only", "default": "None"},
        ]
    )
    assert [a for a, _ in ufunc.arrays] == ["x1", "x2"] and ufunc.role("dtype") is not None
    torch_sum = binding_of(
        [
            {"name": "input", "kind": "positional_or_keyword"},
            {"name": "dim", "kind": "positional_or_keyword", "default": "<overload>"},
            {"name": "keepdim", "kind": "positional_or_keyword", "default": "False"},
        ]
    )
    assert torch_sum.role("axis").name == "dim"  # type: ignore[union-attr]
    assert torch_sum.role("keepdims").name == "keepdim"  # type: ignore[union-attr]
    mx_nd = binding_of(
        [
            {"name": "data", "kind": "positional_or_keyword", "default": None},
            {"name": "out", "kind": "positional_or_keyword", "default": None},
        ]
    )
    assert mx_nd.arrays == (("data", False),)
    clip = binding_of(
        [
            {"name": "t", "kind": "positional_or_keyword"},
            {"name": "clip_value_min", "kind": "positional_or_keyword"},
            {"name": "clip_value_max", "kind": "positional_or_keyword"},
        ]
    )
    assert clip.required_roles == {"min", "max"} and not clip.blocked
    blocked = binding_of(
        [
            {"name": "x", "kind": "positional_or_keyword"},
            {"name": "frobnication_level", "kind": "positional_or_keyword"},
        ]
    )
    assert blocked.blocked == ("frobnication_level",)
    transpose = binding_of(  # torch.transpose: the second axis name moves on to axis2
        [
            {"name": "input", "kind": "positional_or_keyword"},
            {"name": "dim0", "kind": "positional_or_keyword"},
            {"name": "dim1", "kind": "positional_or_keyword"},
        ]
    )
    assert [(p.role, p.name) for p in transpose.params] == [("axis1", "dim0"), ("axis2", "dim1")]
    stack = binding_of([{"name": "tensors", "kind": "positional_or_keyword"}])
    assert stack.sequence == ("tensors", False)
    assert not binding_of([{"name": "args", "kind": "var_positional"}]).known


def test_an_operations_own_roles_come_first_and_a_dtype_role_is_a_dtype() -> None:
    """``[ops.<op>]`` (data/roles.toml) reads a name for its operation only: ``updates`` is an
    input array of ``tensor_scatter_add`` and blocks elsewhere; ``dtype`` is the required
    ``target_dtype`` of ``cast``, whose canonical value is a dtype given by name."""
    from xamt.catalog.normalize import scalar_value
    from xamt.workers.protocol import DType

    scatter = [
        {"name": "input_x", "kind": "positional_or_keyword"},
        {"name": "indices", "kind": "positional_or_keyword"},
        {"name": "updates", "kind": "positional_or_keyword"},
    ]
    assert binding_of(scatter).blocked == ("updates",)
    own = binding_of(scatter, "tensor_scatter_add")
    assert own.arrays == (("input_x", False), ("updates", False)) and not own.blocked
    assert own.required_roles == {"nd_indices"}
    assert scalar_value("nd_indices", True).shape == (1, 2)
    cast = [
        {"name": "x", "kind": "positional_or_keyword"},
        {"name": "dtype", "kind": "positional_or_keyword"},
    ]
    assert binding_of(cast).required_roles == {"dtype"}  # (never given by a plan)
    assert binding_of(cast, "cast").required_roles == {"target_dtype"}
    assert scalar_value("target_dtype", True) == DType("float64")
    assert scalar_value("rows", True) == (0, 1) and scalar_value("mirror_mode", True) == "REFLECT"


def test_plans_spell_their_roles() -> None:
    assert Plan(arrays=1, axis=True).roles == ("x", "axis")
    assert Plan(arrays=2, axis=False, scalars=("min",)).roles == ("x1", "x2", "min")
    assert Plan(arrays=2, axis=True, sequence=True).roles == ("xs", "axis")


def test_agreement_and_group_forming() -> None:
    import numpy as np

    a = to_plain(np.array([1.0, 2.0], np.float32))
    close = to_plain(np.array([1.0, 2.0 + 1e-6], np.float64))
    far = to_plain(np.array([1.0, 2.1], np.float32))
    other_shape = to_plain(np.array([[1.0, 2.0]], np.float32))
    assert agree(a, close) and not agree(a, far) and not agree(a, other_shape)
    assert not agree(to_plain(np.array([True])), to_plain(np.array([1.0])))
    assert agree(to_plain((np.ones(2), np.zeros(1))), to_plain([np.ones(2), np.zeros(1)]))
    # the oracle's tolerances: integers exact (10000 and 10001 are within rtol 1e-4), float64
    # at 1e-7, a float32 result against a float64 one at float32's
    ints = [to_plain(np.array([10000, v], np.int32)) for v in (10000, 10001)]
    assert not agree(ints[0], ints[1])
    assert not agree(to_plain(np.array([1.0])), to_plain(np.array([1.0 + 1e-6])))
    assert agree(to_plain(np.array([1.0], np.float32)), to_plain(np.array([1.0 + 1e-6])))

    class M:
        def __init__(self, library: str) -> None:
            self.library = library

    members = [M("numpy"), M("torch"), M("jax"), M("paddle")]
    results = [[a], [a], [far], [far]]
    groups = form_groups(members, results)  # type: ignore[arg-type]
    assert groups == [[0, 1], [2, 3]]  # the odd pair is split off, into a group of its own
    # a probe (a batch of squares) a member refused agrees with anything; two answers must
    # agree: numpy.diagonal and numpy.linalg.diagonal read a batch on different axes
    results = [[a, a], [a, None], [a, far], [a, a]]
    assert form_groups(members, results, plain=1) == [[0, 1, 3]]  # type: ignore[arg-type]
    # on a probe of negative values, a NaN against a number is a domain policy (log of a
    # negative), not another operation; two different numbers are (leaky_relu's slopes)
    nan = to_plain(np.array([np.nan, 2.0], np.float32))
    results = [[a, a], [a, nan], [a, far], [a, a]]
    assert form_groups(members, results, plain=1) == [[0, 1, 3]]  # type: ignore[arg-type]


def test_every_committed_member_binds_its_groups_roles() -> None:
    """A member that cannot take a group's role (torch.linalg.diagonal has no readable
    ``offset``) would be called without it and judged against members given it."""
    unbound = [
        (g.id, m.api, role)
        for g in model.load().groups
        for m in g.members
        for role in g.roles
        if role not in m.args and role not in m.kwargs.values()
    ]
    assert unbound == []


def api(path: str, *params: str) -> dict[str, object]:
    """An inventory entry; a parameter written ``name=default`` is optional."""
    out = []
    for p in params:
        name, eq, default = p.partition("=")
        out.append(
            {"name": name, "kind": "positional_or_keyword", **({"default": default} if eq else {})}
        )
    return {"path": path, "kind": "function", "params": out}


def test_candidate_plans() -> None:
    inventories = {
        "numpy": {
            "apis": [
                api("numpy.concatenate", "arrays", "axis=0"),
                api("numpy.round", "a", "decimals=0"),
                api("numpy.tile", "A", "reps"),
                api("numpy.sum", "a", "axis=None", "keepdims=False"),
            ]
        },
        "torch": {
            "apis": [
                api("torch.cat", "tensors", "dim=0"),
                api("torch.round", "input", "decimals=0"),
                api("torch.sum", "input", "dim=None", "keepdim=False"),
            ]
        },
        "jax": {"apis": [api("jax.numpy.tile", "A", "reps")]},
        "tensorflow": {"apis": [api("tensorflow.keras.ops.tile", "x", "repeats")]},
    }
    buckets = {
        (op, plan.roles): {c.api for c in cands}
        for (op, plan), cands in candidates(inventories).items()
    }
    # a list of arrays is one role, `xs`
    assert buckets[("concat", ("xs",))] == {"numpy.concatenate", "torch.cat"}
    assert buckets[("concat", ("xs", "axis"))] == {"numpy.concatenate", "torch.cat"}
    # an optional role taken by two libraries makes a variant plan
    assert buckets[("round", ("x", "decimals"))] == {"numpy.round", "torch.round"}
    assert ("sum", ("x", "keepdims", "axis")) in buckets
    # each required set is its own plan: keras' `repeats` does not push numpy and jax out
    assert buckets[("tile", ("x", "reps"))] == {"numpy.tile", "jax.numpy.tile"}
    # an API whose parameters are unknown joins no plan that gives a role, optional or not
    inventories["paddle"] = {"apis": [{"path": "paddle.round", "kind": "function", "params": None}]}
    rounds = {
        plan.roles: {c.api for c in cands}
        for (op, plan), cands in candidates(inventories).items()
        if op == "round"
    }
    assert "paddle.round" in rounds[("x",)]
    assert "paddle.round" not in rounds[("x", "decimals")]


def members_of(
    inventories: dict[str, Any], op: str, roles: tuple[str, ...]
) -> dict[str, tuple[tuple[str, ...], dict[str, str]]]:
    """api -> its member's (args, kwargs) in the bucket of ``op`` with ``roles``."""
    found = {}
    for (bucket_op, plan), cands in candidates(inventories).items():
        if bucket_op == op and plan.roles == roles:
            for c in cands:
                m = c.member(plan)
                found[c.api] = (m.args, m.kwargs)
    return found


def test_members_follow_the_signature_when_arrays_and_scalars_interleave() -> None:
    """``insert(arr, obj, values)`` and ``scatter(input, dim, index, src)``: arrays first
    would put the second array in the scalar's slot; each API keeps its own order instead."""
    inventories = {
        "numpy": {"apis": [api("numpy.insert", "arr", "obj", "values", "axis=None")]},
        "jax": {"apis": [api("jax.numpy.insert", "arr", "obj", "values", "axis=None")]},
        "torch": {"apis": [api("torch.scatter_add", "input", "dim", "index", "src")]},
        "paddle": {
            "apis": [
                api("paddle.scatter_add", "input", "dim", "index", "src"),
                # mindspore.ops.index_add's order, for a second shape of interleaving
                api("paddle.index_add", "x", "indices", "y", "axis"),
            ]
        },
        "mindspore": {"apis": [api("mindspore.ops.index_add", "x", "indices", "y", "axis")]},
    }
    inserts = members_of(inventories, "insert", ("x1", "x2", "obj"))
    assert inserts["numpy.insert"] == (("x1", "obj", "x2"), {})
    # the optional axis, given, follows the last array by keyword
    inserts = members_of(inventories, "insert", ("x1", "x2", "obj", "axis"))
    assert inserts["jax.numpy.insert"] == (("x1", "obj", "x2"), {"axis": "axis"})
    scatters = members_of(inventories, "scatteradd", ("x1", "x2", "indices", "axis"))
    assert scatters["torch.scatter_add"] == (("x1", "axis", "indices", "x2"), {})
    adds = members_of(inventories, "indexadd", ("x1", "x2", "indices", "axis"))
    assert adds["mindspore.ops.index_add"] == (("x1", "indices", "x2"), {"axis": "axis"})


def test_an_interleaved_api_after_a_parameter_without_a_role_goes_by_keyword() -> None:
    """A parameter before an array that the plan gives no value (an optional role, a control
    parameter) ends the positional run: the array goes by its name."""
    from xamt.catalog.build import Candidate

    params = [
        {"name": "input", "kind": "positional_or_keyword"},
        {"name": "dim", "kind": "positional_or_keyword", "default": "0"},
        {"name": "index", "kind": "positional_or_keyword"},
        {"name": "src", "kind": "positional_or_keyword"},
    ]
    c = Candidate(
        library="torch", api="f", callable="f", op="f", binding=binding_of(params, "scatter")
    )
    assert c.interleaved
    m = c.member(Plan(arrays=2, axis=False, scalars=("indices",)))
    assert m.args == ("x1",) and m.kwargs == {"index": "indices", "src": "x2"}
    assert m.optional == {"axis": "dim"}
    # arrays first in the signature: the arrays-first binding, unchanged
    plain = binding_of(params[:1] + params[3:] + params[1:3])
    assert not Candidate(library="torch", api="g", callable="g", op="g", binding=plain).interleaved


def test_operation_tables_give_names_their_operation_meaning() -> None:
    lerp: Any = api("torch.lerp", "input", "end", "weight")["params"]
    assert [a for a, _ in binding_of(lerp, "lerp").arrays] == ["input", "end"]
    # elsewhere `end` is a bound (arange, slice_scatter)
    assert binding_of(lerp).role("stop") is not None
    renorm: Any = api("torch.renorm", "input", "p", "dim", "maxnorm")["params"]
    b = binding_of(renorm, "renorm")
    assert [a for a, _ in b.arrays] == ["input"] and not b.blocked
    assert b.required_roles == {"norm_order", "axis", "clip_norm"}
    # without the operation's table, `p` is an array and `maxnorm` unknown
    assert binding_of(renorm).blocked == ("maxnorm",)


def test_canonical_inputs_by_kind() -> None:
    import numpy as np

    for shapes in ("square", "batched"):
        for (a,) in canonical_inputs(Plan(arrays=1, axis=False), "float32", shapes):
            assert a.shape[-1] == a.shape[-2] and a.dtype == np.float32
            np.testing.assert_allclose(a, np.swapaxes(a, -1, -2))
            np.linalg.cholesky(a.astype(np.float64))  # positive definite: does not raise
    vectors = canonical_inputs(Plan(arrays=2, axis=False), "int32", "vector")
    assert all(x.ndim == 1 and y.ndim == 1 and x.dtype == np.int32 for x, y in vectors)


# -- operation-specific shape kinds (data/shapes.toml) ---------------------------------------


def test_op_shape_kinds_give_each_array_its_own_shape() -> None:
    import numpy as np

    kinds = model.op_shape_kinds()
    # addmv(input, mat, vec): the declared (m,), (m, n), (n,) arrangement, input by input
    addmv = canonical_inputs(Plan(arrays=3, axis=False), "float32", "matvec")
    assert [tuple(a.shape for a in inp) for inp in addmv] == list(kinds["matvec"].canonical[3])
    for v, m, w in addmv:
        assert (m @ w).shape == v.shape and m.dtype == np.float32
    # cross products: size 3 on the first and the last axis, for axis=0 and the default
    for a, b in canonical_inputs(Plan(arrays=2, axis=True), "float32", "triple"):
        assert a.shape == b.shape and a.shape[0] == 3 and a.shape[-1] == 3
    # an "spd" fill is a symmetric positive definite matrix reshaped: tensorinv's (2, 3, 6)
    for (a,) in canonical_inputs(Plan(arrays=1, axis=False), "float32", "tensor"):
        n = int(np.prod(a.shape[:2]))
        matrix = a.reshape(n, n).astype(np.float64)
        np.testing.assert_allclose(matrix, matrix.T)
        np.linalg.cholesky(matrix)  # positive definite: does not raise
    # and a list argument gets the kind's chain of matrices
    for a, b in canonical_inputs(Plan(arrays=2, axis=False, sequence=True), "float32", "chain"):
        assert a.shape[1] == b.shape[0]


def test_op_shape_kinds_are_tried_only_on_their_own_operations() -> None:
    from xamt.catalog.build import KINDS, eligible, family_for, passes, plain_count

    two = Plan(arrays=2, axis=False)
    listed = Plan(arrays=2, axis=False, sequence=True)
    assert eligible("mv", two, "matvec") and not eligible("add", two, "matvec")
    assert not eligible("mv", Plan(arrays=1, axis=False), "matvec")  # no arrays.1 declared
    # a list argument waits past the general matrix kinds for its own kind
    assert not eligible("multidot", listed, "square") and eligible("multidot", listed, "chain")
    assert eligible("add", two, "any") and eligible("add", two, "square")
    order = passes()
    assert order[: len(KINDS)] == list(KINDS)
    assert {s for _, s in order[len(KINDS) :]} == set(model.OP_KINDS)
    assert plain_count(two, "matvec") == 3 and plain_count(Plan(arrays=0, axis=False), "any") == 1
    assert family_for("matvec") == "linalg" and family_for("segments") == "reduction"
    assert family_for("any") == ""


def test_committed_op_kind_groups_load(tmp_path: Path) -> None:
    path = write(tmp_path, [group("mv@matvec", shapes="matvec", family="linalg")])
    assert model.load(path).groups[0].shapes == "matvec"
    assert set(model.OP_KINDS) <= set(model.SHAPE_KINDS)
    # and an operation-specific group is not a deep-learning core group in the totals
    stats = model.load(path).stats()
    assert stats["deep_learning_core"]["groups"] == 0


THREE = "canonical = [[[3]], [[3]], [[3]]]\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('ops = ["x"]\nfamily = "linalg"\n[kinds.k.arrays.2]\n' + THREE, "another length"),
        (
            'ops = ["x"]\nfamily = "linalg"\n[kinds.k.arrays.1]\n'
            'canonical = [[[2, 3]], [[4]], [[9]]]\nvalues = ["spd"]\n',
            "no square size",
        ),
        ('ops = ["x"]\nfamily = "magic"\n[kinds.k.arrays.1]\n' + THREE, "unknown family"),
        (
            'ops = ["x"]\nfamily = "linalg"\n[kinds.k.arrays.1]\ncanonical = [[[3]]]\n',
            "3 canonical",
        ),
        ('family = "linalg"\n[kinds.k.arrays.1]\n' + THREE, "malformed"),
    ],
)
def test_malformed_op_shape_kinds_name_the_file_and_kind(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "shapes.toml"
    path.write_text("[kinds.k]\n" + body)
    with pytest.raises(CatalogError, match=message) as err:
        model.op_shape_kinds(path)
    assert str(path) in str(err.value) and "'k'" in str(err.value)
