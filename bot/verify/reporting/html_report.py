"""`codemod verify --html FILE`: the sync census of a whole verify run as one self-contained page.

One file, nothing fetched when it is viewed (styles, script and data inline; no fonts, images or
links to elsewhere), so it can travel as a workflow artifact and open from disk. Per target:
before/after bars of H2D copies, D2H copies and syncs per unit, the syncs removed, the parity
figure, the rules and the verdict; every column sorts on a click, and `#sort=KEY:asc|desc` in
the address sorts on load (a link to a sorted view). A summary gives the totals per kind of
target, the library's syncs per denoising step first. The rows are written here, not by the
script, so the numbers read the same with scripts off; the report's JSON rides along inline.
"""

from __future__ import annotations

import json
from html import escape
from pathlib import Path
from typing import Any

from bot.verify.judging.verdict import CENSUS_KINDS
from bot.verify.reporting.census_summary import (
    measured,
    number,
    parity_text,
    syncs_per_denoising_step,
    syncs_removed,
    totals_by_kind,
)

LABELS = {"h2d": "H2D copies", "d2h": "D2H copies", "sync": "syncs"}
# (sort key, header); the bar columns sort by their count before the fixes.
COLUMNS = (
    ("target", "target"),
    ("kind", "kind"),
    ("rules", "rules"),
    ("unit", "per"),
    *((kind, f"{LABELS[kind]} before → after") for kind in CENSUS_KINDS),
    ("removed", "syncs removed"),
    ("parity", "max abs diff"),
    ("verdict", "verdict"),
)
NUMERIC = frozenset({*CENSUS_KINDS, "removed", "parity"})

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em;color:#1f2328}
h1{font-size:1.4em}table{border-collapse:collapse;margin:1em 0}
th,td{border-bottom:1px solid #d0d7de;padding:4px 8px;text-align:left;vertical-align:middle}
th[data-key]{cursor:pointer;user-select:none;background:#f6f8fa}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
.bars{min-width:140px}.bar{height:7px;margin:1px 0;border-radius:2px}
.before{background:#afb8c1}.after{background:#1a7f37}.gain{color:#1a7f37;font-weight:600}
.n{font-variant-numeric:tabular-nums;font-size:12px}.headline{font-size:1.15em}.nowrap{white-space:nowrap}
"""

_SCRIPT = """
(function () {
  var table = document.getElementById("targets");
  if (!table) return;
  var numeric = table.dataset.numeric.split(",");
  function sortBy(key, direction) {
    var body = table.tBodies[0];
    var cells = table.tHead.rows[0].cells;
    var column = Array.prototype.findIndex.call(cells, function (c) { return c.dataset.key === key; });
    if (column < 0) return;
    var rows = Array.prototype.slice.call(body.rows);
    var isNumber = numeric.indexOf(key) >= 0;
    rows.sort(function (a, b) {
      var x = a.cells[column].dataset.value, y = b.cells[column].dataset.value;
      var order = isNumber ? parseFloat(x) - parseFloat(y) : x.localeCompare(y);
      if (order === 0) order = a.dataset.target.localeCompare(b.dataset.target);
      return direction === "desc" ? -order : order;
    });
    rows.forEach(function (row) { body.appendChild(row); });
    Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell, index) {
      if (index === column) cell.setAttribute("aria-sort", direction === "desc" ? "descending" : "ascending");
      else cell.removeAttribute("aria-sort");
    });
    table.dataset.sorted = key + ":" + direction;
  }
  Array.prototype.forEach.call(table.tHead.rows[0].cells, function (cell) {
    cell.addEventListener("click", function () {
      var again = table.dataset.sorted === cell.dataset.key + ":desc";
      sortBy(cell.dataset.key, again ? "asc" : "desc");
      history.replaceState(null, "", "#sort=" + table.dataset.sorted);
    });
  });
  var wanted = /^#sort=([a-z0-9]+):(asc|desc)$/.exec(location.hash);
  if (wanted) sortBy(wanted[1], wanted[2]);
})();
"""


def write_html(report: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(html_page(report), encoding="utf-8")


def html_page(report: dict[str, Any]) -> str:
    targets = report.get("targets", [])
    rows = [t for t in targets if measured(t)]
    others = [t for t in targets if not measured(t)]
    versions = report.get("versions", {})
    rules = ", ".join(report.get("select") or ["all"])
    title = f"Sync census of {Path(report.get('src', 'diffusers')).name}: {len(rows)} target(s) measured"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>Device <b>{escape(str(report.get('device', '?')))}</b>; torch {escape(versions.get('torch', '?'))}, "
        f"diffusers {escape(versions.get('diffusers', '?'))}; rules {escape(rules)}. "
        "Counts are per unit: one forward of a model, one denoising step of a pipeline, one step of a scheduler.</p>",
        *_summary(rows),
        *_targets_table(rows),
        *_not_measured(others),
        f'<script type="application/json" id="report">{_inline_json(report)}</script>',
        f"<script>{_SCRIPT}</script>",
        "</body></html>",
    ]
    return "\n".join(parts) + "\n"


def _summary(rows: list[dict[str, Any]]) -> list[str]:
    step = syncs_per_denoising_step(rows)
    lines = ["<h2>Summary</h2>"]
    if step is not None:
        lines.append(
            f'<p class="headline" id="syncs-per-step">Syncs per denoising step, summed over {step.targets} '
            f"pipeline(s): <b>{number(step.before['sync'])}</b> before, <b>{number(step.after['sync'])}</b> "
            "after all fixes.</p>"
        )
    header = "".join(f"<th>{label} before → after</th>" for label in LABELS.values())
    lines += [f'<table id="totals"><thead><tr><th>kind</th><th>per</th><th>targets</th>{header}</tr></thead><tbody>']
    for total in totals_by_kind(rows):
        cells = "".join(
            f'<td data-kind="{kind}" data-before="{total.before[kind]:g}" data-after="{total.after[kind]:g}">'
            f"{number(total.before[kind])} → {number(total.after[kind])}</td>"
            for kind in CENSUS_KINDS
        )
        lines.append(
            f"<tr><td>{escape(total.kind)}</td><td>{escape(total.unit)}</td><td>{total.targets}</td>{cells}</tr>"
        )
    lines.append("</tbody></table>")
    return lines


def _targets_table(rows: list[dict[str, Any]]) -> list[str]:
    if not rows:
        return ["<p>No target was measured.</p>"]
    peak = {kind: max(max(t["before"][kind], t["after"][kind]) for t in rows) or 1 for kind in CENSUS_KINDS}
    header = "".join(f'<th data-key="{key}">{escape(label)}</th>' for key, label in COLUMNS)
    lines = [
        "<h2>Targets</h2><p>Click a column to sort.</p>",
        f'<table id="targets" data-numeric="{",".join(sorted(NUMERIC))}"><thead><tr>{header}</tr></thead><tbody>',
    ]
    ordered = sorted(rows, key=lambda t: (-syncs_removed(t), t["target"]))
    lines += [_row(target, peak) for target in ordered]
    lines.append("</tbody></table>")
    return lines


def _row(target: dict[str, Any], peak: dict[str, float]) -> str:
    rules = ", ".join(target.get("rules", []))
    unit = target.get("unit") or "–"
    if unit == "step" and target.get("units"):
        unit = f"step (of {target['units']})"
    parity = target.get("parity") or {}
    max_diff = parity.get("max_abs_diff")
    removed = syncs_removed(target)
    cells = [
        _text_cell(target["target"]),
        _text_cell(target.get("kind") or ""),
        _text_cell(rules),
        _text_cell(unit, nowrap=True),
        *(_bars(target, kind, peak[kind]) for kind in CENSUS_KINDS),
        f'<td data-value="{removed:g}" class="{"gain" if removed > 0 else ""}">{number(removed)}</td>',
        # Not compared sorts below bit-identical.
        f'<td class="nowrap" data-value="{-1 if max_diff is None else max_diff:g}">{escape(parity_text(parity))}</td>',
        _text_cell(target["verdict"]),
    ]
    return f'<tr data-target="{escape(target["target"])}">{"".join(cells)}</tr>'


def _text_cell(text: str, nowrap: bool = False) -> str:
    css = ' class="nowrap"' if nowrap else ""
    return f'<td data-value="{escape(text)}"{css}>{escape(text)}</td>'


def _bars(target: dict[str, Any], kind: str, peak: float) -> str:
    before, after = target["before"][kind], target["after"][kind]
    return (
        f'<td class="bars" data-value="{before:g}" data-after="{after:g}">'
        f'<div class="bar before" style="width:{100 * before / peak:.1f}%" title="before: {number(before)}"></div>'
        f'<div class="bar after" style="width:{100 * after / peak:.1f}%" title="after: {number(after)}"></div>'
        f'<span class="n">{number(before)} → {number(after)}</span></td>'
    )


def _not_measured(targets: list[dict[str, Any]]) -> list[str]:
    if not targets:
        return []
    lines = [f"<h2>Not measured ({len(targets)})</h2><ul>"]
    for target in sorted(targets, key=lambda t: t["target"]):
        why = target.get("error") or "no census on this device"
        lines.append(f"<li><code>{escape(target['target'])}</code> ({escape(target['verdict'])}): {escape(why)}</li>")
    lines.append("</ul>")
    return lines


def _inline_json(report: dict[str, Any]) -> str:
    # Inside <script>, only "</" could end the element early; "<\/" reads the same to JSON.
    return json.dumps(report, separators=(",", ":")).replace("</", "<\\/")
