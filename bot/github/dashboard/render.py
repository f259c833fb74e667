"""The dashboard's body: every group, PR and report-only finding of a run, with permalinks at the base commit."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from bot.github.dashboard.census_table import census_section
from bot.github.dashboard.layout import Section, fit
from bot.github.dashboard.ticks import DASHBOARD_MARKER, IGNORE, OPEN_NOW, Ticks, checkbox, findings_key
from bot.github.pulls import KnownPull
from bot.groups import FixGroup, ReportOnly
from bot.summary import GroupOutcome, Outcome, PullOutcome
from codemods import __version__
from codemods.output.rule_docs import TOOL_URL, docs_url, why_line
from codemods.rules import rule_class

# Each permalink is ~150 characters: more per line would crowd other items out of the 65,536 characters.
LINKS_PER_LINE = 3
_NOT_PUBLISHED = (Outcome.NOT_VERIFIED, Outcome.FAILED, Outcome.NOT_ATTEMPTED)


@dataclass
class DashboardContent:
    repo: str
    html_url: str  # the repository's web address
    base: str
    base_sha: str
    groups: list[FixGroup]
    outcomes: list[GroupOutcome]
    pulls: list[KnownPull]  # every PR of the bot GitHub told this run about
    report_only: list[ReportOnly]
    ticks: Ticks  # as the issue holds them now; ignores are written back ticked
    updated: str  # when this run wrote it, e.g. "2026-11-02 05:31 UTC"
    census: list[dict[str, Any]] = field(default_factory=list)  # verify report targets
    census_url: str | None = None
    run_url: str | None = None
    pull_outcomes: list[PullOutcome] = field(default_factory=list)  # open PRs no group held: closed or not

    def permalink(self, path: str, start: int, end: int) -> str:
        anchor = f"L{start}" if end <= start else f"L{start}-L{end}"
        return f"{self.html_url}/blob/{self.base_sha}/{path}#{anchor}"

    def links(self, spans: Iterable[tuple[str, int, int]]) -> str:
        """`[file.py#L3-L5](…), [#L9](…) and 2 more`: the file named once, then only its line ranges."""
        parts, previous = [], None
        ordered = sorted(set(spans))
        for path, start, end in ordered[:LINKS_PER_LINE]:
            anchor = f"L{start}" if end <= start else f"L{start}-L{end}"
            text = f"{PurePosixPath(path).name}#{anchor}" if path != previous else f"#{anchor}"
            parts.append(f"[`{text}`]({self.permalink(path, start, end)})")
            previous = path
        more = len(ordered) - LINKS_PER_LINE
        return ", ".join(parts) + (f" and {more} more" if more > 0 else "")


def render(content: DashboardContent) -> str:
    by_id = {group.id: group for group in content.groups}
    outcomes = {outcome.group_id: outcome for outcome in content.outcomes}
    sections = [
        _open_pulls(content, by_id, outcomes),
        _groups_section(content, by_id, [o for o in content.outcomes if o.outcome is Outcome.WAITING], waiting=True),
        _groups_section(content, by_id, [o for o in content.outcomes if o.outcome in _NOT_PUBLISHED], waiting=False),
        Section(
            f"## Merged ({_count(content.pulls, merged=True)})",
            _pull_items([p for p in content.pulls if p.merged]),
            empty="None.",
        ),
        Section(
            f"## Closed by a maintainer ({sum(p.declined for p in content.pulls)})",
            _pull_items([p for p in content.pulls if p.declined]),
            empty="None. A PR a maintainer closes is blocked for good: the bot never reopens or recreates it.",
        ),
        _no_longer_needed(content),
        *_report_only(content),
        _ignored(content, by_id),
        census_section(content.census, content.census_url),
    ]
    return fit(_header(content), sections, _footer())


def _header(content: DashboardContent) -> str:
    commit = f"[`{content.base}@{content.base_sha[:10]}`]({content.html_url}/commit/{content.base_sha})"
    run = f" ([workflow run]({content.run_url}))" if content.run_url else ""
    listed = [f for f in content.report_only if findings_key(f.rule, f.family) not in content.ticks.ignored]
    findings = f"{sum(f.hot for f in listed)} report-only finding(s) paid per step ({sum(not f.hot for f in listed)} more not)"
    return "\n".join(
        [
            DASHBOARD_MARKER,
            f"Everything the [diffusers-codemod]({TOOL_URL}) bot knows about this repository at {commit}: its "
            "open PRs, what maintainers merged or closed, fix groups waiting for the cap on open PRs or not "
            "verified, and the findings it can only report. Tick **open this PR now** or **ignore** below: the "
            "bot reads the boxes at the start of its next run (this issue is its only memory). Closing the "
            "issue stops the bot from updating it.",
            "",
            f"Last run: {content.updated}{run} · {len(content.groups)} fix group(s) · "
            f"{_count(content.pulls, state='open')} open PR(s) · {findings}",
        ]
    )


def _footer() -> str:
    return f"<sub>Written by diffusers-codemod {__version__}; edits other than ticks are overwritten.</sub>"


def _open_pulls(content: DashboardContent, by_id: dict[str, FixGroup], outcomes: dict[str, GroupOutcome]) -> Section:
    groups = {g.fingerprint: g for g in content.groups} | {g.branch: g for g in content.groups}
    notes = _run_notes(content)
    items = []
    for pull in sorted((p for p in content.pulls if p.state == "open"), key=lambda p: p.number):
        group = groups.get(pull.fingerprint or "") or groups.get(pull.head_ref or "")
        where = f": {content.links(_spans(group))}" if group else ""
        items.append(f"- #{pull.number} {pull.title}{where}{notes.get(pull.number, '')}")
    for outcome in content.outcomes:
        if outcome.outcome in (Outcome.WOULD_OPEN, Outcome.WOULD_UPDATE):
            verb = "would open" if outcome.outcome is Outcome.WOULD_OPEN else "would update"
            group = by_id[outcome.group_id]
            items.append(f"- {verb} (dry run): {_group_name(group)}: {content.links(_spans(group))}")
    return Section(f"## Open PRs ({len(items)})", items, empty="None.")


def _run_notes(content: DashboardContent) -> dict[int, str]:
    """What this run did to open PRs beyond looking: rebuilt on the base, or left alone though unneeded."""
    at = f"`{content.base}@{content.base_sha[:10]}`"
    said = {
        Outcome.REBUILT: f"rebuilt on {at} this run",
        Outcome.UPDATED: f"rebuilt on {at} this run, its fix changed",
        Outcome.WOULD_REBUILD: f"would be rebuilt on {at} (dry run)",
    }
    notes = {o.pull_number: said[o.outcome] for o in content.outcomes if o.pull_number and o.outcome in said}
    notes |= {o.number: o.reason for o in content.pull_outcomes if o.outcome is Outcome.SKIPPED}
    return {number: f" · _{note}_" for number, note in notes.items()}


def _groups_section(
    content: DashboardContent, by_id: dict[str, FixGroup], outcomes: list[GroupOutcome], waiting: bool
) -> Section:
    items = []
    for outcome in outcomes:
        group = by_id[outcome.group_id]
        if group.id in content.ticks.ignored:  # ticked during this run: listed under Ignored
            continue
        lines = [f"- {_group_name(group)}: {_rewrites(group)} in {content.links(_spans(group))}"]
        if waiting:
            lines.append(checkbox("open this PR now", OPEN_NOW, group.id, group.id in content.ticks.open_now, "  "))
        else:
            lines[0] += f". {outcome.outcome.value}: {outcome.reason}"
        lines.append(checkbox("ignore", IGNORE, group.id, False, "  "))
        items.append("\n".join(lines))
    if waiting:
        heading = f"## Waiting for the cap ({len(items)})"
        intro = ["Ticking **open this PR now** makes the next run verify it and, if verified, open it above the cap."]
    else:
        heading = f"## Not verified ({len(items)})"
        intro = ["Only verified fixes become PRs; the verifier's reason follows each group."]
    return Section(
        heading, items, intro=intro if items else [], empty="None.", rest_hint=" (the run summary lists every group)"
    )


def _pull_items(pulls: list[KnownPull], notes: dict[int, str] | None = None) -> list[str]:
    notes = notes or {}
    return [
        f"- #{p.number} {p.title}".rstrip() + notes.get(p.number, "") for p in sorted(pulls, key=lambda p: p.number)
    ]


def _no_longer_needed(content: DashboardContent) -> Section:
    """PRs the bot closed because the base no longer needs them; this run's say why (and dry runs what they would)."""
    closed = [p for p in content.pulls if p.state == "closed" and p.autoclosed]
    now = {o.number: o for o in content.pull_outcomes if o.outcome in (Outcome.CLOSED, Outcome.WOULD_CLOSE)}
    notes = {
        n: f": {'closed this run' if o.outcome is Outcome.CLOSED else 'would close (dry run)'}, {o.reason}"
        for n, o in now.items()
    }
    would = [p for p in content.pulls if p.number in now and p.state == "open"]
    return Section(
        f"## Closed as no longer needed ({len(closed) + len(would)})",
        _pull_items([*closed, *would], notes),
        empty="None. The bot closes its PR when the base holds its change or no longer has its findings.",
    )


