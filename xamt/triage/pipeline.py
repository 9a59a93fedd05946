"""Triage of a campaign's reproduced findings: minimize, find the trigger, classify, script.

For each reproduced finding not triaged yet:

1. **minimize** its case while the same *root* shows (the signature without trigger and
   dtype: the same library, callable, kind family and error type), trying the group's
   validation dtype first, so that one root cause met in several dtypes becomes one finding;
2. find the **trigger**: the one input class the minimized case still needs. Each class the
   case holds (:data:`xamt.replay.TRIGGER_TAGS`) is removed in turn
   (:func:`xamt.replay.neutralized`), for all findings in one batch;
   the first whose removal makes the root disappear is the trigger, ``"ordinary"`` if none;
3. re-run the minimized case for the outputs the finding shows, **classify** it against the
   known differences, write its **repro scripts**, and store it under its final signature,
   where it joins any finding of the same root cause met through another case. A suspected
   bug whose root cause (:func:`same_root`) is already a finding in another dtype joins that
   one: one root cause in one library is one finding.
"""

from __future__ import annotations

import dataclasses
import io
import re
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from xamt.catalog.model import ARRAY_ROLES, Group, Member
from xamt.catalog.shared import shared_code
from xamt.findings import GRADIENT, Finding, KnownRef, Minimization, decode_case
from xamt.inputs.tags import input_classes
from xamt.known import KnownDifference
from xamt.oracle.signature import normalize_message, signature_of
from xamt.outcomes import outcome_summary
from xamt.paths import check_identifier, check_signature, inside, replace_file
from xamt.replay import (
    ORDINARY,
    Replay,
    Replayed,
    case_dtype,
    finding_of,
    hang_trigger,
    judge_case,
    neutralized,
    trigger_of,
    triggers_in,
)
from xamt.serialize import case_to_jsonable
from xamt.store import Store, StoreError
from xamt.triage import docs
from xamt.triage.grad_repro import gradient_check, short_gradient_script
from xamt.triage.minimize import Predicate, element_count, in_canonical_dtypes, minimize
from xamt.triage.repro import write_repro
from xamt.triage.short import (
    NPZ,
    ShortRepro,
    hold_back_reason,
    interpreter_of,
    short_script,
)
from xamt.triage.standalone import Check, run_checks
from xamt.types import Case
from xamt.workers.pool import Doc, WorkerPool
from xamt.workers.protocol import DTYPE_NAMES

# Calls a minimization may spend, by kind: crashes restart a worker each time, hangs wait for
# the deadline: those are not worth shrinking far.
CALL_CAPS = {"hang": 0, "crash": 12, "resource": 12}
# A suspected hang is confirmed by one patient run, as a maintainer would check it: a call that
# finishes within PATIENT_SECONDS is slow, not hung (a 360-million-element bfloat16 transposed
# convolution takes 10 s), and the finding is dropped. At most PATIENT_CASES hangs per triage.
PATIENT_SECONDS = 30.0
PATIENT_CASES = 16
# What counts as an answer: a result, an error, or the memory cap (a legitimately huge output:
# tensorflow's sequence_mask of length 2**31 - 1 asks for 11.5 GB); a crash is kept as seen.
ANSWERED = frozenset({"ok", "error", "resource", "unsupported"})
PASS_CHUNK = 64  # findings per batched dtype or trigger pass (a time budget stops between)


@dataclass(frozen=True, kw_only=True)
class TriageSummary:
    findings: int
    documented: int
    elements_before: tuple[int, ...]
    elements_after: tuple[int, ...]


def root_of(f: Finding) -> str:
    """A finding's signature without trigger and dtype: what minimization keeps (it may move
    the case to the group's validation dtype and find the trigger)."""
    return signature_of(
        family=f.family,
        library=f.library,
        callable=f.callable,
        dtype="*",
        trigger="*",
        error=f.error,
    )[0]


# An AttributeError naming a type and an attribute it lacks ("EagerTensor object has no
# attribute 'astype'") comes from the library's own code calling a method its type does not
# have: one defect, whichever function reached it (tf.experimental.numpy's log, tanh, fix...
# on integer or bfloat16 input, 38 findings of one 10-minute run).
MISSING_ATTRIBUTE = re.compile(r"AttributeError: '?(\w+)'? object has no attribute '(\w+)'")


# An internal check (a C++ CHECK, an assertion) failing with the same message in several
# functions of one library is one check in code they share: one root. Messages shorter than
# SHARED_CHECK_LENGTH say too little to tell checks apart.
SHARED_CHECK = re.compile(r"Check failed|Assertion|[Ii]nternal error")
SHARED_CHECK_LENGTH = 40


