"""The deep-learning core: convolution, pooling, normalization, padding, resizing, losses.

These operations do not meet by name and parameter names the way ``exp`` does: torch's
``conv2d`` computes in NCHW with OIHW weights and takes ``padding=1``, tensorflow's in NHWC with
HWIO filters and ``padding=[[0, 0], [1, 1], [1, 1], [0, 0]]``, mxnet's ``Convolution`` wants the
kernel size and the number of filters spelled out. So their groups are *declared*
(``data/dlcore.toml``, reviewed by people) and then validated like every other group: every
member runs on the same canonical inputs, and members that disagree are split off.

A group's roles are logical: ``x`` is always channels-first (N, C, *spatial), weights are
(out, in / groups, *kernel), scalar roles are one int for every spatial dimension. A member
declares how it differs:

* ``layout``: per array role (and ``return`` for the result), the layout it computes in. The
  worker transposes the logical tensor into it before the call and the result back after
  (:data:`LAYOUTS`; the permutations travel with the call and appear in repro scripts).
* ``encode``: per parameter (name, or argument position), how a role's value is spelled for it
  (:data:`ENCODERS`): an int stride as one per spatial dimension, a padding as tensorflow's
  explicit pairs, the kernel size read off the weight's shape for mxnet.
* ``fixed``: parameters always given (``pad_mode="pad"``, ``no_bias=True``; ``none`` lists
  those given None); ``callables``: parameters given one of the library's functions
  (``jax.lax.reduce_window``'s ``computation=jax.lax.max``), resolved in the worker.

A declared group spans the spatial ranks in ``ranks``; ``{d}`` in its strings is the rank
(``conv{d}d``; in roles too: ``unpool_indices{d}d``), and a member with ``ranks`` of its own
takes part in those only.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from xamt import formulas
from xamt.catalog.bind import bind
from xamt.catalog.layouts import ENCODERS, LAYOUTS, VALUE_ENCODERS
from xamt.catalog.layouts import permutation as permutation  # (also read from here)
from xamt.catalog.model import DL_ARRAY_ROLES, CatalogError, Group, Member
from xamt.catalog.normalize import scalar_value
from xamt.catalog.results import BATCH, agree, form_groups, to_plain
from xamt.catalog.vocabulary import role_vocabulary, scalar_specs

SPEC_PATH = Path(__file__).resolve().parent / "data" / "dlcore.toml"
# Families whose outputs sum many products or inputs (a convolution over its window, a
# normalization over its axes, an average pool, an interpolation, a loss, attention): how
# rounding and overflow accumulate depends on the order of the sum (padding copies values).
AGGREGATE_FAMILIES = frozenset(
    {"convolution", "pooling", "normalization", "resizing", "loss", "attention"}
)
# How a group's arrays are shaped from ``x`` (N, C, *spatial):
ARRANGEMENTS = ("spatial", "conv", "convt", "channel", "last", "pair", "attention")
INPUT_SEED = 20261201
# Canonical input shapes per spatial rank: odd and even sizes, and every spatial size distinct
# (a layout transform that swaps two spatial axes cannot pass). Batch 2, 4 channels.
CANONICAL_X: dict[int, tuple[tuple[int, ...], ...]] = {
    1: ((2, 4, 9), (1, 4, 6)),
    2: ((2, 4, 7, 6), (1, 4, 5, 8)),
    3: ((2, 4, 5, 6, 4), (1, 4, 4, 3, 5)),
}
# Canonical kernels: every spatial size distinct too.
CANONICAL_KERNEL = {1: (3,), 2: (3, 2), 3: (2, 3, 2)}
OUT_CHANNELS = 6


# --- declared groups -----------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Declared:
    """One declared group at one spatial rank, before validation."""

    id: str
    op: str
    family: str
    arrangement: str
    rank: int
    roles: tuple[str, ...]
    params: dict[str, Any]
    members: tuple[Member, ...]
    dtype: str = "float32"
    notes: str = ""
    reference: str = ""  # a float64 formula (xamt.formulas), kept where it agrees

    @property
    def shapes(self) -> str:
        return f"{self.arrangement}{self.rank}d"


def _fmt(value: Any, d: int) -> Any:
    if isinstance(value, str):
        return value.replace("{d}", str(d))
    if isinstance(value, list):
        return tuple(_fmt(v, d) for v in value)
    if isinstance(value, dict):
        return {_fmt(k, d): _fmt(v, d) for k, v in value.items()}
    return value


def _by_rank(value: Any, d: int) -> Any:
    """A parameter's canonical value at rank ``d``: a table keyed by rank picks one."""
    if isinstance(value, dict) and value and set(value) <= {"1", "2", "3"}:
        value = value[str(d)]
    return _fmt(value, d)


