"""The order the test modules start in: the longest first, so that the end of a run keeps both cores busy."""

from __future__ import annotations

import pytest

# The modules that take longest, longest first (`--durations`, 2 cores). `make test` hands whole modules to the
# workers (`--dist loadscope`) in collection order (`--no-loadscope-reorder`; xdist's own order, most tests
# first, left a 3-test module of minutes to run alone at the end). The first two start on different workers:
# one builds the main-like checkout's environment, the other the diffusers trees (whose scan cache every
# verification reads: tests/verify/conftest.py), so neither waits on a lock.
# Measured on a fresh clone's `.ci/run` at 70de9b3, once the verifier's children were forked from one zygote.
LONGEST_FIRST = (
    "tests/bot/test_bot_main_like.py",
    "tests/verify/test_verify_trees.py",
    "tests/rules/test_dif005.py",
    "tests/test_precommit.py",
    "tests/verify/test_cli_verify.py",
    "tests/verify/test_real_scale.py",
    "tests/verify/test_runner.py",
    "tests/verify/test_recompile_limit.py",
    "tests/verify/test_own_tests.py",
    "tests/bot/test_bot_real_verifier.py",
    "tests/verify/test_checkout_tests.py",
    "tests/test_diffusers_tree.py",
    "tests/rules/test_dif003.py",
    "tests/test_releases.py",
    "tests/verify/test_repo_checks.py",
    "tests/verify/test_environment_failures.py",
    "tests/rules/test_dif003_turned_on_tests.py",
    "tests/test_formatter_gate.py",
    "tests/verify/test_environment.py",
)


def longest_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place: LONGEST_FIRST's modules in its order, then the rest as collected (a stable sort)."""
    rank = {module: place for place, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
