"""The SQLite store: campaigns, executed cases, candidate discrepancies and findings.

A campaign killed at any point (``kill -9`` included) resumes losing nothing and duplicating
nothing: after each batch, :meth:`Store.commit_batch` writes the batch's cases, its candidates
and the scheduler's state in one transaction, so the file always holds whole batches and the
state that matches them. On resume the loop reads that state back
(:meth:`Store.resumable_campaign`) and re-runs whatever it executed after the last commit.

Note:
    Durability. The database runs in WAL mode with ``synchronous=FULL``: every commit fsyncs the
    write-ahead log, so a committed batch survives a killed process *and* an OS crash or power
    loss. ``NORMAL`` would survive a killed process too, but after a power loss could roll back
    the last few batches; a batch takes seconds of library calls, so one fsync per batch costs
    nothing worth saving. A store is its ``.sqlite`` file plus, while open or after a crash, its
    ``-wal`` file: copy both, or open and close the store first (closing checkpoints the log).

    Schema. The file carries ``PRAGMA application_id`` (:data:`APPLICATION_ID`) and a schema
    version in ``PRAGMA user_version`` (:data:`SCHEMA_VERSION`). A file with another
    application id, a database without ours, or a newer version is refused.

    Creation. A new store is made whole in a temporary file beside the target and linked into
    place, so the store's path never holds a half-made store, not even for an instant. Any
    file already at the path is therefore someone else's, or a damaged store: an empty
    (zero-byte) file, an empty SQLite database or anything else that is not an xamt store is
    refused and never overwritten.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from xamt import schemas
from xamt.errors import XamtError
from xamt.findings import Finding, FindingsError, decode_case
from xamt.findings import from_json as finding_from_json
from xamt.findings import to_json as finding_to_json
from xamt.paths import check_signature
from xamt.types import DISCREPANCY_KINDS

if TYPE_CHECKING:
    from xamt.catalog.model import Group

SCHEMA_VERSION = 2
APPLICATION_ID = 0x78616D74  # "xamt"
CANDIDATE_STATUSES = ("pending", "reproduced", "flaky", "not-reproduced")
TRIAGE_STATUSES = CANDIDATE_STATUSES[1:]
BUSY_TIMEOUT_S = 30.0

SCHEMA = (
    """CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    config TEXT NOT NULL,
    state TEXT,
    next_seq INTEGER NOT NULL DEFAULT 0,
    batches INTEGER NOT NULL DEFAULT 0,
    started TEXT NOT NULL,
    updated TEXT NOT NULL,
    finished TEXT,
    summary TEXT
)""",
    "CREATE INDEX campaigns_by_name ON campaigns (name, id)",
    """CREATE TABLE cases (
    campaign INTEGER NOT NULL REFERENCES campaigns (id),
    seq INTEGER NOT NULL,
    grp TEXT NOT NULL,
    dtype TEXT NOT NULL,
    value_class TEXT NOT NULL,
    score REAL NOT NULL,
    kinds TEXT NOT NULL,
    PRIMARY KEY (campaign, seq)
) WITHOUT ROWID""",
    """CREATE TABLE candidates (
    id INTEGER PRIMARY KEY,
    campaign INTEGER NOT NULL REFERENCES campaigns (id),
    seq INTEGER NOT NULL,
    signature TEXT NOT NULL,
    kind TEXT NOT NULL,
    grp TEXT NOT NULL,
    dtype TEXT NOT NULL,
    payload TEXT NOT NULL,
    status TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'reproduced', 'flaky', 'not-reproduced')),
    reproduced INTEGER NOT NULL DEFAULT 0,
    runs INTEGER NOT NULL DEFAULT 0,
    UNIQUE (campaign, seq, signature)
)""",
    "CREATE INDEX candidates_by_status ON candidates (campaign, status)",
    """CREATE TABLE findings (
    signature TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    grp TEXT NOT NULL,
    dtype TEXT NOT NULL,
    payload TEXT NOT NULL,
    occurrences INTEGER NOT NULL,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
) WITHOUT ROWID""",
    """CREATE TABLE finding_campaigns (
    signature TEXT NOT NULL REFERENCES findings (signature),
    campaign INTEGER NOT NULL REFERENCES campaigns (id),
    PRIMARY KEY (signature, campaign)
) WITHOUT ROWID""",
    "CREATE INDEX finding_campaigns_by_campaign ON finding_campaigns (campaign)",
)


class StoreError(XamtError):
    """The store file is corrupted, foreign, newer than this xamt, unreadable or busy, or an id
    names nothing in it. The message names the file."""

    exit_code = 10


class StoreUnwritable(StoreError):
    """The store cannot be written (a read-only file or folder, a full disk, an I/O error):
    not a corrupted store. Said before the work where it can be (:meth:`Store.check_writable`)."""

    exit_code = 11


# SQLite's words for a store it cannot write (the file is fine, the place is not)
_UNWRITABLE = ("readonly", "read-only", "disk is full", "disk i/o error", "unable to open")


class UnknownSignature(StoreError):
    """No finding (or more than one) has this signature or signature prefix; the store is fine."""

    exit_code = 20


class NothingToResume(XamtError):
    """``xamt fuzz --resume`` on a folder without an unfinished campaign of that name."""

    exit_code = 23


@dataclass(frozen=True, kw_only=True)
class CaseRecord:
    """One executed case: where it was drawn, its divergence score, the kinds it showed."""

    seq: int
    group: str
    dtype: str
    value_class: str
    score: float
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class CandidateRecord:
    """One candidate discrepancy of a case, before triage.

    ``payload`` is JSON-able: the serialized case (``xamt.serialize.case_to_jsonable``) and
    summaries of the outcomes.
    """

    seq: int
    signature: str
    kind: str
    group: str
    dtype: str
    payload: dict[str, Any]


@dataclass(frozen=True, kw_only=True)
class CandidateRow:
    """A stored candidate with its triage status (one of :data:`CANDIDATE_STATUSES`)."""

    id: int
    campaign: int
    seq: int
    signature: str
    kind: str
    group: str
    dtype: str
    payload: dict[str, Any]
    status: str
    reproduced: int
    runs: int


@dataclass(frozen=True, kw_only=True)
class FindingRow:
    """A reproduced finding, one per signature across campaigns.

    ``payload`` is the newest one recorded (the findings.json entry); ``first_seen`` and
    ``last_seen`` are ISO-8601 UTC times; ``campaigns`` are the ids that saw it, ascending.
    """

    signature: str
    kind: str
    group: str
    dtype: str
    payload: dict[str, Any]
    occurrences: int
    first_seen: str
    last_seen: str
    campaigns: tuple[int, ...]
    path: str = ""

    @cached_property
    def finding(self) -> Finding:
        """The payload as a :class:`~xamt.findings.Finding`, with the row's counters;
        :class:`StoreError` if the row's signature or its payload is malformed (checked once
        per row)."""
        check_signature(self.signature, f"{self.path}: a finding", StoreError)
        try:
            found = finding_from_json(self.payload, f"{self.path}: finding {self.signature}")
        except FindingsError as exc:
            raise StoreError(f"{exc}; the store is corrupted or from another xamt") from None
        return found.replace(
            signature=self.signature,
            occurrences=self.occurrences,
            first_seen=self.first_seen,
            last_seen=self.last_seen,
        )


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with suppress(OSError):
            Path(f"{path}{suffix}").unlink()


def _sync_folder(folder: Path) -> None:
    """Make a new entry of ``folder`` durable (where the platform allows)."""
    with suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def utc_now() -> str:
    """The current time, ISO-8601 UTC with milliseconds (``2024-05-01T12:00:00.000Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _loads(text: str, what: str) -> Any:
    """A JSON column's value; StoreError (exit 10) if it is not JSON."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{what}: not valid JSON ({exc}); the store is corrupted") from None


def _dumps(value: Any, what: str) -> str:
    try:
        return json.dumps(value, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{what} is not JSON-able: {exc}") from exc


def _payload(finding: Finding) -> str:
    """The payload column of ``finding``: its findings.json entry."""
    return _dumps(finding_to_json(finding), "finding payload")


class Store:
    """An open xamt store. Use as a context manager, or call :meth:`close`.

    Every public method is one transaction: it happens whole or not at all, and a failing one
    touches no data (of its campaign or any other). SQLite errors come out as
    :class:`StoreError`; misuse by the caller (a bad status, a state going backwards) as
    ``ValueError``.
    """

    def __init__(self, path: Path, *, readonly: bool = False) -> None:
        self.path = Path(path)
        self.readonly = readonly
        if self.path.is_dir():
            raise StoreError(f"{self.path}: is a folder, not an xamt store; name a file")
        if self.path.exists() or self.path.is_symlink():
            self._check_file()
        elif readonly:
            raise StoreError(f"{self.path}: no such store")
        else:
            self._unwritable_place()
            self._create_file()
        if not readonly:
            self._unwritable_place()
        try:
            if readonly:
                self._conn = self._connect_readonly()
            else:
                self._conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None
                )
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot open the store ({exc})") from exc
        try:
            self._open()
        except BaseException:
            self._conn.close()
            raise

    def _connect_readonly(self) -> sqlite3.Connection:
        """A read-only connection that writes nothing beside the store. A store whose
        write-ahead log is empty or gone (xamt checkpoints it on close) is read as immutable;
        one whose log holds commits (a process still has it open, or was killed) is read
        through SQLite's shared-memory file, which needs a writable folder."""
        base = self.path.resolve().as_uri()
        wal = Path(f"{self.path}-wal")
        if not wal.exists() or wal.stat().st_size == 0:
            return sqlite3.connect(
                f"{base}?mode=ro&immutable=1",
                uri=True,
                timeout=BUSY_TIMEOUT_S,
                isolation_level=None,
            )
        conn = sqlite3.connect(
            f"{base}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
        )
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            raise StoreUnwritable(
                f"{self.path}: cannot read the store in place ({exc}): its write-ahead log "
                "holds commits and the folder is read-only; copy the folder somewhere writable"
            ) from None
        return conn

    def _unwritable_place(self) -> None:
        """:class:`StoreUnwritable` when the store (or, for a new one, its folder) cannot be
        written: a read-only file or folder (SQLite writes a journal beside the store)."""
        folder = self.path.parent if str(self.path.parent) else Path(".")
        if folder.exists() and not os.access(folder, os.W_OK | os.X_OK):
            raise StoreUnwritable(
                f"{self.path}: cannot write the store: its folder {folder} is read-only; "
                "make it writable or choose another --out (xamt merge reads such a store)"
            )
        if self.path.exists() and not os.access(self.path, os.W_OK):
            raise StoreUnwritable(
                f"{self.path}: cannot write the store: the file is read-only; make it "
                "writable, or copy the folder (xamt merge reads such a store)"
            )

    # -- opening -------------------------------------------------------------------------

    def _open(self) -> None:
        conn = self._conn
        try:
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            raise self._not_a_store(exc) from exc
        if app_id == 0 and version == 0 and tables == 0:
            raise StoreError(
                f"{self.path}: an SQLite database with nothing in it, not an xamt store; xamt "
                "does not write into a file it did not make: delete it, or name another file"
            )
        if app_id != APPLICATION_ID:
            raise StoreError(
                f"{self.path}: not an xamt store (an SQLite database of another application); "
                "name another file"
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by a newer xamt (schema {version}, this xamt reads up to "
                f"{SCHEMA_VERSION}); upgrade xamt or name another file"
            )
        if version < 1:
            raise StoreError(f"{self.path}: not an xamt store (schema version {version})")
        if version < SCHEMA_VERSION:
            raise StoreError(
                f"{self.path}: written by an older xamt (store schema {version}: one finding "
                "per odd set and tag set, which this xamt cannot turn into root causes without "
                "re-running every case); start a new store (another --out folder) and keep "
                "this one for the older xamt"
            )
        try:
            problems = [row[0] for row in conn.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            raise self._not_a_store(exc) from exc
        if problems != ["ok"]:
            raise StoreError(
                f"{self.path}: not an xamt store (corrupted: {'; '.join(problems[:3])})"
            )
        self._configure()

    def _check_file(self) -> None:
        """Refuse what is at the path unless it may be a store: a regular file, not empty."""
        try:
            info = self.path.stat()
        except OSError as exc:
            raise StoreError(
                f"{self.path}: cannot read the store ({exc.strerror or exc}); name another file"
            ) from None
        if not self.path.is_file():
            raise StoreError(f"{self.path}: not a regular file, not an xamt store; name a file")
        if info.st_size == 0:
            raise StoreError(
                f"{self.path}: an empty file (0 bytes), not an xamt store: a store that was "
                "truncated or never written. xamt does not overwrite it: restore the store "
                "from a copy, or delete the file to start a new store there"
            )

    def _create_file(self) -> None:
        """Make a new store: the schema in a temporary file beside the path, linked into place
        (if another process made the store meanwhile, that one is kept)."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _remove_database(tmp)
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("BEGIN")
                for statement in SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
                conn.execute("PRAGMA journal_mode = WAL").fetchone()
            finally:
                conn.close()  # checkpoints: the file alone is the whole store
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another process made it first
            except OSError:  # a file system without hard links
                if not self.path.exists():
                    os.replace(tmp, self.path)
            _sync_folder(self.path.parent)
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"{self.path}: cannot create the store ({exc})") from exc
        finally:
            _remove_database(tmp)

    def _configure(self) -> None:
        if self.readonly:
            return
        try:
            self._conn.execute("PRAGMA journal_mode = WAL").fetchone()
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as exc:
            raise self._not_a_store(exc) from exc

    def _not_a_store(self, exc: sqlite3.Error) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and any(
            w in str(exc).lower() for w in _UNWRITABLE
        ):
            return self._failed("open it", exc)
        return StoreError(
            f"{self.path}: not an xamt store ({exc}); restore it from a copy or name a new file"
        )

    def _failed(self, what: str, exc: sqlite3.Error) -> StoreError:
        if isinstance(exc, sqlite3.OperationalError) and any(
            w in str(exc).lower() for w in _UNWRITABLE
        ):
            return StoreUnwritable(
                f"{self.path}: cannot write the store (could not {what}: {exc}); free space "
                "or make it writable, then run again (what was committed before is kept)"
            )
        if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
            return StoreError(
                f"{self.path}: busy: another process holds the store (could not {what} "
                f"within {BUSY_TIMEOUT_S:.0f} s); wait for it or name another file"
            )
        if isinstance(exc, sqlite3.DataError | sqlite3.IntegrityError | sqlite3.OperationalError):
            return StoreError(f"{self.path}: could not {what} ({exc})")
        return self._not_a_store(exc)

    @contextmanager
    def _transaction(self, what: str) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; any exception rolls everything back."""
        conn = self._conn
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.DatabaseError as exc:
            raise self._failed(what, exc) from exc
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:
            with suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.DatabaseError):
                raise self._failed(what, exc) from exc
            raise

    def _query(self, what: str, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            return self._conn.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:
            raise self._failed(what, exc) from exc

    def _before_commit(self, campaign: int) -> None:
        """Called inside :meth:`commit_batch` after the inserts, before ``COMMIT``.

        Does nothing; tests replace it to interrupt a batch mid-transaction.
        """

    # -- lifetime ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the file (checkpointing the write-ahead log). Closing twice is harmless."""
        self._conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- campaigns -----------------------------------------------------------------------

    def start_campaign(self, *, name: str, config: dict[str, Any]) -> int:
        """Record a new campaign; return its id."""
        config_json = _dumps(config, "campaign config")
        now = utc_now()
        with self._transaction("start a campaign") as conn:
            cur = conn.execute(
                "INSERT INTO campaigns (name, config, started, updated) VALUES (?, ?, ?, ?)",
                (name, config_json, now, now),
            )
            assert cur.lastrowid is not None
            return cur.lastrowid

    def resumable_campaign(
        self, name: str
    ) -> tuple[int, dict[str, Any], dict[str, Any] | None, int] | None:
        """The latest unfinished campaign called ``name``: ``(id, config, state, next_seq)``.

        ``state`` is the scheduler state of the last committed batch (None before the first);
        ``next_seq`` is the sequence number to run next. None when there is nothing to resume.
        """
        rows = self._query(
            "find a campaign to resume",
            "SELECT id, config, state, next_seq FROM campaigns "
            "WHERE name = ? AND finished IS NULL ORDER BY id DESC LIMIT 1",
            (name,),
        )
        if not rows:
            return None
        cid, config, state, next_seq = rows[0]
        state_data = None if state is None else self._state(cid, state)
        config_data = _loads(config, f"{self.path}: campaign {cid} config")
        if not isinstance(config_data, dict):
            raise StoreError(f"{self.path}: campaign {cid} config is not an object; corrupted")
        if not isinstance(next_seq, int) or next_seq < 0:
            raise StoreError(f"{self.path}: campaign {cid} next_seq {next_seq!r} is corrupted")
        return cid, config_data, state_data, next_seq

    def _state(self, campaign: int, text: str) -> dict[str, Any]:
        """A campaign's state column: JSON of the shape of ``campaign-state.schema.json``."""
        where = f"{self.path}: campaign {campaign} state"
        state = _loads(text, where)
        if not isinstance(state, dict):
            raise StoreError(f"{where} is not an object; the store is corrupted")
        schemas.validate("campaign-state", state, f"{where} (corrupted)", StoreError)
        return state

    def last_campaign(self, name: str) -> int | None:
        """The id of the latest campaign called ``name`` (finished or not), None if none."""
        rows = self._query(
            "find a campaign",
            "SELECT id FROM campaigns WHERE name = ? ORDER BY id DESC LIMIT 1",
            (name,),
        )
        return int(rows[0][0]) if rows else None

    def unfinished_campaigns(self) -> list[str]:
        """The names of the campaigns not finished, oldest first."""
        rows = self._query(
            "list unfinished campaigns",
            "SELECT name FROM campaigns WHERE finished IS NULL GROUP BY name ORDER BY min(id)",
        )
        return [str(name) for (name,) in rows]

    def campaign_state(self, campaign: int) -> dict[str, Any]:
        """The state of ``campaign``'s last committed batch (empty before the first)."""
        rows = self._query(
            "read a campaign's state", "SELECT state FROM campaigns WHERE id = ?", (campaign,)
        )
        if not rows:
            raise StoreError(f"{self.path}: no campaign {campaign}")
        if rows[0][0] is None:
            return {}
        return self._state(campaign, rows[0][0])

    def commit_batch(
        self,
        campaign: int,
        *,
        cases: Sequence[CaseRecord],
        candidates: Sequence[CandidateRecord],
        state: dict[str, Any] | None,
        next_seq: int,
    ) -> None:
        """Record a batch's cases, its candidates and the scheduler state, in one transaction.

        ``state`` None records the rows only: the saved state (and its ``next_seq``) stay those
        of an earlier batch, and a resume first drops the rows past them
        (:meth:`discard_after`) to run those cases again from that state.

        Note:
            Idempotent: rows already stored (same ``(campaign, seq)`` case, same
            ``(campaign, seq, signature)`` candidate) are kept as they are, so a batch committed
            twice is stored once. ``next_seq`` may not go backwards and must exceed every case
            seq in the batch; the campaign must exist and be unfinished.
        """
        state_json = None if state is None else _dumps(state, "scheduler state")
        case_rows = [
            (
                campaign,
                c.seq,
                c.group,
                c.dtype,
                c.value_class,
                float(c.score),
                _dumps(list(c.kinds), "kinds"),
            )
            for c in cases
        ]
        candidate_rows = [
            (campaign, c.seq, c.signature, c.kind, c.group, c.dtype, _dumps(c.payload, "payload"))
            for c in candidates
        ]
        if any(c.seq >= next_seq for c in cases) or any(c.seq >= next_seq for c in candidates):
            raise ValueError(f"next_seq {next_seq} must exceed every seq of the batch")
        with self._transaction(f"commit a batch of campaign {campaign}") as conn:
            row = conn.execute(
                "SELECT next_seq, finished FROM campaigns WHERE id = ?", (campaign,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no campaign {campaign}")
            if row[1] is not None:
                raise ValueError(f"campaign {campaign} is finished; start a new one")
            if next_seq < row[0] and state_json is not None:
                raise ValueError(
                    f"next_seq {next_seq} goes back from {row[0]} (campaign {campaign})"
                )
            conn.executemany(
                "INSERT OR IGNORE INTO cases (campaign, seq, grp, dtype, value_class, score, kinds)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                case_rows,
            )
            conn.executemany(
                "INSERT OR IGNORE INTO candidates (campaign, seq, signature, kind, grp, dtype, "
                "payload) VALUES (?, ?, ?, ?, ?, ?, ?)",
                candidate_rows,
            )
            if state_json is not None:
                conn.execute(
                    "UPDATE campaigns SET state = ?, next_seq = ?, batches = batches + 1, "
                    "updated = ? WHERE id = ?",
                    (state_json, next_seq, utc_now(), campaign),
                )
            self._before_commit(campaign)

    def discard_after(self, campaign: int, next_seq: int) -> int:
        """Drop the cases, and the candidates not triaged yet, of ``campaign`` from ``next_seq``
        on: rows committed after the last saved state, which a resume runs again. Returns the
        number of cases dropped."""
        with self._transaction(f"discard the unsaved batches of campaign {campaign}") as conn:
            cur = conn.execute(
                "DELETE FROM cases WHERE campaign = ? AND seq >= ?", (campaign, next_seq)
            )
            conn.execute(
                "DELETE FROM candidates WHERE campaign = ? AND seq >= ? AND status = 'pending'",
                (campaign, next_seq),
            )
            return cur.rowcount

    def finish_campaign(self, campaign: int, *, summary: dict[str, Any]) -> None:
        """Mark a campaign finished (it is no longer resumable) and keep its summary."""
        summary_json = _dumps(summary, "campaign summary")
        now = utc_now()
        with self._transaction(f"finish campaign {campaign}") as conn:
            cur = conn.execute(
                "UPDATE campaigns SET finished = ?, updated = ?, summary = ? WHERE id = ?",
                (now, now, summary_json, campaign),
            )
            if cur.rowcount != 1:
                raise StoreError(f"{self.path}: no campaign {campaign}")

    # -- triage --------------------------------------------------------------------------

    def pending_candidates(self, campaign: int) -> list[CandidateRow]:
        """Candidates of a campaign still waiting for triage, in the order they were found."""
        rows = self._query(
            "read pending candidates",
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates "
            "WHERE campaign = ? AND status = 'pending' ORDER BY seq, id",
            (campaign,),
        )
        return [_candidate_row(row, self.path) for row in rows]

    def candidate(self, candidate_id: int) -> CandidateRow:
        """One candidate by id (any status)."""
        rows = self._query(
            "read a candidate",
            f"SELECT {_CANDIDATE_COLUMNS} FROM candidates WHERE id = ?",
            (candidate_id,),
        )
        if not rows:
            raise StoreError(f"{self.path}: no candidate {candidate_id}")
        return _candidate_row(rows[0], self.path)

    def set_candidate_status(
        self,
        candidate_id: int,
        status: str,
        reproduced: int,
        runs: int,
        *,
        finding: Finding | None = None,
        occurrences: int = 1,
        siblings: Sequence[int] = (),
    ) -> None:
        """Record a candidate's triage: ``status`` is one of :data:`TRIAGE_STATUSES`.

        With ``finding`` (when status is 'reproduced') the finding is upserted under the
        candidate's signature, kind, group, dtype and campaign *in the same transaction*, and so
        are the verdicts of ``siblings``, the other candidates of that signature (reproduction
        runs one per signature): a run killed after the finding but before them would leave
        them pending, and a resumed run would reproduce them and count the finding again.

        Note:
            Use ``finding=`` rather than a separate :meth:`upsert_finding` in triage: a run
            killed between the two would leave the candidate pending and count the occurrence
            again on resume. The finding is only counted when the candidate leaves 'pending',
            so calling this twice counts it once.
        """
        if status not in TRIAGE_STATUSES:
            raise ValueError(f"status {status!r} is not one of {', '.join(TRIAGE_STATUSES)}")
        if finding is not None and status != "reproduced":
            raise ValueError(f"a finding comes only with status 'reproduced', not {status!r}")
        finding_json = None if finding is None else _payload(finding)
        with self._transaction(f"set the status of candidate {candidate_id}") as conn:
            row = conn.execute(
                "SELECT status, signature, campaign, kind, grp, dtype FROM candidates WHERE id = ?",
                (candidate_id,),
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no candidate {candidate_id}")
            conn.executemany(
                "UPDATE candidates SET status = ?, reproduced = ?, runs = ? WHERE id = ?",
                [(status, reproduced, runs, cid) for cid in (candidate_id, *siblings)],
            )
            previous, signature, campaign, kind, group, dtype = row
            if finding_json is not None and previous == "pending":
                self._upsert(
                    conn,
                    signature=signature,
                    campaign=campaign,
                    kind=kind,
                    group=group,
                    dtype=dtype,
                    payload_json=finding_json,
                    occurrences=occurrences,
                )

    def record_runs(self, progress: Sequence[tuple[int, int, int]]) -> None:
        """Record reproduction runs of pending candidates, in one transaction: each item is
        ``(candidate id, runs in which it reproduced, runs done)``. A candidate keeps status
        'pending' until :meth:`set_candidate_status` gives its verdict, so a run killed between
        two chunks continues from the runs recorded here."""
        with self._transaction("record reproduction runs") as conn:
            conn.executemany(
                "UPDATE candidates SET reproduced = ?, runs = ? "
                "WHERE id = ? AND status = 'pending'",
                [(hits, runs, cid) for cid, hits, runs in progress],
            )

    # -- findings ------------------------------------------------------------------------

    def upsert_finding(self, finding: Finding, *, campaign: int) -> None:
        """Record one occurrence of ``finding`` (under its signature) in a campaign.

        The first occurrence makes the row; later ones add 1 to ``occurrences``, set
        ``last_seen``, add the campaign, and replace the payload (the finding's findings.json
        entry) with the newer one (it holds the case and outputs of the current library
        versions, which a recurrence or regression comment should show; ``first_seen`` keeps
        the history). The record's own ``occurrences`` and dates are not read.
        """
        payload_json = _payload(finding)
        with self._transaction(f"record finding {finding.signature}") as conn:
            self._upsert(
                conn,
                signature=finding.signature,
                campaign=campaign,
                kind=finding.kind,
                group=finding.group,
                dtype=finding.dtype,
                payload_json=payload_json,
            )

    def _upsert(
        self,
        conn: sqlite3.Connection,
        *,
        signature: str,
        campaign: int,
        kind: str,
        group: str,
        dtype: str,
        payload_json: str,
        occurrences: int = 1,
        first_seen: str | None = None,
    ) -> None:
        if conn.execute("SELECT 1 FROM campaigns WHERE id = ?", (campaign,)).fetchone() is None:
            raise StoreError(f"{self.path}: no campaign {campaign}")
        now = utc_now()
        conn.execute(
            "INSERT INTO findings (signature, kind, grp, dtype, payload, occurrences, "
            "first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (signature) DO UPDATE SET "
            "occurrences = occurrences + excluded.occurrences, "
            "first_seen = min(first_seen, excluded.first_seen), "
            "last_seen = excluded.last_seen, payload = excluded.payload, "
            "kind = excluded.kind, grp = excluded.grp, dtype = excluded.dtype",
            (signature, kind, group, dtype, payload_json, occurrences, first_seen or now, now),
        )
        conn.execute(
            "INSERT OR IGNORE INTO finding_campaigns (signature, campaign) VALUES (?, ?)",
            (signature, campaign),
        )

    def update_finding(self, finding: Finding) -> None:
        """Replace the payload of the finding of ``finding.signature`` (after triage or a
        verification) without counting an occurrence; its columns (kind, group, dtype,
        counters, dates, campaigns) stay as they are."""
        signature = finding.signature
        payload_json = _payload(finding)
        with self._transaction(f"update finding {signature}") as conn:
            cursor = conn.execute(
                "UPDATE findings SET payload = ? WHERE signature = ?", (payload_json, signature)
            )
            if cursor.rowcount == 0:
                raise StoreError(f"{self.path}: no finding {signature}")

    def import_finding(self, finding: Finding, *, campaign: int) -> None:
        """Record a finding met in another store (a merge) in ``campaign``, with the record's
        own ``occurrences``, ``first_seen`` and ``last_seen``: occurrences add up, the earliest
        ``first_seen`` and latest ``last_seen`` win, and the payload is the one seen last."""
        signature = finding.signature
        payload_json = _payload(finding)
        with self._transaction(f"import finding {signature}") as conn:
            if conn.execute("SELECT 1 FROM campaigns WHERE id = ?", (campaign,)).fetchone() is None:
                raise StoreError(f"{self.path}: no campaign {campaign}")
            conn.execute(
                "INSERT INTO findings (signature, kind, grp, dtype, payload, occurrences, "
                "first_seen, last_seen) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (signature) DO UPDATE SET "
                "occurrences = occurrences + excluded.occurrences, "
                "first_seen = min(first_seen, excluded.first_seen), "
                "payload = CASE WHEN excluded.last_seen >= last_seen "
                "THEN excluded.payload ELSE payload END, "
                "last_seen = max(last_seen, excluded.last_seen)",
                (
                    signature,
                    finding.kind,
                    finding.group,
                    finding.dtype,
                    payload_json,
                    finding.occurrences,
                    finding.first_seen,
                    finding.last_seen,
                ),
            )
            conn.execute(
                "INSERT OR IGNORE INTO finding_campaigns (signature, campaign) VALUES (?, ?)",
                (signature, campaign),
            )

    def drop_finding(self, signature: str) -> None:
        """Remove finding ``signature`` and its campaign links, in one transaction: a suspected
        hang that a patient re-run saw finish was never one (nothing else is removed)."""
        with self._transaction(f"drop finding {signature}") as conn:
            conn.execute("DELETE FROM finding_campaigns WHERE signature = ?", (signature,))
            if conn.execute("DELETE FROM findings WHERE signature = ?", (signature,)).rowcount != 1:
                raise StoreError(f"{self.path}: no finding {signature}")

    def rekey_finding(self, old: str, finding: Finding) -> None:
        """Move finding ``old`` to the signature of ``finding``, with ``finding`` as its payload
        (after triage found its trigger), in one transaction: its occurrences, campaigns and
        first sighting join an existing finding of that signature, or make it (with the kind,
        group and dtype of ``old``); ``old`` is gone afterwards."""
        new = finding.signature
        if old == new:
            self.update_finding(finding)
            return
        payload_json = _payload(finding)
        with self._transaction(f"rekey finding {old}") as conn:
            row = conn.execute(
                "SELECT kind, grp, dtype, occurrences, first_seen FROM findings "
                "WHERE signature = ?",
                (old,),
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no finding {old}")
            kind, group, dtype, occurrences, first_seen = row
            campaigns = [
                c
                for (c,) in conn.execute(
                    "SELECT campaign FROM finding_campaigns WHERE signature = ?", (old,)
                ).fetchall()
            ]
            conn.execute("DELETE FROM finding_campaigns WHERE signature = ?", (old,))
            conn.execute("DELETE FROM findings WHERE signature = ?", (old,))
            for i, campaign in enumerate(campaigns):
                self._upsert(
                    conn,
                    signature=new,
                    campaign=campaign,
                    kind=kind,
                    group=group,
                    dtype=dtype,
                    payload_json=payload_json,
                    occurrences=occurrences if i == 0 else 0,
                    first_seen=first_seen,
                )

    def finding(self, signature: str) -> FindingRow:
        """One finding by its signature, or a unique prefix of it (one indexed query: triage
        asks for thousands)."""
        if len(signature) == 16:
            rows = self._findings("WHERE signature = ?", (signature,), limit=2)
        else:
            rows = self._findings(
                "WHERE substr(signature, 1, ?) = ?", (len(signature), signature), limit=2
            )
        if len(rows) != 1:
            what = "no finding" if not rows else f"{len(rows)} findings"
            raise UnknownSignature(
                f"{self.path}: {what} with signature {signature!r}; "
                "see findings.json for the signatures"
            )
        return rows[0]

    def findings(self, campaign: int | None = None) -> list[FindingRow]:
        """All findings, or those seen in ``campaign``, oldest first."""
        if campaign is None:
            return self._findings("", ())
        return self._findings(
            "WHERE signature IN (SELECT signature FROM finding_campaigns WHERE campaign = ?)",
            (campaign,),
        )

    def _findings(
        self, where: str, params: tuple[Any, ...], limit: int | None = None
    ) -> list[FindingRow]:
        rows = self._query(
            "read findings",
            "SELECT signature, kind, grp, dtype, payload, occurrences, first_seen, last_seen, "
            "(SELECT group_concat(campaign) FROM (SELECT campaign FROM finding_campaigns fc "
            " WHERE fc.signature = f.signature ORDER BY campaign)) "
            f"FROM findings f {where} ORDER BY first_seen, signature"
            + (f" LIMIT {int(limit)}" if limit is not None else ""),
            params,
        )
        return [self._finding_row(row) for row in rows]

    def _finding_row(self, row: tuple[Any, ...]) -> FindingRow:
        """A findings row, its columns checked (SQLite keeps any type in any column)."""
        sig, kind, group, dtype, payload, occurrences, first, last, campaigns = row
        where = f"{self.path}: finding {sig!r}"[:200]
        if not all(isinstance(v, str) for v in (sig, kind, group, dtype, first, last)):
            raise StoreError(f"{where}: a text column holds another type; the store is corrupted")
        if not isinstance(occurrences, int) or occurrences < 0:
            raise StoreError(
                f"{where}: occurrences {occurrences!r} is not a count; the store is corrupted"
            )
        try:
            seen_in = tuple(int(c) for c in campaigns.split(",")) if campaigns else ()
        except (AttributeError, ValueError):
            raise StoreError(f"{where}: its campaigns are corrupted ({campaigns!r})") from None
        return FindingRow(
            signature=sig,
            kind=kind,
            group=group,
            dtype=dtype,
            payload=_loads(payload, f"{self.path}: finding {sig}"),
            occurrences=occurrences,
            first_seen=first,
            last_seen=last,
            campaigns=seen_in,
            path=str(self.path),
        )

    def counts(self, campaign: int) -> dict[str, int]:
        """Tallies of a campaign, every key always present.

        ``cases``, ``batches``, ``next_seq``, ``divergent_cases`` (cases that showed any kind),
        ``candidates``, ``candidates.<status>`` for each of :data:`CANDIDATE_STATUSES`,
        ``findings`` (distinct signatures seen in the campaign) and ``findings.<kind>`` for
        each of ``xamt.types.DISCREPANCY_KINDS`` (and any other kind stored).
        """
        try:
            return self._counts(campaign)
        except sqlite3.DatabaseError as exc:
            raise self._failed(f"count campaign {campaign}", exc) from exc

    def _counts(self, campaign: int) -> dict[str, int]:
        conn = self._conn
        conn.execute("BEGIN")  # one read snapshot for all the tallies
        try:
            row = conn.execute(
                "SELECT batches, next_seq FROM campaigns WHERE id = ?", (campaign,)
            ).fetchone()
            if row is None:
                raise StoreError(f"{self.path}: no campaign {campaign}")
            cases, divergent = conn.execute(
                "SELECT count(*), coalesce(sum(kinds != '[]'), 0) FROM cases WHERE campaign = ?",
                (campaign,),
            ).fetchone()
            out = {"cases": cases, "batches": row[0], "next_seq": row[1]}
            out["divergent_cases"] = divergent
            by_status = dict(
                conn.execute(
                    "SELECT status, count(*) FROM candidates WHERE campaign = ? GROUP BY status",
                    (campaign,),
                ).fetchall()
            )
            out["candidates"] = sum(by_status.values())
            for status in CANDIDATE_STATUSES:
                out[f"candidates.{status}"] = by_status.get(status, 0)
            by_kind = dict(
                conn.execute(
                    "SELECT f.kind, count(*) FROM findings f JOIN finding_campaigns fc "
                    "ON fc.signature = f.signature WHERE fc.campaign = ? GROUP BY f.kind",
                    (campaign,),
                ).fetchall()
            )
            out["findings"] = sum(by_kind.values())
            for kind in (*DISCREPANCY_KINDS, *sorted(set(by_kind) - set(DISCREPANCY_KINDS))):
                out[f"findings.{kind}"] = by_kind.get(kind, 0)
            return out
        finally:
            conn.execute("COMMIT")


def check_resumable(path: Path, name: str) -> None:
    """:class:`NothingToResume` unless the store at ``path`` holds an unfinished campaign called
    ``name`` (``xamt fuzz --resume``, checked before any worker starts); :class:`StoreError`
    for a file that is not a store. Creates nothing."""
    folder = path.parent
    if not (path.exists() or path.is_symlink()):
        raise NothingToResume(
            f"{folder}: nothing to resume: there is no store ({path.name}) in this folder; "
            "run without --resume to start a new campaign, or point --out at the folder of "
            "the campaign to resume"
        )
    with Store(path) as store:
        if store.resumable_campaign(name) is not None:
            return
        others = [n for n in store.unfinished_campaigns() if n != name]
        ran = store._query("find a campaign", "SELECT 1 FROM campaigns WHERE name = ?", (name,))
    state = "finished" if ran else "is not in it"
    hint = f"; unfinished there: {', '.join(others)} (another --shard?)" if others else ""
    raise NothingToResume(
        f"{path}: nothing to resume: campaign {name!r} {state}{hint}. Run without --resume "
        "to start a new campaign"
    )


def check_store(
    path: Path, name: str, *, resume: bool, groups: Mapping[str, Group] | None = None
) -> None:
    """Check the store of an output folder before a campaign starts (no worker runs, nothing
    is created): :class:`NothingToResume` when ``resume`` finds no unfinished campaign called
    ``name``; :class:`StoreError` for a file that is not a store, or a store holding anything
    malformed that the campaign would read (the state to resume, a pending candidate, a
    finding: their signatures and payloads), or a case it would replay that does not fit its
    group among ``groups`` (:func:`xamt.replay.case_misfit`; findings of other groups are not
    replayed and not asked about). No store yet is fine for a new campaign."""
    from xamt.replay import case_misfit

    def check_case(data: Any, where: str, group: str | None = None) -> None:
        try:
            case = decode_case(data, where, FindingsError)
        except FindingsError as exc:
            raise StoreError(f"{exc}; the store is corrupted") from None
        why = case_misfit(case, groups) if groups is not None else ""
        if not why and group is not None and case.group != group:
            why = f"its group {case.group!r} is not the finding's {group!r}"
        if why:
            raise StoreError(f"{where}: the case does not fit: {why}; the store is corrupted")

    if resume:
        check_resumable(path, name)
    if not (path.exists() or path.is_symlink()):
        return
    with Store(path) as store:
        found = store.resumable_campaign(name) if resume else None
        if found is not None and found[2]:
            schemas.validate(
                "campaign-state",
                found[2],
                f"{path}: campaign {found[0]} state (corrupted)",
                StoreError,
                definition="resumable",
            )
        if found is not None:
            for i, batch in enumerate((found[2] or {}).get("pending", [])):
                for j, data in enumerate(batch["cases"]):
                    check_case(data, f"{path}: campaign {found[0]} pending batch {i} case {j}")
            for cand in store.pending_candidates(found[0]):
                where = f"{path}: candidate {cand.id}"
                check_signature(cand.signature, where, StoreError)
                try:
                    finding = finding_from_json(cand.payload, where)
                except FindingsError as exc:
                    raise StoreError(f"{exc}; the store is corrupted") from None
                check_case(finding.case, f"{where}: case")
        for row in store.findings():
            finding = row.finding  # StoreError for a malformed signature or payload
            if groups is not None and row.group in groups:
                check_case(finding.case, f"{path}: finding {row.signature}: case", row.group)


_CANDIDATE_COLUMNS = (
    "id, campaign, seq, signature, kind, grp, dtype, payload, status, reproduced, runs"
)


def _candidate_row(row: tuple[Any, ...], path: Path) -> CandidateRow:
    cid, campaign, seq, signature, kind, group, dtype, payload, status, reproduced, runs = row
    texts, counts = (signature, kind, group, dtype, status), (campaign, seq, reproduced, runs)
    if not all(isinstance(v, str) for v in texts) or not all(isinstance(v, int) for v in counts):
        raise StoreError(
            f"{path}: candidate {cid}: a column holds a value of the wrong type; the store is "
            "corrupted"
        )
    return CandidateRow(
        id=cid,
        campaign=campaign,
        seq=seq,
        signature=signature,
        kind=kind,
        group=group,
        dtype=dtype,
        payload=_loads(payload, f"{path}: candidate {cid}"),
        status=status,
        reproduced=reproduced,
        runs=runs,
    )
