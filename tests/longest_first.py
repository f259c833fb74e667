"""The order the test modules start in: the longest first, so that the end of a run keeps both cores busy."""

from __future__ import annotations

import pytest

# The modules that take longest, longest first (`--durations`, 2 cores). `make test` hands whole modules to the
# workers (`--dist loadscope`) in collection order (`--no-loadscope-reorder`; xdist's own order, most tests
# first, left a 3-test module of minutes to run alone at the end). The first two start on different workers:
# one builds the main-like checkout's environment, the other needs no shared fixture, so neither waits on a lock.
LONGEST_FIRST = (
    "tests/bot/test_bot_main_like.py",
    "tests/verify/test_environment_failures.py",
    "tests/verify/test_verify_trees.py",
    "tests/rules/test_dif005.py",
    "tests/verify/test_recompile_limit.py",
    "tests/rules/test_dif003_turned_on_tests.py",
    "tests/verify/test_runner.py",
    "tests/test_formatter_gate.py",
    "tests/test_releases.py",
    "tests/rules/test_dif003.py",
    "tests/verify/test_checkout_tests.py",
    "tests/verify/test_repo_checks.py",
    "tests/test_diffusers_tree.py",
    "tests/verify/test_environment.py",
)


def longest_first(items: list[pytest.Item]) -> None:
    """Sort `items` in place: LONGEST_FIRST's modules in its order, then the rest as collected (a stable sort)."""
    rank = {module: place for place, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
