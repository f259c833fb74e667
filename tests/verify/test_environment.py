"""The checkout's own environment: made from its metadata, its pins winning, built once, failing in one line.

Built on top of this project's interpreter (the `main_like` fixture), so only what the checkout
pins differently is installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from main_like import MainLike

from bot.verify.checkout.environment import (
    EnvironmentFailed,
    TorchSource,
    check_interpreter,
    checkout_of,
    environment_for,
    environment_key,
)
from bot.verify.checkout.environment_check import failed_imports
from codemods.project.index import installed_diffusers

VERSIONS = "import huggingface_hub, torch; print(huggingface_hub.__version__, torch.__version__)"


def _versions(python: Path) -> list[str]:
    return subprocess.run([str(python), "-c", VERSIONS], capture_output=True, text=True, check=True).stdout.split()


def test_the_checkouts_pins_win_over_the_packages_beneath(main_like: MainLike) -> None:
    hub, torch = _versions(main_like.python)
    own_hub, own_torch = _versions(Path(sys.executable))
    assert (hub.split(".")[0], own_hub.split(".")[0]) == ("1", "2")  # huggingface-hub<2.0, as main pins it
    assert torch == own_torch == "2.13.0+cpu"


def test_the_build_says_what_it_does_and_leaves_torchvision_out_without_a_torch_index(main_like: MainLike) -> None:
    assert main_like.progress[0].startswith(f"building the environment of {main_like.checkout}")
    ready = json.loads((main_like.python.parent.parent / "ready.json").read_text())
    assert ready["notes"] == ["left out torchvision: only torch's own index has builds matching torch 2.13.0"]
    assert main_like.progress[-1].startswith("environment ready in ")


def test_a_second_call_reuses_the_environment_without_building(main_like: MainLike) -> None:
    said: list[str] = []
    python = environment_for(
        main_like.checkout, TorchSource(), cache=main_like.cache, base=Path(sys.executable), progress=said.append
    )
    assert (python, said) == (main_like.python, [])


def test_the_key_changes_with_the_dependency_metadata_and_the_torch_source(main_like: MainLike, tmp_path: Path) -> None:
    key = environment_key(main_like.checkout, TorchSource())
    other = tmp_path / "checkout"
    other.mkdir()
    (other / "setup.py").write_text((main_like.checkout / "setup.py").read_text().replace("<2.0", "<3.0"))
    assert environment_key(other, TorchSource()) != key
    assert environment_key(main_like.checkout, TorchSource(index_url="https://example.invalid/cu128")) != key


def test_a_tree_in_a_checkout_has_one_an_installed_release_has_none(main_like: MainLike) -> None:
    assert checkout_of(main_like.checkout / "src" / "diffusers") == main_like.checkout.resolve()
    assert checkout_of(installed_diffusers()) is None


def test_an_interpreter_without_torch_is_refused_in_one_line() -> None:
    base = Path(sys._base_executable)  # the Python this project's venv was made from: no torch
    with pytest.raises(EnvironmentFailed, match=rf"^--python {base}: cannot import torch there: .*torch"):
        check_interpreter(base)


def test_codemod_verify_with_a_missing_interpreter_exits_2_in_one_line(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "codemod_cli", "verify", str(installed_diffusers()), "--python", str(tmp_path / "py")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stderr) == (2, f"codemod: error: --python {tmp_path / 'py'}: no such interpreter\n")


def test_an_unreachable_torch_index_is_named_in_one_line_before_anything_is_built(tmp_path: Path) -> None:
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "setup.py").write_text('from setuptools import setup\nsetup(name="diffusers")\n')
    torch = TorchSource(index_url="http://127.0.0.1:9/whl/cu128")
    with pytest.raises(EnvironmentFailed) as failed:
        environment_for(checkout, torch, cache=tmp_path / "envs")
    assert str(failed.value) == (
        f"cannot build the environment of {checkout}: --torch-index http://127.0.0.1:9/whl/cu128/torch/: "
        "[Errno 111] Connection refused"
    )
    assert not (tmp_path / "envs").exists()


def test_the_import_check_names_a_distribution_that_is_not_installed() -> None:
    assert failed_imports(Path(sys.executable), ["torch", "pillow", "no-such-distribution"]) == {
        "no-such-distribution": "not installed"
    }
