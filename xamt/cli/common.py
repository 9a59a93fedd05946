"""What every command shares: the consoles, safe printing, the error edge and shared options.

Note: text that comes from a user, a library, the catalog or a file is never read as Rich
markup and never reaches the terminal with its control characters: :func:`safe` shows them as
``\\x1b``-style escapes, and :func:`say`, :func:`warn` and :func:`cell` print through it with
markup off. Only literal styles written here (``style=``) colour anything.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import typer
from rich.console import Console
from rich.text import Text

from xamt.errors import XamtError

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

# Every command accepts -h as well as --help.
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}
# Help texts are Markdown: brackets in examples stay literal, paragraphs reflow.
MARKUP_MODE: Literal["markdown"] = "markdown"

# Control characters (C0 but newline and tab, DEL, C1) a terminal would act on.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """``text`` as a string a terminal shows literally: control characters (an ANSI escape's
    ESC among them) become visible ``\\xNN`` escapes. Brackets are kept as they are; print the
    result with markup off (:func:`say`, :func:`warn`, :func:`cell`)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def cell(text: object, style: str = "") -> Text:
    """A table cell or line fragment that is shown literally, in an optional style."""
    return Text(safe(text), style=style)


def say(text: object, style: str = "") -> None:
    """Print one line (or more) to stdout, literally."""
    out.print(cell(text, style), soft_wrap=True)


def warn(text: object, style: str = "") -> None:
    """Print one line (or more) to stderr, literally."""
    err.print(cell(text, style), soft_wrap=True)


F = TypeVar("F", bound=Callable[..., Any])


def handles_errors(fn: F) -> F:
    """Turn XamtError into a one-line message and its exit code; Ctrl-C into exit 130 (a
    fuzz run's SIGTERM into 143)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except XamtError as exc:
            err.print(Text.assemble(("error:", "bold red"), " ", safe(exc)), soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt as exc:
            # a fuzz run's SIGINT or SIGTERM during start-up (xamt.fuzz.cancel) or Ctrl-C
            code = getattr(exc, "exit_code", 130)
            warn(f"interrupted ({exc})" if str(exc) else "interrupted")
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


def sub_app(help_text: str) -> typer.Typer:
    """A sub-app (``xamt env``, ``xamt catalog``) with the root's settings."""
    return typer.Typer(
        help=help_text,
        no_args_is_help=True,
        context_settings=CONTEXT_SETTINGS,
        rich_markup_mode=MARKUP_MODE,
    )


# --- choices ---------------------------------------------------------------------------------
class Variant(StrEnum):
    """Environment variant (the requirements file under images/<lib>/)."""

    cpu = "cpu"
    cuda = "cuda"


class Installer(StrEnum):
    """What builds an environment: uv when present (auto), uv, or pip."""

    auto = "auto"
    uv = "uv"
    pip = "pip"


# --- options declared once -------------------------------------------------------------------
VariantOpt = Annotated[
    Variant,
    typer.Option("--variant", envvar="XAMT_VARIANT", help="Environment variant."),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output (JSON).")]
CatalogOpt = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        envvar="XAMT_CATALOG",
        help="Catalog file (default: the one shipped with xamt).",
    ),
]
SeedOpt = Annotated[int, typer.Option("--seed", help="Seed (same seed, same run).")]
DeadlineOpt = Annotated[
    float, typer.Option("--deadline", help="Seconds a call may take (then: hang).")
]
CampaignOutOpt = Annotated[
    Path, typer.Option("--out", help="A campaign's output folder (xamt.sqlite, findings.json).")
]
FindingsArg = Annotated[Path, typer.Argument(help="findings.json written by `xamt fuzz`.")]
