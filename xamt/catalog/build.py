"""Build the catalog: inventory -> normalization -> candidates -> execution -> groups.

1. **Inventory.** Each worker lists the public callables of its namespaces (cached per library
   version under ``$XAMT_HOME/catalog``).
2. **Candidates.** APIs are bucketed by canonical operation name (aliases and name rules) and
   by *plan*: the roles a call is made with (``x``; ``x1, x2``; ``x1, x2, x3``; and the same
   with ``axis`` for APIs that take one). A bucket is a candidate when it spans two libraries.
   Candidates are scored from name, roles and arity (see :func:`score`); the score orders the
   work and is recorded, it never vetoes.
3. **Execution.** Every candidate member runs on the canonical inputs of its plan: seeded
   float32 arrays in (0.1, 0.9) (inside the domain of log, sqrt, arcsin, atanh...) in three
   shapes; members that fail on float32 are tried on int32 (1..9), then bool, then on matrices
   and vectors; last, an operation whose arrays must fit together (``cross``, ``mv``) is tried
   on its own shapes (``data/shapes.toml``). Calls go to all libraries at once, in batches.
4. **Pairwise validation and groups.** Two members agree when they return the same structure,
   shapes and values (``rtol=1e-4, atol=1e-5``) on every canonical input. Agreeing pairs form
   connected components; the group-level check then keeps, per component, the largest set of
   members that all agree with each other (greedy, deterministic). Members that disagree are
   split off and may form a group of their own; a group must span two libraries.

The build is deterministic: everything is sorted, inputs are seeded, and APIs that change
process-global state, random APIs and I/O are excluded before anything runs
(``data/exclusions.toml``), so no order of calls or worker restart changes a result.
Execution results are checkpointed, so an interrupted build resumes where it stopped.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import random
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from xamt import formulas
from xamt.catalog import dlcore
from xamt.catalog.bind import bind
from xamt.catalog.model import (
    ARRAY_ROLES,
    SEQUENCE_ROLE,
    Catalog,
    Group,
    Member,
    Shape,
    op_shape_kinds,
)
from xamt.catalog.normalize import (
    Binding,
    alias_map,
    binding_of,
    canonical_op,
    exclusion_reason,
    scalar_value,
    snake_name,
)
from xamt.catalog.results import BATCH, agree, form_groups, to_plain
from xamt.libraries import adapter_class, library_names
from xamt.types import Call, Outcome
from xamt.workers.pool import WorkerPool

Progress = Callable[[str], None]
SHAPES = {
    "any": ((3, 4), (2, 3, 4), (5,)),
    "square": ((3, 3), (4, 4), (5, 5)),
    "batched": ((2, 3, 3), (3, 4, 4), (1, 2, 2)),
    "vector": ((3,), (5,), (8,)),
}
# Probes: inputs the fuzzer draws beyond the plain canonical ones, on which members that agree
# on those may still read their arguments differently. A batch of squares: numpy.diagonal
# takes axes 0 and 1, numpy.linalg.diagonal the last two. Negative values: leaky_relu's
# default slope is 0.01 in torch, 0.2 in keras and 0.25 in mxnet.nd.LeakyReLU; remainder
# takes the divisor's sign, fmod the dividend's (the first array only is signed: a negative
# shift amount is outside the standard's domain). A member may refuse a probe, and only the
# positions where both answers are finite count: a NaN against a number is a domain policy
# (log of a negative number) for the fuzzer to judge, not a different operation.
PROBE_SHAPES: dict[str, tuple[tuple[int, ...], ...]] = {"square": ((2, 3, 3),), "any": ((3, 4),)}
# Input kinds, tried in order until a member runs: (dtype, shapes). Square kinds hold symmetric
# positive definite float32 matrices, inside the domain of every linear-algebra operation;
# vectors are for 1-D operations (polynomials, correlate, vander, bincount).
KINDS = (
    ("float32", "any"),
    ("int32", "any"),
    ("bool", "any"),
    ("float32", "square"),
    ("float32", "batched"),
    ("float32", "vector"),
    ("int32", "vector"),
)
# Operation-specific kinds (data/shapes.toml) follow these, on float32, each for the buckets of
# its own operations only (:func:`eligible`).
AXIS = 0
KEEPDIMS = True  # the non-default value, for the keepdims variant of a reduction
SEQUENCE_LENGTH = 2  # how many canonical arrays a sequence role gets
INPUT_SEED = 20261130
# Kinds of inventory entries that are never operations.
SKIP_KINDS = frozenset({"class"})


@dataclass(frozen=True, kw_only=True)
class Plan:
    """How a bucket is called: array roles, scalar roles (canonical values), ``axis`` or not.

    ``extra`` is an optional role given a non-default value (``keepdims=True``, ``decimals=1``):
    a variant that checks the members read that parameter alike.
    """

    arrays: int
    axis: bool
    scalars: tuple[str, ...] = ()
    sequence: bool = False  # the arrays go as one list (role ``xs``)
    extra: tuple[str, ...] = ()

    @property
    def array_roles(self) -> tuple[str, ...]:
        return ("x",) if self.arrays == 1 else tuple(f"x{i + 1}" for i in range(self.arrays))

    @property
    def roles(self) -> tuple[str, ...]:
        arrays = (SEQUENCE_ROLE,) if self.sequence else self.array_roles
        return (*arrays, *self.scalars, *self.extra, *(("axis",) if self.axis else ()))

    @property
    def key(self) -> str:
        return ",".join(self.roles)


def plan_of(roles: Sequence[str]) -> Plan:
    """The plan a group's roles describe."""
    sequence = SEQUENCE_ROLE in roles
    return Plan(
        arrays=SEQUENCE_LENGTH if sequence else sum(1 for r in roles if r in ARRAY_ROLES),
        axis="axis" in roles,
        scalars=tuple(r for r in roles if r not in (*ARRAY_ROLES, SEQUENCE_ROLE, "axis")),
        sequence=sequence,
    )