# A process that dies or never answers on NaN as on infinity misses one check for non-finite
# input (paddle.gcd loops forever on float64 inf and on complex64 NaN; LAPACK's xerbla ends
# the process on either): for these families the two triggers are one root.
NON_FINITE_ROOTS = {"nan": "non-finite", "inf": "non-finite"}
PROCESS_FAMILIES = ("crash", "hang")


# A wrong dtype and wrong values of one callable are one root: the dtype is usually why the
# values are wrong (paddle's Frobenius norm of complex input: a complex dtype and a complex
# "norm", 7.24+0.17j for 10.0).
ROOT_FAMILIES = {"value": "output", "dtype": "output"}


def root_family(f: Finding) -> str:
    """The family a root cause is told by: value and dtype as one (:data:`ROOT_FAMILIES`)."""
    return ROOT_FAMILIES.get(f.family, f.family)


def same_root(f: Finding, family: str = "") -> tuple[str, str, str, str]:
    """What makes two suspected bugs one root cause, whatever dtype (or error type) they were
    met with.

    - A missing attribute (:data:`MISSING_ATTRIBUTE`): the library and that attribute; an
      internal check failing with one message (:data:`SHARED_CHECK`): the library and it.
    - A dead or hung process in code a reviewed record names (:mod:`xamt.catalog.shared`):
      that code and the signal or error, whatever input reached it.
    - Any other dead or hung process: the library, the group ``family`` of its operation (where
      given), the signal or error and the trigger (NaN and infinity as one,
      :data:`NON_FINITE_ROOTS`): paddle's fftn, ifftn, rfftn and hfftn dying on a 0-d array
      miss one check in their shared helper; mxnet's sum and mean dying on an empty axis, one
      in its reductions.
    - A callable whose code is shared with others (a reviewed record,
      :mod:`xamt.catalog.shared`): that code and the root family (:func:`root_family`); a
      status or shape departure also by its trigger.
    - Any other departure: the library, its callable and the root family, whatever input
      class shows it (paddle.sinc's last line turns a NaN result into 1 whether the NaN came
      in or from sin(-DBL_MAX); mindspore's outer loses -0.0 through its matmul with and
      without -0.0 in the input).
    """
    missing = MISSING_ATTRIBUTE.search(f.error or "") if f.family == "status" else None
    if missing:
        return (f.library, f"{missing[1]}.{missing[2]}", f.family, "*")
    message = normalize_message(f.error or "") if f.family == "status" else ""
    if len(message) >= SHARED_CHECK_LENGTH and SHARED_CHECK.search(message):
        # one internal check failing with one message, whichever function reached it
        # (mxnet's "Shape size mismatch" from sum, mean and prod of an empty axis)
        return (f.library, message, f.family, "*")
    shared = shared_code(f.library, f.apis.get(f.library, ""))
    if f.family in PROCESS_FAMILIES and shared is not None:
        # one signal from one piece of code, whichever input reached it (mxnet's var and std
        # divide by N - ddof in the integer dtype: an empty axis and ddof = N alike)
        return (f.library, f"code:{shared.name}", f.family, f.error or "")
    if f.family in PROCESS_FAMILIES:
        trigger = NON_FINITE_ROOTS.get(f.trigger, f.trigger)
        where = f"family:{family}" if family else f.callable
        return (f.library, where, f.family, f"{trigger}/{f.error}")
    if shared is not None:
        trigger = "*" if f.family in ROOT_FAMILIES else f.trigger
        return (f.library, f"code:{shared.name}", root_family(f), trigger)
    return (f.library, f.callable, root_family(f), "*")


def why_joined(first: Finding, other: Finding, family: str = "") -> str:
    """Why ``other`` is the root cause of ``first`` (one :func:`same_root`), as the line
    ``first`` lists it by; "" where it is the same callable's same kind of departure in
    another dtype or input class (nothing to list)."""
    if other.callable == first.callable and root_family(other) == root_family(first):
        return "" if other.family == first.family else f"{other.key}: the same callable"
    shared = shared_code(other.library, other.apis.get(other.library, ""))
    if shared is not None and shared == shared_code(
        first.library, first.apis.get(first.library, "")
    ):
        return f"{other.key}: runs the same code ({shared.code}; {shared.link})"
    if other.family in PROCESS_FAMILIES:
        return f"{other.key}: the same {other.error or other.kind} in the {family} family"
    missing = MISSING_ATTRIBUTE.search(other.error or "")
    if missing:
        return f"{other.key}: the same call of {missing[1]}.{missing[2]}, which the type lacks"
    return f"{other.key}: the same internal check ({normalize_message(other.error or '')})"


