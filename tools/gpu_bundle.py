"""The wheels a lent GPU machine lacks for `benchmarks/gpu_run.sh`, gathered here into one folder to carry.

    python -m tools.gpu_bundle build BUNDLE [--checkout DIFFUSERS_MAIN] [--cache DIR]   # here
    python -m tools.gpu_bundle install BUNDLE                                        # there

The GPU machine's image has torch (CUDA), transformers and many common packages, Python 3.12,
and no network. BUNDLE gets this project's wheel (built from the working tree: its metadata names
what the run imports), diffusers 0.42.1 (the release the QwenImage fixture patches and the
real-scale groups rewrite), the test-only packages diffusers main's tests import, and whatever pip
resolves for them that the image does not provide; pinned to the image's versions of what it does.
Each is fetched for the device (CPython 3.12, manylinux x86-64) and for this interpreter, so the
bundle also installs here (`tests/test_gpu_bundle.py`). `--checkout` adds `diffusers-main.tar.gz`,
the checkout's tracked src/, tests/ and utils/ (the main-subset run's tree). The cache keeps every
download: the stand-in image the test installs comes from its host folder (it has accelerate,
which diffusers main's tests import, as the image has).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
DEVICE_PYTHON = "3.12"
# pip matches a manylinux tag exactly: the tags the image's glibc accepts that these packages use.
DEVICE_PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
    "manylinux1_x86_64",
)
# The release the QwenImage fixture case (DIF001/qwenimage_rope_pr13406) patches and the real-scale groups rewrite.
DIFFUSERS = "0.42.1"
# What the run installs besides this project: the main subset's targets come from diffusers main's tests, which
# import the last four (the image has pytest; it is carried all the same, like the other small pure-Python ones).
REQUIREMENTS = (f"diffusers=={DIFFUSERS}", "pytest", "parameterized", "requests-mock", "ftfy")
# The image's versions (its pip list as read there in 2026-11; the 2026-12-04 run saw the same
# transformers and huggingface_hub): resolving against them keeps the carried wheels compatible with
# what stays installed there.
IMAGE_PINS = ("transformers==5.17.0", "huggingface-hub==1.33.0", "safetensors==0.8.0", "tokenizers==0.23.2")
# The compiled packages the resolution pulls in that the image has too (numpy's there is 2.5, for
# Python 3.12 and newer, so it is not pinned: this interpreter may be older).
IMAGE_COMPILED = ("numpy", "hf-xet", "pillow", "regex", "pyyaml", "charset-normalizer", "psutil")
# The image's packages that need torch, which diffusers main's tests import: fetched without their
# dependencies (pip's torch would be the 4 GB CUDA build), for the stand-in image only.
IMAGE_ON_TORCH = ("accelerate==1.15.0",)
# The image's packages that are not carried. Small pure-Python ones are carried even where the image has
# them (typer and rich among them: on 2026-12-04 the image's typer did not do), since pip keeps an
# installed one that satisfies.
IMAGE_PROVIDES = frozenset({*(pin.partition("==")[0] for pin in (*IMAGE_PINS, *IMAGE_ON_TORCH)), *IMAGE_COMPILED})
# What the run installs; gpu_run.sh and the test install exactly these.
INSTALL = ("diffusers-codemod", *REQUIREMENTS)
MAIN_TREE = ("src", "tests", "utils", "setup.py", "pyproject.toml", "Makefile")


def canonical_name(name: str) -> str:
    """A distribution's name as pip compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_name(path: Path) -> str:
    return canonical_name(path.name.split("-")[0])


def build(bundle: Path, cache: Path, checkout: Path | None) -> None:
    shutil.rmtree(bundle, ignore_errors=True)
    bundle.mkdir(parents=True)
    project = cache / "project"
    shutil.rmtree(project, ignore_errors=True)
    _pip("wheel", "--no-deps", "--wheel-dir", project, PROJECT)
    requirements = [*project.glob("diffusers_codemod-*.whl"), *REQUIREMENTS, *IMAGE_PINS]
    device = ["--python-version", DEVICE_PYTHON, "--implementation", "cp", "--only-binary", ":all:"]
    device += [option for platform in DEVICE_PLATFORMS for option in ("--platform", platform)]
    _pip("download", "--dest", cache / "device", *device, *requirements)
    _pip("download", "--dest", cache / "host", "--only-binary", ":all:", *requirements)
    # psutil: accelerate's, the one dependency of it the resolution above does not bring.
    _pip("download", "--dest", cache / "host", "--only-binary", ":all:", "--no-deps", *IMAGE_ON_TORCH, "psutil")
    # The project's wheel from this build: pip download keeps a file of the same name it fetched before.
    for wheel in [*project.glob("*.whl"), *(cache / "device").glob("*.whl"), *(cache / "host").glob("*.whl")]:
        if wheel_name(wheel) not in IMAGE_PROVIDES and not (bundle / wheel.name).exists():
            shutil.copy2(wheel, bundle / wheel.name)
    if checkout is not None:
        with (bundle / "diffusers-main.tar.gz").open("wb") as tarball:
            archive = ["git", "-C", str(checkout), "archive", "--format=tar.gz", "HEAD", *MAIN_TREE]
            subprocess.run(archive, stdout=tarball, check=True)
    size = sum(path.stat().st_size for path in bundle.iterdir())
    print(f"gpu_bundle: {bundle}: {len(list(bundle.iterdir()))} files, {size / 2**20:.1f} MiB")


def install(bundle: Path) -> None:
    """The bundle into this interpreter's own site-packages, resolved against what is installed: offline."""
    # No .pyc files at install: the runs import their trees' own copies of diffusers, not this one.
    _pip("install", "--no-index", "--find-links", bundle, "--no-cache-dir", "--no-compile", *INSTALL)


def _pip(*arguments: object) -> None:
    subprocess.run([sys.executable, "-m", "pip", *map(str, arguments), "--quiet"], check=True)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("build", help="gather the bundle (here, with PyPI)")
    make.add_argument("bundle", type=Path, help="the folder to carry (emptied first)")
    make.add_argument("--checkout", type=Path, help="a diffusers main git checkout, for the main-subset run")
    make.add_argument("--cache", type=Path, default=PROJECT / ".gpu-bundle-cache", help="downloads, kept")
    put = commands.add_parser("install", help="install the bundle (on the GPU machine, offline)")
    put.add_argument("bundle", type=Path)
    args = parser.parse_args(argv)
    if args.command == "install":
        install(args.bundle)
    else:
        build(args.bundle.resolve(), args.cache.resolve(), args.checkout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
