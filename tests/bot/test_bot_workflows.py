"""The workflows are valid GitHub Actions, and the bot's is wired as the design says."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
import typer
import yaml
from github_double import GitHubDouble, create_bare_remote

from codemod_cli.app import app
from codemods.output.rule_docs import TOOL_URL
from codemods.tool_version import PINNED_COMMIT

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
SHA = "0123456789abcdef0123456789abcdef01234567"


def load(name: str) -> dict:
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on".
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True)
    return data


@pytest.mark.parametrize("name", ["ci.yml", "bot.yml"])
def test_workflow_matches_githubs_schema(name: str) -> None:
    checker = Path(sys.executable).parent / "check-jsonschema"

    done = subprocess.run(
        [str(checker), "--builtin-schema", "vendor.github-workflows", str(WORKFLOWS / name)],
        capture_output=True,
        text=True,
        check=False,
    )

    assert done.returncode == 0, done.stdout + done.stderr


def test_bot_runs_on_a_schedule_and_by_hand_one_run_at_a_time() -> None:
    workflow = load("bot.yml")

    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    assert workflow["on"]["schedule"][0]["cron"]
    assert workflow["concurrency"]["cancel-in-progress"] is False
    assert "group" in workflow["concurrency"]


def test_only_the_publish_job_may_write_and_the_bot_token_reaches_it_and_the_login_step_only() -> None:
    workflow = load("bot.yml")
    jobs = workflow["jobs"]
    login_step = next(step for step in jobs["plan"]["steps"] if step.get("id") == "login")

    assert workflow["permissions"] == {}
    assert jobs["plan"]["permissions"] == {"contents": "read", "pull-requests": "read", "issues": "read"}
    assert jobs["verify"]["permissions"] == {"contents": "read"}
    assert jobs["census"]["permissions"] == {"contents": "read"}
    assert jobs["publish"]["permissions"] == {"contents": "write", "pull-requests": "write", "issues": "write"}
    for name, job in jobs.items():
        steps = [step for step in job["steps"] if step is not login_step]
        uses_secret = "secrets.CODEMOD_BOT_TOKEN" in yaml.safe_dump({**job, "steps": steps})
        assert uses_secret == (name == "publish"), name
    # The login step only asks GitHub whose the token is.
    assert [line for line in login_step["run"].splitlines() if "codemod" in line] == [
        'elif [ -n "$GITHUB_TOKEN" ]; then login=$(codemod bot whoami --api-url "$GITHUB_API_URL")'
    ]


def _setup_python(job: dict) -> dict:
    return next(step for step in job["steps"] if step.get("uses", "").startswith("actions/setup-python@"))


def test_verification_runs_on_a_hosted_runner_with_the_emulated_device_by_default() -> None:
    # A fork has no GPU runner: a job waiting for `[self-hosted, gpu]` would wait forever.
    workflow = load("bot.yml")
    device = render(workflow["env"]["DEVICE"])

    assert device == "emu"
    for name in ("verify", "census"):
        job = workflow["jobs"][name]
        assert evaluate(job["runs-on"]) == "ubuntu-latest", name
        assert render(job["env"]["TORCH_INDEX_URL"]) == "https://download.pytorch.org/whl/cpu", name
        assert evaluate(_setup_python(job)["if"], env={"DEVICE": device}) is True, name
        assert '--device "$DEVICE"' in _commands(job)[0], name
    assert workflow["jobs"]["verify"]["needs"] == "plan"


@pytest.mark.parametrize(
    ("variables", "inputs"), [({"CODEMOD_DEVICE": "cuda"}, {}), ({}, {"device": "cuda"})], ids=["variable", "input"]
)
def test_the_gpu_setting_verifies_on_the_self_hosted_gpu_runner_with_cuda(
    variables: dict[str, str], inputs: dict[str, str]
) -> None:
    workflow = load("bot.yml")
    device = render(workflow["env"]["DEVICE"], variables, inputs)

    assert device == "cuda"
    for name in ("verify", "census"):
        job = workflow["jobs"][name]
        assert evaluate(job["runs-on"], variables, inputs) == ["self-hosted", "gpu"], name
        assert render(job["env"]["TORCH_INDEX_URL"], variables, inputs) == "https://download.pytorch.org/whl/cu128"
        assert evaluate(_setup_python(job)["if"], env={"DEVICE": device}) is False, name


def test_the_gpu_job_builds_the_targets_environment_with_torch_from_the_index_variable() -> None:
    verify = load("bot.yml")["jobs"]["verify"]
    step = next(step for step in verify["steps"] if "codemod bot verify-group" in step.get("run", ""))
    index = render(verify["env"]["TORCH_INDEX_URL"], {"TORCH_INDEX_URL": "https://example.com/whl/cu130"})

    assert '--torch-index "$TORCH_INDEX_URL"' in _commands(verify)[0]
    assert index == "https://example.com/whl/cu130"
    assert step["env"]["CODEMOD_ENV_CACHE"].startswith("${{ runner.tool_cache }}")


def test_no_job_installs_the_repository_it_runs_in() -> None:
    jobs = load("bot.yml")["jobs"]

    for name, job in jobs.items():
        installs = [line for step in job["steps"] for line in step.get("run", "").splitlines() if "pip install" in line]
        tool = [line for line in installs if "diffusers-codemod" in line]
        assert not any(step.get("uses", "").startswith("actions/checkout@") for step in job["steps"]), name
        assert tool and all(re.search(r'"diffusers-codemod\[[a-z,]+\] @ \$CODEMOD_GIT"$', line) for line in tool), name
        assert not any(" -e " in line for line in installs), name


def test_the_tool_is_installed_from_the_pinned_commit_by_default() -> None:
    workflow = load("bot.yml")

    assert render(workflow["env"]["CODEMOD_GIT"]) == f"git+{TOOL_URL}@{PINNED_COMMIT}"


def test_a_fork_pins_the_tool_by_commit_and_a_manual_run_may_name_another_ref() -> None:
    git = load("bot.yml")["env"]["CODEMOD_GIT"]
    variables = {"CODEMOD_SOURCE": "https://github.com/you/diffusers-codemod", "CODEMOD_REF": SHA}

    assert render(git, variables) == f"git+https://github.com/you/diffusers-codemod@{SHA}"
    assert render(git, variables, {"codemod-ref": "v9.9.9"}) == "git+https://github.com/you/diffusers-codemod@v9.9.9"


def test_the_docs_job_table_lists_the_workflows_jobs_in_order() -> None:
    docs = (ROOT / "docs" / "bot.md").read_text()
    table = docs[docs.index("| job | runner |") :].split("\n\n")[0]

    names = [row.split("|")[1].strip().strip("`") for row in table.splitlines()[2:]]

    assert names == list(load("bot.yml")["jobs"])


def test_every_bot_command_in_the_workflow_exists_with_those_options() -> None:
    group = typer.main.get_command(app)
    bot = group.get_command(click.Context(group), "bot")
    jobs = load("bot.yml")["jobs"]

    used = [command for job in jobs.values() for command in _commands(job)]

    assert [c.split()[2] for c in used] == ["whoami", "plan", "verify-group", "census", "publish"]
    for command in used:
        words = shlex.split(re.sub(r"\$\{[A-Z_]+:\+([^}]*)\}", r"\1", command))
        options = {w for w in words if w.startswith("--")} | ({"--dry-run"} if "$DRY_RUN" in command else set())
        known = {opt for param in bot.commands[words[2]].params for opt in param.opts}
        assert options <= known, (words[2], options - known)


def _commands(job: dict) -> list[str]:
    """The `codemod bot ...` command lines of a job, continuation lines joined."""
    found = []
    for step in job["steps"]:
        script = step.get("run", "").replace("\\\n", " ")
        for line in script.splitlines():
            if "codemod bot " in line:
                found.append(line[line.index("codemod bot ") :].split(" | ")[0])
    return found


def evaluate(expression: str, variables: dict[str, str] | None = None, inputs: dict[str, str] | None = None,
             env: dict[str, str] | None = None) -> Any:  # fmt: skip
    """A GitHub Actions expression (`${{ }}` optional) of the subset the workflow uses, as GitHub evaluates it:
    `||`/`&&` give the first falsy/truthy operand, unset variables and inputs are null (empty for inputs)."""
    body = expression.strip().removeprefix("${{").removesuffix("}}")
    python = re.sub(r"\b(vars|inputs|env)\.([\w-]+)", lambda m: f"{m[1]}.get({m[2]!r})", body)
    python = python.replace("||", " or ").replace("&&", " and ").replace("fromJSON", "json.loads")
    context = {"vars": variables or {}, "inputs": {"device": "", "codemod-ref": "", **(inputs or {})}, "env": env or {}}
    return eval(python, {"json": json, **context})  # noqa: S307  (our own workflow's expressions)


def render(text: str, variables: dict[str, str] | None = None, inputs: dict[str, str] | None = None) -> str:
    """A value with `${{ }}` expressions in it, each replaced by its value."""
    return re.sub(r"\$\{\{(.*?)\}\}", lambda m: str(evaluate(m[1], variables, inputs)), text)


@pytest.fixture(name="fork_owner_api")
def fork_owner_api_fixture(tmp_path: Path) -> Iterator[GitHubDouble]:
    """The REST double, authenticated as a fork owner's personal token."""
    create_bare_remote(tmp_path / "remote.git")
    with GitHubDouble(tmp_path / "remote.git", login="fork-owner") as double:
        yield double