@cache
def declared(path: Path = SPEC_PATH) -> tuple[Declared, ...]:
    """Every declared group at every rank it spans, in file order."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: cannot read: {exc}") from None
    vocabulary = set(role_vocabulary())
    out: list[Declared] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("group", [])):
        where = f"{path}: group #{i} ({raw.get('op', '?')})"
        try:
            ranks = tuple(int(r) for r in raw.get("ranks", [0]))
            unknown = [
                _fmt(r, d) for d in ranks for r in raw["roles"] if _fmt(r, d) not in vocabulary
            ]
            if unknown:
                raise ValueError(f"unknown roles {unknown}: add them to roles.toml [dl]")
            arrangement = str(raw.get("arrangement", "spatial"))
            if arrangement not in ARRANGEMENTS:
                raise ValueError(f"arrangement {arrangement!r} is not one of {ARRANGEMENTS}")
            for d in ranks:
                members = []
                for m in raw["member"]:
                    if "ranks" in m and d not in m["ranks"]:
                        continue
                    members.append(_member(m, d))
                op = _fmt(raw["op"], d)
                gid = _fmt(raw.get("id", raw["op"]), d)
                if gid in seen:
                    raise ValueError(f"duplicate id {gid!r}")
                seen.add(gid)
                out.append(
                    Declared(
                        id=gid,
                        op=op,
                        family=str(raw["family"]),
                        arrangement=arrangement,
                        rank=d,
                        roles=tuple(_fmt(r, d) for r in raw["roles"]),
                        params={k: _by_rank(v, d) for k, v in raw.get("params", {}).items()},
                        members=tuple(members),
                        dtype=str(raw.get("dtype", "float32")),
                        notes=str(raw.get("notes", "")),
                        reference=str(raw.get("reference", "")),
                    )
                )
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{where}: {exc}") from None
    return tuple(out)


def _member(raw: Mapping[str, Any], d: int) -> Member:
    layout = {str(k): str(v) for k, v in raw.get("layout", {}).items()}
    encode = {str(k): str(v) for k, v in raw.get("encode", {}).items()}
    for name in layout.values():
        if name not in LAYOUTS:
            raise ValueError(f"member {raw['api']}: unknown layout {name!r}")
    for name in encode.values():
        if name not in ENCODERS and name not in VALUE_ENCODERS:
            raise ValueError(f"member {raw['api']}: unknown encoder {name!r}")
    api = _fmt(str(raw["api"]), d)
    return Member(
        library=str(raw["library"]),
        api=api,
        args=tuple(_fmt(raw.get("args", []), d)),
        kwargs={_fmt(k, d): v for k, v in raw.get("kwargs", {}).items()},
        layout=layout,
        encode={_fmt(k, d): v for k, v in encode.items()},
        # (TOML has no null: parameters given None are listed under `none`)
        fixed={
            **{k: _by_rank(v, d) for k, v in raw.get("fixed", {}).items()},
            **dict.fromkeys(raw.get("none", [])),
        },
        callable=api,
        callables={str(k): _fmt(str(v), d) for k, v in raw.get("callables", {}).items()},
    )


# --- canonical inputs ----------------------------------------------------------------------


def spatial_rank(shapes: str) -> int:
    """The spatial rank of a deep-learning shape kind (``conv2d`` -> 2); 0 for other kinds."""
    for arrangement in ARRANGEMENTS:
        rest = shapes[len(arrangement) :]
        if shapes.startswith(arrangement) and rest in ("1d", "2d", "3d"):
            return int(rest[0])
    return 0


def callable_op(op: str) -> str:
    """A deep-learning operation without its spatial rank (``pad_reflect2d`` -> ``pad_reflect``,
    ``conv3d`` -> ``conv``): one library function serves every rank (mxnet.np.pad,
    mxnet.nd.Convolution, paddle's interpolate), so a finding names the function once."""
    return re.sub(r"_?[123]d$", "", op)


def function_op(group: Group) -> str:
    """The operation a finding or a worker death names for ``group``: its own, or for a
    declared group the operation without the rank (:func:`callable_op`)."""
    return callable_op(group.op) if is_dl(group.shapes) else group.op


def is_dl(shapes: str) -> bool:
    return spatial_rank(shapes) > 0


def arrangement_of(shapes: str) -> str:
    return shapes[: -len("1d")]


def role_shapes(
    arrangement: str,
    x_shape: tuple[int, ...],
    kernel: tuple[int, ...],
    *,
    groups: int = 1,
    out_channels: int = OUT_CHANNELS,
) -> dict[str, tuple[int, ...]]:
    """The shape of every array role of an arrangement, from ``x``'s."""
    c = x_shape[1] if len(x_shape) > 1 else 1
    per_channel = (c,)
    g = max(1, groups)
    shapes: dict[str, tuple[int, ...]] = {"x": x_shape}
    if arrangement == "conv":
        shapes["kernel"] = (out_channels, max(1, c // g), *kernel)
        shapes["bias"] = (out_channels,)
    elif arrangement == "convt":
        shapes["kernel"] = (c, max(1, out_channels // g), *kernel)
        shapes["bias"] = (out_channels,)
    elif arrangement == "channel":
        for role in ("scale", "offset", "running_mean", "running_var"):
            shapes[role] = per_channel
    elif arrangement == "last":  # scale and offset over the last dimension (layer norm)
        shapes["scale"] = shapes["offset"] = x_shape[-1:]
    elif arrangement == "pair":  # a loss's target
        shapes["target"] = x_shape
    elif arrangement == "attention":  # x is the query: (batch, heads, sequence, features)
        shapes["key"] = shapes["value"] = x_shape
    return shapes


def canonical_values(group: Declared | Group) -> list[dict[str, Any]]:
    """The seeded role values a declared group is validated on: one dict per canonical shape.

    Values are signed float32 in (-1, 1) (running variances in (0.5, 1.5)), so that a layout or
    kernel flipped by mistake changes the result.
    """
    rank = group.rank if isinstance(group, Declared) else spatial_rank(group.shapes)
    arrangement = group.arrangement if isinstance(group, Declared) else arrangement_of(group.shapes)
    rng = np.random.default_rng(INPUT_SEED + rank)
    params = dict(group.params)
    out = []
    for x_shape in params.pop("x_shapes", None) or CANONICAL_X[rank]:
        x_shape = tuple(x_shape)
        shapes = role_shapes(
            arrangement,
            x_shape,
            CANONICAL_KERNEL[rank],
            groups=int(params.get("groups", 1)),
            out_channels=int(params.get("out_channels", OUT_CHANNELS)),
        )
        values: dict[str, Any] = {}
        for role in group.roles:
            if role in shapes:
                low, high = (0.5, 1.5) if role == "running_var" else (-1.0, 1.0)
                if arrangement == "pair":  # probabilities (binary cross-entropy)
                    low, high = 0.1, 0.9
                values[role] = rng.uniform(low, high, shapes[role]).astype(np.float32)
            elif role in params:
                values[role] = params[role]
            elif role in scalar_specs():  # a fixed array of roles.toml [dl] (ids, targets)
                values[role] = scalar_value(role, with_arrays=True)
            else:
                raise CatalogError(f"group {group.id}: role {role!r} has no canonical value")
        out.append(values)
    return out


@dataclass(frozen=True, kw_only=True)
class Validated:
    """What validating the declared groups gave: the groups, and why members were left out."""

    groups: tuple[Group, ...]
    left_out: dict[str, dict[str, str]] = field(default_factory=dict)  # group -> api -> why


def groups_of(
    spec: Declared, agreeing: Sequence[Sequence[int]], name_suffix: Callable[[int], str]
) -> list[Group]:
    """The validated groups of one declared group: one per agreeing set of members."""
    out = []
    for k, idx in enumerate(agreeing):
        members = tuple(spec.members[i] for i in idx)
        out.append(
            Group(
                id=spec.id + name_suffix(k),
                op=spec.op,
                family=spec.family,
                roles=spec.roles,
                dtype=spec.dtype,
                members=members,
                shapes=spec.shapes,
                params=dict(spec.params),
                reference=spec.reference,
            )
        )
    return out


def _formula_agrees(name: str, inputs: Sequence[Mapping[str, Any]], want: Sequence[Any]) -> bool:
    """Whether the float64 formula ``name`` gives the members' results on the canonical values
    (within float32's tolerance, as members are compared)."""
    for values, expected in zip(inputs, want, strict=True):
        computed = formulas.evaluate(name, values)
        if computed is None:
            return False
        got = to_plain(computed[0].astype(np.float32))
        if not agree(got, expected):
            return False
    return True


def member_array_roles(member: Member) -> list[str]:
    """The array roles a member's call takes."""
    used = [*member.args, *member.kwargs.values()]
    return [r for r in used if r == "x" or r in DL_ARRAY_ROLES]


def validate(
    pool: Any,
    specs: Sequence[Declared],
    progress: Callable[[str], None] = lambda _m: None,
) -> Validated:
    """Run every member of every declared group (of the pool's libraries) on the group's
    canonical values and keep the sets of members that agree (as the build does for found
    groups: :func:`xamt.catalog.build.form_groups`). A member that fails on a canonical input
    is left out, with its status."""
    libs = set(pool.workers)
    calls: dict[str, list[Any]] = {lib: [] for lib in libs}
    slots: list[tuple[Declared, list[Member], list[list[tuple[str, int]]]]] = []
    for spec in specs:
        inputs = canonical_values(spec)
        members = [m for m in spec.members if m.library in libs]
        where = []
        for m in members:
            spots = []
            for values in inputs:
                spots.append((m.library, len(calls[m.library])))
                calls[m.library].append(bind(m, values))
            where.append(spots)
        slots.append((spec, members, where))
    total = sum(len(c) for c in calls.values())
    progress(f"deep-learning core: {total} calls for {len(specs)} declared groups")
    outcomes: dict[str, list[Any]] = {lib: [] for lib in libs}
    while any(len(outcomes[lib]) < len(calls[lib]) for lib in libs):
        batch = {
            lib: calls[lib][len(outcomes[lib]) : len(outcomes[lib]) + BATCH]
            for lib in libs
            if len(outcomes[lib]) < len(calls[lib])
        }
        for lib, outs in pool.run(batch).items():
            outcomes[lib].extend(outs)
    groups: list[Group] = []
    left_out: dict[str, dict[str, str]] = {}
    for spec, members, where in slots:
        ok: list[int] = []
        results: list[list[Any]] = []
        why: dict[str, str] = {}
        for i, (m, spots) in enumerate(zip(members, where, strict=True)):
            outs = [outcomes[lib][pos] for lib, pos in spots]
            bad = next((o for o in outs if not o.ok), None)
            if bad is not None:
                detail = bad.error.message.splitlines()[0][:160] if bad.error else bad.detail
                why[m.api] = f"{bad.status}: {detail}".strip()
                continue
            ok.append(i)
            results.append([to_plain(o.value) for o in outs])
        agreeing = form_groups([members[i] for i in ok], results) if ok else []
        grouped = {ok[j] for idx in agreeing for j in idx}
        for i in ok:
            if i not in grouped:
                why[members[i].api] = "disagrees with the others on the canonical inputs"
        chosen = [[ok[j] for j in idx] for idx in agreeing]
        reference = spec.reference
        if reference and chosen:
            first = results[ok.index(chosen[0][0])]
            if not _formula_agrees(reference, canonical_values(spec), first):
                why["reference " + reference] = "disagrees with the members: not kept"
                reference = ""
        groups += groups_of(
            Declared(**{**spec.__dict__, "members": tuple(members), "reference": reference}),
            chosen,
            lambda k: f"~{k + 1}" if k else "",
        )
        if why:
            left_out[spec.id] = why
    return Validated(groups=tuple(groups), left_out=left_out)
