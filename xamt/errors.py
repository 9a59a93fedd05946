"""Errors a user can hit, each with a documented exit code (see README, "Exit codes").

The CLI turns these into a one-line message and the exit code; it never shows a traceback for
them. Messages say what happened and what to do.

Errors owned by one module live there: ``CatalogError`` (8) in
:mod:`xamt.catalog.vocabulary`, ``UnknownGroup`` (19) in :mod:`xamt.catalog.model`,
``StoreError`` (10) and ``UnknownSignature`` (20) in :mod:`xamt.store`,
``KnownDifferencesError`` (12) in :mod:`xamt.known`, the GitHub errors (13-16) in
:mod:`xamt.report.github`, ``FindingsError`` (17) in :mod:`xamt.findings`.
"""

from __future__ import annotations


class XamtError(Exception):
    """Base class: a failure explained to the user. ``exit_code`` is what the CLI returns."""

    exit_code = 1


class UsageError(XamtError):
    """A malformed option or argument."""

    exit_code = 2


class UnknownLibrary(XamtError):
    """A library name xamt does not know."""

    exit_code = 3


class EnvironmentMissing(XamtError):
    """A library's environment is not installed, is stale, or its interpreter is missing."""

    exit_code = 4


class InterpreterMissing(EnvironmentMissing):
    """An interpreter the user configured (``XAMT_PYTHON_<LIB>`` or ``[interpreters]`` in
    ``XAMT_HOME/config.toml``) does not exist. Not an install problem: the setting is wrong."""

    exit_code = 22


class UnknownApi(XamtError):
    """An API path that does not name a callable of its library."""

    exit_code = 5


class WorkerError(XamtError):
    """A worker could not start or broke the protocol (not an outcome of a call)."""

    exit_code = 6


class InstallFailed(XamtError):
    """Building a library environment failed; nothing that looks healthy was left behind."""

    exit_code = 7


class OutputError(XamtError):
    """The output folder cannot be created or written."""

    exit_code = 11


class StoreMissing(XamtError):
    """A folder named as a campaign's output holds no store (``xamt.sqlite``)."""

    exit_code = 21