@pytest.mark.parametrize(
    ("variable", "secret", "login"),
    [("codemod-machine", True, "codemod-machine"), ("", True, "fork-owner"), ("", False, "github-actions[bot]")],
    ids=["the variable", "the token's user", "the workflow token's author"],
)
def test_the_login_step_names_the_variable_else_the_tokens_user_else_github_actions(
    fork_owner_api: GitHubDouble, tmp_path: Path, variable: str, secret: bool, login: str
) -> None:
    step = next(step for step in load("bot.yml")["jobs"]["plan"]["steps"] if step.get("id") == "login")
    output = tmp_path / "github_output"
    env = {
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "GITHUB_OUTPUT": str(output),
        "GITHUB_API_URL": fork_owner_api.api_url,
        "BOT_LOGIN": variable,
        "GITHUB_TOKEN": fork_owner_api.token if secret else "",
    }

    subprocess.run(["bash", "-e", "-c", step["run"]], env=env, check=True, capture_output=True, timeout=120)

    assert output.read_text() == f"login={login}\n"


def test_plan_and_publish_know_the_bot_by_the_login_step_s_output() -> None:
    jobs = load("bot.yml")["jobs"]
    plan_step = next(step for step in jobs["plan"]["steps"] if step.get("id") == "plan")
    publish_step = next(step for step in jobs["publish"]["steps"] if "codemod bot publish" in step.get("run", ""))

    assert jobs["plan"]["outputs"]["login"] == "${{ steps.login.outputs.login }}"
    assert (plan_step["env"]["LOGIN"], publish_step["env"]["LOGIN"]) == (
        "${{ steps.login.outputs.login }}",
        "${{ needs.plan.outputs.login }}",
    )
    assert all('--login "$LOGIN"' in _commands(jobs[name])[-1] for name in ("plan", "publish"))