@dataclass(frozen=True, kw_only=True)
class Candidate:
    """One API in a bucket, with its parameters' roles."""

    library: str
    api: str
    callable: str
    op: str
    binding: Binding

    @property
    def arity(self) -> int:
        if self.binding.sequence is not None:
            return SEQUENCE_LENGTH
        return len(self.binding.arrays) if self.binding.known else 0

    def fits(self, plan: Plan) -> bool:
        """Whether the API can be called with exactly the roles of ``plan``."""
        b = self.binding
        if not b.known:  # (no parameters read: it cannot take a role, optional ones included)
            return not plan.axis and not plan.scalars and not plan.extra
        if b.blocked or self.arity != plan.arrays or (b.sequence is not None) != plan.sequence:
            return False
        given = set(plan.scalars) | set(plan.extra) | ({"axis"} if plan.axis else set())
        takes = {p.role for p in b.params}
        return b.required_roles - {"keepdims", "dtype"} <= given and given <= takes

    @property
    def interleaved(self) -> bool:
        """Whether a parameter that is not an array comes, in the signature, before an array
        given by position (``insert(arr, obj, values)``, ``scatter(input, dim, index, src)``):
        arrays first would put an array in that parameter's slot."""
        b = self.binding
        by_position = tuple(name for name, kw_only in b.arrays if not kw_only)
        return (
            b.known
            and b.sequence is None
            and bool(b.positional)
            and b.positional[: len(by_position)] != by_position
        )

    def member(self, plan: Plan) -> Member:
        """This API's binding of ``plan``'s roles (what the catalog records).

        Arrays go by position, then the roles the API takes only by position; the other roles
        by keyword. An :attr:`interleaved` API instead takes its positional parameters in its
        own order, up to its last array, as long as each has a role in ``plan``; what follows
        a parameter without one goes by keyword.
        """
        b = self.binding
        if not b.known:
            return Member(
                library=self.library, api=self.api, args=plan.array_roles, callable=self.callable
            )
        arrays = (
            [(b.sequence, SEQUENCE_ROLE)]
            if b.sequence is not None
            else list(zip(b.arrays, plan.array_roles, strict=True))
        )
        given = set(plan.scalars) | set(plan.extra) | ({"axis"} if plan.axis else set())
        optional = {p.role: p.name for p in b.params if p.role not in given}
        if self.interleaved:
            roles = {name: role for (name, _), role in arrays}
            roles.update({p.name: p.role for p in b.params if p.role in given})
            by_position = {name for name, kw_only in b.arrays if not kw_only}
            last = max(i for i, name in enumerate(b.positional) if name in by_position)
            ordered: list[str] = []
            for name in b.positional[: last + 1]:
                if name not in roles:
                    break
                ordered.append(roles.pop(name))
            args, kwargs = ordered, roles
        else:
            args = [r for (_, kw_only), r in arrays if not kw_only]
            kwargs = {name: r for (name, kw_only), r in arrays if kw_only}
            if args and kwargs:  # keyword-only arrays after positional ones: all by keyword
                kwargs = {name: r for (name, _), r in arrays}
                args = []
            for p in b.params:
                if p.role not in given:
                    continue
                if p.positional_only:
                    args.append(p.role)
                else:
                    kwargs[p.name] = p.role
        return Member(
            library=self.library,
            api=self.api,
            args=tuple(args),
            kwargs=kwargs,
            optional=optional,
            callable=self.callable,
        )

    def call(self, plan: Plan, inputs: Sequence[Any]) -> Call:
        return bind(self.member(plan), role_values(plan, inputs))


