"""Environment builds: keyed by the spec's hash, idempotent, and never healthy-looking when
interrupted or failed. Builds a real (small) numpy environment in a temporary XAMT_HOME."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xamt import envs

XAMT = [sys.executable, "-m", "xamt"]


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary XAMT_HOME and a private copy of the numpy spec that tests may edit."""
    images = tmp_path / "images"
    shutil.copytree(envs.SOURCE_IMAGES / "numpy", images / "numpy")
    monkeypatch.setenv("XAMT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XAMT_IMAGES", str(images))
    return tmp_path


def xamt(*args: str, **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*XAMT, *args],
        capture_output=True,
        text=True,
        env=os.environ.copy(),
        timeout=600,
        check=False,
        **kw,
    )  # type: ignore[call-overload]


def test_install_is_keyed_by_the_spec_and_idempotent(home: Path) -> None:
    assert envs.status("numpy").state == "missing"
    first = xamt("env", "install", "numpy")
    assert first.returncode == 0, first.stderr
    st = envs.status("numpy")
    assert st.state == "ready"
    marker = Path(st.path) / envs.MARKER
    info = json.loads(marker.read_text())
    assert info["spec_hash"] == envs.spec_hash("numpy") and info["version"] == "2.4.6"
    stamp = marker.stat().st_mtime_ns

    again = xamt("env", "install", "numpy")
    assert again.returncode == 0 and "up to date" in again.stdout
    assert marker.stat().st_mtime_ns == stamp  # nothing rebuilt

    spec = home / "images" / "numpy" / "requirements-cpu.txt"
    spec.write_text(spec.read_text() + "# a changed spec\n")
    assert envs.status("numpy").state == "stale"
    rebuilt = xamt("env", "install", "numpy")
    assert rebuilt.returncode == 0 and "building (stale)" in rebuilt.stdout
    assert envs.status("numpy").state == "ready"
    assert marker.stat().st_mtime_ns != stamp


def test_failed_install_leaves_nothing_that_looks_healthy(home: Path) -> None:
    spec = home / "images" / "numpy" / "requirements-cpu.txt"
    spec.write_text("xamt-no-such-package-anywhere==0.0.1\n")
    result = xamt("env", "install", "numpy")
    assert result.returncode == 7
    assert "could not build: numpy" in result.stderr and "Traceback" not in result.stderr
    assert envs.status("numpy").state == "missing"


def test_interrupted_install_is_broken_until_rebuilt(home: Path) -> None:
    env_dir = envs.env_dir("numpy")
    proc = subprocess.Popen(
        [*XAMT, "env", "install", "numpy", "--installer", "pip"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not (env_dir / "bin" / "python").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert (env_dir / "bin" / "python").exists()
    assert envs.status("numpy").state == "broken"
    with pytest.raises(envs.EnvironmentMissing, match="incomplete"):
        envs.interpreter("numpy")
    result = xamt("env", "install", "numpy")
    assert result.returncode == 0, result.stderr
    assert envs.status("numpy").state == "ready"


def test_every_library_has_pinned_cpu_and_cuda_specs() -> None:
    from xamt.libraries import library_names

    for lib in library_names():
        for variant in envs.VARIANTS:
            lines = [ln.strip() for ln in envs.spec_path(lib, variant).read_text().splitlines()]
            reqs = [ln for ln in lines if ln and not ln.startswith(("#", "--"))]
            assert reqs, (lib, variant)
            assert all("==" in r for r in reqs), (lib, variant, reqs)


def test_cpu_specs_never_pull_a_cuda_torch() -> None:
    spec = envs.spec_path("torch", "cpu").read_text()
    assert "torch==2.13.0+cpu" in spec and "nvidia" not in spec
