"""The GPU bundle (`make gpu-bundle`) on this machine, as the lent GPU machine will take it.

A fresh venv gets torch alone, from where the Makefile installs it, then a stand-in for the GPU
machine's image (its pinned transformers and the compiled packages the bundle leaves to it, from the
bundle's download cache); then `benchmarks/gpu_run.sh` installs the bundle offline and runs until
gpu_scale.sh's "no CUDA device". The venv of torch and the stand-in image is built once and kept in
the bundle's cache (112 to 230 s on 2 shared cores, most of it torch's install); each session puts it
back as it was and installs the bundle again: the four tests take about 65 s then. Skipped until
`make gpu-bundle` has made the bundle; `make gpu-bundle-check` runs them alone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from packaging import tags
from packaging.utils import parse_wheel_filename

from benchmarks.gpu_scale import GROUPS
from tools.gpu_bundle import DEVICE_PLATFORMS, IMAGE_COMPILED, IMAGE_ON_TORCH, IMAGE_PINS, PROJECT, canonical_name
from tools.torch_index import CPU_INDEX, local_cpu_build

BUNDLE = PROJECT / ".gpu-bundle"
IMAGE_WHEELS = PROJECT / ".gpu-bundle-cache" / "host"
# What the device tool carries at most: the working tree and the carried paths together.
CARRY_LIMIT = 64 * 2**20

pytestmark = pytest.mark.skipif(not BUNDLE.is_dir(), reason="no .gpu-bundle: `make gpu-bundle` makes it")


@pytest.fixture(scope="session")
def image_python() -> Path:
    """A venv with torch and the stand-in image, nothing else: built once and kept in the bundle's cache,
    and brought back to that state at each session's start (what an earlier session installed, removed)."""
    venv = IMAGE_WHEELS.parent / "image-venv"
    python = venv / "bin" / "python"
    torch_pin = f"torch=={torch.__version__.partition('+')[0]}"
    image = [*IMAGE_PINS, *IMAGE_ON_TORCH, *IMAGE_COMPILED]
    stamp = venv / "image.txt"
    pip = [python, "-m", "pip", "--disable-pip-version-check"]
    # No .pyc files at install: compiling all of torch's costs minutes here; imports compile what they use.
    install = [*pip, "install", "--quiet", "--no-compile"]
    if not stamp.is_file() or stamp.read_text() != "\n".join([torch_pin, *image]):
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run(
            [*install, torch_pin, *([] if local_cpu_build(torch_pin) else ["--index-url", CPU_INDEX])], check=True
        )
        subprocess.run([*install, "--no-index", "--find-links", IMAGE_WHEELS, *image], check=True)
        (venv / "base.txt").write_text(_freeze(python))
        stamp.write_text("\n".join([torch_pin, *image]))
    base = (venv / "base.txt").read_text().splitlines()
    added = [line.partition("==")[0] for line in _freeze(python).splitlines() if line not in base]
    if added:
        subprocess.run([*pip, "uninstall", "--quiet", "--yes", *added], check=True)
        subprocess.run([*install, "--no-index", "--find-links", IMAGE_WHEELS, *base], check=True)
    return python


def _freeze(python: Path) -> str:
    """The venv's distributions, one `name==version` a line, names normalised as pip compares them."""
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format", "freeze"], capture_output=True, text=True, check=True
    ).stdout
    return "".join(f"{canonical(line)}\n" for line in listed.splitlines() if "==" in line)


def canonical(requirement: str) -> str:
    name, _, version = requirement.partition("==")
    return f"{canonical_name(name)}=={version}"


def _gpu_run(python: Path, out: Path, *arguments: str, **environment: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PROJECT / "benchmarks" / "gpu_run.sh", BUNDLE, *arguments],
        env={**os.environ, "PYTHON": str(python), "OUT": str(out), **environment},
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="session")
def gpu_run(image_python: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("gpu-run-out")
    return _gpu_run(image_python, out), out


def test_gpu_run_installs_the_bundle_offline_and_stops_at_no_cuda_device(gpu_run) -> None:
    done, _ = gpu_run
    assert (done.returncode, "gpu_scale: no CUDA device" in done.stdout, "] installed" in done.stdout) == (
        2,
        True,
        True,
    ), done.stdout[-3000:]


def test_gpu_run_logs_into_the_dated_run_folder(gpu_run) -> None:
    done, out = gpu_run
    (log,) = out.glob("gpu-runs/*/gpu-run.log")
    assert "gpu_scale: no CUDA device" in log.read_text()


def test_the_install_keeps_the_images_packages_and_breaks_no_requirement(gpu_run, image_python: Path) -> None:
    listed = _freeze(image_python).splitlines()
    kept = [pin for pin in IMAGE_PINS if canonical(pin) not in listed]
    checked = subprocess.run([image_python, "-m", "pip", "check"], capture_output=True, text=True, check=False)
    assert (kept, checked.returncode) == ([], 0), checked.stdout


def test_the_bundle_and_the_working_tree_fit_what_the_device_tool_carries() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT, capture_output=True, check=True).stdout
    tree = sum((PROJECT / name).stat().st_size for name in tracked.decode().split("\0") if (PROJECT / name).is_file())
    bundle = sum(path.stat().st_size for path in BUNDLE.iterdir())
    assert tree + bundle < CARRY_LIMIT / 2, f"{tree / 2**20:.1f} MiB of tree, {bundle / 2**20:.1f} MiB of bundle"


def test_every_package_the_bundle_carries_has_a_wheel_for_the_gpu_machines_python() -> None:
    device = {
        *tags.cpython_tags((3, 12), platforms=DEVICE_PLATFORMS),
        *tags.compatible_tags((3, 12), platforms=DEVICE_PLATFORMS),
    }
    carried: dict[str, bool] = {}
    for wheel in BUNDLE.glob("*.whl"):
        name, _, _, wheel_tags = parse_wheel_filename(wheel.name)
        carried[name] = carried.get(name, False) or not device.isdisjoint(wheel_tags)
    assert [name for name, fits in carried.items() if not fits] == []


def test_a_budget_smaller_than_every_cap_skips_every_group_and_leaves_the_files_where_docs_keeps_them(
    image_python: Path, tmp_path: Path
) -> None:
    # 70 s less the install leave gpu_scale less than its smallest group's smallest cap (75 s): nothing is
    # measured (`--device cpu` passes the preflight here), and every file is where the integrator copies from.
    done = _gpu_run(image_python, tmp_path, "--device", "cpu", BUDGET_S="70", MAIN_SUBSET_S="0")
    (run,) = tmp_path.glob("gpu-runs/*")
    evidence = tmp_path / "gpu-evidence.md"
    assert (done.returncode, sorted(p.name for p in run.iterdir()), evidence.is_file()) == (
        0,
        ["gpu-run.log", "gpu-scale.json"],
        True,
    ), done.stdout[-3000:]
    assert evidence.read_text().count("Not run: skipped for time") == len(GROUPS)
