"""Printing that cannot be hijacked: text from the command line, a library, the catalog or a
file reaches the terminal literally — Rich markup is not read, brackets stay, and an ANSI
escape shows as ``\\x1b`` instead of acting on the terminal."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xamt.catalog import model
from xamt.cli import app
from xamt.cli.common import safe

# Closing tag with nothing open (crashed Rich), a style tag (swallowed), a terminal escape.
HOSTILE = "[/x][bold]\x1b[31m"
SHOWN = "[/x][bold]\\x1b[31m"


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    text = result.output + (result.stderr if result.stderr_bytes is not None else "")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert "Traceback" not in text and "MarkupError" not in text, text
    assert "\x1b" not in text, repr(text)
    return result.exit_code, text


def test_safe_keeps_text_and_shows_control_characters() -> None:
    assert safe("sum[axis]") == "sum[axis]"
    assert safe(HOSTILE) == SHOWN
    assert safe("a\tb\nc\x07\x9b") == "a\tb\nc\\x07\\x9b"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["call", f"nosuchlib{HOSTILE}.add"], 3),
        (["call", "numpy.add", "-a", f"1:{HOSTILE}"], 2),
        (["call", "numpy.add", "-k", f"{HOSTILE}=1"], 2),
        (["catalog", "show", HOSTILE], 19),
        (["catalog", "list", "--lib", HOSTILE], 3),
        (["env", "install", HOSTILE], 3),
        (["repro", "--all", "--out", HOSTILE], 21),
        (["report", f"{HOSTILE}.json"], 17),
        (["file", f"{HOSTILE}.json", "--repo", "o/r"], 17),
        (["merge", HOSTILE], 2),
        (["fuzz", "--budget", HOSTILE], 2),
        (["fuzz", "--group", HOSTILE, "--libs", "numpy,torch"], 2),
    ],
)
def test_error_paths_echo_input_literally(args: list[str], code: int) -> None:
    exit_code, text = invoke(*args)
    assert exit_code == code, text
    assert SHOWN in text, text
    assert text.startswith("error: ") or "\nerror: " in text, text


def test_unknown_signature_echoed_literally(tmp_path: Path) -> None:
    from xamt.store import Store

    with Store(tmp_path / "xamt.sqlite"):
        pass
    code, text = invoke("repro", HOSTILE, "--out", str(tmp_path))
    assert code == 20 and SHOWN in text, text


def catalog_with(tmp_path: Path, gid: str) -> Path:
    """The shipped catalog's sum[axis], plus a copy of it under the id ``gid``."""
    cat = model.load(model.CATALOG_PATH)
    group = cat.group("sum[axis]")
    path = tmp_path / "catalog.toml"
    groups = (group, dataclasses.replace(group, id=gid))
    model.save(dataclasses.replace(cat, groups=groups), path)
    return path


def test_catalog_list_and_show_print_group_ids_literally(tmp_path: Path) -> None:
    """Markup-looking ids a catalog may hold are printed as they are."""
    catalog = catalog_with(tmp_path, "sum[bold][i]")
    code, text = invoke("catalog", "list", "--catalog", str(catalog))
    assert code == 0, text
    lines = text.splitlines()
    assert any(line.startswith("sum[axis] ") for line in lines), text
    assert any(line.startswith("sum[bold][i] ") for line in lines), text
    code, text = invoke("catalog", "show", "sum[axis]", "--catalog", str(catalog))
    assert code == 0 and text.startswith("sum[axis]: reduction"), text
    code, text = invoke("catalog", "show", "sum[bold][i]", "--catalog", str(catalog))
    assert code == 0 and text.startswith("sum[bold][i]: reduction"), text


def test_catalog_with_a_hostile_id_is_shown_or_refused_literally(tmp_path: Path) -> None:
    """An id with a closing tag and an escape: listed literally, or (where the catalog's schema
    refuses such ids) refused with the id shown literally; never a crash or a live escape."""
    catalog = catalog_with(tmp_path, f"sum{HOSTILE}")
    code, text = invoke("catalog", "list", "--catalog", str(catalog))
    assert code in (0, 8), text
    assert f"sum{SHOWN}" in text
    code, text = invoke("catalog", "show", f"sum{HOSTILE}", "--catalog", str(catalog))
    assert code in (0, 8) and f"sum{SHOWN}" in text, text


def test_catalog_show_of_the_shipped_catalog_keeps_brackets() -> None:
    code, text = invoke("catalog", "show", "tri[k]")
    assert code == 0 and text.startswith("tri[k]: "), text
    code, text = invoke("catalog", "list")
    assert code == 0 and "\ntri[k] " in text


def test_call_shows_library_text_literally(pythons: dict[str, str]) -> None:
    """The API path comes back from the worker in the outcome table and the error line."""
    code, text = invoke("call", "numpy.sum[/x]", "-a", "[1, 2]:float32")
    assert code == 5, text
    assert "numpy.sum[/x]" in text and "unknown-api" in text
    code, text = invoke("call", f"numpy.sum{HOSTILE}", "-a", "[1, 2]:float32")
    assert code == 5 and SHOWN in text, text


def test_merge_error_from_a_folder_with_a_hostile_name(tmp_path: Path) -> None:
    folder = tmp_path / HOSTILE.replace("/", "_")
    folder.mkdir()
    code, text = invoke("merge", str(folder), "--out", str(tmp_path / "merged"))
    assert code == 10, text
    assert safe(str(folder)) in text
