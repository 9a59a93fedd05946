"""The campaign loop: spend a budget over groups, compare libraries, keep what diverges.

Cases run in batches: every library gets its calls of a batch in one request, all libraries at
once. After each batch, the cases, the candidate discrepancies and the schedule's state (with
the random generator's) are committed to the store in one transaction, so a campaign killed at
any point resumes from its last batch with nothing lost and nothing counted twice. Candidates
become findings only once they reproduce in fresh workers (:mod:`xamt.fuzz.reproduce`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from xamt import schemas
from xamt.catalog import dlcore
from xamt.catalog.gradients import differentiable
from xamt.catalog.model import Catalog, Group
from xamt.errors import UsageError
from xamt.findings import decode_case
from xamt.findings import to_json as finding_json
from xamt.fuzz import PARTICIPATION
from xamt.fuzz.cancel import Cancellation, Cancelled
from xamt.fuzz.schedule import DIVERGENCE_WEIGHT, NOVELTY_BONUS, Pick, Schedule, make_schedule
from xamt.inputs.draw import (
    accepts,
    draw_case,
    fuzz_dtypes,
    mutate,
    pick_apis,
    revalue,
    strict,
)
from xamt.inputs.tags import input_classes
from xamt.known import KnownDifference, load_known
from xamt.oracle.compare import divergence
from xamt.oracle.gradient import eligible, gradient_case
from xamt.oracle.signature import canonical_callable
from xamt.replay import (
    Replay,
    Replayed,
    Submitted,
    finding_of,
    judge_case,
    neutralized,
    triggers_in,
)
from xamt.serialize import case_from_jsonable, case_to_jsonable
from xamt.store import CandidateRecord, CaseRecord, Store, StoreError, check_resumable
from xamt.timing import LibraryTime, Phases, libraries_from_dict, merge_libraries
from xamt.types import VALUE_CLASSES, WITHDRAWN, Case
from xamt.workers.pool import WorkerPool
from xamt.workers.protocol import DTYPE_NAMES, ProtocolError, input_signature

BATCH = 48
LOOKAHEAD = 3  # batches drawn ahead: the one being compared and two in the workers' queues
# Pacing under a time budget (see Campaign.run): at most MAX_PENDING batches in flight; a
# library with more than PACE_SECONDS of queued work is left out of new cases; more batches
# are drawn while a library has less than HUNGRY_SECONDS of work queued.
MAX_PENDING = 12
PACE_SECONDS = 1.5
HUNGRY_SECONDS = 0.25
# A saturated library's warm cases kept per (library, group, dtype): a fresh case it would be
# left out of is replaced by one of these with fresh values (see Campaign._paced). Only a case
# every library answered within WARM_CASE_SECONDS is kept, and a kept one whose signature a
# library later answered slower (its cost depends on the values) is dropped: a case that is
# slow warm (numpy.round with decimals=2**31-1 takes seconds on some values, under the hang
# deadline) would otherwise be repeated while it keeps a library saturated.
WARM_CASES = 2
WARM_CASE_SECONDS = 1.0
PACE_POLL = 0.02  # seconds the loop lets the workers run before it checks again
EXPECTED_RATE = 50  # cases per second a campaign of all libraries runs on two cores
# The schedule's state (which grows with the arms tried and the signatures seen: megabytes in a
# long campaign) is saved with a batch at most this often, and always with the last one; a
# resume drops the batches committed after it and runs them again.
STATE_EVERY = 10.0
CANDIDATES_PER_SIGNATURE = 2
# Reward of a new root cause by severity: the schedule chases wrong results and dead
# processes, not dtype policy.
SEVERITY_REWARD = {"critical": 1.0, "high": 1.0, "medium": 0.5, "low": 0.2}
# The share of its divergence a case earns when every disagreement it shows is policy.
POLICY_DIVERGENCE = 0.2
# A library whose worker died, hung or hit the memory cap this often on one function, in any
# group (conv2d and conv3d[valid] are one for mxnet.nd.Convolution; its
# aliases, methods and in-place variants are one: paddle.gcd and paddle.Tensor.gcd) and one
# family of input dtypes (float16 to float64 take one code path in paddle's gcd loop) is not
# called again on cases holding the input classes all those deaths had in common: its finding
# is recorded, and each further call would only cost a deadline and a restart (seconds of
# importing the library again).
FATAL_REPEATS = 2
DTYPE_FAMILIES = {"b": "bool", "i": "integer", "u": "integer", "f": "floating", "c": "complex"}
FATAL_FAMILIES = ("crash", "hang", "resource")
# An input that made two or more workers hang or hit the memory cap (a huge requested size) is
# evidence of nothing (see the verdict) and costs a restart in each: later cases of its group
# are drawn without the input classes all such inputs of the group had (a parameter back to
# its canonical value, a special value replaced).
HEAVY_STATUSES = ("hang", "resource")
# A whole-number parameter this large (the drawn boundary 2**31 - 1) asks for gigabytes from
# every operation whose output it sizes: linspace's num, one_hot's depth, fft's n, repeat's
# repeats... After a worker hung or hit the memory cap FATAL_REPEATS times on cases holding
# one role at such a value, in any groups, later cases draw FEASIBLE_SIZE for that role
# instead: still past the input's extent (k > n for topk, padding beyond the array), without
# the deadline and restart each group would otherwise pay to learn it.
HUGE_SIZE = 2**20
FEASIBLE_SIZE = 1000


@dataclass(frozen=True, kw_only=True)
class Budget:
    """A campaign's budget: a number of cases, or seconds of fuzzing."""

    cases: int | None = None
    seconds: float | None = None

    def __str__(self) -> str:
        return f"{self.cases} cases" if self.cases is not None else f"{self.seconds:g} s"


