"""The dashboard's sync census: where the latest census page is, and a table of the targets whose fixes
remove the most syncs (from a `codemod verify --json` report of the whole library)."""

from __future__ import annotations

from typing import Any

from bot.github.dashboard.layout import Section
from bot.verify.reporting.census_summary import number, parity_text, syncs_removed, top_by_syncs_removed


def census_section(census: list[dict[str, Any]], census_url: str | None) -> Section:
    """The census page's link and the top targets by syncs removed (`census`: the verify report's targets)."""
    page = (
        f"[The latest census page]({census_url}) (a workflow artifact: one self-contained HTML file)."
        if census_url
        else "No census page in this run (`codemod verify src/diffusers --html census.html` makes one)."
    )
    top = top_by_syncs_removed(census)
    intro = [page]
    if top:
        intro += [
            "",
            f"Top {len(top)} target(s) by syncs removed per unit:",
            "",
            "| target | rules | per | syncs | removed | H2D | D2H | max abs diff | verdict |",
            "|---|---|---|---|---|---|---|---|---|",
            *(_census_row(target) for target in top),
        ]
    return Section("## Sync census", [], intro=intro)


def _census_row(target: dict[str, Any]) -> str:
    before, after = target["before"], target["after"]
    cells = [
        f"`{target['target']}`",
        ", ".join(target.get("rules", [])),
        target.get("unit") or "–",
        f"{number(before['sync'])} → {number(after['sync'])}",
        f"**{number(syncs_removed(target))}**",
        f"{number(before['h2d'])} → {number(after['h2d'])}",
        f"{number(before['d2h'])} → {number(after['d2h'])}",
        parity_text(target.get("parity")),
        target["verdict"],
    ]
    return "| " + " | ".join(cells) + " |"