def _report_only(content: DashboardContent) -> list[Section]:
    """Per rule, the findings paid per denoising step, one entry per code shape with its permalinks, and the
    families to ignore; then, folded, those paid once per generation or less."""
    listed = [f for f in content.report_only if findings_key(f.rule, f.family) not in content.ticks.ignored]
    hot = [f for f in listed if f.hot]
    by_rule: dict[str, list[ReportOnly]] = defaultdict(list)
    for finding in hot:
        by_rule[finding.rule].append(finding)
    sections = [
        Section(
            f"## Report-only findings ({len(hot)})",
            [],
            intro=[
                "Findings the engine reports without a fix it can prove safe and that are paid every denoising "
                "step, by rule, one entry per code shape. `codemod run --check --select CODE src/diffusers` "
                "lists them with their messages; **ignore** moves a family to Ignored."
            ]
            if hot
            else [],
            empty="" if hot else "None.",
        )
    ]
    for rule in sorted(by_rule):
        found = by_rule[rule]
        families: dict[str, int] = defaultdict(int)
        for finding in found:
            families[finding.family] += 1
        shapes = _by_pattern(found)
        items = [_shape_item(content, shape) for shape in shapes]
        items += [
            checkbox(f"ignore `{name}` ({count})", IGNORE, findings_key(rule, name), False)
            for name, count in sorted(families.items())
        ]
        sections.append(
            Section(
                f"### {rule} {rule_class(rule).name}: {len(found)} in {len(shapes)} shape(s)",
                items,
                intro=[f"{why_line(rule)} [Documentation]({docs_url(rule)}) · `codemod explain {rule}`"],
                rest_hint=f": `codemod run --check --select {rule} src/diffusers` lists them all",
            )
        )
    cold = [f for f in listed if not f.hot]
    if cold:
        sections.append(
            Section(
                f"## Not paid per denoising step ({len(cold)})",
                [_shape_item(content, shape) for shape in _by_pattern(sorted(cold, key=lambda f: f.rule))],
                intro=[
                    "Real, but paid once per generation, once per call, at the last step only, in a model no "
                    "pipeline runs per step, or with no measured effect: "
                    "`codemod run --check --include-cold src/diffusers` lists them."
                ],
                folded=True,
                rest_hint=": `codemod run --check --include-cold src/diffusers` lists them all",
            )
        )
    return sections


