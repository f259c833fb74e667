"""A `Trigger` finds what its regex alone finds, over every file of the installed diffusers."""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re

import pytest

import codemods
from codemods.project.index import installed_diffusers
from codemods.rules.host_sync_in_hot_path import HostSyncInHotPath
from codemods.triggers import AnyOf, Trigger


def _declared_triggers() -> dict[str, Trigger | AnyOf]:
    """Every trigger the tool declares, by where: in a module, or on a class (a rule's `trigger`, `facts_trigger`)."""
    found: dict[str, Trigger | AnyOf] = {}
    for module_info in pkgutil.walk_packages(codemods.__path__, "codemods."):
        module = importlib.import_module(module_info.name)
        classes = [value for value in vars(module).values() if getattr(value, "__module__", None) == module.__name__]
        for owner in [module, *(value for value in classes if isinstance(value, type))]:
            place = module.__name__ if owner is module else f"{module.__name__}.{owner.__name__}"
            for name, value in vars(owner).items():
                if isinstance(value, Trigger | AnyOf) and all(value is not known for known in found.values()):
                    found[f"{place}.{name}"] = value
    return found


TRIGGERS = _declared_triggers()


@functools.cache
def _diffusers_texts() -> list[str]:
    root = installed_diffusers()
    assert root is not None
    return [path.read_text(encoding="utf-8") for path in sorted(root.rglob("*.py"))]


def _spans(matches) -> list[tuple[int, int]]:
    return [match.span() for match in matches]


def test_the_tool_declares_triggers() -> None:
    assert {
        "codemods.rules.discarded_tensor_conversion.DiscardedTensorConversion.trigger",
        "codemods.rules.constant_device_copy.ConstantDeviceCopy.trigger",  # an `AnyOf`
    } <= TRIGGERS.keys()


@pytest.mark.parametrize("name", sorted(TRIGGERS))
def test_a_trigger_finds_what_its_regex_finds_in_diffusers(name: str) -> None:
    trigger = TRIGGERS[name]
    for text in _diffusers_texts():
        assert _spans(trigger.finditer(text)) == _spans(trigger.pattern.finditer(text))
        middle = (text.find("\n", len(text) // 3) + 1, text.find("\n", 2 * len(text) // 3))  # as `within` asks
        assert _spans(trigger.finditer(text, *middle)) == _spans(trigger.pattern.finditer(text, *middle))
        assert (trigger.search(text) is None) == (trigger.pattern.search(text) is None)


def test_matches_begin_at_every_literal_even_overlapping_ones() -> None:
    trigger = Trigger(r"a{3}b|ab", "aa", "ab", "ac", "ad")  # four opening with one character: found by one regex
    assert _spans(trigger.finditer("aaaab ab")) == [(1, 5), (6, 8)]
    assert _spans(trigger.finditer("aaaab ab", 2)) == [(3, 5), (6, 8)]
    assert _spans(trigger.finditer("aaaab ab", 0, 7)) == [(1, 5)]


def test_a_line_start_trigger_tries_the_start_of_each_line_holding_a_literal() -> None:
    trigger = Trigger(r"^ *x\.to\(", ".to(", flags=re.MULTILINE, line_start=True)
    text = "  x.to(a)\ny = x.to(b)\n x.to(c)"
    assert _spans(trigger.finditer(text)) == _spans(trigger.pattern.finditer(text)) == [(0, 7), (22, 28)]
    assert _spans(trigger.finditer(text, 1)) == [(22, 28)]  # a match begins where a line does


def test_a_literal_that_does_not_open_every_match_loses_matches() -> None:
    """Why each trigger's literals are held to its regex above: nothing but them is tried."""
    assert _spans(Trigger(r"\w+\(", "(").finditer("f(x)")) == []


def test_a_trigger_needs_literals() -> None:
    with pytest.raises(ValueError, match="literals"):
        Trigger("x")
    with pytest.raises(ValueError, match="literals"):
        Trigger("x", "")


def test_the_host_sync_trigger_is_its_word_boundary_form() -> None:
    """DIF007's words open with the word, their `\\b` a lookbehind after it: the same matches as `\\bword\\b`
    (over a quarter of diffusers: the `\\b` form, the one `re` tries at every offset, is slow)."""
    boundaries = re.compile(
        r"\.(?:item|tolist|numpy|cpu|nonzero|unique)\(|\bif\b|\bwhile\b|\bassert\b|\b(?:int|float|bool|min|max)\("
        r"|torch\.(?:nonzero|argwhere|unique|masked_select|equal|allclose|where)\(|\.to\([^)]*cpu|mask\w*\s*\]"
        r"|:\s*[A-Za-z_][\w.]*\s*[\],]"
    )
    for text in [*_diffusers_texts()[::4], "elif x:\nwhile(1): assert_(int(y)) if max(z) else _min(w)\nif"]:
        assert _spans(HostSyncInHotPath.trigger.finditer(text)) == _spans(boundaries.finditer(text))


def test_a_literal_running_past_a_window_of_lines_is_found_where_it_begins() -> None:
    text = "a" * 9000 + "b\nc\nb\nc"  # the first window ends after the first `\n`, inside the first literal
    found_apart = Trigger(r"b\nc", "b\nc")
    one_opening = Trigger(r"b\n[c-f]", "b\nc", "b\nd", "b\ne", "b\nf")
    for trigger in (found_apart, one_opening):
        assert _spans(trigger.finditer(text)) == _spans(trigger.pattern.finditer(text)) == [(9000, 9003), (9004, 9007)]


def test_any_of_takes_the_first_branch_matching_at_the_first_offset_and_skips_what_it_covers() -> None:
    any_of = AnyOf(r"ab+", r"a", r"b+c")  # at 0 `ab+` and `a` both match; `b+c` at 1 lies inside `abb`
    text = "abbc a bc"
    for bounds, expected in (
        ((), [(0, 3), (5, 6), (7, 9)]),
        ((1,), [(1, 4), (5, 6), (7, 9)]),
        ((0, 8), [(0, 3), (5, 6)]),
    ):
        assert _spans(any_of.finditer(text, *bounds)) == _spans(any_of.pattern.finditer(text, *bounds)) == expected
    assert any_of.search(text, 4).span() == (5, 6)
    assert any_of.search("xyz") is None
