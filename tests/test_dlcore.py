"""The deep-learning core without libraries: layouts, encoders, declared groups, binding,
case drawing and repro scripts (the real libraries are in tests/integration/test_dlcore.py)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import numpy as np
import pytest

from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.model import CatalogError, Group, Member
from xamt.catalog.normalize import DATA
from xamt.inputs.draw import draw_case, fuzz_dtypes, mutate
from xamt.triage.repro import library_script
from xamt.types import Case
from xamt.workers.server import _transposed, _transposed_result


def test_layout_permutations_round_trip() -> None:
    x = np.arange(2 * 4 * 3 * 5).reshape(2, 4, 3, 5)
    last = dlcore.permutation("channels_last", 4)
    first = dlcore.permutation("channels_first", 4)
    assert last == (0, 2, 3, 1) and first == (0, 3, 1, 2)
    nhwc = np.transpose(x, last)
    assert nhwc.shape == (2, 3, 5, 4) and nhwc[1, 2, 4, 3] == x[1, 3, 2, 4]
    assert np.array_equal(np.transpose(nhwc, first), x)
    # OIHW -> HWIO
    assert dlcore.permutation("spatial_in_out", 4) == (2, 3, 1, 0)
    assert dlcore.permutation("spatial_in_out", 3) == (2, 1, 0)
    # nothing to do for a vector, or for an identity
    assert dlcore.permutation("channels_last", 2) is None
    assert dlcore.permutation("swap_1_2", 3) == (0, 2, 1)


def test_encoders_spell_one_value_per_library() -> None:
    enc = dlcore.ENCODERS
    assert enc["tuple"](2, 3) == (2, 2, 2) and enc["tuple"]((1, 2), 2) == (1, 2)
    assert enc["pairs"](1, 2) == ((1, 1), (1, 1))
    assert enc["tf_explicit"](1, 2) == [[0, 0], [1, 1], [1, 1], [0, 0]]
    assert enc["tf_window"](2, 2) == [1, 2, 2, 1]
    pad = ((1, 2), (3, 0))  # (before, after) for H, then W
    assert enc["np_pad"](pad, 2) == ((0, 0), (0, 0), (1, 2), (3, 0))
    assert enc["torch_pad"](pad, 2) == (3, 0, 1, 2)  # last dimension first
    assert enc["flat_pad"](pad, 2) == (0, 0, 0, 0, 1, 2, 3, 0)
    kernel = np.zeros((6, 2, 3, 5), np.float32)
    assert enc["kernel"](kernel, 2) == (3, 5) and enc["out_channels"](kernel, 2) == 6
    assert enc["last_dim"](kernel, 2) == (5,) and enc["trailing_dims"](kernel, 2) == (2, 3, 5)


def test_declared_groups_expand_over_ranks_with_their_members() -> None:
    specs = {s.id: s for s in dlcore.declared()}
    conv1, conv2 = specs["conv1d"], specs["conv2d"]
    assert conv2.shapes == "conv2d" and conv2.rank == 2 and conv1.rank == 1
    apis2 = {m.api for m in conv2.members}
    assert "torch.nn.functional.conv2d" in apis2 and "tensorflow.nn.conv2d" in apis2
    # a member restricted to some ranks is absent from the others
    assert "tensorflow.nn.conv2d" not in {m.api for m in conv1.members}
    # per-rank values pick one per rank
    assert specs["pad_reflect1d"].params["pad"] == ((1, 2),)
    assert len(specs["pad_reflect3d"].params["pad"]) == 3
    paddle_gn = next(m for m in specs["group_norm3d"].members if m.library == "paddle")
    assert paddle_gn.fixed["data_format"] == "NCDHW"
    for spec in specs.values():
        apis = [m.api for m in spec.members]
        assert len(apis) == len(set(apis)), spec.id  # one member per API


def test_no_deep_learning_role_shadows_a_scalar_role() -> None:
    table = tomllib.loads((DATA / "roles.toml").read_text())
    assert not set(table["dl"]) & set(table["scalars"])


def test_fixed_index_arrays_come_from_the_roles_table_at_each_rank() -> None:
    specs = {s.id: s for s in dlcore.declared()}
    # `{d}` in a role is the rank, as in the group's id and APIs
    assert specs["max_unpool2d"].roles == ("x", "unpool_indices2d", "kernel_size")
    for d in (1, 2, 3):
        spec = specs[f"max_unpool{d}d"]
        for values in dlcore.canonical_values(spec):
            indices = values[f"unpool_indices{d}d"]
            assert indices.dtype == np.int64 and indices.shape == values["x"].shape
    # class indices: integers, one per row of the scores, drawn unchanged
    group = _group("nll_loss")
    (values,) = dlcore.canonical_values(group)
    assert values["x"].shape == (3, 4) and values["classes"].dtype == np.int64
    assert values["classes"].shape == (3,) and values["classes"].max() < 4
    apis = {m.library: m.api for m in group.members}
    case = draw_case(group, np.random.default_rng(3), "float32", "ordinary", apis)
    assert np.array_equal(case.values["classes"], values["classes"])


def test_a_bad_declaration_names_the_file_and_group(tmp_path: Path) -> None:
    bad = tmp_path / "dl.toml"
    bad.write_text(
        '[[group]]\nop = "c"\nfamily = "convolution"\nroles = ["x"]\n'
        '[[group.member]]\nlibrary = "torch"\napi = "torch.c"\nencode = { a = "nope" }\n'
    )
    with pytest.raises(CatalogError, match=r"dl.toml: group #0 \(c\).*unknown encoder 'nope'"):
        dlcore.declared(bad)


def _tf_conv() -> Member:
    return Member(
        library="tensorflow",
        api="tensorflow.nn.conv2d",
        kwargs={"input": "x", "filters": "kernel", "padding": "padding", "strides": "stride"},
        encode={"padding": "tf_explicit"},
        layout={"x": "channels_last", "kernel": "spatial_in_out", "return": "channels_first"},
        fixed={"data_format": "NHWC"},
    )


def test_bind_encodes_fixes_and_asks_for_transposes() -> None:
    x = np.zeros((2, 4, 7, 6), np.float32)
    kernel = np.zeros((6, 4, 3, 2), np.float32)
    call = bind(_tf_conv(), {"x": x, "kernel": kernel, "padding": 1, "stride": 2})
    assert call.kwargs["padding"] == [[0, 0], [1, 1], [1, 1], [0, 0]]
    assert call.kwargs["strides"] == 2 and call.kwargs["data_format"] == "NHWC"
    assert call.transpose == {
        "input": (0, 2, 3, 1),
        "filters": (2, 3, 1, 0),
        "return": (0, 3, 1, 2),
    }
    # the arrays stay logical: the worker transposes them
    assert call.kwargs["input"] is x
    mx = Member(
        library="mxnet",
        api="mxnet.nd.Convolution",
        kwargs={"data": "x", "weight": "kernel", "kernel": "kernel", "num_filter": "kernel"},
        encode={"kernel": "kernel", "num_filter": "out_channels"},
    )
    call = bind(mx, {"x": x, "kernel": kernel})
    assert call.kwargs["kernel"] == (3, 2) and call.kwargs["num_filter"] == 6
    assert call.kwargs["weight"] is kernel and not call.transpose


def test_worker_side_transposes() -> None:
    x = np.arange(24.0).reshape(1, 2, 3, 4)
    assert _transposed(x, [0, 2, 3, 1]).shape == (1, 3, 4, 2)
    assert _transposed(x, None) is x
    assert _transposed(x, [0, 2, 1]) is x  # another rank: left for the comparison to see
    out = _transposed_result((np.zeros((1, 3, 4, 2)), 5), [0, 3, 1, 2])
    assert out[0].shape == (1, 2, 3, 4) and out[1] == 5


def _group(spec_id: str) -> Group:
    spec = next(s for s in dlcore.declared() if s.id == spec_id)
    return dlcore.groups_of(spec, [list(range(len(spec.members)))], lambda k: "")[0]


@pytest.mark.parametrize("gid", ["conv2d[groups]", "conv3d", "batch_norm2d", "pad_reflect1d"])
def test_drawn_cases_keep_the_arrays_in_step(gid: str) -> None:
    group = _group(gid)
    rng = np.random.default_rng(5)
    d = dlcore.spatial_rank(group.shapes)
    apis = {m.library: m.api for m in group.members}
    assert set(fuzz_dtypes(group)) >= {"float32", "float16", "bfloat16"}
    edges = 0
    for _ in range(60):
        case = draw_case(group, rng, "float32", "ordinary", apis)
        x = case.values["x"]
        assert x.ndim == d + 2
        edges += int(0 in x.shape or 1 in x.shape[2:])
        if "kernel" in case.values:
            g = case.values.get("groups", 1)
            g = g if isinstance(g, int) and g > 0 else 1
            assert case.values["kernel"].shape[1] == max(1, x.shape[1] // g)
        if "running_var" in case.values:
            assert case.values["running_var"].shape == (x.shape[1],)
        mutated = mutate(case, group, rng)
        assert set(mutated.values) == set(case.values)
    assert edges  # empty and size-one spatial inputs are drawn too


def test_repro_script_shows_the_transposes() -> None:
    member = _tf_conv()
    x = np.arange(2 * 4 * 7 * 6, dtype=np.float32).reshape(2, 4, 7, 6)
    kernel = np.ones((6, 4, 3, 2), np.float32)
    case = Case(
        group="conv2d",
        dtype="float32",
        value_class="ordinary",
        values={"x": x, "kernel": kernel, "padding": 1, "stride": 2},
        apis={"tensorflow": member.api},
    )
    text, _ = library_script(
        library="tensorflow", member=member, case=case, version="2", signature="s", key="k"
    )
    assert "numpy.transpose(a0, (0, 2, 3, 1))" in text
    assert "numpy.transpose(a1, (2, 3, 1, 0))" in text
    assert "OUT_TRANSPOSE = (0, 3, 1, 2)" in text
    compile(text, "repro_tensorflow.py", "exec")


def test_stats_count_the_declared_groups_per_family() -> None:
    from xamt.catalog.model import Catalog

    conv, pad = _group("conv2d"), _group("pad_reflect2d")
    stats = Catalog(libraries={}, groups=(conv, pad)).stats()
    assert stats["deep_learning_core"]["groups"] == 2
    assert stats["per_family"]["convolution"]["groups"] == 1
    assert stats["per_family"]["padding"]["groups_per_library"]["numpy"] == 1
    assert stats["per_family"]["padding"]["operations"] == 1


def test_a_callable_parameter_travels_by_name_and_is_rendered_as_one() -> None:
    from xamt.workers import protocol

    member = Member(
        library="jax",
        api="jax.lax.reduce_window",
        kwargs={"operand": "x", "window_dimensions": "kernel_size"},
        encode={"window_dimensions": "window"},
        fixed={"init_value": float("-inf"), "padding": "VALID"},
        callables={"computation": "jax.lax.max"},
    )
    x = np.zeros((1, 4, 6, 6), np.float32)
    call = bind(member, {"x": x, "kernel_size": 2})
    assert call.kwargs["computation"] == protocol.ApiRef("jax.lax.max")
    assert call.kwargs["window_dimensions"] == (1, 1, 2, 2)
    data = protocol.encode({"op": "call"}, {"kwargs": call.kwargs})
    hlen, _ = protocol.parse_prefix(data[: protocol.PREFIX.size])
    header = data[protocol.PREFIX.size : protocol.PREFIX.size + hlen]
    payload = data[protocol.PREFIX.size + hlen :]
    decoded = protocol.decode(header, payload, ("kwargs",))
    assert decoded["kwargs"]["computation"] == protocol.ApiRef("jax.lax.max")
    case = Case(
        group="g",
        dtype="float32",
        value_class="ordinary",
        values={"x": x, "kernel_size": 2},
        apis={"jax": member.api},
    )
    text, _ = library_script(
        library="jax", member=member, case=case, version="0", signature="s", key="k"
    )
    assert "'computation': _resolve('jax.lax.max')" in text


@pytest.mark.parametrize("kernel", [np.float32(1.0), np.zeros((3,), np.float32), None])
def test_binding_never_fails_on_values_the_minimizer_makes(kernel: object) -> None:
    specs = [s for s in dlcore.declared() if s.arrangement in ("conv", "convt")]
    assert len(specs) >= 10
    x = np.zeros((1, 4, 5), np.float32)
    odd: dict[str, object] = {"x": x, "kernel": kernel, "bias": None}
    for spec in specs:
        values = {role: odd.get(role, ()) for role in spec.roles}
        for m in spec.members:
            bind(m, values)  # (raises nothing: the library gets what there is)


def test_a_losss_ordinary_inputs_are_probabilities() -> None:
    group = _group("binary_cross_entropy[none]")
    rng = np.random.default_rng(2)
    apis = {m.library: m.api for m in group.members}
    for dtype in ("float32", "bfloat16"):
        case = draw_case(group, rng, dtype, "ordinary", apis)
        for role in ("x", "target"):
            v = case.values[role]
            arr = v.values if hasattr(v, "values") else v
            assert arr.size and ((arr > 0) & (arr < 1)).all(), (dtype, role)


def test_sums_of_many_products_are_compared_to_their_largest_output() -> None:
    from xamt.oracle.compare import partitions

    # a position that cancels to near zero carries the rounding of the terms it summed
    a = np.array([30.0, 0.09825325], np.float32)
    b = np.array([30.0, 0.09821653], np.float32)
    assert [p.kind for p in partitions(["t", "p"], [a, b])] == ["value"]
    assert partitions(["t", "p"], [a, b], normwise=True) == []
    # a real difference stays one
    c = np.array([30.0, 0.5], np.float32)
    assert [p.kind for p in partitions(["t", "p"], [a, c], normwise=True)] == ["value"]


def test_torchs_documented_ceil_mode_rule_is_a_known_difference_only_there() -> None:
    from xamt.known import Facts, classify, load_known

    known = load_known()
    facts = Facts(
        kind="shape",
        library="torch",
        api="torch.nn.functional.avg_pool3d",
        op="avg_pool3d",
        group="avg_pool3d[ceil_mode]",
        dtype="float32",
        trigger="param-boundary",
    )
    label, ref = classify(known, facts)
    assert label == "documented-difference" and ref is not None
    assert ref.link.startswith("https://pytorch.org/")
    # the same shape departure without ceil_mode is still a suspected bug
    plain = dataclasses.replace(facts, group="avg_pool3d")
    assert classify(known, plain)[0] == "suspected-bug"


def test_pooling_and_convolution_references() -> None:
    from xamt import formulas

    x = np.array([[[1.0, -np.inf, 3.0, np.nan, 5.0, 0.5]]])  # (N=1, C=1, L=6)
    out, _ = formulas.evaluate("max_pool", {"x": x, "kernel_size": 2, "stride": 2})
    assert out.shape == (1, 1, 3) and out[0, 0, 0] == 1.0 and np.isnan(out[0, 0, 1])
    lows = np.full((1, 1, 2), -np.inf)
    assert (
        formulas.evaluate("max_pool", {"x": lows, "kernel_size": 1, "stride": 1})[0][0, 0, 0]
        == -np.inf
    )  # -inf, not the dtype's lowest finite value
    avg, _ = formulas.evaluate(
        "avg_pool", {"x": np.ones((1, 1, 4)), "kernel_size": 2, "stride": 2, "padding": 1}
    )
    assert np.allclose(avg, [[[0.5, 1.0, 0.5]]])  # the padding counts in the divisor
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 7, 6))
    k = rng.standard_normal((4, 3, 3, 2))
    got, _ = formulas.evaluate(
        "conv", {"x": x, "kernel": k, "stride": 2, "padding": 1, "dilation": 2}
    )
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros_like(got)
    for i in range(got.shape[2]):
        for j in range(got.shape[3]):
            patch = xp[:, :, 2 * i : 2 * i + 5 : 2, 2 * j : 2 * j + 3 : 2]
            want[:, :, i, j] = np.einsum("nchw,ochw->no", patch, k)
    assert np.allclose(got, want)
    # parameters at their edges have no reference (the libraries' answers are compared)
    assert formulas.evaluate("conv", {"x": x, "kernel": k, "stride": 0}) is None
    assert formulas.evaluate("max_pool", {"x": x, "kernel_size": 9, "stride": 1}) is None