def role_values(plan: Plan, inputs: Sequence[Any]) -> dict[str, Any]:
    """Role -> value for one canonical input tuple: arrays, scalar roles' canonical values,
    ``axis`` fixed."""
    values: dict[str, Any] = (
        {SEQUENCE_ROLE: list(inputs)}
        if plan.sequence
        else dict(zip(plan.array_roles, inputs, strict=True))
    )
    for role in (*plan.scalars, *plan.extra):
        values[role] = (
            KEEPDIMS if role == "keepdims" else scalar_value(role, with_arrays=plan.arrays > 0)
        )
    if plan.axis:
        values["axis"] = AXIS
    return values


def passes() -> list[tuple[str, str]]:
    """The build's (dtype, shape kind) passes, in order: :data:`KINDS`, then each
    operation-specific kind (``data/shapes.toml``) on float32."""
    return [*KINDS, *(("float32", name) for name in sorted(op_shape_kinds()))]


def eligible(op: str, plan: Plan, shapes: str) -> bool:
    """Whether a bucket is tried on a shape kind: every bucket on ``any``; buckets with arrays
    (not as a list) on the other general kinds; an operation-specific kind only its own
    operations' buckets, for the numbers of arrays it declares."""
    if shapes == "any":
        return True
    kind = op_shape_kinds().get(shapes)
    if kind is not None:
        return op in kind.ops and plan.arrays in kind.canonical
    return bool(plan.arrays) and not plan.sequence


def plain_count(plan: Plan, shapes: str) -> int:
    """How many canonical input tuples (before probes) a plan has on a shape kind."""
    if not plan.arrays:
        return 1
    kind = op_shape_kinds().get(shapes)
    return len(kind.canonical[plan.arrays]) if kind is not None else len(SHAPES[shapes])


