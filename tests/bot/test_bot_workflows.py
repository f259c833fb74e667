"""The workflows are valid GitHub Actions, and the bot's is wired as the design says."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import typer
import yaml

from codemods.cli import app

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


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


def test_only_the_publish_job_may_write_and_only_it_sees_the_bot_token() -> None:
    workflow = load("bot.yml")
    jobs = workflow["jobs"]

    assert workflow["permissions"] == {}
    assert jobs["plan"]["permissions"] == {"contents": "read", "pull-requests": "read", "issues": "read"}
    assert jobs["verify"]["permissions"] == {"contents": "read"}
    assert jobs["census"]["permissions"] == {"contents": "read"}
    assert jobs["publish"]["permissions"] == {"contents": "write", "pull-requests": "write", "issues": "write"}
    for name, job in jobs.items():
        uses_secret = "secrets.CODEMOD_BOT_TOKEN" in yaml.safe_dump(job)
        assert uses_secret == (name == "publish"), name


def test_verification_runs_on_the_gpu_runner_with_cuda() -> None:
    verify = load("bot.yml")["jobs"]["verify"]

    assert verify["runs-on"] == ["self-hosted", "gpu"]
    assert verify["needs"] == "plan"
    assert "--device cuda" in _commands(verify)[0]


def test_the_gpu_job_builds_the_targets_environment_with_torch_from_the_cuda_index() -> None:
    verify = load("bot.yml")["jobs"]["verify"]
    step = next(step for step in verify["steps"] if "codemod bot verify-group" in step.get("run", ""))

    assert '--torch-index "$TORCH_INDEX_URL"' in _commands(verify)[0]
    assert "cu128" in step["env"]["TORCH_INDEX_URL"]
    assert step["env"]["CODEMOD_ENV_CACHE"].startswith("${{ runner.tool_cache }}")


def test_every_bot_command_in_the_workflow_exists_with_those_options() -> None:
    bot = typer.main.get_command(app).commands["bot"]
    jobs = load("bot.yml")["jobs"]

    used = [command for job in jobs.values() for command in _commands(job)]

    assert [c.split()[2] for c in used] == ["plan", "verify-group", "census", "publish"]
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
