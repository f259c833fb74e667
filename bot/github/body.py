"""The words a maintainer reads: PR title and body, and the commit message.

What and why come from the rule's own documentation (its `## What it does` / `## Why is this
bad?` / `## Fix safety` / `## Evidence` sections), the evidence from the verifier's table, and
the hidden fingerprint comment is what later runs recognise the PR by.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable

from bot.github.pulls import FINGERPRINT_MARKER
from bot.groups import PACKAGE_DIR, FixGroup
from bot.verification import Verification
from codemods import __version__
from codemods.output.rule_docs import first_paragraph, pip_requirement, rule_sections
from codemods.rules import rule_class

_HIDDEN = re.compile(
    rf"<!--\s*{FINGERPRINT_MARKER}:\s*\S+ rule=\S+ files=(?P<files>\S*)(?: rewrites=(?P<rewrites>\d+))?"
)


def title(group: FixGroup) -> str:
    rule = rule_class(group.rule)
    where = group.family + (f" and {len(group.families) - 1} copied" if len(group.families) > 1 else "")
    return f"[{group.rule}] {rule.name} in {where}"


def reproduce_command(group: FixGroup, base_sha: str, device: str) -> str:
    """Shell lines that redo the rewrite and the verification from a checkout of the target."""
    files = sorted(group.files)
    verify = [
        "codemod",
        "verify",
        str(PACKAGE_DIR),
        f"--select={group.rule}",
        *(f"--path={f}" for f in files),
        f"--device={device}",
    ]
    return "\n".join(
        [
            f"git checkout {base_sha}",
            shlex.join(["pip", "install", pip_requirement("verify")]),
            shlex.join(["codemod", "run", "--diff", "--unsafe-fixes", f"--select={group.rule}", *files]),
            shlex.join(verify),
        ]
    )


def fingerprint_comment(group: FixGroup) -> str:
    files = ",".join(sorted(group.files))
    return f"<!-- {FINGERPRINT_MARKER}: {group.fingerprint} rule={group.rule} files={files} rewrites={len(group.rewrites)} -->"


def change_comment(previous_body: str | None, group: FixGroup, base: str, base_sha: str) -> str:
    """What a rebuilt PR's comment says when its fix changed: its rewrites and files, before and now.

    The before comes from the hidden comment of the body being replaced (PRs opened before it
    counted rewrites say only their files).
    """
    hidden = _HIDDEN.search(previous_body or "")
    files_before = set(hidden["files"].split(",")) if hidden else set()
    now = f"{_count(len(group.rewrites), 'rewrite')} in {_count(len(group.files), 'file')}"
    was = []
    if hidden and hidden["rewrites"]:
        was.append(f"was {_count(int(hidden['rewrites']), 'rewrite')} in {_count(len(files_before), 'file')}")
    if added := sorted(set(group.files) - files_before):
        was.append("now also " + ", ".join(f"`{path}`" for path in added))
    if dropped := sorted(files_before - set(group.files)):
        was.append("no longer " + ", ".join(f"`{path}`" for path in dropped))
    details = f" ({'; '.join(was)})" if was else ""
    return (
        f"`{base}` moved to {base_sha[:10]} and this fix changed: now {now}{details}. "
        "The bot rebuilt the branch on it and verified it again; the description above is updated."
    )


def body(group: FixGroup, verification: Verification) -> str:
    rule = rule_class(group.rule)
    sections = rule_sections(group.rule)
    families = ", ".join(f"`{name}`" for name in group.families)
    parts = [
        (
            f"{_sentence(rule.summary)} This PR applies the `{group.rule}` ({rule.name}) codemod to {families}: "
            f"{_count(len(group.rewrites), 'rewrite')} in {_count(len(group.files), 'file')}, "
            f"verified on `{verification.device}`."
        ),
        "## What\n\n" + sections.get("What it does", rule.summary),
        "## Why\n\n" + sections.get("Why is this bad?", ""),
        "## Changes\n\n" + _changes_table(group),
    ]
    if group.copies:
        parts.append(
            "`# Copied from` blocks change together with their source, so `make fix-copies` has nothing to do:\n\n"
            + "\n".join(f"- `{pair}`" for pair in group.copies)
        )
    parts += [
        # The verifier's block brings its own heading, table, parity numbers and reproduce commands.
        verification.markdown.strip() or f"## Verification\n\nVerdict: **{verification.verdict}**",
        "## Fix safety\n\n" + sections.get("Fix safety", ""),
        "## Background\n\n" + sections.get("Evidence", ""),
        (
            f"<sub>Opened by the diffusers-codemod bot ({__version__}). Closing this PR declines the fix: the bot "
            "will not reopen it or open it again. If you push to this branch, the bot stops updating it.</sub>"
        ),
        fingerprint_comment(group),
    ]
    return "\n\n".join(parts) + "\n"


def commit_message(group: FixGroup, verification: Verification) -> str:
    rule = rule_class(group.rule)
    why = first_paragraph(rule_sections(group.rule).get("Why is this bad?", ""))
    lines = [
        title(group),
        "",
        f"What: {_sentence(rule.summary)} {_count(len(group.rewrites), 'rewrite')} in:",
        *(f"  {path}" for path in sorted(group.files)),
        "",
        f"Why: {why}",
        "",
        f"Evidence: verifier on {verification.device}: {verification.verdict} ({verification.reason}).",
        "",
        f"Codemod-Fingerprint: {group.fingerprint}",
    ]
    return "\n".join(lines) + "\n"


def _changes_table(group: FixGroup) -> str:
    lines_by_path: dict[str, list[int]] = {}
    for rewrite in group.rewrites:
        lines_by_path.setdefault(rewrite.path, []).append(rewrite.line)
    rows = ["| file | lines rewritten |", "| --- | --- |"]
    rows += [f"| `{path}` | {_lines(lines_by_path.get(path, []))} |" for path in sorted(group.files)]
    return "\n".join(rows)


def _lines(numbers: Iterable[int]) -> str:
    return ", ".join(str(n) for n in sorted(set(numbers))) or "—"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _sentence(text: str) -> str:
    text = text.strip()
    return text[0].upper() + text[1:] + ("" if text.endswith(".") else ".")
