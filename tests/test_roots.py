"""One root cause, one finding: what joins suspected bugs across dtypes, kinds and callables
(xamt/triage/pipeline.py) and the reviewed shared-code records it reads
(xamt/catalog/shared.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from xamt.catalog import model, shared
from xamt.catalog.model import CatalogError
from xamt.findings import FAMILY, SEVERITY, Finding, Kind
from xamt.store import Store
from xamt.triage.pipeline import (
    Moves,
    _attach_documentation,
    _join_delegations,
    joined,
    same_root,
    why_joined,
)
from xamt.workers.pool import Doc


def suspected(api: str, kind: Kind = "value", trigger: str = "nan", **changes: Any) -> Finding:
    """A suspected bug blamed on ``api`` (its library is the path's first part)."""
    library, op = api.split(".")[0], api.rsplit(".", 1)[-1]
    return Finding(
        signature=hashlib.sha256(f"{kind}/{api}/{trigger}".encode()).hexdigest()[:16],
        key=f"{kind}/{library}/{library}.{op}/float32/{trigger}",
        kind=kind,
        classification="suspected-bug",
        severity=SEVERITY[FAMILY[kind]],
        confidence="majority",
        library=library,
        callable=f"{library}.{op}",
        group=op,
        apis={library: api},
        trigger=trigger,
        input_classes=(trigger,),
        dtype="float32",
    ).replace(**changes)


def test_a_wrong_dtype_and_wrong_values_of_one_callable_are_one_root() -> None:
    """paddle's complex Frobenius norm: a complex dtype and a complex "norm" are one defect;
    a status departure of the same callable is another."""
    values = suspected("paddle.linalg.norm", "value", "ordinary")
    dtype = suspected("paddle.linalg.norm", "dtype", "dtype-limit")
    status = suspected("paddle.linalg.norm", "status", "empty")
    assert same_root(values) == same_root(dtype) != same_root(status)
    assert why_joined(values, dtype) == f"{dtype.key}: the same callable"
    # the same kind in another dtype is not listed: nothing to tell a maintainer
    assert why_joined(values, suspected("paddle.linalg.norm", "nan", "inf")) == ""


def test_callables_a_shared_code_record_names_are_one_root_by_trigger() -> None:
    """paddle's argmin and argmax are one kernel: their uninitialised indices on an empty axis
    are one finding, listing the other with the record's link; the same kernel failing on NaN
    is another root, and an unrelated callable stays apart."""
    argmin = suspected("paddle.argmin", "status", "empty")
    argmax = suspected("paddle.argmax", "status", "empty")
    assert same_root(argmin) == same_root(argmax)
    assert same_root(suspected("paddle.argmax", "status", "nan")) != same_root(argmin)
    assert same_root(suspected("paddle.sum", "status", "empty")) != same_root(argmin)
    why = why_joined(argmin, argmax)
    assert why.startswith(argmax.key) and "arg_min_max_kernel.cc" in why
    listed = joined(joined(argmin, argmax, why), argmax, why)
    assert listed.also == (why,)


def test_a_process_dying_in_shared_code_is_one_root_whatever_input_reached_it() -> None:
    """mxnet.np's var and std divide by N - ddof in the integer dtype (one template): the
    SIGFPE of an empty axis and that of ddof = N are one finding, listing the other with the
    record's link; another signal from the same code, or the same signal elsewhere in the
    reductions, stays apart."""
    var = suspected("mxnet.np.var", "crash", "empty", error="SIGFPE")
    std = suspected("mxnet.np.std", "crash", "param-boundary", error="SIGFPE")
    assert same_root(var, "reduction") == same_root(std, "reduction")
    assert same_root(var.replace(error="SIGSEGV"), "reduction") != same_root(std, "reduction")
    average = suspected("mxnet.np.average", "crash", "empty", error="SIGFPE")
    assert same_root(average, "reduction") != same_root(var, "reduction")
    why = why_joined(var, std, "reduction")
    assert why.startswith(std.key) and "np_broadcast_reduce_op.h" in why


def test_shared_code_records_name_catalog_members_with_a_link() -> None:
    """Every API path a record names is a member of the shipped catalog in that library, and
    every record says why, with an https link to the library's source."""
    catalog = model.load()
    members = {(m.library, m.api) for g in catalog.groups for m in g.members}
    records = shared.load_shared()
    assert records
    for (library, api), record in records.items():
        assert (library, api) in members, f"{record.name}: {api} is in no group"
        assert record.reason and record.link.startswith("https://")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '[paddle.x]\napis = ["paddle.a"]\ncode = "c"\nreason = "r"\nlink = "https://e"\n',
            "two or more",
        ),
        (
            '[paddle.x]\napis = ["paddle.a", "torch.b"]\ncode = "c"\nreason = "r"\nlink = "https://e"\n',
            "paddle's",
        ),
        (
            '[paddle.x]\napis = ["paddle.a", "paddle.b"]\ncode = "c"\nreason = "r"\nlink = "http://e"\n',
            "https",
        ),
        (
            '[paddle.x]\napis = ["paddle.a", "paddle.b"]\ncode = "c"\nlink = "https://e"\n',
            "exactly",
        ),
        (
            '[nolib.x]\napis = ["nolib.a", "nolib.b"]\ncode = "c"\nreason = "r"\nlink = "https://e"\n',
            "not a library",
        ),
        (
            '[paddle.x]\napis = ["paddle.a", "paddle.b"]\ncode = "c"\nreason = "r"\nlink = "https://e"\n'
            '[paddle.y]\napis = ["paddle.b", "paddle.c"]\ncode = "c"\nreason = "r"\nlink = "https://e"\n',
            "two records",
        ),
    ],
)
def test_a_malformed_shared_code_file_is_refused_naming_the_record(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "shared.toml"
    path.write_text(text)
    with pytest.raises(CatalogError, match=message):
        shared.load_shared(path)


def test_a_callable_whose_source_calls_another_joins_its_finding(tmp_path: Path) -> None:
    """mindspore.numpy.flipud returns flip(m, 0): its wrong result on NaN joins flip's, listed
    there; a caller with another trigger, or one that calls nothing of the other, stays."""
    flip = suspected("mindspore.numpy.flip")
    flipud = suspected("mindspore.numpy.flipud")
    other_trigger = suspected("mindspore.numpy.fliplr", trigger="inf")
    other_kind = suspected("mindspore.numpy.flip_dtype", "dtype")  # its own cast, maybe
    unrelated = suspected("mindspore.numpy.rot90")
    code = {
        "mindspore": {
            "mindspore.numpy.flip": Doc(name="mindspore.numpy.array_ops.flip"),
            "mindspore.numpy.flipud": Doc(
                name="mindspore.numpy.array_ops.flipud", calls=("mindspore.numpy.array_ops.flip",)
            ),
            "mindspore.numpy.fliplr": Doc(
                name="mindspore.numpy.array_ops.fliplr", calls=("mindspore.numpy.array_ops.flip",)
            ),
            "mindspore.numpy.rot90": Doc(name="mindspore.numpy.array_ops.rot90", calls=("x.y",)),
            "mindspore.numpy.flip_dtype": Doc(
                name="mindspore.numpy.array_ops.flip_dtype",
                calls=("mindspore.numpy.array_ops.flip",),
            ),
        }
    }
    with Store(tmp_path / "s.sqlite") as store:
        campaign = store.start_campaign(name="c", config={})
        for f in (flip, flipud, other_trigger, unrelated, other_kind):
            store.upsert_finding(f, campaign=campaign)
        signatures = [f.signature for f in (flipud, other_trigger, unrelated, other_kind, flip)]
        assert _join_delegations(store, signatures, code) == 1
        left = {r.signature: r.finding for r in store.findings()}
        stay = (flip, other_trigger, unrelated, other_kind)
        assert set(left) == {f.signature for f in stay}
        assert left[flip.signature].also == (
            f"{flipud.key}: its source calls mindspore.numpy.array_ops.flip",
        )
        assert left[flip.signature].occurrences == 2


def test_two_api_paths_naming_one_function_join_as_one_callable(tmp_path: Path) -> None:
    """mindspore.numpy.round is mindspore.numpy.around: their wrong integer results join
    whatever input class showed each; a function a factory made under many names
    (``<locals>``) joins nothing, nor does a hang beside a wrong value."""
    around = suspected("mindspore.numpy.around", "value", "dtype-limit")
    round_ = suspected("mindspore.numpy.round", "value", "ordinary")
    hang = suspected("mindspore.numpy.round", "hang", "param-boundary")
    pool1 = suspected("torch.nn.functional.max_pool1d", "value", "nan")
    pool2 = suspected("torch.nn.functional.adaptive_max_pool1d", "value", "nan")
    factory = "torch.nn.functional.boolean_dispatch.<locals>.fn"
    code = {
        "mindspore": {
            "mindspore.numpy.around": Doc(name="mindspore.numpy.math_ops.around"),
            "mindspore.numpy.round": Doc(name="mindspore.numpy.math_ops.around"),
        },
        "torch": {
            "torch.nn.functional.max_pool1d": Doc(name=factory),
            "torch.nn.functional.adaptive_max_pool1d": Doc(name=factory),
        },
    }
    with Store(tmp_path / "s.sqlite") as store:
        campaign = store.start_campaign(name="c", config={})
        for f in (around, round_, hang, pool1, pool2):
            store.upsert_finding(f, campaign=campaign)
        # a signature listed twice (two triaged findings that became one) joins once
        signatures = [f.signature for f in (round_, round_, hang, pool1, pool2, around)]
        assert _join_delegations(store, signatures, code) == 1
        left = {r.signature: r.finding for r in store.findings()}
    assert set(left) == {f.signature for f in (around, hang, pool1, pool2)}
    assert left[around.signature].also == (
        f"{round_.key}: the same function (mindspore.numpy.math_ops.around) under another name",
    )


def test_a_private_implementation_of_the_same_name_is_the_callable_s() -> None:
    """mindspore.numpy.nanvar hands its work to _nanvar, which nanstd calls too: a caller of
    _nanvar delegates to nanvar; an unrelated callee of nanvar is not nanvar's."""
    nanvar = Doc(
        name="mindspore.numpy.math_ops.nanvar",
        calls=("mindspore.numpy.math_ops._reduce", "mindspore.numpy.math_ops._nanvar"),
    )
    assert nanvar.implementation() == {
        "mindspore.numpy.math_ops.nanvar",
        "mindspore.numpy.math_ops._nanvar",
    }


def test_why_a_status_joined_names_the_attribute_or_the_check() -> None:
    """The line a finding lists another by says what they share: the attribute the library's
    own code calls on a type that lacks it, or the internal check that fails in both."""
    lacks = "AttributeError: 'EagerTensor' object has no attribute 'astype'"
    tan = suspected("tensorflow.experimental.numpy.tan", "status", "ordinary", error=lacks)
    sinh = suspected("tensorflow.experimental.numpy.sinh", "status", "ordinary", error=lacks)
    assert same_root(tan) == same_root(sinh)
    assert (
        why_joined(tan, sinh)
        == f"{sinh.key}: the same call of EagerTensor.astype, which the type lacks"
    )
    check = "MXNetError: Check failed: lhs.Size() == rhs.Size() (0 vs. 1) : Shape size mismatch"
    mean = suspected("mxnet.np.mean", "status", "empty", error=check)
    prod = suspected("mxnet.np.prod", "status", "empty", error=check)
    assert same_root(mean) == same_root(prod)
    assert "the same internal check (" in why_joined(mean, prod)
    assert "Shape size mismatch" in why_joined(mean, prod)


def test_documentation_is_attached_to_the_stored_finding_not_a_stale_copy(tmp_path: Path) -> None:
    """A finding listed for documentation before others joined it keeps what joined it: the
    sentences go onto the store's copy (the seed-89 campaign's findings had lost every
    "also" line to the stale copies)."""
    flip = suspected("mindspore.numpy.flip")
    flipud = suspected("mindspore.numpy.flipud")
    code = {"mindspore": {"mindspore.numpy.flip": Doc(text="Reverses the order. NaN is kept.")}}
    with Store(tmp_path / "s.sqlite") as store:
        campaign = store.start_campaign(name="c", config={})
        store.upsert_finding(flip, campaign=campaign)
        store.update_finding(joined(flip, flipud, f"{flipud.key}: its source calls flip"))
        _attach_documentation(store, [flip, flip], code)
        kept = store.finding(flip.signature).finding
    assert kept.also == (f"{flipud.key}: its source calls flip",)
    assert kept.documentation


def test_a_finding_rekeyed_onto_one_not_yet_triaged_is_found_where_that_one_goes(
    tmp_path: Path,
) -> None:
    # triage gives finding a the signature of finding b (its trigger found), then b its own
    # final signature c: a's root must be looked up at c, and a dropped finding nowhere
    a = suspected("mindspore.numpy.var", trigger="ordinary")
    b = suspected("mindspore.numpy.var", trigger="param-boundary")
    c = suspected("mindspore.numpy.var", trigger="zero")
    hang = suspected("paddle.gcd", kind="hang")
    with Store(tmp_path / "s.sqlite") as store:
        campaign = store.start_campaign(name="c", config={})
        for f in (a, b, hang):
            store.upsert_finding(f, campaign=campaign)
        moves = Moves(store)
        moves.rekey(a.signature, b)
        moves.rekey(b.signature, c)
        assert moves.now(a.signature) == moves.now(b.signature) == c.signature
        assert store.finding(moves.now(a.signature)).finding.trigger == "zero"
        moves.rekey(c.signature, c)  # (the same signature: an update, not a move)
        assert moves.now(c.signature) == c.signature
        moves.drop(hang.signature)
        assert moves.now(hang.signature) == ""
        assert {r.signature for r in store.findings()} == {c.signature}
