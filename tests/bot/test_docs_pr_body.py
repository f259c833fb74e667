"""The PR body shown in docs/bot.md says what the bot writes today: the rule's own sections, the install line."""

from __future__ import annotations

import re
from pathlib import Path

from codemods.output.rule_docs import pip_requirement, rule_sections
from codemods.tool_version import PINNED_COMMIT

BOT_DOCS = Path(__file__).resolve().parents[2] / "docs" / "bot.md"
# Body heading -> the rule documentation's section the bot copies into it (bot/github/body.py).
SECTIONS = {"What": "What it does", "Why": "Why is this bad?", "Fix safety": "Fix safety", "Background": "Evidence"}


def sample_body() -> str:
    docs = BOT_DOCS.read_text()
    start = docs.index("````markdown\n# [DIF004]")
    return docs[start : docs.index("\n````\n", start)]


def section(body: str, heading: str) -> str:
    found = re.search(rf"^## {re.escape(heading)}\n\n(.*?)\n\n(?=## |<sub>)", body, re.DOTALL | re.MULTILINE)
    assert found is not None, heading
    return found[1]


def test_the_sample_pr_body_carries_the_rules_current_documentation() -> None:
    body = sample_body()
    documentation = rule_sections("DIF004")

    assert {heading: section(body, heading) for heading in SECTIONS} == {
        heading: documentation[name].strip() for heading, name in SECTIONS.items()
    }


def test_the_sample_pr_body_installs_the_tool_as_the_bot_does_at_the_pinned_commit() -> None:
    assert f"pip install '{pip_requirement('verify', PINNED_COMMIT)}'\n" in sample_body()
