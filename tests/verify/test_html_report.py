"""`codemod verify --html`: one self-contained, sortable page whose numbers are the JSON report's.

The numbers are checked by parsing the page (always); sorting and "nothing fetched" in a real
headless Chromium when one is installed (`make browser` installs Debian's; CI runs without it,
and the test says it skipped).
"""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from bot.verify.reporting.html_report import html_page, write_html
from bot.verify.reporting.report import TargetResult, VerifyReport

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
EXACT = {"max_abs_diff": 0.0, "mean_abs_diff": 0.0, "exact": True, "tolerance": 0.0, "passed": True, "detail": ""}


def _target(name: str, kind: str, unit: str, rules: list[str], before: tuple, after: tuple) -> TargetResult:
    counts = dict.fromkeys(("h2d", "d2h", "sync", "outputs"), 0.0)
    return TargetResult(
        name,
        rules,
        [f"{kind}s/{name.lower()}.py:10"],
        "verified",
        kind=kind,
        unit=unit,
        units=3 if unit == "step" else 1,
        before={**counts, **dict(zip(("h2d", "d2h", "sync"), before))},
        after={**counts, **dict(zip(("h2d", "d2h", "sync"), after))},
        parity=EXACT,
    )


@pytest.fixture(scope="module")
def report() -> dict:
    """A census as `codemod verify --json` writes it: two pipelines, a scheduler, a model, an unreached class."""
    targets = [
        _target("FluxPipeline", "pipeline", "step", ["DIF005"], (2.0, 1.0, 3.0), (2.0, 1.0, 2.0)),
        _target("WanPipeline", "pipeline", "step", ["DIF002", "DIF005"], (1.0, 0.5, 4.5), (1.0, 0.5, 0.5)),
        _target("EulerDiscreteScheduler", "scheduler", "step", ["DIF002"], (0.0, 0.0, 2.0), (0.0, 1.0, 0.0)),
        _target("QwenImageTransformer2DModel", "model", "forward", ["DIF001"], (5.0, 0.0, 0.0), (1.0, 0.0, 0.0)),
        TargetResult("RopeHelper", ["DIF001"], ["models/rope.py:3"], "unverified", "no target builds or reaches it"),
    ]
    versions = {"torch": "2.13.0", "diffusers": "0.42.1"}
    return VerifyReport("src/diffusers", "emu", None, versions, ["models/x.py"], targets).to_json()


class _Page(HTMLParser):
    """The target rows (cells' data-value, bars' data-after), the totals rows, the headline, every URL."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[dict[str, str]]] = {}
        self.order: list[str] = []
        self.totals: list[list[dict[str, str]]] = []
        self.table: dict[str, str] = {}
        self.urls: list[str] = []
        self._row: list[dict[str, str]] | None = None
        self._in: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {key: value or "" for key, value in attrs}
        self.urls += [values[key] for key in ("src", "href") if key in values]
        if tag == "table":
            self._in = values.get("id")
            if self._in == "targets":
                self.table = values
        elif tag == "tr" and self._in in ("targets", "totals"):
            self._row = []
            if self._in == "targets" and "data-target" in values:
                self.order.append(values["data-target"])
                self.rows[values["data-target"]] = self._row
            elif self._in == "totals":
                self.totals.append(self._row)
        elif tag == "td" and self._row is not None:
            self._row.append(values)

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in = None

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    return page


def test_every_measured_target_shows_its_report_numbers(report: dict) -> None:
    page = parse(html_page(report))

    for target in report["targets"][:4]:
        cells = page.rows[target["target"]]
        bars = {kind: cells[4 + i] for i, kind in enumerate(("h2d", "d2h", "sync"))}
        for kind, cell in bars.items():
            assert (float(cell["data-value"]), float(cell["data-after"])) == (
                target["before"][kind],
                target["after"][kind],
            ), (target["target"], kind)
        assert float(cells[7]["data-value"]) == target["before"]["sync"] - target["after"]["sync"]
        assert float(cells[8]["data-value"]) == target["parity"]["max_abs_diff"]
        assert cells[9]["data-value"] == target["verdict"]
    assert "RopeHelper" not in page.rows  # not measured: listed below the table with its reason
    assert "no target builds or reaches it" in "".join(page.text)


def test_summary_gives_the_pipelines_syncs_per_denoising_step_before_and_after(report: dict) -> None:
    page = parse(html_page(report))

    text = " ".join("".join(page.text).split())
    assert "Syncs per denoising step, summed over 2 pipeline(s): 7.5 before, 2.5 after all fixes." in text
    pipelines = next(row for row in page.totals if row)  # the first body row: pipelines
    assert [(c.get("data-before"), c.get("data-after")) for c in pipelines[3:]] == [
        ("3", "3"),
        ("1.5", "1.5"),
        ("7.5", "2.5"),
    ]


def test_rows_start_sorted_by_syncs_removed(report: dict) -> None:
    page = parse(html_page(report))

    assert page.order == ["WanPipeline", "EulerDiscreteScheduler", "FluxPipeline", "QwenImageTransformer2DModel"]


def test_the_page_fetches_nothing_and_carries_the_report(report: dict) -> None:
    html = html_page(report)

    assert parse(html).urls == []  # no stylesheet, script, image or font from anywhere
    assert '<script type="application/json" id="report">' in html


def _browser() -> str | None:
    return next((found for name in BROWSERS if (found := shutil.which(name))), None)


@pytest.mark.skipif(
    _browser() is None, reason="no Chromium installed (make browser); the parse-based tests cover the numbers"
)
def test_headless_chromium_sorts_by_the_address_fragment_without_network(report: dict, tmp_path: Path) -> None:
    page = tmp_path / "census.html"
    write_html(report, page)
    command = [
        _browser(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--host-resolver-rules=MAP * ~NOTFOUND",  # the page must need no network
        f"--user-data-dir={tmp_path / 'profile'}",
        "--dump-dom",
        f"{page.as_uri()}#sort=h2d:desc",
    ]

    dom = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout

    rendered = parse(dom)
    assert rendered.table["data-sorted"] == "h2d:desc"  # the page's script ran and sorted
    assert rendered.order == ["QwenImageTransformer2DModel", "FluxPipeline", "WanPipeline", "EulerDiscreteScheduler"]
