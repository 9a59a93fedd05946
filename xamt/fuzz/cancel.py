"""SIGINT and SIGTERM as a request to stop, honoured where stopping loses nothing.

GitHub Actions cancels a job with SIGINT and sends SIGTERM about 7.5 s later (then SIGKILL); a
terminal's Ctrl-C is SIGINT. Python's default turns SIGINT into a ``KeyboardInterrupt`` raised
wherever the main thread happens to be (half-way through booking a batch, between drawing a
case and recording it) and lets SIGTERM kill the process. :class:`Cancellation` instead records
the first signal and raises :class:`Cancelled` only inside :meth:`Cancellation.interruptible`
blocks: waits on workers, which the caller knows how to abandon (the batch waited on goes back
to the pending ones that ``--resume`` runs first). Everywhere else the loop asks
:attr:`Cancellation.requested` at its safe points and stops there.

Note:
    Handlers can only be installed from the main thread; elsewhere (a test calling
    :func:`xamt.fuzz.run.run_fuzz` from a thread) :meth:`Cancellation.installed` leaves the
    handlers as they are and nothing is ever requested.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Cancelled(KeyboardInterrupt):
    """Raised in an interruptible block once a stop was requested; ``signum`` names why."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        """The shell's code for death by this signal (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + self.signum


class Cancellation:
    """The stop requested by the first SIGINT or SIGTERM of a run (later ones change nothing)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self._depth = 0  # nesting of interruptible blocks

    @property
    def requested(self) -> bool:
        return self.signum is not None

    @property
    def name(self) -> str:
        return "" if self.signum is None else signal.Signals(self.signum).name

    def error(self) -> Cancelled:
        assert self.signum is not None
        return Cancelled(self.signum)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.signum is None:
            self.signum = signum
        if self._depth:
            raise Cancelled(self.signum)

    @contextmanager
    def installed(self) -> Iterator[Cancellation]:
        """Route SIGINT and SIGTERM here for the block; the previous handlers come back after."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = {s: signal.signal(s, self._handle) for s in SIGNALS}
        try:
            yield self
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A block the signal may break off (with :class:`Cancelled`); at once if a stop was
        requested before it began."""
        if self.signum is not None:
            raise Cancelled(self.signum)
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1

    def check(self) -> None:
        """:class:`Cancelled` if a stop was requested (a safe point outside any wait)."""
        if self.signum is not None:
            raise Cancelled(self.signum)
