"""Per-library environments, built from ``images/<lib>/requirements-<variant>.txt``.

The same requirements file builds the local virtualenv (here) and the container image, so local
and container runs use the same pins. An environment lives in
``$XAMT_HOME/envs/<lib>-<variant>/`` and is healthy only when its marker file records the hash of
the spec it was built from; the marker is written last, after the library was seen to load in a
worker, so an interrupted or failed build never looks healthy.

A user can point a library at an existing interpreter instead, with ``XAMT_PYTHON_<LIB>`` (for
example ``XAMT_PYTHON_TORCH=/opt/torch/bin/python``) or an ``[interpreters]`` table in
``$XAMT_HOME/config.toml``.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from xamt.errors import (
    EnvironmentMissing,
    InstallFailed,
    InterpreterMissing,
    UsageError,
    XamtError,
)
from xamt.libraries import check_library
from xamt.paths import replace_file, xamt_home

VARIANTS = ("cpu", "cuda")
MARKER = ".xamt-env.json"
SPEC_FORMAT = 1  # bump to rebuild every environment when the build procedure changes
SOURCE_IMAGES = Path(__file__).resolve().parent.parent / "images"
PACKAGED_IMAGES = Path(__file__).resolve().parent / "_images"

Progress = Callable[[str], None]


def images_dir() -> Path:
    """``$XAMT_IMAGES``, else ``images/`` of a source checkout, else the wheel's copy."""
    override = os.environ.get("XAMT_IMAGES")
    if override:
        return Path(override)
    for candidate in (SOURCE_IMAGES, PACKAGED_IMAGES):
        if candidate.is_dir():
            return candidate
    raise XamtError("cannot find the environment specs (images/); reinstall xamt")


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise UsageError(f"unknown variant {variant!r}; choose one of {', '.join(VARIANTS)}")
    return variant


def spec_path(lib: str, variant: str = "cpu") -> Path:
    check_library(lib)
    path = images_dir() / lib / f"requirements-{check_variant(variant)}.txt"
    if not path.is_file():
        raise EnvironmentMissing(f"no environment spec for {lib} ({variant}): {path} is missing")
    return path


def base_python() -> str:
    """The interpreter environments are created from (``XAMT_ENV_PYTHON``, else this one)."""
    return os.environ.get("XAMT_ENV_PYTHON") or sys.executable


def spec_hash(lib: str, variant: str = "cpu") -> str:
    """Hash of everything that decides an environment's contents."""
    digest = hashlib.sha256()
    digest.update(f"xamt-env/{SPEC_FORMAT}/{lib}/{variant}/".encode())
    digest.update(spec_path(lib, variant).read_bytes())
    digest.update(f"/{sys.version_info[0]}.{sys.version_info[1]}".encode())
    return digest.hexdigest()[:16]


def env_dir(lib: str, variant: str = "cpu") -> Path:
    return xamt_home() / "envs" / f"{lib}-{variant}"


def env_python(path: Path) -> Path:
    return path / "bin" / "python"


@dataclass(frozen=True, kw_only=True)
class EnvStatus:
    """Where a library's environment stands.

    ``state``: ``ready`` (built from the current spec), ``stale`` (built from another spec),
    ``broken`` (a build that did not finish, or a missing interpreter), ``missing``, or
    ``external`` (an interpreter the user pointed at).
    """

    library: str
    variant: str
    state: str
    python: str
    path: str
    spec_hash: str = ""
    built_hash: str = ""

    @property
    def usable(self) -> bool:
        return self.state in ("ready", "external")


def _configured_interpreters() -> dict[str, str]:
    config = xamt_home() / "config.toml"
    found: dict[str, str] = {}
    if config.is_file():
        try:
            data = tomllib.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise UsageError(f"{config}: not a readable TOML file: {exc}") from None
        from xamt import schemas

        schemas.validate("config", data, str(config), UsageError)
        table = data.get("interpreters", {})
        if not isinstance(table, dict):
            raise UsageError(f"{config}: [interpreters] must be a table of library = path")
        found.update({str(k): str(v) for k, v in table.items()})
    for key, value in os.environ.items():
        if key.startswith("XAMT_PYTHON_") and value:
            found[key[len("XAMT_PYTHON_") :].lower()] = value
    return found


