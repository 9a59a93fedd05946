"""The ``xamt`` command line: a thin Typer edge over plain functions.

One module per sub-app: :mod:`~xamt.cli.env` (``xamt env``), :mod:`~xamt.cli.call`
(``xamt call``), :mod:`~xamt.cli.catalog` (``xamt catalog``), :mod:`~xamt.cli.fuzz`
(``xamt fuzz``), :mod:`~xamt.cli.findings` (``xamt repro``, ``report``, ``file``, ``merge``).
Commands only parse options, call a plain function and print. Errors a user can cause are
:class:`~xamt.errors.XamtError` subclasses; they are printed as one line and turned into their
documented exit code (:func:`~xamt.cli.common.handles_errors`), never shown as a traceback.
"""

from __future__ import annotations

from typing import Annotated

import typer

from xamt import __version__
from xamt.cli import call, catalog, env, findings, fuzz
from xamt.cli.common import CONTEXT_SETTINGS, MARKUP_MODE, handles_errors, say

__all__ = ["app", "handles_errors"]

app = typer.Typer(
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings=CONTEXT_SETTINGS,
    rich_markup_mode=MARKUP_MODE,
)


def version_callback(value: bool) -> None:
    if value:
        say(f"xamt {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=version_callback, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Cross-framework differential fuzzer for deep-learning library APIs: run equivalent APIs
    of numpy, torch, tensorflow, jax, paddle, mindspore and mxnet on the same inputs and report
    crashes and disagreements.

    Example: `xamt env install numpy torch && xamt fuzz --libs numpy,torch --budget 2m`
    """


app.add_typer(env.app, name="env")
app.add_typer(catalog.app, name="catalog")
call.register(app)
fuzz.register(app)
findings.register(app)