def canonical_inputs(
    plan: Plan, dtype: str, shapes: str = "any", *, probes: bool = False
) -> list[tuple[np.ndarray, ...]]:
    """The seeded inputs every member of a plan is validated on, one tuple per shape; with
    ``probes``, the kind's :data:`PROBE_SHAPES` follow. An operation-specific kind gives each
    array its own shape and fill (:class:`~xamt.catalog.model.OpShapes`; float32 only)."""
    rng = np.random.default_rng(INPUT_SEED)
    if plan.arrays == 0:
        return [()]  # nothing varies: one call
    kind = op_shape_kinds().get(shapes)
    if kind is not None:
        fills = kind.values[plan.arrays]
        return [
            tuple(filled(rng, fill, shape) for fill, shape in zip(fills, row, strict=True))
            for row in kind.canonical[plan.arrays]
        ]
    sets = []
    plain = SHAPES[shapes]
    extra = PROBE_SHAPES.get(shapes, ()) if probes and dtype != "bool" else ()
    for k, shape in enumerate((*plain, *extra)):
        probe = k >= len(plain) and shapes == "any"  # the probe of negative values
        arrays = []
        for i in range(plan.arrays):
            signed = probe and i == 0
            if shapes in ("square", "batched"):
                arrays.append(spd_matrix(rng, shape))
            elif dtype == "float32":
                magnitude = rng.uniform(0.1, 0.9, shape)
                sign = rng.choice((-1.0, 1.0), shape) if signed else 1.0
                arrays.append((sign * magnitude).astype(np.float32))
            elif dtype == "int32":
                sign = rng.choice((-1, 1), shape) if signed else 1
                arrays.append((sign * rng.integers(1, 10, shape)).astype(np.int32))
            else:
                arrays.append(rng.integers(0, 2, shape).astype(bool))
        sets.append(tuple(arrays))
    return sets


def filled(rng: np.random.Generator, fill: str, shape: Shape) -> np.ndarray:
    """A float32 array of ``shape``: uniform in (0.1, 0.9), or ("spd") a symmetric positive
    definite matrix of the array's size reshaped (``tensorinv``'s ``(2, 3, 6)`` is a 6 x 6
    matrix)."""
    if fill == "spd":
        n = math.isqrt(math.prod(shape))
        return spd_matrix(rng, (n, n)).reshape(shape)
    return rng.uniform(0.1, 0.9, shape).astype(np.float32)


