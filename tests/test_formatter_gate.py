"""The target's pinned formatter as a gate: our hunks come out as `make style` leaves them, or are refused.

The judgement itself is tested on small texts; the gate end to end runs the real pinned ruff
(installed from PyPI into the tool cache on first use; without a network those tests skip) on
snippets of our own in a directory laid out as a diffusers checkout.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from installed_trees import DiffusersTrees

import codemods.rules.output_attribute_access as dif004
from codemods.edits.formatter import find_pin, judge
from codemods.engine.entry import Mode, RunOptions, run
from codemods.output import report
from codemods.project.tool_env import ToolUnavailable, installed_tool
from tools.checkout_layout import RUFF_PIN, RUFF_SETTINGS, write_checkout_config

MODEL = (
    "class Model:\n"
    "    def forward(self, x, y=None, return_dict: bool = True):\n"
    "        if not return_dict:\n"
    "            return (x,)\n"
    "        return Output(sample=x)\n\n\n"
    "class Pipe:\n"
    "    def __init__(self, unet: Model):\n"
    "        self.register_modules(unet=unet)\n\n"
    "    def __call__(self, latent_model_input, encoder_hidden_states):\n"
)


@pytest.fixture(scope="module")
def ruff() -> Path:
    try:
        return installed_tool("ruff", RUFF_PIN.split("==")[1])
    except ToolUnavailable as error:
        pytest.skip(f"the pinned ruff is not available here: {error}")


def _checkout(tmp_path: Path, body: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    write_checkout_config(tmp_path)
    package = tmp_path / "src" / "diffusers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "pipe.py").write_text(MODEL + body)
    return package / "pipe.py"


def _hugged_call(last_argument: str) -> str:
    """A call as diffusers' DiT pipeline lays it out (ruff's "hug"): arguments on one line, `)` on its own."""
    return (
        "        noise_pred = self.unet(\n"
        f"            latent_model_input, encoder_hidden_states=encoder_hidden_states, y={last_argument}\n"
        "        ).sample\n"
    )


def _fix(target: Path):
    return run(RunOptions(paths=(target,), mode=Mode.WRITE, jobs=1))


def test_a_formatter_change_inside_our_hunk_is_taken() -> None:
    before = "y = f(\n    a, b\n).sample\n"
    after = "y = f(\n    a, b, return_dict=False, and_more_arguments_than_fit=True\n)[0]\n"
    styled = "y = f(\n    a,\n    b,\n    return_dict=False,\n    and_more_arguments_than_fit=True,\n)[0]\n"
    verdict = judge(before, after, styled, "ruff")
    assert (verdict.text, verdict.relaid, verdict.refused) == (styled, 1, [])


def test_a_formatter_change_reaching_past_our_hunk_refuses_it() -> None:
    before = "x = 1\ny = f(\n    a\n).sample\n"
    after = "x = 1\ny = f(\n    a, return_dict=False\n)[0]\n"
    verdict = judge(before, after, "x = 1\ny = f(a, return_dict=False)[0]\n", "ruff 0.9.10")
    assert verdict.text == after
    assert [(h.first, h.last) for h in verdict.refused] == [(3, 4)]
    assert verdict.refused[0].reason.startswith("`make style` (ruff 0.9.10) would also re-wrap lines 2-4")


def test_formatter_changes_away_from_our_hunks_are_not_ours_to_make() -> None:
    before = "x  =  1\n\n\ny = f(a).sample\n"
    after = "x  =  1\n\n\ny = f(a, return_dict=False)[0]\n"
    verdict = judge(before, after, "x = 1\n\n\ny = f(a, return_dict=False)[0]\n", "ruff")
    assert (verdict.text, verdict.relaid, verdict.refused) == (after, 0, [])


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"setup.py": '_deps = ["ruff==0.9.10", "black"]\n', "pyproject.toml": RUFF_SETTINGS}, ("0.9.10", "setup.py")),
        (
            {
                "pyproject.toml": "[tool.ruff.format]\nquote-style = 'double'\n",
                ".pre-commit-config.yaml": "repos:\n  - repo: https://github.com/astral-sh/ruff-pre-commit\n    rev: v0.6.4\n",
            },
            ("0.6.4", ".pre-commit-config.yaml"),
        ),
        # ruff lints here, black formats (diffusers before 0.25): not the gate's to check.
        ({"setup.py": '_deps = ["ruff==0.0.280", "black~=23.1"]\n', "pyproject.toml": "[tool.ruff]\nline-length = 119\n",
          "Makefile": "style:\n\tblack src\n\truff src --fix\n"}, None),  # fmt: skip
        ({"pyproject.toml": "[tool.codemod]\nignore = []\n"}, None),
    ],
)
def test_the_pin_is_read_where_the_target_keeps_it(tmp_path: Path, files: dict[str, str], expected) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    pin = find_pin(tmp_path / "pyproject.toml")
    assert (pin and (pin.version, pin.pinned_in)) == expected


def test_an_unavailable_formatter_is_said_once_and_the_fixes_stand(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEMOD_TOOL_CACHE", str(tmp_path / "tools"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")  # offline
    monkeypatch.setenv("PIP_FIND_LINKS", "")
    target = _checkout(tmp_path / "checkout", "        return self.unet(latent_model_input).sample\n")
    result = _fix(target)
    assert result.errors == [] and "return_dict=False)[0]" in target.read_text()
    (note,) = report.summary_notes(result)
    assert note.startswith("formatter check: not run (cannot install ruff==0.9.10: ")
    assert result.summary()["formatter"]["checked"] is False


@pytest.mark.parametrize(
    ("last_argument", "expected"),
    [
        # Still fits: the argument joins the hugged line (it went on a dedented line of its own before).
        (
            "latent_model_input",
            "            latent_model_input, encoder_hidden_states=encoder_hidden_states, y=latent_model_input, "
            "return_dict=False\n",
        ),
        # No longer fits: one argument a line, with a trailing comma.
        (
            "latent_model_input + 1.0",
            "            latent_model_input,\n            encoder_hidden_states=encoder_hidden_states,\n"
            "            y=latent_model_input + 1.0,\n            return_dict=False,\n",
        ),
    ],
    ids=["fits", "overflows"],
)
def test_a_hugged_call_is_laid_out_as_ruff_lays_it(tmp_path: Path, ruff: Path, last_argument: str, expected: str) -> None:
    target = _checkout(tmp_path, _hugged_call(last_argument))
    result = _fix(target)
    assert target.read_text().endswith("        noise_pred = self.unet(\n" + expected + "        )[0]\n")
    assert (result.formatter.pinned_in, result.formatter.relaid, result.formatter.refused) == ("setup.py", 0, 0)


def test_a_hunk_the_formatter_lays_out_otherwise_is_re_laid(
    tmp_path: Path, ruff: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Force a wrong layout (the argument kept on the hugged line although it no longer fits): the gate
    # must take ruff's one-argument-a-line layout for exactly our lines.
    layout = dif004.argument_layout
    monkeypatch.setattr(dif004, "argument_layout", lambda *args: (("wrap", "keep"), layout(*args)[1]))
    target = _checkout(tmp_path, _hugged_call("latent_model_input + 1.0"))
    result = _fix(target)
    assert "            y=latent_model_input + 1.0,\n            return_dict=False,\n        )[0]\n" in target.read_text()
    assert (result.formatter.relaid, result.formatter.refused) == (1, 0)
    assert result.findings[0].fixed


def test_a_hunk_whose_statement_the_formatter_would_rejoin_is_refused(tmp_path: Path, ruff: Path) -> None:
    # Not `make style` clean to begin with: ruff would join the whole statement onto one line.
    call = "        return self.unet(\n            latent_model_input\n        ).sample\n"
    target = _checkout(tmp_path, call)
    result = _fix(target)
    assert target.read_text() == MODEL + call
    assert result.findings[0].not_fixed_reason.startswith("`make style` (ruff 0.9.10) would also re-wrap lines")
    assert result.formatter.refused == 1


def test_the_pinned_ruff_changes_nothing_we_touched_in_the_demo_tree(diffusers_trees: DiffusersTrees, ruff: Path) -> None:
    # `codemod run --unsafe-fixes` over installed diffusers laid out as a checkout (tests/conftest.py).
    assert diffusers_trees.result.formatter.available
    changed = [str(diffusers_trees.rewritten / "diffusers" / relative) for relative in diffusers_trees.changed_files()]
    checkout = diffusers_trees.rewritten.parent
    for command in (["check"], ["format", "--check"]):  # `make style` is `ruff check --fix` then `ruff format`
        done = subprocess.run([str(ruff), *command, "--no-cache", *changed], cwd=checkout, capture_output=True, text=True)
        assert done.returncode == 0, done.stdout[-3000:]