def parse_budget(text: str) -> Budget:
    """``90s``, ``10m``, ``1h`` are time; a whole number (or ``500c``) is a number of cases."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhc]?)\s*", text)
    if not match:
        raise UsageError(f"budget {text!r}: write a time (90s, 10m, 1h) or a number of cases")
    number, unit = float(match.group(1)), match.group(2)
    if number <= 0:
        raise UsageError(f"budget {text!r} must be positive")
    if unit in ("", "c"):
        if not number.is_integer():
            raise UsageError(
                f"budget {text!r}: a number of cases is a whole number (or give a time: 90s)"
            )
        return Budget(cases=int(number))
    return Budget(seconds=number * {"s": 1, "m": 60, "h": 3600}[unit])


def parse_shard(text: str) -> tuple[int, int]:
    """``i/n`` with 0 <= i < n: this run takes the groups whose stable hash is i modulo n."""
    match = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not match or int(match.group(2)) == 0 or int(match.group(1)) >= int(match.group(2)):
        raise UsageError(f"shard {text!r}: write i/n with 0 <= i < n, e.g. 0/4")
    return int(match.group(1)), int(match.group(2))


def shard_of(group_id: str, n: int) -> int:
    return int(hashlib.sha256(group_id.encode()).hexdigest()[:8], 16) % n


def select_groups(
    catalog: Catalog,
    libraries: Sequence[str],
    pattern: str | None = None,
    shard: tuple[int, int] = (0, 1),
) -> list[Group]:
    """The groups a campaign fuzzes: members of the chosen libraries, spanning two of them."""
    regex = None
    if pattern:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise UsageError(
                f"group filter {pattern!r} is not a regular expression: {exc}"
            ) from None
    chosen = []
    for g in catalog.groups:
        if regex and not regex.search(g.id):
            continue
        if shard_of(g.id, shard[1]) != shard[0]:
            continue
        members = tuple(m for m in g.members if m.library in libraries)
        if len({m.library for m in members}) >= 2:
            chosen.append(dataclasses.replace(g, members=members))
    return chosen


@dataclass(frozen=True, kw_only=True)
class CampaignConfig:
    name: str
    seed: int
    budget: Budget
    libraries: tuple[str, ...]
    schedule: str = "variance"
    batch: int = BATCH
    pace: bool = True  # under a time budget, let each library go at its own rate
    # paced: the share of its groups' cases every library takes part in (see PARTICIPATION)
    participation: float = PARTICIPATION
    # the share of cases that also check gradients (xamt.oracle.gradient): 0 for values only
    gradients: float = 0.0
    # the run's options (xamt.fuzz.run.run_options), stored so that --resume continues with them
    run: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["budget"] = asdict(self.budget)
        return data


@dataclass
class Progress:
    """What the loop reports after each batch."""

    cases: int = 0
    seconds: float = 0.0
    group: str = ""
    candidates: Counter[str] = field(default_factory=Counter)
    signatures: int = 0
    suspected: int = 0  # distinct signatures classified as suspected bugs

    @property
    def rate(self) -> float:
        return self.cases / self.seconds if self.seconds else 0.0


@dataclass
class _Batch:
    """Drawn cases and their picks, submitted to the pool, not yet compared."""

    picks: list[Pick]
    cases: list[Case]
    submitted: Submitted
    saved: dict[str, Any] | None = None  # as committed with the state, made once

    def jsonable(self) -> dict[str, Any]:
        if self.saved is None:
            self.saved = {
                "picks": [[list(p.arm), p.parent] for p in self.picks],
                "cases": [case_to_jsonable(c) for c in self.cases],
            }
        return self.saved


@dataclass
class _State:
    """Everything the loop needs to continue exactly where it stopped."""

    seq: int = 0
    seen: dict[str, int] = field(default_factory=dict)
    kinds: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    # group -> library -> dtype -> "ok" | "refused"
    support: dict[str, dict[str, dict[str, str]]] = field(default_factory=dict)
    suspected: set[str] = field(default_factory=set)  # signatures classified suspected-bug
    # group -> [library, api, dtype, sorted trigger classes, times seen] of dead workers
    fatal: dict[str, list[list[Any]]] = field(default_factory=dict)
    skipped: Counter[str] = field(default_factory=Counter)  # calls not made, by library
    paced: Counter[str] = field(default_factory=Counter)  # calls left out while saturated
    # group -> [input classes every too-heavy input of it had, times seen]
    heavy: dict[str, list[Any]] = field(default_factory=dict)
    lightened: int = 0  # cases drawn without those classes (or huge sizes)
    # role -> times a worker hung or hit the memory cap with that role at a huge size
    huge: Counter[str] = field(default_factory=Counter)
    phases: Phases = field(default_factory=Phases)  # the orchestrator's own time
    # group -> [cases the judge failed on, its first error]: a defect in xamt, said at the end
    unjudged: dict[str, list[Any]] = field(default_factory=dict)
    libraries: dict[str, LibraryTime] = field(default_factory=dict)  # before this process
    # gradient cases ("cases") and, per library, those it returned a gradient on
    gradients: Counter[str] = field(default_factory=Counter)
    # per library: [cases of its groups, cases it took part in] (not left out while saturated,
    # after dying twice on such inputs, or by a withdrawal)
    participation: dict[str, list[int]] = field(default_factory=dict)


class Campaign:
    """One campaign over ``groups`` with a started pool, recorded in ``store``."""

    def __init__(
        self,
        config: CampaignConfig,
        groups: Sequence[Group],
        pool: WorkerPool,
        store: Store,
        known: Sequence[KnownDifference] | None = None,
        *,
        cancel: Cancellation | None = None,
    ) -> None:
        if not groups:
            raise UsageError("no group to fuzz: check --group, --libs and --shard")
        self.config = config
        self.groups = {g.id: g for g in groups}
        self.libraries = {m.library for g in groups for m in g.members}
        self._group_libraries = {g.id: sorted({m.library for m in g.members}) for g in groups}
        self.known = list(known) if known is not None else load_known()
        self.replay = Replay(pool, self.groups, self.known)
        self.pool = pool
        self.store = store
        arms = [(g.id, d, v) for g in groups for d in fuzz_dtypes(g) for v in VALUE_CLASSES]
        self.schedule: Schedule = make_schedule(
            config.schedule, arms, expected_cases(config.budget)
        )
        self.rng = np.random.default_rng(config.seed)
        self.state = _State()
        self.campaign_id = 0
        self._pending: deque[_Batch] = deque()
        self._last_group = ""
        self._stop_at: float | None = None  # see stop_at
        self._saved_at = -math.inf  # when the state was last saved with a batch
        self._unsaved = False  # the last batch went without it
        self._resumed: list[tuple[list[Pick], list[Case]]] = []
        self._current: _Batch | None = None  # the batch being collected and booked
        # deaths noted as the pool reported them (see _on_failure): ticket -> (case, library)
        self._noted: dict[int, set[tuple[int, str]]] = {}
        pool.on_failure = self._on_failure
        # SIGINT/SIGTERM: stop drawing, put the batch waited on back (see run)
        self.cancel = cancel if cancel is not None else Cancellation()
        self.put_back = 0  # drawn cases left pending when a signal stopped the loop
        # per library, the input signatures (signature_key) its workers have run: a saturated
        # library still gets cases of these (see _paced)
        self._warm: dict[str, set[tuple[Any, ...]]] = {}
        # per (library, group, dtype), the last WARM_CASES fresh cases the library ran
        self._warm_cases: dict[tuple[str, str, str], deque[Case]] = {}
        # per library, as drawn (compared cases and those in flight): [cases of its groups,
        # cases it takes part in]; the participation floor reads it (see _paced)
        self._drawn_part: dict[str, list[int]] = {}

    # --- lifecycle -------------------------------------------------------------------------
    def open(self, resume: bool) -> bool:
        """Start, or resume the latest unfinished campaign of this name. True if resumed.

        Resuming with nothing to resume is :class:`~xamt.store.NothingToResume`; a stored state
        that does not fit ``campaign-state.schema.json``, or cannot be restored, is
        :class:`~xamt.store.StoreError`: the store is corrupted.
        """
        found = self.store.resumable_campaign(self.config.name) if resume else None
        if resume and found is None:
            check_resumable(self.store.path, self.config.name)  # says why there is none
        if found is not None and found[2]:
            where = f"{self.store.path}: campaign {found[0]} state"
            schemas.validate(
                "campaign-state",
                found[2],
                f"{where} (corrupted)",
                StoreError,
                definition="resumable",
            )
        try:
            resumed = self._open(resume)
        except (KeyError, IndexError, TypeError, ValueError, OverflowError, ProtocolError) as exc:
            raise StoreError(
                f"{self.store.path}: campaign {self.campaign_id} state cannot be resumed "
                f"({type(exc).__name__}: {exc}); the store is corrupted or from another xamt: "
                "run without --resume to start a new campaign"
            ) from None
        if resumed:
            self._check_resumed()
        return resumed

    def _check_resumed(self) -> None:
        """The resumed work (batches in flight, the schedule's corpus) must be of this run's
        groups and APIs: resuming with another --group, --libs, --shard or catalog is a usage
        error now rather than a crash later."""
        where = f"{self.store.path}: campaign {self.campaign_id} state"
        cases = [case for _picks, batch in self._resumed for case in batch]
        corpus: list[Any] = getattr(self.schedule, "corpus", [])
        cases += [decode_case(entry[2], f"{where}: corpus", StoreError) for entry in corpus]
        for case in cases:
            if case.group not in self.groups or any(
                (case.group, api) not in self.replay.members for api in case.apis.values()
            ):
                raise UsageError(
                    f"{where}: the campaign has work for group {case.group!r} with "
                    f"{', '.join(sorted(case.apis))}, which this run does not have; resume "
                    "with the --group, --libs, --shard and catalog it started with, or run "
                    "without --resume to start a new campaign"
                )

    def _open(self, resume: bool) -> bool:
        found = self.store.resumable_campaign(self.config.name) if resume else None
        if found is None:
            self.campaign_id = self.store.start_campaign(
                name=self.config.name, config=self.config.as_dict()
            )
            return False
        self.campaign_id, _config, state, next_seq = found
        self.store.discard_after(self.campaign_id, next_seq)
        if state:
            self.rng.bit_generator.state = state["rng"]
            self.schedule.load(state["schedule"])
            self.state = _State(
                seq=next_seq,
                seen=dict(state["seen"]),
                kinds=Counter(state["kinds"]),
                seconds=float(state["seconds"]),
                support=dict(state.get("support", {})),
                suspected=set(state.get("suspected", [])),
                fatal={g: [list(k) for k in keys] for g, keys in state.get("fatal", {}).items()},
                skipped=Counter(state.get("skipped", {})),
                paced=Counter(state.get("paced", {})),
                heavy={g: list(v) for g, v in state.get("heavy", {}).items()},
                lightened=int(state.get("lightened", 0)),
                huge=Counter(state.get("huge", {})),
                phases=Phases.from_dict(state.get("phases", {})),
                unjudged={g: list(v) for g, v in state.get("unjudged", {}).items()},
                libraries=libraries_from_dict(state.get("libraries", {})),
                gradients=Counter(state.get("gradients", {})),
                participation={lib: list(v) for lib, v in state.get("participation", {}).items()},
            )
            self._drawn_part = {lib: list(v) for lib, v in self.state.participation.items()}
            self._resumed = [
                (
                    [Pick(tuple(arm), parent) for arm, parent in b["picks"]],
                    [case_from_jsonable(c) for c in b["cases"]],
                )
                for b in state.get("pending", [])
            ]
        return True

    def stop_at(self, when: float) -> None:
        """Stop drawing at ``when`` (a :func:`time.monotonic` time) even if the time budget
        is not spent: the fuzzing share of a run whose start-up took part of it."""
        self._stop_at = when

    def exhausted(self) -> bool:
        """Whether the budget is spent (``state.seconds`` counts fuzzing time up to the last
        committed batch, across resumes)."""
        budget = self.config.budget
        if budget.cases is not None:
            return self.state.seq >= budget.cases
        if self._stop_at is not None and time.monotonic() >= self._stop_at:
            return not self._pending
        return self.state.seconds >= (budget.seconds or 0.0)

    def run(self, report: Callable[[Progress], None] = lambda _p: None) -> Progress:
        """Fuzz until the budget is spent; Ctrl-C stops after committing what is done.

        Batches are pipelined: while the orchestrator compares batch k, the workers already run
        the next ones (up to ``LOOKAHEAD`` batches drawn ahead), each library at its own pace.
        The schedule therefore learns from batch k after batch k+1 was drawn. Batches drawn but
        not yet compared are part of every commit, so a resumed campaign runs them first and
        repeats the uninterrupted campaign exactly.

        Note:
            Under a time budget the campaign is *paced* (:attr:`CampaignConfig.pace`): it draws
            ahead (up to ``MAX_PENDING`` batches) while a library runs out of work, and leaves
            a library whose queue holds more than ``PACE_SECONDS`` of work out of new cases, so
            that the slowest library (jax compiling each new shape) sets its own rate, not the
            campaign's. Which libraries a case includes then depends on timing; a budget in
            cases keeps every library in every case, and repeats exactly.
        """
        started = time.monotonic()
        seconds_before = self.state.seconds
        paced = self.paced
        cancel = self.cancel

        def drawn_out() -> bool:
            return self._drawn_out(seconds_before + time.monotonic() - started)

        try:
            for picks, cases in self._resumed:
                self._pending.append(self._submit(picks, cases))
                for case in cases:
                    self._tally(case)
            self._resumed = []
            while not cancel.requested:
                while not drawn_out() and (
                    len(self._pending) < LOOKAHEAD
                    or (paced and len(self._pending) < MAX_PENDING and self._hungry())
                ):
                    with self.state.phases.timed("draw"):
                        self._pending.append(self._draw())
                if not self._pending:
                    break
                head = self._pending[0]
                if (
                    paced
                    and not self.pool.done(head.submitted.ticket)
                    and len(self._pending) < MAX_PENDING
                    and not drawn_out()
                ):
                    with self.state.phases.timed("wait"), cancel.interruptible():
                        self.pool.advance(PACE_POLL)
                    continue
                self._process(self._pending.popleft(), started, seconds_before)
                report(self.progress())
        except Cancelled:
            pass  # the batch waited on is the first pending one again (see _process)
        except KeyboardInterrupt:
            pass  # a caller without a Cancellation: stops wherever the interrupt landed
        if cancel.requested:
            self.put_back = sum(len(b.cases) for b in self._pending)
            self._unsaved = True  # the pending batches, with the random state that drew them
        self._save()  # what comes next (reproduction, or --resume) reads the state
        return self.progress()

    @property
    def paced(self) -> bool:
        return self.config.pace and self.config.budget.seconds is not None

    def _hungry(self) -> bool:
        """Whether a library that is not saturated is about to run out of work."""
        backlog = self.pool.backlog()
        return any(b < HUNGRY_SECONDS for lib, b in backlog.items() if lib in self.libraries)

    def _saturated(self) -> set[str]:
        """Libraries with more queued work than ``PACE_SECONDS`` (none when not paced)."""
        if not self.paced:
            return set()
        return {lib for lib, b in self.pool.backlog().items() if b > PACE_SECONDS}

    def _drawn(self) -> int:
        """Cases drawn so far: compared ones and those still in flight."""
        return self.state.seq + sum(len(b.cases) for b in self._pending)

    def _drawn_out(self, seconds: float) -> bool:
        """Whether no further batch should be drawn (budget spent, counting drawn batches)."""
        budget = self.config.budget
        if budget.cases is not None:
            return self._drawn() >= budget.cases
        if self._stop_at is not None and time.monotonic() >= self._stop_at:
            return True
        return seconds >= (budget.seconds or 0.0)

    def _draw(self) -> _Batch:
        size = self.config.batch
        if self.config.budget.cases is not None:
            size = min(size, self.config.budget.cases - self._drawn())
        picks = [self.schedule.pick(self.rng) for _ in range(size)]
        saturated = self._saturated()
        cases = []
        for pick in picks:
            case = self._paced(self._case(pick), saturated)
            self._tally(case)  # the next case's floor counts this one
            cases.append(case)
        return self._submit(picks, cases)

    def _tally(self, case: Case) -> None:
        """Count a drawn case in each library's participation (see _below_floor)."""
        for lib in self._group_libraries.get(case.group, ()):
            books = self._drawn_part.setdefault(lib, [0, 0])
            books[0] += 1
            books[1] += lib in case.apis

    def _below_floor(self, lib: str) -> bool:
        """Whether leaving ``lib`` out of one more case of its groups would put it below the
        campaign's participation floor."""
        member, took_part = self._drawn_part.get(lib, (0, 0))
        return took_part < self.config.participation * (member + 1)

    def _cold(self, case: Case, saturated: set[str]) -> set[str]:
        """The saturated libraries of ``case`` that have not run a call of its input
        signature yet."""
        return {
            lib
            for lib in saturated & set(case.apis)
            if signature_key(case, lib) not in self._warm.get(lib, ())
        }

    def _paced(self, case: Case, saturated: set[str]) -> Case:
        """The case for a campaign where some libraries are saturated (their first calls,
        which trace or compile, fall behind the others). A saturated library takes part in
        the cases whose input signature it has run already (a warm call costs it little).
        A fresh case that would be cold for one is replaced by one of that library's warm
        cases of the group and dtype with fresh values of the case's value class
        (:func:`~xamt.inputs.draw.revalue`): every library takes part, on a signature the
        saturated one has warmed. With no warm case to take, the case goes without the
        saturated libraries still cold for it (two libraries stay, the least busy), except
        those that would fall below the participation floor: they take it cold, and the
        campaign waits for them."""
        left_out = self._cold(case, saturated)
        if not left_out:
            return case
        if not case.grad:
            warm = self._warm_case(case, left_out)
            if warm is not None:
                case, left_out = warm, self._cold(warm, saturated)
        left_out = {lib for lib in left_out if not self._below_floor(lib)}
        if not left_out:
            return case
        if len(case.apis) - len(left_out) < 2:
            backlog = self.pool.backlog()
            keep = sorted(left_out, key=lambda lib: backlog.get(lib, 0.0))
            left_out -= set(keep[: 2 - (len(case.apis) - len(left_out))])
        self.state.paced.update(left_out)
        return _without(case, left_out)

    def _warm_case(self, case: Case, cold: set[str]) -> Case | None:
        """A warm case of the group and dtype for one of the ``cold`` libraries (the busiest
        first), revalued with ``case``'s value class and seed; None where none has one."""
        backlog = self.pool.backlog()
        group = self.groups[case.group]
        for lib in sorted(cold, key=lambda lib: (-backlog.get(lib, 0.0), lib)):
            kept = self._warm_cases.get((lib, case.group, case.dtype))
            if not kept:
                continue
            base = kept[int(self.rng.integers(0, len(kept)))]
            fresh = revalue(base, group, self.rng, case.value_class, case.seed)
            if fresh is None:
                return None
            # the other libraries keep the members the fresh case chose
            apis = {**case.apis, lib: base.apis[lib]}
            return self._without_fatal(fit_apis(dataclasses.replace(fresh, apis=apis), group))
        return None

    def _drop_warm_cases(self, case: Case) -> None:
        """Forget the warm cases of ``case``'s signature (a library answered it slowly)."""
        for lib in case.apis:
            kept = self._warm_cases.get((lib, case.group, case.dtype))
            if kept:
                key = signature_key(case, lib)
                # (rebuilt, not deque.remove: a case's arrays have no truth value to compare)
                others = [c for c in kept if signature_key(c, lib) != key]
                kept.clear()
                kept.extend(others)

    def _submit(self, picks: list[Pick], cases: list[Case]) -> _Batch:
        return _Batch(picks=picks, cases=cases, submitted=self.replay.submit(cases))

    def progress(self) -> Progress:
        return Progress(
            cases=self.state.seq,
            seconds=self.state.seconds,
            group=self._last_group,
            candidates=Counter(self.state.kinds),
            signatures=len(self.state.seen),
            suspected=len(self.state.suspected),
        )

    # --- one batch -------------------------------------------------------------------------
    def _case(self, pick: Pick) -> Case:
        group = self.groups[pick.arm[0]]
        seed = int(self.rng.integers(0, 2**31))
        if pick.parent is not None:
            parent = case_from_jsonable(self.schedule.corpus_case(pick.parent))
            case = mutate(parent, group, self.rng)
        else:
            apis = pick_apis(group, self.config.libraries, self.rng, pick.arm[1])
            case = draw_case(group, self.rng, pick.arm[1], pick.arm[2], apis, seed)
        if (
            self.config.gradients
            and len(differentiable(group) & set(case.apis.values())) >= 2
            and eligible(case.values, group)
            and self.rng.random() < self.config.gradients
            # a whole-number parameter of HUGE_SIZE or more can make each call slow under the
            # deadline (numpy.round with decimals=2**31-1: 1.9 s), and the gradient's float64
            # reference makes four calls per input element: 64 for a (4, 4) input
            and not _huge_roles(case)
        ):
            case = gradient_case(case, group, self.rng)
        return self._without_fatal(fit_apis(self._lighter(case), group))

    def _lighter(self, case: Case) -> Case:
        """The case without the input classes its group's too-heavy inputs all had, and
        without huge sizes of roles known to be too heavy (see :data:`HUGE_SIZE`)."""
        sized = {
            role: FEASIBLE_SIZE
            for role in _huge_roles(case)
            if self.state.huge[role] >= FATAL_REPEATS
        }
        if sized:
            case = dataclasses.replace(case, values={**case.values, **sized})
            self.state.lightened += 1
        heavy = self.state.heavy.get(case.group)
        if not heavy or not heavy[0]:
            return case
        group = self.groups[case.group]
        held = set(triggers_in(input_classes(case, group)))
        if not set(heavy[0]) <= held:
            return case
        for trigger in heavy[0]:
            case = neutralized(case, group, trigger) or case
        self.state.lightened += 1
        return case

    def _note_heavy(self, case: Case, tags: Sequence[str]) -> None:
        triggers = set(triggers_in(tags))
        known = self.state.heavy.get(case.group)
        if known is None:
            self.state.heavy[case.group] = [sorted(triggers), 1]
        else:
            known[0] = sorted(set(known[0]) & triggers)
            known[1] += 1

    def _without_fatal(self, case: Case) -> Case:
        """The case without the libraries known to die on it (see :data:`FATAL_REPEATS`)."""
        drop = self._fatal_libraries(case)
        if not drop:
            return case
        self.state.skipped.update(drop)
        return _without(case, drop)

    def _fatal_libraries(self, case: Case) -> set[str]:
        """The libraries of ``case`` known to die on it. They are left out even where fewer
        than two libraries are left (paddle's gcd of floats hangs, and only mindspore shares
        the group): such a case compares nothing, so its arm earns nothing and the schedule
        turns to others, where each call of the dying library would cost a deadline."""
        keys = self._fatal_keys()
        if not keys:
            return set()
        tags = input_classes(case, self.groups[case.group])
        held = set(triggers_in(tags))
        mine = {lib: self._fatal_key(case, lib) for lib in case.apis}
        drop = {
            lib
            for lib, function, family, triggers, seen in keys
            if seen >= FATAL_REPEATS
            and mine.get(lib) == [lib, function, family]
            and set(triggers) <= held
        }
        return drop

    def _on_failure(self, ticket: int, lib: str, slot: int) -> None:
        """The pool's word that ``lib``'s worker died, hung or ran out of memory on a call of
        a batch in flight. A paced campaign notes the death at once rather than when the batch
        is booked: the library runs ahead of the slowest one (jax compiling), and would meet
        the same death in the batches between."""
        if not self.paced or lib == "numpy":  # numpy dying: a too-heavy input (see _account)
            return
        for batch in self._in_flight():
            if batch.submitted.ticket == ticket:
                i = batch.submitted.case_of(lib, slot)
                case = batch.cases[i]
                self._note_fatal(case, lib, input_classes(case, self.groups[case.group]))
                self._noted.setdefault(ticket, set()).add((i, lib))
                self._withdraw_fatal(case.group)
                return

    def _in_flight(self) -> list[_Batch]:
        """The batches submitted and not yet booked: the one being collected, then the rest."""
        return [self._current, *self._pending] if self._current else list(self._pending)

    def _withdraw_fatal(self, group: str) -> None:
        """Take back the calls of the batches in flight that a death just noted on ``group``
        rules out (those not yet sent): drawn before the death was known, each would cost
        another deadline or restart. Only when paced: what is sent in time depends on timing.
        (Deaths count across groups of one function, so every batch's cases are looked at.)"""
        if not self.paced:
            return
        for batch in self._in_flight():
            for i, case in enumerate(batch.cases):
                for lib in self._fatal_libraries(case):
                    batch.submitted.withdraw(i, lib)

    def _fatal_key(self, case: Case, lib: str) -> list[str]:
        """[library, canonical function, dtype family] of a death (see :data:`FATAL_REPEATS`)."""
        dtype = case.dtype or ""
        kind = "f" if dtype == "bfloat16" else np.dtype(dtype).kind if dtype in DTYPE_NAMES else ""
        family = DTYPE_FAMILIES.get(kind, dtype)
        return [lib, canonical_callable(lib, dlcore.function_op(self.groups[case.group])), family]

    def _note_fatal(self, case: Case, lib: str, tags: Sequence[str]) -> None:
        """Count a death of ``lib`` on this case's function and dtype family; the trigger
        classes kept are those every such death had (a worker that dies on several kinds of
        input of one function is left out of all of them)."""
        triggers = set(triggers_in(tags))
        mine = self._fatal_key(case, lib)
        for key in self._fatal_keys():  # (the function's deaths in any group count)
            if key[:3] == mine:
                key[3] = sorted(set(key[3]) & triggers)
                key[4] += 1
                return
        self.state.fatal.setdefault(case.group, []).append([*mine, sorted(triggers), 1])

    def _fatal_keys(self) -> list[list[Any]]:
        """Every death noted, whatever group it was met in: one function serves several groups
        (conv2d, conv2d[valid], conv3d[groups] are mxnet.nd.Convolution and paddle's conv), and
        each would otherwise pay its own deaths."""
        return [key for keys in self.state.fatal.values() for key in keys]

    def _process(self, batch: _Batch, started: float, seconds_before: float) -> None:
        picks, cases = batch.picks, batch.cases
        self._current = batch
        try:
            with self.state.phases.timed("wait"), self.cancel.interruptible():
                outcomes, references = batch.submitted.outcomes()
        except Cancelled:
            self._pending.appendleft(batch)  # not compared: --resume runs it first
            raise
        finally:
            self._current = None
        noted = self._noted.pop(batch.submitted.ticket, set())
        for i, case in enumerate(cases):
            withdrawn = {lib for lib, o in outcomes[i].items() if o.status == WITHDRAWN}
            if withdrawn:
                self.state.skipped.update(withdrawn)
                cases[i] = _without(case, withdrawn)
                outcomes[i] = {lib: o for lib, o in outcomes[i].items() if lib not in withdrawn}
        with self.state.phases.timed("judge"):
            replayed = [
                judge_case(c, self.groups[c.group], o, r, known=self.known, probes=p)
                for c, o, r, p in zip(
                    cases, outcomes, references, batch.submitted.probes, strict=True
                )
            ]
            case_records, candidates = self._account(picks, cases, replayed, noted)
        self.state.seconds = seconds_before + time.monotonic() - started
        now = time.monotonic()
        save = now - self._saved_at >= STATE_EVERY
        with self.state.phases.timed("commit"):
            self.store.commit_batch(
                self.campaign_id,
                cases=case_records,
                candidates=candidates,
                state=self._saved_state() if save else None,
                next_seq=self.state.seq,
            )
        if save:
            self._saved_at = now
        self._unsaved = not save

    def _save(self) -> None:
        """Save the state if the last batch went without it (the run stops here)."""
        if self._unsaved:
            with self.state.phases.timed("commit"):
                self.store.commit_batch(
                    self.campaign_id,
                    cases=[],
                    candidates=[],
                    state=self._saved_state(),
                    next_seq=self.state.seq,
                )
            self._saved_at, self._unsaved = time.monotonic(), False

    def _account(
        self,
        picks: list[Pick],
        cases: list[Case],
        replayed: list[Replayed],
        noted: Collection[tuple[int, str]] = (),
    ) -> tuple[list[CaseRecord], list[CandidateRecord]]:
        """Book one batch's judged cases: support, signatures, candidates, the schedule
        (``noted``: the deaths :meth:`_on_failure` noted already, as (case index, library))."""
        case_records, candidates = [], []
        for i, (pick, case, run) in enumerate(zip(picks, cases, replayed, strict=True)):
            seq = self.state.seq
            group = self.groups[case.group]
            if run.failed:
                entry = self.state.unjudged.setdefault(case.group, [0, run.failed])
                entry[0] += 1
            score = divergence(run.outcomes)
            for lib in self._group_libraries[case.group]:
                books = self.state.participation.setdefault(lib, [0, 0])
                books[0] += 1
                books[1] += lib in run.outcomes
            quick = all(
                o.status in ("ok", "error", "unsupported")
                and (o.seconds or 0.0) <= WARM_CASE_SECONDS
                for o in run.outcomes.values()
            )
            if not quick:
                self._drop_warm_cases(case)
            for lib in run.outcomes:
                if lib in case.apis:
                    key = signature_key(case, lib)
                    warm = self._warm.setdefault(lib, set())
                    if key not in warm and not case.grad and quick:
                        self._warm_cases.setdefault(
                            (lib, case.group, case.dtype), deque(maxlen=WARM_CASES)
                        ).append(case)
                    warm.add(key)
            if case.grad:
                self.state.gradients["cases"] += 1
                self.state.gradients.update(
                    lib for lib, o in run.outcomes.items() if o.grad_status == "ok"
                )
            novel = False
            reward_new = 0.0  # new suspected root causes this case showed first, by severity
            repeats = 0  # how often this case's discrepancies were seen before
            for lib, state in run.judgement.support.items():
                cell = self.state.support.setdefault(case.group, {}).setdefault(lib, {})
                if cell.get(case.dtype) != "ok":
                    cell[case.dtype] = state
            suspected = False  # the case shows a suspected bug (new or not)
            for signed in run.signed:
                sig = signed.signature
                count = self.state.seen.get(sig, 0)
                self.state.seen[sig] = count + 1
                if sig in self.state.suspected:
                    suspected = True
                    repeats = max(repeats, count)
                if count >= CANDIDATES_PER_SIGNATURE:
                    continue
                finding = finding_of(signed, run, group, self.known)
                if count == 0:
                    self.state.kinds[signed.blame.kind] += 1
                    if finding.suspected:
                        novel = suspected = True
                        reward_new += SEVERITY_REWARD[finding.severity]
                        self.state.suspected.add(sig)
                candidates.append(
                    CandidateRecord(
                        seq=seq,
                        signature=sig,
                        kind=signed.blame.kind,
                        group=case.group,
                        dtype=case.dtype,
                        payload=finding_json(finding),
                    )
                )
            # The schedule chases suspected bugs: a case whose disagreements are all policy
            # (documented differences, splits, refusals) earns little for its divergence, and
            # a suspected bug seen again less each time (a crash found once should not keep
            # drawing the budget, and restarting a worker, forever).
            weight = 1.0 if suspected else POLICY_DIVERGENCE
            reward = NOVELTY_BONUS * reward_new + DIVERGENCE_WEIGHT * weight * score / math.sqrt(
                1 + repeats
            )
            # Cases that show a suspected bug may be mutated further, unless a worker died or
            # hung on them: mutating those costs restarts and deadlines for little new.
            fatal = False
            killed = [lib for lib, o in run.outcomes.items() if o.status in HEAVY_STATUSES]
            if killed:
                self.state.huge.update(_huge_roles(case))
            if len(killed) >= 2 or "numpy" in killed:
                fatal = True
                self._note_heavy(case, run.tags)
            else:
                for lib, outcome in run.outcomes.items():
                    if outcome.status in FATAL_FAMILIES:
                        fatal = True
                        if (i, lib) not in noted:
                            self._note_fatal(case, lib, run.tags)
                            self._withdraw_fatal(case.group)
            keep = suspected and score > 0 and not fatal
            self.schedule.update(pick, reward, case_to_jsonable(case) if keep else None, novel)
            case_records.append(
                CaseRecord(
                    seq=seq,
                    group=case.group,
                    dtype=case.dtype,
                    value_class=case.value_class,
                    score=score,
                    kinds=tuple(sorted({s.blame.kind for s in run.signed})),
                )
            )
            self.state.seq += 1
            self._last_group = case.group
        return case_records, candidates

    def library_times(self) -> dict[str, LibraryTime]:
        """Each library's time over the whole campaign (earlier runs of it included)."""
        return merge_libraries(self.state.libraries, self.pool.times)

    def _saved_state(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "schedule": self.schedule.state(),
            "seen": self.state.seen,
            "kinds": dict(self.state.kinds),
            "seconds": self.state.seconds,
            "support": self.state.support,
            "suspected": sorted(self.state.suspected),
            "fatal": self.state.fatal,
            "skipped": dict(self.state.skipped),
            "gradients": dict(self.state.gradients),
            "participation": self.state.participation,
            "paced": dict(self.state.paced),
            "heavy": self.state.heavy,
            "lightened": self.state.lightened,
            "huge": dict(self.state.huge),
            "phases": self.state.phases.as_dict(),
            "unjudged": self.state.unjudged,
            "libraries": {lib: t.as_dict() for lib, t in self.library_times().items()},
            "pending": [b.jsonable() for b in self._pending],
        }


def signature_key(case: Case, library: str) -> tuple[Any, ...]:
    """What a library that traces or compiles per call specialises ``library``'s call of
    ``case`` on (the worker's own first-call key, :func:`protocol.input_signature`, over the
    case's values), with the API, the dtype and whether it differentiates."""
    return (case.apis.get(library, ""), case.dtype, case.grad, input_signature(case.values))


def expected_cases(budget: Budget) -> int:
    """The cases a budget should run: itself, or its seconds at :data:`EXPECTED_RATE`."""
    if budget.cases is not None:
        return budget.cases
    return int((budget.seconds or 0.0) * EXPECTED_RATE)


def fit_apis(case: Case, group: Group) -> Case:
    """The case with each library's member replaced, where it does not accept the drawn
    input (a lax primitive given inputs to broadcast), by the first of its members that does
    (none: kept, and left out of the verdict)."""
    if not any(strict(api) for api in case.apis.values()):
        return case  # the common case: nothing to check, no tags to compute
    tags = input_classes(case, group)
    apis = dict(case.apis)
    for lib, api in case.apis.items():
        if not accepts(group, api, case.dtype, tags):
            fit = [
                m.api
                for m in group.members
                if m.library == lib and accepts(group, m.api, case.dtype, tags)
            ]
            if fit:
                apis[lib] = fit[0]
    return case if apis == case.apis else dataclasses.replace(case, apis=apis)


def _without(case: Case, libraries: set[str]) -> Case:
    return dataclasses.replace(
        case, apis={lib: api for lib, api in case.apis.items() if lib not in libraries}
    )


def _huge_roles(case: Case) -> list[str]:
    """The parameters of ``case`` holding a whole number of at least :data:`HUGE_SIZE`."""
    return [
        role
        for role, v in case.values.items()
        if isinstance(v, int | np.integer) and not isinstance(v, bool) and abs(int(v)) >= HUGE_SIZE
    ]
