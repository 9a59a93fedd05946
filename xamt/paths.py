"""Paths: xamt's home folder, whole-file writes, and paths built from untrusted data (strict
identifiers, one checked join).

Shard artifacts, stores and findings files are untrusted input: the merge job of the scheduled
workflow reads what shard jobs uploaded, and then files issues with a token. Whatever a file
names (a signature, a group id, a library, a campaign) may become part of a path, so every such
identifier is checked against a strict pattern where it is read, and every path built from one
goes through :func:`inside`, which resolves it (symbolic links followed) and refuses it unless
it stays inside its root, *before* anything is read, written or deleted there.

Note:
    The patterns are deliberately narrow: they admit what xamt itself writes and nothing that
    could name another folder. No pattern admits ``/``, ``\\``, a NUL or a leading dot, so a
    checked identifier is always one plain path component. :func:`inside` is the second,
    independent guard: even a well-formed name can lead elsewhere through a symbolic link that
    is already on disk.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from xamt.errors import OutputError, XamtError

# A finding's signature: the first 16 hex digits of a sha256 (xamt.oracle.signature).
SIGNATURE = re.compile(r"[0-9a-f]{16}")
# A catalog group id: an operation in snake case with its plan, dtype, shapes and variant
# (``sum[axis][keepdims]``, ``addmm[alpha]@square``, ``add[alpha]~2``, ``histogram(x,bins)``).
GROUP_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_()\[\],@~=+-]{0,199}")
# A library: the name of its adapter module.
LIBRARY = re.compile(r"[a-z][a-z0-9_]{0,39}")
# A campaign: ``fuzz-0-1``, ``merge``, ``merged-2``.
CAMPAIGN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")

PATTERNS: dict[str, tuple[re.Pattern[str], str]] = {
    "signature": (SIGNATURE, "16 hexadecimal digits, lowercase"),
    "group id": (GROUP_ID, "letters, digits and _()[],@~=+- (no slash or dot), at most 200"),
    "library": (LIBRARY, "lowercase letters, digits and _, starting with a letter"),
    "campaign name": (CAMPAIGN, "letters, digits and ._- (no slash), at most 100"),
}


def check_identifier(
    kind: str, value: object, where: str, error: type[XamtError] = OutputError
) -> str:
    """``value`` if it is a string matching the pattern of ``kind`` (a key of
    :data:`PATTERNS`), else ``error`` naming ``where``, the value and what is expected."""
    pattern, wanted = PATTERNS[kind]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise error(
            f"{where}: {kind} {shown} is malformed (expected {wanted}); it may name a path, so "
            "it is refused and nothing was read or written there"
        )
    return value


def check_signature(value: object, where: str, error: type[XamtError] = OutputError) -> str:
    """``value`` if it is a well-formed signature; else ``error`` naming ``where``."""
    return check_identifier("signature", value, where, error)


def is_signature(value: object) -> bool:
    return isinstance(value, str) and SIGNATURE.fullmatch(value) is not None


def inside(root: Path, *parts: str, error: type[XamtError] = OutputError, what: str = "") -> Path:
    """``root / parts``, checked to resolve inside ``root`` (symbolic links followed, in
    ``root`` itself too); ``error`` if it does not, or if a part is empty, absolute or holds a
    NUL. Call it before anything is read, written or deleted at the path.

    ``what`` says what the path is for the message (``"the repro folder of finding X"``).
    """
    for part in parts:
        if not isinstance(part, str) or not part or "\0" in part or Path(part).is_absolute():
            raise error(
                f"{root}: {what or 'a path'} built from {part!r} is refused (empty, absolute "
                "or holding a NUL); nothing was read or written there"
            )
    path = Path(root).joinpath(*parts)
    try:
        base = Path(root).resolve()
        resolved = path.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a link loop, an unreadable folder
        raise error(f"{path}: cannot be resolved ({exc}); nothing was read or written") from None
    if not resolved.is_relative_to(base):
        raise error(
            f"{path}: {what or 'this path'} leads outside {root} (to {resolved}); refusing to "
            "read, write or delete it: remove the link or the file that names it"
        )
    return path


def xamt_home() -> Path:
    """xamt's own folder (environments, caches, logs, config.toml): ``$XAMT_HOME``, else
    ``~/.cache/xamt``."""
    return Path(os.environ.get("XAMT_HOME") or Path.home() / ".cache" / "xamt").expanduser()


def replace_file(path: Path, data: str | bytes) -> Path:
    """Write ``path`` whole or not at all: the data goes to a fresh file beside it (created
    exclusively, so a link left there is never written through) that is renamed over it. A
    reader never sees half a file, and whatever ``path`` was (a file, a link elsewhere) is
    replaced, not followed. OSError as it comes; callers say what failed."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.unlink(missing_ok=True)
    raw = data.encode() if isinstance(data, str) else data
    with open(tmp, "xb") as fh:
        fh.write(raw)
    os.replace(tmp, path)
    return path


def write_atomic(path: Path, text: str) -> None:
    """Write a text file atomically (a reader never sees half of it), making its folder if
    needed; OutputError if not."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        replace_file(path, text)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write ({exc}); name a writable folder") from None


def writable_folder(path: Path, hint: str = "choose another") -> Path:
    """Create ``path`` if needed and check that files can be written in it."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".xamt-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise OutputError(
            f"cannot write to the output folder {path}: {exc.strerror or exc}; {hint}"
        ) from None
    return path


class FolderBusy(XamtError):
    """Another xamt process holds the output folder (one campaign per folder)."""

    exit_code = 24


HOLDER_NAME = ".xamt.holder"  # which process holds a folder (see folder_lock)


class FolderLock:
    """A held output folder (:func:`folder_lock`); :meth:`announce` writes who holds it."""

    def __init__(self, folder: Path, what: str) -> None:
        self.folder = folder
        self.what = what
        self.announced = False

    def announce(self) -> None:
        """Say in :data:`HOLDER_NAME` which process holds the folder (once the run is past
        checking its input: a refused run leaves nothing in the folder)."""
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        try:
            (self.folder / HOLDER_NAME).write_text(
                f"process {os.getpid()} ({self.what}, since {since})\n"
            )
            self.announced = True
        except OSError:
            pass  # only a courtesy to a second process; the store says what cannot be written


@contextmanager
def folder_lock(folder: Path, what: str) -> Iterator[FolderLock]:
    """Hold ``folder``'s advisory lock for the block: one campaign per output folder.

    The lock is ``flock`` on the folder itself (nothing is created; the kernel releases it when
    the process ends, however it ends, so a killed campaign leaves no stale lock). A second
    holder gets :class:`FolderBusy` naming the process that :meth:`FolderLock.announce` wrote;
    a folder that cannot be opened, :class:`~xamt.errors.OutputError`.
    """
    import fcntl

    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        raise OutputError(
            f"cannot use the output folder {folder}: {exc.strerror or exc}; choose another "
            "with --out"
        ) from None
    lock = FolderLock(folder, what)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                holder = (folder / HOLDER_NAME).read_text(errors="replace").strip()
            except OSError:
                holder = ""
            raise FolderBusy(
                f"{folder}: in use by {holder or 'another xamt process'}; one campaign per "
                "folder: wait for it to end (or stop it), or choose another --out"
            ) from None
        yield lock
    finally:
        if lock.announced:
            with suppress(OSError):
                (folder / HOLDER_NAME).unlink()
        os.close(fd)  # releases the lock
