"""Issue 30 item 4, without a library: the checks that keep API paths inside their library.

The worker's own check runs in the real environments (tests/integration/test_api_paths.py);
here: the module an object belongs to, a catalog whose member walks into ``os`` refused at
load with one line, and ``xamt call torch.os.kill`` refused before any worker starts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from xamt.catalog.model import CATALOG_PATH, load
from xamt.catalog.vocabulary import CatalogError
from xamt.cli import app
from xamt.libraries import adapter_class, library_names
from xamt.workers import api_paths

HOSTILE = ["torch.os.fspath", "torch.os.kill", "torch.builtins.eval", "torch.sys.exit"]


def test_the_module_an_object_belongs_to() -> None:
    assert api_paths.homes_of(os) == ("os",)
    assert api_paths.homes_of(os.kill)[0] == "posix"
    assert api_paths.homes_of(json.dumps)[0] == "json"
    assert api_paths.homes_of(str.join)[0] == "builtins"  # a C method: its class's module
    assert api_paths.outside_module(os.kill, ("json",), last=True) == "posix"
    assert api_paths.outside_module(json.dumps, ("json",), last=True) is None
    # an adopted package: its functions may end a path, its modules may not be passed through
    assert api_paths.outside_module(json.dumps, ("xamt",), ("json",), last=True) is None
    assert api_paths.outside_module(json, ("xamt",), ("json",), last=True) == "json"
    assert api_paths.outside_module(json.dumps, ("xamt",), ("json",), last=False) == "json"


def test_every_adapter_names_its_packages_and_adopts_with_a_link() -> None:
    for lib in library_names():
        cls = adapter_class(lib)
        assert cls.roots[0] in cls.own_packages()
        for why in cls.adopted.values():
            assert "https://" in why


def hostile_catalog(tmp_path: Path, api: str, field: str = "api") -> Path:
    data = json.loads(CATALOG_PATH.read_text())
    group = next(g for g in data["groups"] if any(m["library"] == "torch" for m in g["members"]))
    member = next(m for m in group["members"] if m["library"] == "torch")
    member[field] = api
    path = tmp_path / "catalog.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("api", HOSTILE)
def test_catalog_member_through_a_stdlib_module_is_refused_at_load(
    tmp_path: Path, api: str
) -> None:
    with pytest.raises(CatalogError) as err:
        load(hostile_catalog(tmp_path, api))
    message = str(err.value)
    assert "\n" not in message and api in message and "outside torch" in message
    assert str(tmp_path / "catalog.json") in message and "group #" in message


def test_catalog_callables_and_foreign_roots_are_checked_too(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=re.escape("'torch.os.kill' reaches module 'os'")):
        load(hostile_catalog(tmp_path, "torch.os.kill", field="callable"))
    with pytest.raises(CatalogError, match=re.escape("'numpy.add' is not in torch")):
        load(hostile_catalog(tmp_path, "numpy.add"))


def test_the_shipped_catalog_passes_the_path_check() -> None:
    assert len(load(CATALOG_PATH).groups) > 1000


def test_catalog_command_refuses_a_hostile_catalog_with_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["catalog", "stats", "--catalog", str(hostile_catalog(tmp_path, "torch.os.kill"))]
    )
    assert result.exit_code == 8, result.output
    assert "Traceback" not in result.output
    assert len(result.output.strip().splitlines()) == 1 and "torch.os.kill" in result.output


@pytest.mark.parametrize("api", HOSTILE)
def test_call_refuses_a_path_through_a_stdlib_module_before_any_worker(
    api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no library environment is needed: the refusal comes before any interpreter is looked up
    monkeypatch.setenv("XAMT_PYTHON_TORCH", "/nonexistent/python")
    result = CliRunner().invoke(app, ["call", api, "-a", "1"])
    assert result.exit_code == 5, result.output
    assert "Traceback" not in result.output
    text = result.output.strip()
    assert len(text.splitlines()) == 1 and api in text and "outside torch" in text
