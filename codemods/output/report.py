"""How a run is shown: text for people, JSON for tools, GitHub annotations for CI (SARIF: `sarif`)."""

from __future__ import annotations

import difflib
import os

from codemods import __version__
from codemods.engine.run_result import Mode, RunResult
from codemods.findings import Finding, FixSafety


def display_path(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _marker(finding: Finding) -> str:
    if finding.fixed:
        return "[fixed] "
    if finding.fix_safety is FixSafety.SAFE and not finding.not_fixed_reason:
        return "[*] "
    if finding.fix_safety is FixSafety.UNSAFE and not finding.not_fixed_reason:
        return "[unsafe] "
    return ""


def shown(findings: list[Finding], include_cold: bool) -> list[Finding]:
    """What a report lists: fixes made, and the findings paid per denoising step (all with `include_cold`)."""
    return [f for f in findings if include_cold or f.fixed or f.shown_by_default]


def by_pattern(findings: list[Finding]) -> list[list[Finding]]:
    """The findings grouped by code shape (`Finding.pattern`), each group in file order, groups by first place."""
    groups: dict[str, list[Finding]] = {}
    for position, finding in enumerate(findings):
        groups.setdefault(finding.pattern or f"#{position}", []).append(finding)
    return list(groups.values())


def cost_note(finding: Finding) -> str:
    """The frequency, where the message does not already say it."""
    if finding.cost is None or finding.cost.text() in finding.message:
        return ""
    return f" [cost: {finding.cost.text()}]"


def text_lines(result: RunResult, include_cold: bool = False) -> list[str]:
    """One entry per code shape: the first place with its message, then the other places of the same shape."""
    lines = []
    for group in by_pattern(shown(result.remaining if result.mode is Mode.WRITE else result.findings, include_cold)):
        finding = group[0]
        where = f"{display_path(finding.path)}:{finding.line}:{finding.column + 1}"
        line = f"{where}: {finding.code} {_marker(finding)}{finding.message}{cost_note(finding)}"
        if finding.not_fixed_reason:
            line += f" (not fixed: {finding.not_fixed_reason})"
        lines.append(line)
        if len(group) > 1:
            others = ", ".join(f"{display_path(f.path)}:{f.line}:{f.column + 1}" for f in group[1:])
            lines.append(f"    the same in {len(group) - 1} more place(s): {others}")
    return lines


def cold_note(result: RunResult, include_cold: bool) -> str | None:
    """How many findings the default report leaves out, and how to see them."""
    listed = result.remaining if result.mode is Mode.WRITE else result.findings
    hidden = len(listed) - len(shown(listed, include_cold))
    if not hidden:
        return None
    return (
        f"{hidden} finding(s) not paid per denoising step (once per generation or call, the last step, no "
        "measured effect, or a model no pipeline runs per step) not listed: `--include-cold` lists them"
    )


def summary_line(result: RunResult) -> str:
    summary = result.summary()
    parts = []
    if result.mode is Mode.WRITE:
        parts.append(f"fixed {summary['fixed']} finding(s) in {summary['files_changed']} file(s)")
        parts.append(f"{len(result.remaining)} remaining")
    elif result.mode is Mode.DIFF:
        parts.append(
            f"{summary['files_changed']} file(s) would change: the diff fixes {summary['fixed']} of "
            f"{summary['findings']} finding(s), {len(result.remaining)} remain"
        )
    else:
        parts.append(f"{summary['findings']} finding(s)")
    safe = sum(1 for f in result.remaining if f.fix_safety is FixSafety.SAFE and not f.not_fixed_reason)
    unsafe = sum(1 for f in result.remaining if f.fix_safety is FixSafety.UNSAFE and not f.not_fixed_reason)
    if result.mode is Mode.CHECK and safe:
        parts.append(f"{safe} fixable with `codemod run`")
    if unsafe:
        parts.append(f"{unsafe} more with `--unsafe-fixes`")
    parts.append(f"{summary['files_scanned']} file(s) scanned")
    if result.errors:
        parts.append(f"{len(result.errors)} error(s)")
    return "; ".join(parts) + "."


def summary_notes(result: RunResult, include_cold: bool = False) -> list[str]:
    """What the run set aside or could not check, said once each (after the summary line)."""
    cold = cold_note(result, include_cold)
    notes = [cold] if cold else []
    notes += [
        f"skipped {entry['findings']} finding(s) in {entry['files']} file(s): {entry['reason']} "
        f"(`{entry['include_with']}` to include them)"
        for entry in result.skipped_summary()
    ]
    if result.formatter is not None:
        notes.append(result.formatter.line())
    if result.mode is Mode.WRITE and len(places := _top_folders(result.changes)) > 1:
        # `codemod run .` on a checkout also rewrites examples/ and tests/: say so, folder by folder.
        notes.append("written: " + ", ".join(f"{count} file(s) in {folder}" for folder, count in places.items()))
    if result.loose_files and result.context is not None:
        notes.append(
            f"{result.loose_files} file(s) outside any package looked up the diffusers classes they use in "
            f"{display_path(str(result.context))} (--context)"
        )
    return notes


def _top_folders(paths) -> dict[str, int]:
    """How many of `paths` lie in each top folder of the current directory (`src/`, `examples/`, `./` for files
    right in it; a file outside it by its own folder)."""
    counts: dict[str, int] = {}
    for path in sorted(paths):
        shown = display_path(path)
        head = os.path.dirname(shown) if os.path.isabs(shown) else shown.split(os.sep)[0]
        folder = "./" if head == shown else head + "/"
        counts[folder] = counts.get(folder, 0) + 1
    return counts


def unified_diff(result: RunResult) -> str:
    chunks = []
    for path, (before, after) in sorted(result.changes.items()):
        shown = display_path(path)
        chunks.extend(
            difflib.unified_diff(
                before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{shown}", f"b/{shown}"
            )
        )
    return "".join(chunks)


def as_json(result: RunResult, include_cold: bool = False) -> str:
    import json  # here, not at the top: only the JSON format pays for it (the pre-commit hook prints text)

    listed = _every_finding(result)
    kept = shown(listed, include_cold)
    counts = {"not_listed_cold": len(listed) - len(kept), "listed_patterns": len(by_pattern(kept))}
    document = {
        "version": __version__,
        "findings": [{**f.to_dict(), "path": display_path(f.path)} for f in kept],
        "summary": {**result.summary(), **counts},
        "errors": [{"path": display_path(e.path), "line": e.line, "message": e.message} for e in result.errors],
    }
    return json.dumps(document, indent=2)


def _every_finding(result: RunResult) -> list[Finding]:
    """Fixed findings where the fix went; after a write, the others where they now are in the written files."""
    if result.mode is not Mode.WRITE:
        return result.findings
    return sorted([f for f in result.findings if f.fixed] + result.remaining, key=Finding.sort_key)


def as_github(result: RunResult, include_cold: bool = False) -> str:
    lines = []
    for finding in shown(result.remaining, include_cold):
        properties = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("file", display_path(finding.path)),
                ("line", finding.line),
                ("col", finding.column + 1),
                ("endLine", finding.end_line),
                ("endColumn", finding.end_column + 1),
                ("title", f"{finding.code} {_rule_name(result, finding.code)}"),
            )
        )
        lines.append(f"::warning {properties}::{_escape_data(finding.message + cost_note(finding))}")
    for error in result.errors:
        location = f"file={_escape_property(display_path(error.path))}" + (f",line={error.line}" if error.line else "")
        lines.append(f"::error {location}::{_escape_data(error.message)}")
    return "\n".join(lines)


def _rule_name(result: RunResult, code: str) -> str:
    return next((rule.name for rule in result.rules if rule.code == code), "")


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")
