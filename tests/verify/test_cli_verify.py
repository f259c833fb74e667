"""`codemod verify --select DIF001` over the installed diffusers 0.42.1, through the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from main_like import write_checkout
from test_html_report import parse
from typer.testing import CliRunner

from bot.verify.reporting.census_summary import measured
from codemod_cli.app import app
from codemods.project.index import installed_diffusers

NUCLEUS = "models/transformers/transformer_nucleusmoe_image.py"


@pytest.fixture(scope="module")
def verified(
    tmp_path_factory: pytest.TempPathFactory, scan_cache: Path
) -> tuple[subprocess.CompletedProcess, dict, str]:
    out = tmp_path_factory.mktemp("cli-verify")
    command = [sys.executable, "-m", "codemod_cli", "verify", str(installed_diffusers()), "--select", "DIF001"]
    command += [
        "--json",
        str(out / "report.json"),
        "--markdown",
        str(out / "report.md"),
        "--html",
        str(out / "census.html"),
    ]
    environment = _cached(scan_cache)
    completed = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=out, env=environment)
    assert completed.returncode == 0, completed.stderr[-3000:]
    return completed, json.loads((out / "report.json").read_text()), (out / "report.md").read_text()


def _cached(scan_cache: Path) -> dict[str, str]:
    """The environment of a `codemod verify` whose rewrite reuses the scans other verifications made."""
    return {**os.environ, "OMP_NUM_THREADS": "1", "CODEMOD_CACHE_DIR": str(scan_cache)}


def _line_of(text: str) -> int:
    source = (installed_diffusers() / NUCLEUS).read_text().splitlines()
    return next(number for number, line in enumerate(source, start=1) if text in line)


def test_the_json_report_names_the_device_versions_and_changed_files(verified) -> None:
    _, report, _ = verified
    assert (report["device"], report["select"], report["exit_code"]) == ("emu", ["DIF001"], 0)
    assert report["versions"]["diffusers"] == "0.42.1"
    assert NUCLEUS in report["changed_files"]
    assert report["summary"]["failed"] == report["summary"]["regressed"] == 0


@pytest.mark.parametrize("device", ["emu", "cpu"])
def test_scale_real_without_cuda_is_refused_up_front_in_one_line(device: str) -> None:
    command = [sys.executable, "-m", "codemod_cli", "verify", str(installed_diffusers()), "--scale", "real"]

    completed = subprocess.run([*command, "--device", device], capture_output=True, text=True, timeout=120)

    assert (completed.returncode, completed.stdout) == (2, "")
    assert completed.stderr == (
        "codemod: error: --scale real needs --device cuda (a CUDA GPU): it times each change at its model's released "
        f"size, which --device {device} cannot; drop --scale real for the {device} census\n"
    )


def test_nucleusmoe_text_rope_copy_per_forward_is_gone_with_bit_identical_outputs(verified) -> None:
    _, report, _ = verified
    nucleus = next(t for t in report["targets"] if t["target"] == "NucleusMoEImageTransformer2DModel")
    assert (nucleus["verdict"], nucleus["rules"], nucleus["unit"]) == ("verified", ["DIF001"], "forward")
    assert nucleus["after"]["h2d"] == nucleus["before"]["h2d"] - 1
    copy_site = f"{NUCLEUS}:{_line_of('txt_freqs = self.pos_freqs.to(device)')}"
    assert {"site": copy_site, "after_site": None, "before": {"h2d": 1}, "after": {}} in nucleus["site_changes"]
    assert all(rewrite.startswith(f"{NUCLEUS}:") for rewrite in nucleus["rewrites"])
    assert (nucleus["parity"]["exact"], nucleus["parity"]["max_abs_diff"]) == (True, 0.0)


def test_every_target_of_the_run_is_verified_or_says_why_not(verified) -> None:
    _, report, _ = verified
    for target in report["targets"]:
        assert target["verdict"] in ("verified", "unverified"), target
        if target["verdict"] == "unverified":
            assert target["error"], target


def test_the_markdown_is_printed_and_written_with_the_command_to_reproduce(verified) -> None:
    completed, _, markdown = verified
    assert completed.stdout.strip() == markdown.strip()
    assert "| `NucleusMoEImageTransformer2DModel` | DIF001 | forward | **" in markdown
    assert f"codemod verify {installed_diffusers()} --select=DIF001 --device=emu" in markdown


@pytest.mark.parametrize("where", ["a plain directory", "a subpackage"])
def test_a_src_that_is_not_the_diffusers_package_root_is_refused_up_front(tmp_path: Path, where: str) -> None:
    src = tmp_path if where == "a plain directory" else installed_diffusers() / "models"
    completed = subprocess.run(
        [sys.executable, "-m", "codemod_cli", "verify", str(src)], capture_output=True, text=True, timeout=120
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"codemod: error: {src}: not a diffusers package root; SRC must be the `diffusers` package directory "
        "(`<checkout>/src/diffusers`, or an installed `.../site-packages/diffusers`), not a subpackage or a checkout\n"
    )


def test_cuda_on_a_machine_without_a_cuda_device_is_refused_up_front() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "codemod_cli", "verify", str(installed_diffusers()), "--device", "cuda"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        f"codemod: error: --device cuda: {sys.executable} sees no CUDA device (torch {torch.__version__}); on a "
        "machine without one, use --device emu (the emulated device counts the same copies and syncs)\n"
    )


def test_the_html_page_shows_each_measured_target_as_the_json_report_does(verified) -> None:
    completed, report, _ = verified
    page = parse(Path(completed.args[completed.args.index("--html") + 1]).read_text())
    by_name = {t["target"]: t for t in report["targets"] if measured(t)}
    assert set(page.rows) == set(by_name) and by_name
    for name, cells in page.rows.items():
        h2d = cells[4]
        assert (float(h2d["data-value"]), float(h2d["data-after"])) == (
            by_name[name]["before"]["h2d"],
            by_name[name]["after"]["h2d"],
        )


def test_a_checkout_with_nothing_to_verify_builds_no_environment_and_says_why(tmp_path: Path, scan_cache: Path) -> None:
    checkout = write_checkout(tmp_path / "checkout")
    src = checkout / "src" / "diffusers"
    command = [sys.executable, "-m", "codemod_cli", "verify", str(src), "--select", "DIF001"]
    command += ["--path", "models/transformers/transformer_qwenimage.py"]
    environment = {**_cached(scan_cache), "CODEMOD_ENV_CACHE": str(tmp_path / "envs")}
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)
    assert completed.returncode == 0, completed.stderr[-2000:]
    assert "Nothing to verify: no DIF001 finding in the selected files." in completed.stdout
    assert "verify: nothing to verify: no DIF001 finding in the selected files\n" in completed.stderr
    assert not (tmp_path / "envs").exists()


def test_an_unreachable_torch_index_exits_2_in_one_line_once_there_is_a_change_to_verify(
    tmp_path: Path, scan_cache: Path
) -> None:
    checkout = write_checkout(tmp_path / "checkout")
    command = [sys.executable, "-m", "codemod_cli", "verify", str(checkout / "src" / "diffusers"), "--select", "DIF001"]
    command += ["--path", NUCLEUS, "--torch-index", "http://127.0.0.1:9/whl/cu128"]
    environment = {**_cached(scan_cache), "CODEMOD_ENV_CACHE": str(tmp_path / "envs")}
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, env=environment)
    assert completed.returncode == 2
    assert completed.stderr.splitlines()[-1] == (
        f"codemod: error: cannot build the environment of {checkout}: --torch-index "
        "http://127.0.0.1:9/whl/cu128/torch/: [Errno 111] Connection refused"
    )


@pytest.mark.parametrize(("flag", "reused"), [([], True), (["--no-cache"], False)])
def test_verify_reuses_the_scans_codemod_run_keeps_unless_told_not_to(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flag: list[str], reused: bool
) -> None:
    given: list[Path | None] = []

    class Report:
        seconds = 0.0

        def to_markdown(self, reproduce: str) -> str:
            return reproduce

        def counts(self) -> str:
            return "nothing"

        def exit_code(self) -> int:
            return 0

    def fake_verify(src: Path, **options: object) -> Report:
        given.append(options["cache_dir"])
        return Report()

    monkeypatch.setattr("bot.verify.verify", fake_verify)
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    done = CliRunner().invoke(app, ["verify", str(installed_diffusers()), "--select", "DIF001", *flag])
    assert done.exit_code == 0, done.output
    assert given == [tmp_path / "cache" if reused else None]
