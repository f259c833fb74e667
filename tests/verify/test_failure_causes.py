"""Tests failing on the original tree are grouped by cause: what the runner lacks, apart from the code's."""

from __future__ import annotations

from bot.verify.reporting.failure_causes import grouped_failures

HUB = (
    "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
    "cached files."
)


def test_fifteen_hub_failures_are_one_line_naming_the_runner() -> None:
    failures = [{"test": f"tests/test_a.py::T::test_{n}", "message": HUB} for n in range(15)]
    [group] = grouped_failures(failures)
    assert (group.runner, group.line()) == (True, "15 tests need the Hugging Face Hub, which this runner cannot reach")


def test_a_missing_module_is_the_runners_and_an_assertion_is_the_codes_listed_after() -> None:
    failures = [
        {"test": "t::a", "message": "AssertionError: 1 != 2"},
        {"test": "t::b", "message": "ModuleNotFoundError: No module named 'torchvision'"},
        {"test": "t::c", "message": "AssertionError: 1 != 2"},
    ]
    assert [(g.runner, g.line(), g.tests) for g in grouped_failures(failures)] == [
        (True, "1 test needs `torchvision`, which this runner's environment does not have", ["t::b"]),
        (False, "2 tests fail on the original tree with: AssertionError: 1 != 2", ["t::a", "t::c"]),
    ]
