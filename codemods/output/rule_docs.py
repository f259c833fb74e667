"""A rule's documentation as users meet it: `codemod explain`, the SARIF help, the dashboard's one line and link.

The rule class's docstring is the documentation; this module only formats it and says where it
lives online (the rule's module in the tool's repository, at the commit that runs), and how pip
installs that commit.
"""

from __future__ import annotations

import re

from codemods.rules import rule_class
from codemods.tool_version import tool_ref

TOOL_URL = "https://github.com/diffusers-codemod/diffusers-codemod"
_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)
_SENTENCE = re.compile(r"(.+?[.!?])(?=\s+[A-Z`(]|\s*$)", re.DOTALL)


def explain_text(code: str) -> str:
    """What `codemod explain CODE` prints: name, summary, fix safety, then the full documentation."""
    rule = rule_class(code)
    return f"# {rule.code} {rule.name}\n\n{rule.summary}\n\nFix: {rule.fix_label()}\n\n{rule.documentation()}\n"


def pip_requirement(extras: str, ref: str | None = None) -> str:
    """pip's requirement for this tool: its git repository at `ref`, by default the commit that runs (not on PyPI)."""
    return f"diffusers-codemod[{extras}] @ git+{TOOL_URL}@{ref or tool_ref()}"


def docs_url(code: str) -> str:
    """The rule's documentation online: its module (the docstring) at the commit that runs."""
    module = rule_class(code).__module__.replace(".", "/")
    return f"{TOOL_URL}/blob/{tool_ref()}/{module}.py"


def rule_sections(code: str) -> dict[str, str]:
    """A rule's documentation split at its `## ` headings."""
    text = rule_class(code).documentation()
    headings = list(_HEADING.finditer(text))
    return {
        match.group(1).strip(): text[
            match.end() : headings[i + 1].start() if i + 1 < len(headings) else len(text)
        ].strip()
        for i, match in enumerate(headings)
    }


def first_paragraph(text: str) -> str:
    return " ".join(text.split("\n\n", 1)[0].split())


def why_line(code: str) -> str:
    """The first sentence of the rule's "Why is this bad?": one line for lists and tables."""
    paragraph = first_paragraph(rule_sections(code).get("Why is this bad?", "")) or rule_class(code).summary
    match = _SENTENCE.match(paragraph)
    return match.group(1) if match else paragraph
