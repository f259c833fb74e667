"""The bot against a main-like checkout, end to end: its own environment, its own tests, four rules' PRs.

The checkout (tests/main_like.py) pins huggingface-hub below 2.0 like diffusers main; its
environment is built by the tool (layered on this project's packages to keep CI fast) and
handed to the bot as `--python`. `codemod bot run` then clones it from the bare remote, groups
the fixes, verifies each group on the emulated device with the checkout's own tests on both
trees, and opens one PR per verified group on the GitHub REST double.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from bot_harness import FAST_CLIENT, REPO
from github_double import GitHubDouble, create_bare_remote
from main_like import ONLY, MainLike, push_checkout

from bot.runner import BotOptions, run
from bot.summary import RunSummary

pytest.importorskip("torch")

OWN_TESTS = {  # group -> (passed, skipped) of the checkout's own tests of its files, on both trees
    "dif001-models-transformers-transformer-nucleusmoe-image": (2, 1),
    "dif003-models-transformers-pixart-transformer-2d": (1, 0),
    "dif004-pipelines-ddpm": (2, 0),
    "dif005-pipelines-stable-diffusion": (2, 0),
}


@pytest.fixture(scope="module")
def bot_run(
    main_like: MainLike, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[RunSummary, GitHubDouble, Path]]:
    tmp_path = tmp_path_factory.mktemp("bot-main-like")
    create_bare_remote(tmp_path / "remote.git")
    with GitHubDouble(tmp_path / "remote.git") as double:
        push_checkout(double.bare_repo, main_like.checkout, tmp_path / "seed")
        options = BotOptions(
            repo=REPO,
            token=double.token,
            api_url=double.api_url,
            only=ONLY,
            device="emu",
            python=main_like.python,
            workdir=tmp_path / "work",
            client=FAST_CLIENT,
            log=lambda message: None,
        )
        summary = run(options)
        yield summary, double, tmp_path / "work"


def _group_report(workdir: Path, group_id: str) -> dict:
    return json.loads((workdir / "reports" / f"{group_id}.json").read_text())["report"]


def test_a_pr_is_opened_for_each_verified_group_of_four_rules(bot_run) -> None:
    summary, _, _ = bot_run
    opened = {group.group_id: group.verdict for group in summary.groups if group.outcome.value == "opened"}
    assert opened == dict.fromkeys(OWN_TESTS, "verified")


def test_each_body_has_the_census_table_parity_and_the_own_tests_line(bot_run) -> None:
    summary, double, _ = bot_run
    for group in summary.groups:
        body = double.pull_request(group.pull_number).body
        passed, skipped = OWN_TESTS[group.group_id]
        assert "| target | rules | per | H2D copies | D2H copies | syncs | output objects |" in body
        assert "Parity (same seed and inputs, fp32):" in body and "(bit-identical required: the rewrites (" in body
        assert f"✅ diffusers' own tests: {passed} passed, {skipped} skipped (same before and after)" in body
        assert "HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 python -m pytest" in body


def test_both_trees_ran_in_the_checkouts_environment_each_importing_its_own_copy(bot_run, main_like) -> None:
    summary, _, workdir = bot_run
    for group in summary.groups:
        report = _group_report(workdir, group.group_id)
        assert report["interpreter"] == str(main_like.python)
        for side, imported in report["own_tests"]["imported"].items():
            assert (
                Path(imported).resolve()
                == (workdir / "verify" / group.group_id / side / "diffusers" / "__init__.py").resolve()
            )