def spd_matrix(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A (batch of) symmetric positive definite, well-conditioned float32 matrices."""
    n = shape[-1]
    r = rng.uniform(0.1, 0.9, shape)
    spd = r @ np.swapaxes(r, -1, -2) / n + np.eye(n)
    return spd.astype(np.float32)


Bucket = tuple[str, Plan]


def candidates(inventories: Mapping[str, Mapping[str, Any]]) -> dict[Bucket, list[Candidate]]:
    """Candidate buckets: (operation, plan) -> the APIs that fit the plan, for buckets spanning
    two libraries.

    APIs are first gathered by operation name and number of array inputs. Each distinct set of
    scalar roles that some member requires makes a plan (each role given its canonical value);
    a member belongs to every plan whose roles it requires none beyond and can all take. Each
    plan also has an ``axis`` variant for the members that take an axis.
    """
    by_op: dict[tuple[str, int, bool], list[Candidate]] = defaultdict(list)
    for lib in sorted(inventories, key=library_names().index):
        for entry in sorted(inventories[lib]["apis"], key=lambda e: e["path"]):
            if entry["kind"] in SKIP_KINDS or exclusion_reason(entry["path"]):
                continue
            op = canonical_op(entry["path"])
            cand = Candidate(
                library=lib,
                api=entry["path"],
                callable=entry.get("same_as", entry["path"]),
                op=op,
                binding=binding_of(entry["params"], op),
            )
            b = cand.binding
            if b.known and (b.blocked or (cand.arity == 0 and not b.required_roles)):
                continue  # cannot be called plainly, or takes nothing that could vary
            sequence = b.sequence is not None
            for arity in (cand.arity,) if b.known else (1, 2):
                by_op[(cand.op, arity, sequence)].append(cand)
    buckets: dict[Bucket, list[Candidate]] = {}
    for (op, arity, sequence), cands in sorted(by_op.items()):
        required_sets = sorted(
            {tuple(sorted(c.binding.required_roles - {"axis", "keepdims", "dtype"})) for c in cands}
        )
        for required in required_sets:
            for axis in (False, True):
                plan = Plan(arrays=arity, axis=axis, scalars=required, sequence=sequence)
                members = [c for c in cands if c.fits(plan)]
                if len({c.library for c in members}) < 2:
                    continue
                buckets[(op, plan)] = members
                for role in optional_roles(members, plan, required_sets):
                    variant = dataclasses.replace(plan, extra=(role,))
                    fitting = [c for c in cands if c.fits(variant)]
                    if len({c.library for c in fitting}) >= 2:
                        buckets[(op, variant)] = fitting
    return buckets


def optional_roles(
    members: Sequence[Candidate], plan: Plan, required_sets: Sequence[tuple[str, ...]]
) -> list[str]:
    """Optional roles that members of two libraries take beyond ``plan``: each makes a variant
    plan (unless some API requires exactly that role, which is a plan of its own)."""
    libs: dict[str, set[str]] = defaultdict(set)
    for c in members:
        for p in c.binding.params:
            if p.role not in plan.scalars and p.role not in ("axis", "dtype") and not p.required:
                libs[p.role].add(c.library)
    return sorted(
        role
        for role, seen in libs.items()
        if len(seen) >= 2 and tuple(sorted((*plan.scalars, role))) not in required_sets
    )


def score(members: Sequence[Candidate]) -> float:
    """How promising a bucket is before execution: libraries spanned, aliases, exact names.

    Documentation may raise a score (not used yet); nothing here vetoes a candidate.
    """
    libs = len({m.library for m in members})
    exact = sum(1 for m in members if m.api.rsplit(".", 1)[-1].lower() == m.op)
    return libs + exact / max(1, len(members))


# --- execution -----------------------------------------------------------------------------


class ProbeStore:
    """Execution results, checkpointed to a JSON Lines file so that a build can resume."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.results: dict[str, Any] = {}
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                try:
                    key, value = json.loads(line)
                except ValueError:
                    continue  # a line cut short by a kill: that call runs again
                self.results[key] = value

    def add(self, items: Iterable[tuple[str, Any]]) -> None:
        lines = []
        for key, value in items:
            self.results[key] = value
            lines.append(json.dumps([key, value], allow_nan=True))
        if self.path is not None and lines:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a") as fh:
                fh.write("\n".join(lines) + "\n")


def _digest(inputs: Sequence[np.ndarray]) -> str:
    """A digest of one canonical input tuple's values, for checkpoint keys (a change of
    canonical inputs is a new call, not a stale result)."""
    digest = hashlib.sha256()
    for a in inputs:
        digest.update(f"{a.dtype}{a.shape}".encode())
        digest.update(np.ascontiguousarray(a).tobytes())
    return digest.hexdigest()[:16]


def _key(c: Candidate, plan: Plan, kind: str, digest: str) -> str:
    """A checkpointed call's key: the API, the plan, the input kind and the input's digest;
    for an :attr:`~Candidate.interleaved` API also its positional roles (a call bound in the
    API's own order is not the one an arrays-first binding made)."""
    key = f"{c.library}|{c.api}|{plan.key}|{kind}|{digest}"
    return f"{key}|{','.join(c.member(plan).args)}" if c.interleaved else key


def run_probes(
    pool: WorkerPool, todo: list[tuple[str, Candidate, Call]], store: ProbeStore, progress: Progress
) -> None:
    """Run calls not yet in the store, all libraries at once, in checkpointed batches."""
    pending: dict[str, list[tuple[str, Call]]] = defaultdict(list)
    for key, cand, call in todo:
        if key not in store.results:
            pending[cand.library].append((key, call))
    total = sum(len(v) for v in pending.values())
    done = 0
    started = time.monotonic()
    while any(pending.values()):
        batches = {lib: items[:BATCH] for lib, items in pending.items() if items}
        results = pool.run({lib: [c for _, c in items] for lib, items in batches.items()})
        for lib, items in batches.items():
            store.add(
                (key, _result(out)) for (key, _), out in zip(items, results[lib], strict=True)
            )
            pending[lib] = pending[lib][len(items) :]
            done += len(items)
        rate = done / max(1e-9, time.monotonic() - started)
        progress(f"executed {done}/{total} calls ({rate:.0f}/s)")


def _result(out: Outcome) -> Any:
    if out.status != "ok":
        return {"status": out.status}
    return {"status": "ok", "value": to_plain(out.value)}


def _has_array(plain: Any) -> bool:
    if "seq" in plain:
        return any(_has_array(v) for v in plain["seq"])
    return "data" in plain


def family_for(shapes: str) -> str:
    """The family a shape kind fixes ("" for none): linear algebra for square matrices, an
    operation-specific kind's declared family."""
    if shapes in ("square", "batched"):
        return "linalg"
    kind = op_shape_kinds().get(shapes)
    return kind.family if kind is not None else ""


def family_of(members: Sequence[Candidate], first: Sequence[Any], inputs: Sequence[Any]) -> str:
    """A coarse family from namespaces and from what the first input did to the output."""
    apis = " ".join(m.api for m in members)
    if ".linalg." in apis:
        return "linalg"
    if ".fft." in apis:
        return "fft"
    if ".nn." in apis or ".npx." in apis:
        return "activation"
    out = first[0]
    if "data" in out:
        shape = tuple(out["shape"])
        if not inputs[0]:
            return "creation"
        in_shape = inputs[0][0].shape
        if shape == in_shape:
            return "elementwise"
        if int(np.prod(shape)) < int(np.prod(in_shape)):
            return "reduction"
        return "shape"
    return "other"


# --- the whole build -----------------------------------------------------------------------


def inventories(
    pool: WorkerPool, cache_dir: Path | None, progress: Progress
) -> dict[str, dict[str, Any]]:
    """Each library's API inventory, cached per library version."""
    found = {}
    for lib, hello in sorted(pool.hellos().items(), key=lambda kv: library_names().index(kv[0])):
        spaces = hashlib.sha256(" ".join(adapter_class(lib).namespaces).encode()).hexdigest()[:8]
        name = f"inventory-{lib}-{hello.version}-{spaces}.json"
        path = cache_dir / name if cache_dir else None
        if path is not None and path.exists():
            found[lib] = json.loads(path.read_text())
            continue
        found[lib] = pool.describe(lib)
        progress(f"inventory {lib} {hello.version}: {len(found[lib]['apis'])} callables")
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(found[lib]))
    return found