def joined(first: Finding, other: Finding, why: str) -> Finding:
    """``first`` listing ``other`` (``why``) among the callables its root cause shows in."""
    if not why or why in first.also:
        return first
    return first.replace(also=(*first.also, why))


def pool_predicate(replay: Replay) -> Predicate:
    """Run candidate cases on the workers; the roots each shows."""

    def run(cases: Sequence[Case]) -> list[set[str]]:
        # a candidate some member cannot be called with shows nothing (and is not run): a
        # shrinking pass may drop a value one member's signature requires
        callable_ = [i for i, c in enumerate(cases) if replay.binds(c)]
        shown = [set[str]() for _ in cases]
        if callable_:
            for i, r in zip(callable_, replay.run([cases[i] for i in callable_]), strict=True):
                shown[i] = r.roots()
        return shown

    return run


def needed_triggers(
    items: Sequence[tuple[Case, Group, str, Sequence[str]]], predicate: Predicate
) -> list[str]:
    """For each (case, group, root, tags): the first trigger class the case holds whose
    removal loses ``root``; where no one removal does (NaN and inf each make the NaN mask
    differ), the first class of those whose removal together loses it; ``"ordinary"`` if
    none. Every variant of every case runs in one batch (a few round trips for a whole
    campaign's findings)."""
    variants: list[list[tuple[str, Case | None]]] = []
    for case, group, _root, tags in items:
        single = [(t, neutralized(case, group, t)) for t in triggers_in(tags)]
        tested = [t for t, v in single if v is not None]
        if len(tested) >= 2:
            together: Case | None = case
            for t in tested:
                together = neutralized(together, group, t) if together is not None else None
            single.append(("*", together))
        variants.append(single)
    flat = [v for vs in variants for _, v in vs if v is not None]
    shown = iter(predicate(flat) if flat else [])
    out = []
    for (_case, _group, root, _tags), vs in zip(items, variants, strict=True):
        found = None
        for t, v in vs:
            if v is None:
                continue
            lost = root not in next(shown)
            if lost and found is None:
                found = t if t != "*" else next(u for u, w in vs if w is not None)
        untested = [t for t, v in vs if v is None and t != "*"]
        out.append(found or (untested[0] if untested else "ordinary"))
    return out


def needed_trigger(
    case: Case, group: Group, root: str, predicate: Predicate, tags: Sequence[str]
) -> str:
    """The first input class of ``case`` whose removal loses ``root`` (one batch of runs)."""
    return needed_triggers([(case, group, root, tags)], predicate)[0]


@dataclass(frozen=True, kw_only=True)
class _Shrunk:
    finding: Finding
    original: Case
    current: Case
    minimization: Minimization


