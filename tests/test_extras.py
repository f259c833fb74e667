"""With only the engine installed (what `make demo` installs), the verifier and the bot say what to install."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from importlib.metadata import distribution, requires
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from codemod_cli.extras import EXTRA_MODULES
from codemods.project.index import installed_diffusers

ROOT = Path(__file__).resolve().parent.parent
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return Requirement(requirement).name


def _closure(names: list[str]) -> set[str]:
    """These distributions and everything they need without extras, as installed here."""
    found: set[str] = set()
    while names:
        name = names.pop()
        if name.lower() in found:
            continue
        found.add(name.lower())
        for line in requires(name) or ():
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                names.append(requirement.name)
    return found


@pytest.fixture(scope="module")
def demo_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real interpreter with what `make demo` installs: the engine's dependencies and diffusers without its own."""
    root = tmp_path_factory.mktemp("demo-env")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / "venv")], check=True)
    packages = root / "packages"
    packages.mkdir()
    for name in _closure([_name(line) for line in PROJECT["dependencies"]]) | {"diffusers"}:
        files = distribution(name).files or []
        tops = {file.parts[0] for file in files if not file.parts[0].startswith("..")}
        for top in tops - {"__pycache__"}:
            source = Path(distribution(name).locate_file(top))
            if source.exists() and not (packages / top).exists():
                (packages / top).symlink_to(source)
    (site,) = (root / "venv" / "lib").glob("python3.*/site-packages")
    (site / "demo.pth").write_text(f"{packages}\n{ROOT}\n")
    return root / "venv" / "bin" / "python"


def test_the_extras_modules_are_pyprojects_extras() -> None:
    extras = PROJECT["optional-dependencies"]

    assert {extra: set(modules) for extra, modules in EXTRA_MODULES.items()} == {
        extra: {_name(line) for line in extras[extra]} for extra in EXTRA_MODULES
    }


def test_the_demo_interpreter_has_the_engine_and_lacks_the_extras(demo_python: Path) -> None:
    probe = "import importlib.util as u; print([m for m in ('libcst', 'typer', 'diffusers', 'torch', 'packaging', 'github') if u.find_spec(m)])"

    done = subprocess.run([str(demo_python), "-c", probe], capture_output=True, text=True, check=True)

    assert done.stdout == "['libcst', 'typer', 'diffusers']\n"


@pytest.mark.parametrize(
    ("command", "missing"),
    [
        (["verify", str(installed_diffusers())], "torch, transformers, accelerate, packaging"),
        (["bot", "run", "--repo", "you/diffusers", "--dry-run"], "PyGithub, torch, transformers, accelerate, packaging"),
        (["bot", "plan", "--repo", "you/diffusers", "--out", "plan.json"], "PyGithub"),
        (["run", "--check-repo", str(installed_diffusers() / "models" / "unets" / "unet_2d.py")], "torch, transformers, accelerate, packaging"),
    ],
    ids=["verify", "bot run", "bot plan", "run --check-repo"],
)
def test_a_command_that_needs_an_extra_names_it_in_one_line_with_exit_2(
    demo_python: Path, tmp_path: Path, command: list[str], missing: str
) -> None:
    done = subprocess.run(
        [str(demo_python), "-m", "codemod_cli", *command], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )

    assert (done.returncode, done.stdout) == (2, "")
    (line,) = done.stderr.splitlines()
    shown = " ".join(command[:2]) if command[0] in ("bot", "run") else command[0]
    assert re.fullmatch(
        rf"codemod: error: `codemod {shown}` needs {missing}, not installed here: run `make install` in the tool's "
        r"checkout, or `pip install 'diffusers-codemod\[[a-z,]+\] @ git\+\S+@[0-9a-f]{40}'` after torch's CPU build "
        r"\(README, Quick start\)",
        line,
    ), line
