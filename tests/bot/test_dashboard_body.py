"""The dashboard body on its own: the boxes a maintainer ticks, and GitHub's size limit."""

from __future__ import annotations

from bot.github.dashboard.layout import GITHUB_BODY_LIMIT, Section, fit
from bot.github.dashboard.render import DashboardContent, render
from bot.github.dashboard.ticks import IGNORE, OPEN_NOW, Ticks, checkbox, findings_key
from bot.groups import ReportOnly

SHA = "0123456789abcdef0123456789abcdef01234567"


def test_ticks_are_read_from_checked_boxes_with_their_hidden_keys() -> None:
    body = "\n".join(
        [
            "- [x] open this PR now <!-- codemod-open-now: dif004-pipelines-flux -->",
            "  - [X] ignore <!-- codemod-ignore: dif007-pipelines-wan -->",
            "- [ ] ignore <!-- codemod-ignore: dif004-pipelines-kandinsky -->",
            "- [x] a box a maintainer added by hand",
            "* [x] ignore `pipelines/flux` (3) <!--codemod-ignore:findings:DIF007:pipelines/flux-->",
        ]
    )

    ticks = Ticks.read(body)

    assert ticks.open_now == {"dif004-pipelines-flux"}
    assert ticks.ignored == {"dif007-pipelines-wan", "findings:DIF007:pipelines/flux"}


def test_a_box_the_bot_writes_reads_back_as_its_state() -> None:
    body = "\n".join(
        [checkbox("open this PR now", OPEN_NOW, "dif001-a", True), checkbox("ignore", IGNORE, "dif001-b", False)]
    )

    assert Ticks.read(body) == Ticks(frozenset({"dif001-a"}), frozenset())


def test_a_body_over_githubs_limit_is_cut_to_fit_and_says_how_much_it_left_out() -> None:
    line = "- " + "x" * 200
    long = Section("## Long", [line] * 1000, rest_hint=": `codemod run --check` lists them all")
    ticked = [checkbox(f"ignore {n}", IGNORE, f"key-{n}", True) for n in range(50)]
    kept = Section("## Ignored", ticked, can_cut=False)

    body = fit("header", [long, kept], "footer")

    assert len(body) < GITHUB_BODY_LIMIT
    shown = body.count(line)
    assert 100 < shown < 1000
    assert f"- _… {1000 - shown} lines left out: `codemod run --check` lists them all_" in body
    assert all(box in body for box in ticked)
    assert "<details><summary>1000 items</summary>" in body


def test_ignores_survive_a_rewrite_of_the_body_even_for_what_this_run_did_not_find() -> None:
    ticks = Ticks(frozenset(), frozenset({findings_key("DIF007", "pipelines/wan"), "dif004-pipelines-gone"}))
    finding = ReportOnly("DIF007", "src/diffusers/pipelines/wan/pipeline_wan.py", 12, 12, "`t < x` syncs")
    content = DashboardContent(
        repo="you/diffusers",
        html_url="https://github.com/you/diffusers",
        base="main",
        base_sha=SHA,
        groups=[],
        outcomes=[],
        pulls=[],
        report_only=[finding],
        ticks=ticks,
        updated="2026-11-02 05:31 UTC",
    )

    body = render(content)

    assert Ticks.read(body) == ticks
    assert "## Report-only findings (0)" in body  # the ignored family moved to Ignored
    assert "- [x] `dif004-pipelines-gone` (not found in this run)" in body


def _content(report_only: list[ReportOnly]) -> DashboardContent:
    return DashboardContent(
        repo="you/diffusers",
        html_url="https://github.com/you/diffusers",
        base="main",
        base_sha=SHA,
        groups=[],
        outcomes=[],
        pulls=[],
        report_only=report_only,
        ticks=Ticks(frozenset(), frozenset()),
        updated="2026-11-02 05:31 UTC",
    )


def test_one_code_shape_in_three_pipelines_is_one_entry_with_three_permalinks() -> None:
    message = "`torch.tensor([noise_timestep])` reads `noise_timestep` back from the device"
    paths = [f"src/diffusers/pipelines/{name}/pipeline_{name}_inpaint.py" for name in ("flux", "sd3", "chroma")]
    found = [ReportOnly("DIF006", p, 9, 9, message, None, True, "every denoising step", "DIF006:abc") for p in paths]

    body = render(_content(found))

    assert "### DIF006 host-value-rebuilt: 3 in 1 shape(s)" in body
    (entry,) = [line for line in body.splitlines() if line.startswith("- DIF006 (3×, every denoising step): ")]
    assert entry.count("](https://github.com/you/diffusers/blob/") == 3


def test_findings_not_paid_per_step_are_only_counted_in_a_folded_section() -> None:
    hot = ReportOnly("DIF007", "src/diffusers/pipelines/wan/pipeline_wan.py", 12, 12, "`t < x` syncs", None, True)
    cold = ReportOnly(
        "DIF007", "src/diffusers/pipelines/deepfloyd_if/safety_checker.py", 47, 47, "`w.tolist()` syncs", None,
        False, "once per generation", "DIF007:def",
    )  # fmt: skip

    body = render(_content([hot, cold]))

    assert "## Report-only findings (1)" in body
    folded = body.split("## Not paid per denoising step (1)", 1)[1]
    assert "<details><summary>1 item</summary>" in folded
    assert "- DIF007 (once per generation): `w.tolist()` syncs: " in folded
    assert "1 report-only finding(s) paid per step (1 more not)" in body
