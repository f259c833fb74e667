"""A checkout's environment that cannot be built fails in one line, naming the requirement or the exception,
and keeps pip's full log beside the cache.

Apart from tests/verify/test_environment.py: each failed build makes a virtual environment and runs pip, a
minute or more on two cores, and on its own module it runs beside the tests that share the main-like one.
"""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from bot.verify.checkout.environment import EnvironmentFailed, TorchSource, environment_for, environment_key


def _failed_build(tmp_path: Path, setup_arguments: str) -> tuple[Path, str]:
    """A checkout whose setup.py calls `setup(name="diffusers", <setup_arguments>)`, and its build's error."""
    checkout = tmp_path / "checkout"
    (checkout / "src" / "diffusers").mkdir(parents=True)
    (checkout / "setup.py").write_text(f'from setuptools import setup\nsetup(name="diffusers", {setup_arguments})\n')
    with pytest.raises(EnvironmentFailed) as failed:
        environment_for(checkout, cache=tmp_path / "envs", base=Path(sys.executable))
    return checkout, str(failed.value)


def test_a_requirement_that_cannot_be_installed_is_named_in_one_line(tmp_path: Path) -> None:
    checkout, message = _failed_build(tmp_path, 'install_requires=["numpy==0.0.1"]')
    assert message.startswith(f"cannot build the environment of {checkout}: requirement 'numpy==0.0.1' failed: ")
    assert "\n" not in message
    key = environment_key(checkout, TorchSource(), Path(sys.executable))
    assert sorted(p.name for p in (tmp_path / "envs").iterdir()) == [f"{key}.failed.log", f"{key}.lock"]


def test_a_setup_py_that_raises_is_named_by_its_exception_and_the_full_log_is_kept(tmp_path: Path) -> None:
    # diffusers' setup.py reads its README; a checkout without one fails inside pip's build subprocess.
    checkout, message = _failed_build(tmp_path, 'long_description=open("README.md").read()')
    log = tmp_path / "envs" / f"{environment_key(checkout, TorchSource(), Path(sys.executable))}.failed.log"
    assert message == (
        f"cannot build the environment of {checkout}: the checkout's own metadata: FileNotFoundError:"
        f" [Errno 2] No such file or directory: 'README.md' (full log: {log})"
    )
    assert "note: This error originates from a subprocess" in log.read_text()


def _wheel(folder: Path, name: str, init: str) -> Path:
    """A wheel of the package `name` whose `__init__.py` is `init`, written by hand (no build backend)."""
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {
        f"{name}/__init__.py": init,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{info}/top_level.txt": f"{name}\n",
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
        archive.writestr(f"{info}/RECORD", "".join(f"{path},,\n" for path in [*files, f"{info}/RECORD"]))
    return wheel


def test_a_requirement_that_installs_but_does_not_import_fails_the_build_and_nothing_is_marked_ready(
    tmp_path: Path,
) -> None:
    wheel = _wheel(tmp_path, "brokenonimport", 'raise RuntimeError("operator torchvision::nms does not exist")\n')
    checkout, message = _failed_build(tmp_path, f'install_requires=["brokenonimport @ {wheel.as_uri()}"]')
    assert message == (
        f"cannot build the environment of {checkout}: brokenonimport does not import: import brokenonimport: "
        "RuntimeError: operator torchvision::nms does not exist"
    )
    assert not list((tmp_path / "envs").glob("*/ready.json"))
