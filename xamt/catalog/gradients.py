"""Which members of which groups differentiate as the finite difference does, checked on the
canonical inputs (``xamt catalog gradients``), and the committed result.

A group is differentiable when its operation is (``data/gradients.toml``) and it has a float64
reference to difference (a numpy member, or a formula). Each member's vector-Jacobian product
on the group's canonical inputs is judged by the gradient oracle: a member is kept when it
returns a gradient there and none of its gradients departs from the reference; otherwise it
is dropped, with the reason. The fuzzer asks for gradients only from kept members, and only
in groups with two or more (``data/gradient_members.json``, one line per group).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from xamt.catalog.check import canonical_values
from xamt.catalog.model import CatalogError, Group
from xamt.oracle import gradient
from xamt.types import Case, Outcome

MEMBERS_PATH = Path(__file__).resolve().parent / "data" / "gradient_members.json"
SCHEMA = 1
CHUNK = 400  # cases per batch (progress is shown between batches)


@dataclass(frozen=True, kw_only=True)
class GroupGradients:
    """One group's members by gradient: kept (api paths), and dropped (api -> why)."""

    kept: tuple[str, ...] = ()
    dropped: dict[str, str] = field(default_factory=dict)


def candidates(groups: Sequence[Group]) -> list[Group]:
    """The groups whose gradients can be checked: a differentiable operation on floating
    canonical inputs, with a float64 reference (numpy or a formula) to difference."""
    data = gradient.shipped()
    return [
        g
        for g in groups
        if data.of(g) is not None
        and g.dtype == "float32"
        and ("numpy" in g.libraries or g.reference)
    ]


def check_gradients(
    run: Callable[[Sequence[Case]], Sequence[Any]],
    groups: Sequence[Group],
    progress: Callable[[str], None] = lambda _m: None,
) -> dict[str, GroupGradients]:
    """Judge every member's gradient on its group's canonical inputs with ``run`` (a
    :meth:`xamt.replay.Replay.run`); groups without a differentiable input are left out."""
    cases: list[Case] = []
    for g in candidates(groups):
        by_lib: dict[str, list[str]] = {}
        for m in g.members:
            by_lib.setdefault(m.library, []).append(m.api)
        rounds = max(len(apis) for apis in by_lib.values())
        for values in canonical_values(g):
            if not gradient.eligible(values, g):
                continue
            for k in range(rounds):
                apis = {lib: ps[k % len(ps)] for lib, ps in by_lib.items()}
                cases.append(
                    Case(
                        group=g.id,
                        dtype=g.dtype,
                        value_class="ordinary",
                        values=dict(values),
                        apis=apis,
                        seed=k + 1,
                        grad=True,
                    )
                )
    progress(f"checking gradients: {len(cases)} cases of {len(candidates(groups))} groups")
    found: dict[str, dict[str, str | None]] = {}  # group -> api -> None (kept) or why dropped
    results: list[Any] = []
    for start in range(0, len(cases), CHUNK):
        results += run(cases[start : start + CHUNK])
        progress(f"  {len(results)}/{len(cases)} cases")
    for done in results:
        case = done.case
        verdicts = found.setdefault(case.group, {})
        blamed = {
            s.blame.library: s.blame.detail
            for s in done.signed
            if s.blame.kind == "gradient" and not s.blame.question
        }
        for lib, api in case.apis.items():
            if lib == "numpy":
                continue
            why = _dropped(done.outcomes.get(lib), blamed.get(lib), done.failed)
            if why is not None or api not in verdicts:
                verdicts[api] = verdicts.get(api) or why
    result = {}
    for gid, verdicts in sorted(found.items()):
        kept = tuple(api for api, why in verdicts.items() if why is None)
        dropped = {api: why for api, why in verdicts.items() if why is not None}
        result[gid] = GroupGradients(kept=kept if len(kept) >= 2 else (), dropped=dropped)
    return result


def _dropped(outcome: Outcome | None, blame: str | None, failed: str) -> str | None:
    """Why a member's gradient on one case drops it (None: it stands)."""
    if failed:
        return f"the judge failed: {failed}"
    if outcome is None or outcome.status != "ok":
        return f"the call did not return ({outcome.status if outcome else 'not run'})"
    if outcome.grad_status != "ok":
        error = outcome.grad_error
        text = f"{error.type}: {error.message.splitlines()[0][:160]}" if error else ""
        return f"no gradient ({outcome.grad_status}{': ' + text if text else ''})"
    if outcome.grad is None or any(
        g is not None and getattr(g, "shape", None) is None for g in outcome.grad
    ):
        return "the gradient is not an array"
    if blame:
        return blame
    return None


def to_json(members: Mapping[str, GroupGradients]) -> str:
    """One group per line, sorted: small diffs when the check is rerun."""
    lines = ["{", f'"schema": {SCHEMA},', '"groups": {']
    body = [
        f"{json.dumps(gid)}: "
        + json.dumps(
            {"kept": list(g.kept), "dropped": dict(sorted(g.dropped.items()))},
            sort_keys=True,
            separators=(",", ":"),
        )
        for gid, g in sorted(members.items())
    ]
    lines.append(",\n".join(body))
    lines += ["}", "}"]
    return "\n".join(lines) + "\n"


def save(members: Mapping[str, GroupGradients], path: Path = MEMBERS_PATH) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(to_json(members))
    tmp.replace(path)


def load_members(path: Path = MEMBERS_PATH) -> dict[str, GroupGradients]:
    """The committed gradient check; {} where there is none yet."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{path}: not a readable gradient check: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise CatalogError(f"{path}: expected a gradient check with schema {SCHEMA}")
    found = {}
    for gid, raw in dict(data.get("groups", {})).items():
        try:
            found[str(gid)] = GroupGradients(
                kept=tuple(str(a) for a in raw["kept"]),
                dropped={str(k): str(v) for k, v in dict(raw["dropped"]).items()},
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CatalogError(f"{path}: group {gid!r}: malformed ({exc!r})") from None
    return found


@functools.cache
def shipped_members() -> dict[str, GroupGradients]:
    return load_members()


def differentiable(group: Group) -> frozenset[str]:
    """The API paths of ``group`` whose gradients the fuzzer asks for (none: not checked)."""
    entry = shipped_members().get(group.id)
    return frozenset(entry.kept) if entry is not None else frozenset()


def summary(members: Mapping[str, GroupGradients], groups: Sequence[Group]) -> dict[str, Any]:
    """Differentiable groups and kept members per library, and the dropped members."""
    by_id = {g.id: g for g in groups}
    library_of = {(g.id, m.api): m.library for g in groups for m in g.members}
    kept_groups = [gid for gid, g in members.items() if g.kept]
    per_lib: dict[str, int] = {}
    groups_per_lib: dict[str, int] = {}
    for gid in kept_groups:
        libs = set()
        for api in members[gid].kept:
            lib = library_of.get((gid, api), "?")
            per_lib[lib] = per_lib.get(lib, 0) + 1
            libs.add(lib)
        for lib in libs:
            groups_per_lib[lib] = groups_per_lib.get(lib, 0) + 1
    return {
        "checked_groups": len(members),
        "differentiable_groups": len(kept_groups),
        "members_per_library": dict(sorted(per_lib.items())),
        "groups_per_library": dict(sorted(groups_per_lib.items())),
        "dropped": sum(len(g.dropped) for g in members.values()),
        "unknown_groups": sorted(gid for gid in members if gid not in by_id),
    }
