"""The bot against the GitHub double: a bare repository holding a small diffusers-like tree is the
remote, PyGithub talks HTTP to the double, and only the API URL differs from production.

Not a conftest.py: other test modules import helpers `from conftest`, and a second conftest
module would shadow theirs. Test modules import the fixtures below by name.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest
from diffusers_tree import PACKAGE, tree_files
from github_double import GitHubDouble, create_bare_remote

from bot.github.api import ClientSettings
from bot.runner import BotOptions
from bot.verify.checkout.own_tests import OwnTests

# PyGithub's policy, minus the waiting: same retries, no spacing between requests.
FAST_CLIENT = ClientSettings(
    retries=3,
    backoff_factor=0.01,
    secondary_rate_wait=0.1,
    max_rate_limit_wait=5,
    seconds_between_requests=None,
    seconds_between_writes=None,
    timeout=10,
)
REPO = "huggingface/diffusers"
PULLS = r"/repos/huggingface/diffusers/pulls"


@dataclass
class FakeTarget:
    target: str
    rules: list[str]
    rewrites: list[str]
    verdict: str
    error: str | None = None


@dataclass
class FakeReport:
    """What `bot.verify.verify` returns, with a fixed table: the bot's tests do not time torch."""

    targets: list[FakeTarget]
    changed_files: list[str]
    own_tests: Any = None  # an `OwnTests`, for a test of what a broken own test does to a group
    turned_on_tests: Any = None  # an `OwnTests` of the tests the change turns on
    repo_checks: Any = None  # a `RepoChecks`, for a test of what a broken repository check does to a group

    def to_json(self) -> dict[str, Any]:
        return {"targets": [t.__dict__ for t in self.targets], "changed_files": self.changed_files}

    def to_markdown(self, reproduce: str) -> str:
        rows = [
            "| target | verdict | syncs/step before | after | max abs diff |",
            "| --- | --- | --- | --- | --- |",
            *(f"| `{t.target}` | {t.verdict} | 3 | 0 | 0.0 |" for t in self.targets),
        ]
        return "\n".join(rows) + f"\n\nReproduce:\n\n```\n{reproduce}\n```\n"

    def exit_code(self) -> int:
        return 0


@dataclass
class FakeVerifier:
    """Verifies every group, except those whose files contain a key of `verdicts` (then that verdict)."""

    verdicts: dict[str, str] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    # Run while verifying a group whose files contain the key: lets a test change the world mid-run.
    during: dict[str, Callable[[], object]] = field(default_factory=dict)
    # The test edits (path -> text) that the tests turned on by a group whose files contain the key need.
    test_edits: dict[str, dict[str, str]] = field(default_factory=dict)

    def __call__(
        self,
        src: Path,
        *,
        select=None,
        paths=None,
        device="emu",
        work_dir=None,
        compile=False,
        tolerance=1e-4,
        progress=None,
        cache_dir=None,
    ) -> FakeReport:
        relative = sorted(Path(p).relative_to(src).as_posix() for p in paths)
        self.calls.append(tuple(relative))
        verdict = next((v for key, v in self.verdicts.items() if any(key in p for p in relative)), "verified")
        for key, action in self.during.items():
            if any(key in p for p in relative):
                action()
        target = f"{Path(relative[0]).stem}"
        rewrites = [f"{p}:1" for p in relative]
        edits = next((e for key, e in self.test_edits.items() if any(key in p for p in relative)), None)
        turned_on = OwnTests(sorted(edits), "", test_edits=edits) if edits else None
        return FakeReport(
            [FakeTarget(target, list(select or ()), rewrites, verdict)], relative, turned_on_tests=turned_on
        )


@pytest.fixture(name="remote")
def remote_fixture(tmp_path: Path) -> Iterator[GitHubDouble]:
    """A running double, its bare remote's `main` holding the diffusers-like tree."""
    bare_repo = tmp_path / "remote.git"
    create_bare_remote(bare_repo, files=tree_files)  # seeded once per process, copied here
    with GitHubDouble(bare_repo) as double:
        yield double


@pytest.fixture(name="options")
def options_fixture(remote: GitHubDouble, tmp_path: Path) -> BotOptions:
    return BotOptions(
        repo=REPO,
        token=remote.token,
        api_url=remote.api_url,
        select=("DIF004",),
        workdir=tmp_path / "work",
        client=FAST_CLIENT,
        log=lambda message: None,
        # The PR tests assert exact request logs; the dashboard's own tests turn it on (`dashboard_options`).
        dashboard=False,
    )


@pytest.fixture(name="dashboard_options")
def dashboard_options_fixture(options: BotOptions) -> BotOptions:
    return replace(options, dashboard=True)


def with_options(options: BotOptions, **changes: Any) -> BotOptions:
    return replace(options, **changes)


def remote_refs(bare_repo: Path) -> dict[str, str]:
    listing = subprocess.run(
        ["git", "--git-dir", str(bare_repo), "for-each-ref", "--format=%(refname) %(objectname)"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return dict(line.split(" ", 1) for line in listing.splitlines())


def show(bare_repo: Path, revision: str, path: str) -> str:
    return subprocess.run(
        ["git", "--git-dir", str(bare_repo), "show", f"{revision}:{path}"], capture_output=True, text=True, check=True
    ).stdout


def reject_pushes_to(bare_repo: Path, ref: str) -> None:
    """A pre-receive hook in the remote that refuses any push touching `ref`."""
    hook = bare_repo / "hooks" / "pre-receive"
    hook.write_text(
        "#!/bin/sh\nwhile read old new ref; do\n"
        f'  if [ "$ref" = "{ref}" ]; then echo "{ref} is protected" >&2; exit 1; fi\n'
        "done\nexit 0\n"
    )
    hook.chmod(0o755)


def package_file(path: str) -> str:
    return f"{PACKAGE}/{path}"
