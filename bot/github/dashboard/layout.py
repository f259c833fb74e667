"""Sections of a Markdown body that must stay under GitHub's 65,536-character limit.

A section with many items folds them into `<details>`; when the whole body is still too long,
the longest section that may lose items is halved until the body fits, and each cut section
says how many lines it left out and where to see them all. Sections that hold state (ticked
boxes) are never cut.
"""

from __future__ import annotations

from dataclasses import dataclass, field

GITHUB_BODY_LIMIT = 65_536
FOLD_OVER = 10  # more items than this fold into <details>


@dataclass
class Section:
    heading: str
    items: list[str]  # list lines (each may be several physical lines)
    intro: list[str] = field(default_factory=list)  # lines always shown, before the items
    empty: str = ""  # what to say when there are no items ("" : leave the section out)
    can_cut: bool = True
    rest_hint: str = ""  # where the left-out lines can be seen
    shown: int | None = None  # None: all items
    folded: bool = False  # items inside a closed `<details>` whatever their number

    def visible(self) -> int:
        return len(self.items) if self.shown is None else min(self.shown, len(self.items))

    def render(self) -> str:
        if not self.items and not self.empty and not self.intro:
            return ""
        lines = [self.heading, ""]
        if self.intro:
            lines += [*self.intro, ""]
        if not self.items:
            return "\n".join([*lines, self.empty] if self.empty else lines[:-1])
        shown = self.items[: self.visible()]
        left = len(self.items) - len(shown)
        if left:
            shown = [*shown, f"- _… {left} line{'s' if left != 1 else ''} left out{self.rest_hint}_"]
        if self.folded or len(self.items) > FOLD_OVER:
            summary = f"{len(self.items)} item{'s' if len(self.items) != 1 else ''}"
            lines += [f"<details><summary>{summary}</summary>", "", *shown, "", "</details>"]
        else:
            lines += shown
        return "\n".join(lines)


def join(header: str, sections: list[Section], footer: str) -> str:
    parts = [header, *(s.render() for s in sections), footer]
    return "\n\n".join(part for part in parts if part) + "\n"


def fit(header: str, sections: list[Section], footer: str, limit: int = GITHUB_BODY_LIMIT) -> str:
    """The body, with the longest cuttable sections halved until it is under `limit` characters."""
    text = join(header, sections, footer)
    while len(text.encode("utf-8")) >= limit:  # bytes: never under-counts, whatever GitHub counts in
        cuttable = [s for s in sections if s.can_cut and s.visible() > 0]
        if not cuttable:
            raise ValueError(f"the dashboard body is {len(text):,} characters even with every list cut")
        longest = max(cuttable, key=lambda s: len(s.render()))
        longest.shown = longest.visible() // 2
        text = join(header, sections, footer)
    return text