def build(
    pool: WorkerPool,
    *,
    cache_dir: Path | None = None,
    ops: Callable[[str], bool] | None = None,
    progress: Progress = lambda _m: None,
    shuffle_seed: int | None = None,
) -> Catalog:
    """Build a catalog with a started pool.

    ``ops`` filters operation keys (for partial builds). ``shuffle_seed`` runs the calls in a
    shuffled order, to show that the result does not depend on it.
    """
    hellos = pool.hellos()
    versions = {lib: hellos[lib].version for lib in sorted(hellos, key=library_names().index)}
    inv = inventories(pool, cache_dir, progress)
    buckets = candidates(inv)
    if ops is not None:
        buckets = {k: v for k, v in buckets.items() if ops(k[0])}
    progress(
        f"{len(buckets)} candidate buckets, "
        f"{sum(len(v) for v in buckets.values())} candidate members"
    )
    tag = hashlib.sha256(json.dumps(versions, sort_keys=True).encode()).hexdigest()[:12]
    store = ProbeStore(cache_dir / f"probes-{tag}.jsonl" if cache_dir else None)

    groups: list[Group] = []
    unresolved = dict(buckets)

    for dtype, shapes in passes():
        kind = dtype if shapes == "any" else f"{dtype}-{shapes}"
        active = {k: v for k, v in unresolved.items() if eligible(k[0], k[1], shapes)}
        # buckets this kind is not for wait, unchanged, for the next kinds
        still: dict[Bucket, list[Candidate]] = {
            k: v for k, v in unresolved.items() if k not in active
        }
        todo = []
        # each bucket's inputs (plain ones, then probes) and their digests, made once
        inputs_of = {
            plan: canonical_inputs(plan, dtype, shapes, probes=True) for (_, plan) in active
        }
        digests_of = {plan: [_digest(inp) for inp in inputs] for plan, inputs in inputs_of.items()}
        for (_, plan), members in active.items():
            for cand in members:
                for inp, digest in zip(inputs_of[plan], digests_of[plan], strict=True):
                    todo.append((_key(cand, plan, kind, digest), cand, cand.call(plan, inp)))
        if shuffle_seed is not None:
            random.Random(shuffle_seed).shuffle(todo)
        progress(f"{kind}: {len(todo)} calls for {len(active)} buckets")
        run_probes(pool, todo, store, progress)
        for (op, plan), members in active.items():
            plain = plain_count(plan, shapes)  # (the rest are probes)
            runs = {
                c: [store.results[_key(c, plan, kind, d)] for d in digests_of[plan]]
                for c in members
            }

            def answered(r: dict[str, Any]) -> bool:
                return bool(r["status"] == "ok" and _has_array(r.get("value", {})))

            ok = [c for c in members if all(answered(r) for r in runs[c][:plain])]
            results = [[r["value"] if answered(r) else None for r in runs[c]] for c in ok]
            found = form_groups(ok, results, plain)
            for k, idx in enumerate(found):
                chosen = [ok[i] for i in idx]
                # named after an API, the first one that is not an in-place variant
                named = next((c.api for c in chosen if not c.api.endswith("_")), chosen[0].api)
                name = op if op in alias_map().values() else snake_name(named)
                gid = (
                    name
                    + ("[axis]" if plan.axis else "")
                    + "".join(f"[{r}]" for r in plan.extra)
                    + (f"@{dtype}" if dtype != "float32" else "")
                    + (f"@{shapes}" if shapes != "any" else "")
                    + (f"~{k + 1}" if k else "")
                )
                libs = {c.library for c in chosen}
                groups.append(
                    Group(
                        reference=""
                        if "numpy" in libs
                        else reference_for(name, plan, dtype, shapes, results[idx[0]]),
                        id=gid,
                        op=name,
                        dtype=dtype,
                        roles=plan.roles,
                        family=family_for(shapes)
                        or family_of(chosen, results[idx[0]], canonical_inputs(plan, dtype)),
                        members=tuple(c.member(plan) for c in chosen),
                        shapes=shapes,
                    )
                )
            grouped = {ok[i] for g in found for i in g}
            failed = [c for c in members if c not in ok]
            left = failed if found else [c for c in members if c not in grouped]
            if len({c.library for c in left}) >= 2:
                still[(op, plan)] = left
        unresolved = still
    groups += declared_groups(pool, ops, progress)
    groups.sort(key=lambda g: g.id)
    return Catalog(libraries=versions, groups=tuple(_dedupe_ids(groups)))