def triage(
    store: Store,
    campaign: int,
    pool: WorkerPool,
    groups: Mapping[str, Group],
    *,
    out_dir: Path,
    known: Sequence[KnownDifference],
    versions: Mapping[str, str],
    progress: Callable[[str], None] = lambda _m: None,
    max_seconds: float | None = None,
    until: float | None = None,
    retriage: Collection[str] = (),
) -> TriageSummary:
    """Minimize, find the trigger of, classify and script every finding not triaged yet, and
    those of the signatures in ``retriage`` (triaged before without minimization: see
    :func:`xamt.triage.later.minimize_left`).

    Past ``max_seconds`` the remaining findings are not minimized (their minimization
    ``stop`` is ``"skipped"``); every finding still gets its trigger by necessity, in batched
    passes over all of them (hangs excepted: their trigger is their case's first). Past
    ``until`` (a :func:`time.monotonic` time: a time budget's end) those passes stop too. The
    passes take one finding of each root (library, callable, kind family) first; a finding
    not reached takes the trigger found for its root, else the first of its root's most
    frequent finding, and keeps its dtype.
    """

    def late() -> bool:
        return until is not None and time.monotonic() >= until

    started = time.monotonic()
    replay = Replay(pool, groups, known)
    predicate = pool_predicate(replay)
    rows = [r for r in store.findings(campaign) if r.group in groups]
    # suspected bugs first, most severe first: the minimization budget goes where a
    # maintainer will read the case; documented differences and splits come last
    todo = sorted(
        (r for r in rows if not r.finding.triaged or r.signature in retriage),
        key=lambda r: (not r.finding.suspected, r.finding.rank()),
    )
    shrunk: list[_Shrunk] = []
    for n, row in enumerate(todo, 1):
        f = row.finding  # StoreError for a malformed signature or payload
        group = groups[row.group]
        original = decode_case(
            f.original_case or f.case, f"{store.path}: finding {row.signature}: case", StoreError
        )
        cap = CALL_CAPS.get(f.kind)
        if max_seconds is not None and time.monotonic() - started > max_seconds:
            cap = 0
        if cap != 0:
            progress(f"minimize {n}/{len(todo)}: {f.key}")
        result = minimize(
            original,
            root_of(f),
            group,
            predicate,
            **({"max_calls": cap} if cap is not None else {}),
        )
        shrunk.append(
            _Shrunk(
                finding=f,
                original=original,
                current=result.case,
                minimization=Minimization(
                    calls=result.calls,
                    seconds=round(result.seconds, 2),
                    stop="skipped" if cap == 0 else result.stop,
                    accepted=result.accepted,
                    elements_before=element_count(original, group),
                    elements_after=element_count(result.case, group),
                ),
            )
        )
    # suspected bugs not minimized still move to a simpler dtype when they can (a batch per
    # candidate dtype), so that one root cause met in several dtypes is one filed issue;
    # documented differences and splits keep their dtype, and the time goes to triggers
    options = {
        i: in_canonical_dtypes(s.current, groups[s.finding.group])
        for i, s in enumerate(shrunk)
        if s.minimization.stop == "skipped" and s.finding.kind != "hang" and s.finding.suspected
    }
    for round_ in range(2):
        moves = [(i, found[round_]) for i, found in options.items() if len(found) > round_]
        if not moves or late():
            break
        progress(f"dtype: trying {len(moves)} findings in a simpler dtype")
        for start in range(0, len(moves), PASS_CHUNK):
            if late():
                break
            batch = moves[start : start + PASS_CHUNK]
            for (i, moved), roots in zip(batch, predicate([m for _, m in batch]), strict=True):
                if root_of(shrunk[i].finding) in roots:
                    shrunk[i] = dataclasses.replace(shrunk[i], current=moved)
                    del options[i]
    # batched re-runs of the minimized cases, then of their trigger variants (most important
    # findings first, as far as the time allows)
    # one finding of each root first (its most frequent), so that when the time runs out
    # every root has a trigger the others can fold into; suspected bugs before the rest
    rerunnable = [i for i, s in enumerate(shrunk) if s.finding.kind != "hang"]
    firsts: dict[str, int] = {}
    for i in sorted(rerunnable, key=lambda i: -shrunk[i].finding.occurrences):
        firsts.setdefault(root_of(shrunk[i].finding), i)
    leaders = set(firsts.values())
    # suspected bugs first (their trigger decides what is filed), each root's leader first
    rerunnable.sort(key=lambda i: (not shrunk[i].finding.suspected, i not in leaders))
    progress(f"triggers: re-running {len(rerunnable)} minimized cases and their variants")
    rerun_of: dict[int, Replayed] = {}
    trigger_at: dict[int, str] = {}
    for start in range(0, len(rerunnable), PASS_CHUNK):
        if late():
            progress(f"triggers: time is up; {len(rerunnable) - start} findings keep their first")
            break
        chunk = rerunnable[start : start + PASS_CHUNK]
        rerun_of.update(zip(chunk, replay.run([shrunk[i].current for i in chunk]), strict=True))
        needed = needed_triggers(
            [
                (
                    shrunk[i].current,
                    groups[shrunk[i].finding.group],
                    root_of(shrunk[i].finding),
                    rerun_of[i].tags,
                )
                for i in chunk
            ],
            predicate,
        )
        trigger_at.update(zip(chunk, needed, strict=True))
    # a minimized case whose last run no longer shows its root (minimization kept a step the
    # departure did not survive, or it came and went) is not what was reproduced: the finding
    # keeps its original case, which was, and is judged on its run
    lost = [i for i, r in rerun_of.items() if root_of(shrunk[i].finding) not in r.roots()]
    lost = [i for i in lost if shrunk[i].current is not shrunk[i].original]
    if lost and not late():
        progress(f"re-running {len(lost)} original cases whose minimized case lost the finding")
        for i, again in zip(lost, replay.run([shrunk[i].original for i in lost]), strict=True):
            kept = dataclasses.replace(
                shrunk[i].minimization,
                stop="lost",
                elements_after=shrunk[i].minimization.elements_before,
            )
            shrunk[i] = dataclasses.replace(
                shrunk[i], current=shrunk[i].original, minimization=kept
            )
            rerun_of[i] = again
            trigger_at.pop(i, None)  # (found on the case that lost it)
    left = None if until is None else until - time.monotonic()
    finished = _finished_hangs(pool, replay, shrunk, progress, left)
    documented = 0
    attach: list[Finding] = []  # suspected bugs to read the blamed callable's documentation of
    before, after = [], []

    # suspected bugs already triaged (this store, any campaign) by root cause across dtypes
    def root(f: Finding) -> tuple[str, str, str, str]:
        group = groups.get(f.group)
        return same_root(f, group.family if group is not None else "")

    known_roots = {
        root(r.finding): r.signature
        for r in store.findings()
        if r.finding.triaged and r.finding.suspected and r.signature not in retriage
    }
    # a root whose trigger was found: the findings of that root the passes did not reach have
    # no evidence of another trigger and fold into it (one root cause, counted once); a root
    # none of whose findings was reached takes its most frequent finding's first trigger
    root_trigger: dict[str, str] = {}
    for i in sorted(trigger_at, key=lambda i: -shrunk[i].finding.occurrences):
        root_trigger.setdefault(root_of(shrunk[i].finding), trigger_at[i])
    for i in sorted(range(len(shrunk)), key=lambda i: -shrunk[i].finding.occurrences):
        f = shrunk[i].finding
        if f.kind != "hang":
            root_trigger.setdefault(root_of(f), trigger_of(f.input_classes))
    where = Moves(store)
    standalone: list[tuple[str, Path, ShortRepro]] = []  # suspected bugs' short repros to run
    for i, (s, row) in enumerate(zip(shrunk, todo, strict=True)):
        if i in finished:
            where.drop(row.signature)
            continue
        f, group = s.finding, groups[s.finding.group]
        rerun = rerun_of.get(i)
        if f.kind == GRADIENT:
            trigger = f.trigger  # a gradient finding's trigger is its oracle, not an input class
        elif i in trigger_at:
            trigger = trigger_at[i]
        elif f.kind == "hang":
            trigger = hang_trigger(f.input_classes)
        else:
            trigger = root_trigger[root_of(f)]
        final = _final(f, s.current, group, root_of(f), trigger, rerun, known).replace(
            original_case=case_to_jsonable(s.original),
            minimization=s.minimization,
            versions=dict(versions),
            triaged=True,
        )
        before.append(s.minimization.elements_before)
        after.append(s.minimization.elements_after)
        if final.suspected:
            key = root(final)
            first = known_roots[key] = where.now(known_roots.get(key, "")) or final.signature
            if first != final.signature:
                # the same suspected root cause in another dtype or input class (or, for a
                # dead process, another operation of the family): one finding, counted there
                primary = store.finding(first).finding
                why = why_joined(primary, final, group.family)
                where.rekey(row.signature, joined(primary, final, why))
                continue
        documented += final.classification == "documented-difference"
        if late() and not final.suspected:
            # past the budget: documented differences and splits keep their case and
            # outputs in findings.json but get no scripts; suspected bugs, which are filed
            # with theirs, always get them
            where.rekey(row.signature, final)
            continue
        members = {
            lib: member
            for lib, api in s.current.apis.items()
            for member in group.members
            if member.api == api and member.library == lib
        }
        # the signature names a folder: it must stay inside the output folder
        folder = inside(out_dir, "repro", check_signature(final.signature, "triage"))
        scripts = write_repro(
            folder,
            case=s.current,
            members=members,
            versions=versions,
            signature=final.signature,
            key=final.key,
            gradient_detail=final.detail if final.kind == "gradient" else None,
        )
        final = final.replace(
            repro={lib: str(Path(p).relative_to(out_dir)) for lib, p in scripts.items()}
        )
        try:
            written = write_short(folder, final, members, s.current, rerun, versions)
        except Exception as exc:  # noqa: BLE001  (a defect in xamt: the finding keeps its scripts)
            written = None
            progress(
                f"short repro of {final.key} not written ({type(exc).__name__}: {exc}); "
                "a defect in xamt, please report it"
            )
        # (a finding triaged again keeps no short repro of its earlier case)
        final = final.replace(
            short_repro=str(written[0].relative_to(out_dir)) if written is not None else "",
            held_back="",
        )
        if written is not None and final.suspected:
            standalone.append((final.signature, written[0], written[1]))
        where.rekey(row.signature, final)
        if final.suspected:
            attach.append(final)
    _check_standalone(store, where, standalone, progress, late)
    # the suspected bugs as the store now holds them (a later rekey may have moved one)
    attach = [
        store.finding(where.now(f.signature)).finding for f in attach if where.now(f.signature)
    ]
    if attach:
        # reading documentation and source is cheap (about 0.1 s for 130 callables on running
        # workers): past the budget it still runs, on the workers that are up
        code = _read_code(pool, attach, running_only=late())
        documented += _attach_documentation(store, attach, code)
        _join_delegations(store, [f.signature for f in attach], code)
    return TriageSummary(
        findings=len(todo),
        documented=documented,
        elements_before=tuple(before),
        elements_after=tuple(after),
    )


