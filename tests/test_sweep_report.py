"""The release table in docs/releases.md: one row per swept release, cells that keep the table intact."""

from __future__ import annotations

from benchmarks.sweep import ReleaseResult
from benchmarks.sweep_report import table


def _result(version: str, imports: str) -> ReleaseResult:
    return ReleaseResult(version, "tool", files=3, findings={"DIF004": 2}, fixed={"DIF004": 1}, imports=imports)


def test_rows_keep_the_message_readable_and_one_cell_per_column() -> None:
    imports = "n/a: the release does not import here (ImportError: cannot import name 'HfFolder' | x < y)"
    text = table([_result("0.10.0", imports), _result("0.42.1", "ok (1 modules)")], ["DIF004"], "releases.svg")
    row = next(line for line in text.splitlines() if line.startswith("| 0.10.0 |"))
    assert "'HfFolder'" in row and "x &lt; y" in row
    assert row.replace("\\|", "").count("|") == text.splitlines()[text.splitlines().index(row) - 2].count("|")
    assert "| 2 / 1 |" in row
    assert "0.10.0 to 0.42.1" in text


def test_releases_that_could_not_be_downloaded_are_named() -> None:
    text = table([_result("0.18.0", "ok")], ["DIF004"], "releases.svg", unavailable=["0.18.1", "0.19.0"])
    assert "not swept: 0.18.1, 0.19.0." in text
    assert "not swept" not in table([_result("0.18.0", "ok")], ["DIF004"], "releases.svg")