def declared_groups(
    pool: WorkerPool, ops: Callable[[str], bool] | None, progress: Progress
) -> list[Group]:
    """The deep-learning core's declared groups (:mod:`xamt.catalog.dlcore`), validated on the
    pool's libraries."""
    specs = [s for s in dlcore.declared() if ops is None or ops(s.op)]
    if not specs:
        return []
    validated = dlcore.validate(pool, specs, progress)
    left = sum(len(v) for v in validated.left_out.values())
    progress(
        f"deep-learning core: {len(validated.groups)} groups from {len(specs)} declared, "
        f"{left} members left out"
    )
    return list(validated.groups)


def reference_for(op: str, plan: Plan, dtype: str, shapes: str, first: Sequence[Any]) -> str:
    """The float64 formula for ``op`` that agrees with a group's results (``first``: one
    member's, on :func:`canonical_inputs`) on every plain input; "" if none does."""
    inputs = canonical_inputs(plan, dtype, shapes)
    for formula in formulas.BY_OP.get(op, ()):
        outs = [formulas.evaluate(formula.name, role_values(plan, inp)) for inp in inputs]
        if all(
            out is not None and agree(to_plain(out[0]), want)
            for out, want in zip(outs, first, strict=False)
        ):
            return formula.name
    return ""


def _dedupe_ids(groups: list[Group]) -> list[Group]:
    """Group ids are unique: a plan id that collides gets the plan spelled out."""
    seen: dict[str, int] = defaultdict(int)
    for g in groups:
        seen[g.id] += 1
    out = []
    for g in groups:
        if seen[g.id] > 1:
            g = dataclasses.replace(g, id=f"{g.id}({','.join(g.roles)})")
        out.append(g)
    return out