def write_short(
    folder: Path,
    f: Finding,
    members: Mapping[str, Member],
    case: Case,
    rerun: Replayed | None,
    versions: Mapping[str, str],
) -> tuple[Path, ShortRepro] | None:
    """Write ``f``'s short repro (:mod:`xamt.triage.short`; a gradient finding's:
    :func:`xamt.triage.grad_repro.short_gradient_script`) as ``short_<library>.py`` in its
    repro ``folder`` (and ``short_inputs.npz`` past the inline limit); None where it has none.
    Its departure is read from the re-run of the minimized case (``rerun``)."""
    member = members.get(f.library)
    if member is None:
        return None
    if f.kind == GRADIENT:
        check = gradient_check(rerun.gradients, f) if rerun is not None else None
        short = (
            short_gradient_script(
                finding=f,
                member=member,
                case=case,
                check=check,
                outcome=rerun.outcomes.get(f.library) if rerun is not None else None,
                version=versions.get(f.library, "unknown"),
            )
            if check is not None
            else None
        )
    else:
        short = short_script(
            finding=f,
            member=member,
            case=case,
            outcomes=rerun.outcomes if rerun is not None else None,
            reference=rerun.reference if rerun is not None else None,
            version=versions.get(f.library, "unknown"),
        )
    if short is None:
        return None
    check_identifier("library", f.library, f"{folder}: a short repro")
    if short.arrays:
        buffer = io.BytesIO()
        np.savez(buffer, **short.arrays)  # type: ignore[arg-type]
        replace_file(folder / NPZ, buffer.getvalue())
    path = replace_file(folder / f"short_{f.library}.py", short.text.encode())
    return path, short