def status(lib: str, variant: str = "cpu") -> EnvStatus:
    check_library(lib)
    external = _configured_interpreters().get(lib)
    if external:
        state = "external" if Path(external).exists() else "broken"
        return EnvStatus(
            library=lib,
            variant=variant,
            state=state,
            python=external,
            path=str(Path(external).parent),
        )
    path = env_dir(lib, variant)
    python = env_python(path)
    want = spec_hash(lib, variant)
    common = dict(library=lib, variant=variant, python=str(python), path=str(path), spec_hash=want)
    if not path.exists():
        return EnvStatus(state="missing", **common)
    try:
        built = json.loads((path / MARKER).read_text())["spec_hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return EnvStatus(state="broken", **common)
    if not python.exists():
        return EnvStatus(state="broken", built_hash=built, **common)
    return EnvStatus(state="ready" if built == want else "stale", built_hash=built, **common)


def _configured_by(lib: str) -> str:
    """Where the user configured ``lib``'s interpreter: the variable, else the config file."""
    for key, value in os.environ.items():
        if key.startswith("XAMT_PYTHON_") and value and key[len("XAMT_PYTHON_") :].lower() == lib:
            return key
    return f"[interpreters] in {xamt_home() / 'config.toml'}"


def interpreter(lib: str, variant: str = "cpu") -> str:
    """The interpreter of a usable environment, or a clear error saying how to get one."""
    st = status(lib, variant)
    if st.usable:
        return st.python
    configured = _configured_interpreters().get(lib)
    if configured:
        raise InterpreterMissing(
            f"the {lib} interpreter configured by {_configured_by(lib)} does not exist: "
            f"{configured}; point it at an existing python, or unset it to use "
            f"`xamt env install {lib}`"
        )
    hint = {
        "missing": "is not installed",
        "stale": "was built from an older spec",
        "broken": "is incomplete (an install did not finish)",
    }[st.state]
    raise EnvironmentMissing(
        f"the {lib} environment ({variant}) {hint}: run `xamt env install {lib}`"
    )


@contextmanager
def _locked(lib: str, variant: str) -> Iterator[None]:
    lock_dir = xamt_home() / "envs"
    lock_dir.mkdir(parents=True, exist_ok=True)
    with open(lock_dir / f".{lib}-{variant}.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _find_links() -> list[str]:
    """Local wheel folders to search: ``XAMT_FIND_LINKS`` and pip's configured find-links."""
    links = [p for p in os.environ.get("XAMT_FIND_LINKS", "").split(os.pathsep) if p]
    try:
        out = subprocess.run(
            [sys.executable, "-m", "pip", "config", "get", "global.find-links"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout
        links += out.split()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return [p for p in dict.fromkeys(links) if Path(p.removeprefix("file://")).exists()]


def _uv() -> str | None:
    try:
        from uv import find_uv_bin

        return str(find_uv_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("uv")


def _run(cmd: list[str], progress: Progress, log: Path) -> None:
    """Run a build step, streaming its output to ``progress`` and a log file."""
    progress(f"$ {' '.join(cmd)}")
    with open(log, "a") as fh:
        fh.write(f"$ {' '.join(cmd)}\n")
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            if line.strip():
                progress(line.rstrip())
        code = proc.wait()
    if code != 0:
        raise InstallFailed(
            f"`{cmd[0]} {cmd[1] if len(cmd) > 1 else ''}` failed with exit code "
            f"{code}; the full log is {log}"
        )


def install(
    lib: str,
    variant: str = "cpu",
    *,
    force: bool = False,
    installer: str = "auto",
    progress: Progress = lambda _line: None,
    verify: Callable[[str, str], str] | None = None,
) -> EnvStatus:
    """Build ``lib``'s environment unless one from the same spec is ready (then instantly).

    ``verify(lib, python)`` is called before the marker is written and must raise if the
    library does not load; it returns the library's version.
    """
    spec = spec_path(lib, variant)
    with _locked(lib, variant):
        current = status(lib, variant)
        if current.state == "external":
            progress(f"{lib}: uses the external interpreter {current.python}; nothing to build")
            return current
        if current.state == "ready" and not force:
            return current
        path = env_dir(lib, variant)
        log = xamt_home() / "logs" / f"install-{lib}-{variant}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("")
        if path.exists():
            (path / MARKER).unlink(missing_ok=True)  # first: never healthy-looking mid-build
            shutil.rmtree(path)
        uv = _uv() if installer in ("auto", "uv") else None
        if installer == "uv" and uv is None:
            raise InstallFailed("--installer uv was asked for but uv is not installed")
        started = time.monotonic()
        python = str(env_python(path))
        try:
            if uv:
                _run([uv, "venv", "--quiet", "--python", base_python(), str(path)], progress, log)
                cmd = [uv, "pip", "install", "--python", python, "-r", str(spec)]
                for link in _find_links():
                    cmd += ["--find-links", link]
                _run(cmd, progress, log)
            else:
                _run([base_python(), "-m", "venv", str(path)], progress, log)
                _run(
                    [
                        python,
                        "-m",
                        "pip",
                        "install",
                        "--disable-pip-version-check",
                        "-r",
                        str(spec),
                    ],
                    progress,
                    log,
                )
            version = verify(lib, python) if verify else ""
        except BaseException:
            shutil.rmtree(path, ignore_errors=True)
            raise
        marker = {
            "library": lib,
            "variant": variant,
            "spec_hash": spec_hash(lib, variant),
            "version": version,
            "seconds": round(time.monotonic() - started, 1),
            "installer": "uv" if uv else "pip",
        }
        replace_file(path / MARKER, json.dumps(marker, indent=2))
        return status(lib, variant)


def marker_info(st: EnvStatus) -> dict[str, object]:
    """The marker of a built environment (empty for external or unbuilt ones)."""
    try:
        data: dict[str, object] = json.loads((Path(st.path) / MARKER).read_text())
        return data
    except (OSError, ValueError):
        return {}


def as_dict(st: EnvStatus) -> dict[str, object]:
    return asdict(st)