def _by_pattern(findings: list[ReportOnly]) -> list[list[ReportOnly]]:
    shapes: dict[str, list[ReportOnly]] = defaultdict(list)
    for position, finding in enumerate(findings):
        shapes[finding.pattern or f"#{position}"].append(finding)
    return list(shapes.values())


def _shape_item(content: DashboardContent, shape: list[ReportOnly]) -> str:
    """`- DIF006 (21×, once per generation): <the first one's message>: links`."""
    first = shape[0]
    count = f"{len(shape)}×, " if len(shape) > 1 else ""
    frequency = first.frequency or "frequency unknown"
    links = content.links((f.path, f.line, f.end_line) for f in shape)
    return f"- {first.rule} ({count}{frequency}): {first.message}: {links}"


def _ignored(content: DashboardContent, by_id: dict[str, FixGroup]) -> Section:
    counts: dict[str, int] = defaultdict(int)
    for finding in content.report_only:
        counts[findings_key(finding.rule, finding.family)] += 1
    items = []
    for key in sorted(content.ticks.ignored):
        if key in by_id:
            label = f"{_group_name(by_id[key])} (fix group)"
        elif key in counts:
            _, rule, family = key.split(":", 2)
            label = f"**{rule}** `{family}` ({counts[key]} report-only finding(s))"
        else:
            label = f"`{key}` (not found in this run)"
        items.append(checkbox(label, IGNORE, key, True))
    intro = ["Untick a box to bring it back in the next run."] if items else []
    return Section(f"## Ignored ({len(items)})", items, intro=intro, empty="None.", can_cut=False)


def _spans(group: FixGroup | None) -> list[tuple[str, int, int]]:
    return [(r.path, r.line, r.last_line) for r in group.rewrites] if group else []


def _group_name(group: FixGroup) -> str:
    return f"**{group.rule}** `{group.family}`" + (
        f" (+{len(group.families) - 1} copied)" if len(group.families) > 1 else ""
    )


def _rewrites(group: FixGroup) -> str:
    n = len(group.rewrites)
    return f"{n} rewrite{'s' if n != 1 else ''}"


def _count(pulls: list[KnownPull], state: str = "closed", merged: bool | None = None) -> int:
    return sum(p.state == state and (merged is None or p.merged == merged) for p in pulls)