def _check_standalone(
    store: Store,
    where: Moves,
    scripts: Sequence[tuple[str, Path, ShortRepro]],
    progress: Callable[[str], None],
    late: Callable[[], bool],
) -> None:
    """Run every suspected bug's short repro standalone, as one batch (forked children of one
    process per library, :func:`xamt.triage.standalone.run_checks`) before ``late()``; a
    finding whose repro ran and did not show the departure is kept, with ``held_back`` saying
    why, and the log says so. A repro not run before the time limit holds nothing back."""
    found: dict[str, Finding] = {}
    checks = []
    for signature, path, short in scripts:
        now = where.now(signature)
        if not now or now in found:
            continue
        f = found[now] = store.finding(now).finding
        checks.append(
            Check(key=now, library=f.library, path=path, shows=short.shows, error=short.error)
        )
    pythons = {lib: interpreter_of(lib) for lib in {c.library for c in checks}}
    checked = run_checks(checks, pythons=pythons, late=late)
    for key, f in found.items():
        verdict = checked[key].verdict
        if verdict is None:
            progress(f"{f.key}: short repro not run standalone: time budget")
            continue
        reason = hold_back_reason(f.library, verdict)
        if reason:
            progress(f"held back {f.key}: {reason}")
        if reason != f.held_back:
            store.update_finding(f.replace(held_back=reason))


class Moves:
    """The store's findings as triage rekeys and drops them, and where each one went: a
    finding's final signature may be another, not yet triaged finding's (the same key once
    its trigger is found), and rekeying that one later moves both."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.went: dict[str, str] = {}  # old signature -> new ("" where dropped)

    def rekey(self, old: str, finding: Finding) -> None:
        self.store.rekey_finding(old, finding)
        if old != finding.signature:
            self.went[old] = finding.signature

    def drop(self, signature: str) -> None:
        self.store.drop_finding(signature)
        self.went[signature] = ""

    def now(self, signature: str) -> str:
        """Where the finding once at ``signature`` is now ("" where it was dropped)."""
        seen = set()
        while signature in self.went and signature not in seen:
            seen.add(signature)
            signature = self.went[signature]
        return signature


def _finished_hangs(
    pool: WorkerPool,
    replay: Replay,
    shrunk: Sequence[_Shrunk],
    progress: Callable[[str], None],
    seconds: float | None,
) -> set[int]:
    """The suspected hangs (indices into ``shrunk``) whose blamed library answers
    (:data:`ANSWERED`) when given :data:`PATIENT_SECONDS`, in one batch: at most
    :data:`PATIENT_CASES`, and no more per library (its calls run one after another) than
    ``seconds``, the time left (None: no limit), allows with one to spare."""
    per_library = PATIENT_CASES if seconds is None else int(seconds // PATIENT_SECONDS) - 1
    taken: dict[str, int] = {}
    hangs: list[int] = []
    for i, s in enumerate(shrunk):
        f = s.finding
        if f.kind != "hang" or not f.suspected or len(hangs) >= PATIENT_CASES:
            continue
        if taken.get(f.library, 0) < per_library:
            taken[f.library] = taken.get(f.library, 0) + 1
            hangs.append(i)
    if not hangs:
        return set()
    progress(f"hangs: giving {len(hangs)} suspected hangs {PATIENT_SECONDS:.0f} s each")
    deadline, adaptive = pool.deadline, pool.adaptive
    pool.deadline, pool.adaptive = max(deadline, PATIENT_SECONDS), False
    try:
        again = replay.run([shrunk[i].current for i in hangs])
    finally:
        pool.deadline, pool.adaptive = deadline, adaptive
    return {
        i
        for i, r in zip(hangs, again, strict=True)
        if r.outcomes.get(shrunk[i].finding.library) is not None
        and r.outcomes[shrunk[i].finding.library].status in ANSWERED
    }


# Families a documented dtype list does not excuse: a process that dies is a bug whatever it
# was given.
DOCUMENTED_DTYPE_FAMILIES = frozenset({"value", "dtype", "status", "shape"})


def _read_code(
    pool: WorkerPool, found: Sequence[Finding], *, running_only: bool = False
) -> dict[str, dict[str, Doc]]:
    """The documentation and code of the blamed callable of each suspected bug, from the
    workers (one batch, every library at once): library -> API path -> :class:`Doc`. With
    ``running_only``, only from workers that are up (no start-up is waited for)."""
    wanted: dict[str, list[str]] = {}
    for f in found:
        api = f.apis.get(f.library)
        worker = pool.workers.get(f.library)
        if api and worker is not None and (worker.alive or not running_only):
            wanted.setdefault(f.library, []).append(api)
    if not wanted:
        return {}
    return pool.docs({lib: list(dict.fromkeys(apis)) for lib, apis in wanted.items()})


def _join_delegations(
    store: Store, signatures: Sequence[str], code: Mapping[str, Mapping[str, Doc]]
) -> int:
    """Join each suspected bug to one of a callable its blamed callable hands its work to,
    as the library's own source says (its :class:`Doc` calls that callable's
    implementation): the same library, kind family and trigger, another callable (a wrong
    dtype of the caller and wrong values of the callee stay apart: the caller's own code may
    cast). mindspore.numpy.flipud returns ``flip(m, 0)``: a wrong result of both is flip's.
    Two API paths naming one function (``mindspore.numpy.round = around``) are one callable:
    they join as its findings in two dtypes or input classes would (:func:`same_root`).
    Returns how many were joined."""
    # two triaged findings may have become one (the same signature once their trigger was
    # found): each is joined at most once
    rows = [store.finding(s).finding for s in dict.fromkeys(signatures)]
    rows = [f for f in rows if f.suspected]

    docs = {
        f.signature: code.get(f.library, {}).get(f.apis.get(f.library, ""), Doc()) for f in rows
    }
    calls = {s: set(d.calls) for s, d in docs.items()}
    implementations = {s: d.implementation() for s, d in docs.items()}

    def why(caller: Finding, callee: Finding) -> str:
        """Why ``caller`` is ``callee``'s root cause, "" where it is not."""
        if callee.library != caller.library or callee.callable == caller.callable:
            return ""
        name = docs[caller.signature].name
        # a closure a factory made ("<locals>") names many functions, not one
        one = bool(name) and "<locals>" not in name
        if one and name == docs[callee.signature].name and _alias_root(caller, callee):
            return f"{caller.key}: the same function ({name}) under another name"
        same = (callee.family, callee.trigger) == (caller.family, caller.trigger)
        if same and calls[caller.signature] & implementations[callee.signature]:
            return f"{caller.key}: its source calls {docs[callee.signature].name}"
        return ""

    gone: set[str] = set()
    for caller in rows:
        for callee in rows:
            if callee.signature in gone or callee.signature == caller.signature:
                continue
            because = why(caller, callee)
            if because:
                primary = store.finding(callee.signature).finding
                store.rekey_finding(caller.signature, joined(primary, caller, because))
                gone.add(caller.signature)
                break
    return len(gone)


def _alias_root(caller: Finding, callee: Finding) -> bool:
    """Whether ``caller`` would be ``callee``'s root cause were its API path callee's."""
    return same_root(caller.replace(callable=callee.callable, apis=callee.apis)) == same_root(
        callee
    )


def _attach_documentation(
    store: Store, found: Sequence[Finding], code: Mapping[str, Mapping[str, Doc]]
) -> int:
    """Keep the sentences of the blamed callable's docstring of each suspected bug that speak
    of its dtype, trigger or parameters. Where the docstring states the dtypes the callable
    accepts and the finding's is not among them, the input is outside what the library
    documents: a support gap, classified a documented difference citing those dtypes.
    Returns how many were so reclassified."""
    reclassified = 0
    # the store's copy: a finding may have had others joined to it since it was listed
    for signature in dict.fromkeys(f.signature for f in found):
        f = store.finding(signature).finding
        api = f.apis.get(f.library, "")
        doc = code.get(f.library, {}).get(api, Doc()).text
        if not doc:
            continue
        values = f.case.get("values", {}) if isinstance(f.case, dict) else {}
        params = [str(r) for r in values if r not in ARRAY_ROLES]
        said = docs.sentences(doc, dtype=f.dtype, trigger=f.trigger, params=params)
        updated = f.replace(documentation=said)
        stated = docs.outside_documented(doc, f.dtype, f.library, DTYPE_NAMES)
        if stated and f.family in DOCUMENTED_DTYPE_FAMILIES:
            reason = (
                f"{api} documents that it does not support {f.dtype} input"
                if stated.startswith("anything but")
                else f"{api} documents its input dtypes as {stated}: {f.dtype} is outside them"
            )
            updated = updated.replace(
                classification="documented-difference",
                known_difference=KnownRef(
                    id="documented-dtypes", policy="documented-dtypes", reason=reason, link=""
                ),
                decided_by=f"documentation: {reason}",
            )
            reclassified += 1
        store.update_finding(updated)
    return reclassified


def as_minimized(
    f: Finding,
    case: Case,
    group: Group,
    trigger: str,
    tags: Sequence[str] | None = None,
) -> Finding:
    """``f`` described by its minimized ``case``: the case, its input dtype, its input classes
    (``tags``, else computed from it), a trigger it still holds (``trigger``, else the first
    class it holds: a trigger found on the original case, which minimization moved away from,
    is not this case's), and the signature and key of those. A gradient finding's trigger is
    its oracle and stays."""
    tags = tuple(tags) if tags is not None else tuple(input_classes(case, group))
    if f.kind != GRADIENT and trigger != ORDINARY and trigger not in triggers_in(tags):
        trigger = trigger_of(tags)
    dtype = case_dtype(case, group)
    sig, key = signature_of(
        family=f.family,
        library=f.library,
        callable=f.callable,
        dtype=dtype,
        trigger=trigger,
        error=f.error,
    )
    return f.replace(
        signature=sig,
        key=key,
        dtype=dtype,
        trigger=trigger,
        input_classes=tags,
        case=case_to_jsonable(case),
    )


def _final(
    f: Finding,
    case: Case,
    group: Group,
    root: str,
    trigger: str,
    rerun: Replayed | None,
    known: Sequence[KnownDifference],
) -> Finding:
    """The finding as the minimized case shows it, signed with its trigger and classified."""
    again = (
        judge_case(
            case,
            group,
            rerun.outcomes,
            rerun.reference,
            trigger=trigger,
            known=known,
            probes=rerun.probes,
        )
        if rerun is not None
        else None
    )
    signed = next((s for s in again.signed if s.root == root), None) if again else None
    if again is None or signed is None:
        # not re-run (a hang), or flaky on the last run: keep what was seen, described by
        # the minimized case
        return as_minimized(f, case, group, trigger, again.tags if again else None).replace(
            outputs={lib: outcome_summary(o) for lib, o in again.outcomes.items()}
            if again
            else f.outputs,
        )
    # what the minimized case shows, with what reproduction and verification recorded
    return finding_of(signed, again, group, known).replace(
        reproduced=f.reproduced,
        runs=f.runs,
        occurrences=f.occurrences,
        verifications=f.verifications,
        consecutive_misses=f.consecutive_misses,
        first_seen=f.first_seen,
        last_seen=f.last_seen,
    )
