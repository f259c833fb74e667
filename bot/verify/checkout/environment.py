"""An interpreter with a diffusers checkout's own dependencies: built once, cached, reused.

diffusers main pins what its code imports (`huggingface-hub<2.0`, `httpx`); run with the
environment this project was installed with, its pipelines do not even import. So both trees
of a verification run in an environment made from the checkout's own metadata:

1. a venv made with the Python running this code;
2. `torch==VERSION` first, from the index the user names (CPU or a CUDA build);
3. the checkout's runtime requirements and its `torch` and `test` extras (read by pip from its setup.py/pyproject.toml),
   with a constraints file pinning torch, so no requirement can swap the build; torch-build-bound ones
   (torchvision) only when torch's own index has a build matching the pin, else they are left out (with a note);
4. never the checkout itself: whoever runs a tree puts it first on PYTHONPATH.

Where the user names torch's index, it is read before anything is built (an index that does not answer is a one-line
error, not minutes of retries), and the torch steps use that index alone: pip's configured extra indexes and
find-links would hand it another build of the same version. The environment is marked ready only once torch, the
checkout's runtime requirements, transformers and whatever torch-bound package was installed import in it.

The environment lives in `<cache>/<key>`, the key hashing the checkout's dependency files, the torch pin and index,
the Python version and this recipe's version, so every run and every fix group of one checkout (and of a later
commit with the same dependencies) share it.
`ready.json` marks a finished build; a lock keeps two builders of one key apart.
`base` (an interpreter) makes a layered environment instead (tests, benchmarks: seconds): the base's packages are
seen beneath its own, so only what the checkout pins differently is installed, and not compiled: pip compiling all
of transformers was 8 of 10 CPU s, where a run imports a few of its modules (compiled on import; workers keep theirs).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from bot.verify.checkout.environment_check import failed_imports, unreachable_index
from bot.verify.checkout.requirements import (
    DEPENDENCY_FILES,
    CheckoutRequirements,
    RequirementFailed,
    failing_requirement,
    is_checkout,
    last_error,
    read_requirements,
)

RECIPE_VERSION = "3"
"""Part of the cache key: a change to how environments are built makes new ones."""

DEFAULT_TORCH = "2.13.0"
MIN_PYTHON = (3, 10)


class EnvironmentFailed(Exception):
    """The environment could not be built or used; the message is one line naming what failed."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log  # the failing step's whole output, kept in a file the message names


@dataclass(frozen=True)
class TorchSource:
    version: str = DEFAULT_TORCH
    index_url: str | None = None  # None: pip's configured index


def cache_root() -> Path:
    configured = os.environ.get("CODEMOD_ENV_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "diffusers-codemod" / "envs"


def checkout_of(src: Path) -> Path | None:
    """The checkout holding a tree at `<checkout>/src/<package>` with its own dependency metadata, if any."""
    src = src.resolve()
    root = src.parent.parent
    return root if src.parent.name == "src" and is_checkout(root) else None


def environment_key(checkout: Path, torch: TorchSource, base: Path | None = None) -> str:
    digest = hashlib.sha256(f"{RECIPE_VERSION}\0{sys.version_info[:2]}\0{torch}\0{base}".encode())
    for name in DEPENDENCY_FILES:
        path = checkout / name
        digest.update(f"\0{name}\0".encode() + (path.read_bytes() if path.is_file() else b"-"))
    return digest.hexdigest()[:16]


def python_of(directory: Path) -> Path:
    return directory / "bin" / "python"


def environment_for(
    checkout: Path,
    torch: TorchSource = TorchSource(),
    *,
    cache: Path | None = None,
    base: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> Path:
    """The Python of the checkout's environment (built on first use, then reused)."""
    say = progress or (lambda message: None)
    directory = (cache or cache_root()) / environment_key(checkout, torch, base)
    if (directory / "ready.json").is_file():
        return python_of(directory)
    if torch.index_url is not None:
        unreachable = unreachable_index(torch.index_url)
        if unreachable:
            raise EnvironmentFailed(f"cannot build the environment of {checkout}: --torch-index {unreachable}")
    directory.parent.mkdir(parents=True, exist_ok=True)
    with _lock(directory.with_suffix(".lock")):
        if (directory / "ready.json").is_file():  # another process built it while we waited
            return python_of(directory)
        shutil.rmtree(directory, ignore_errors=True)  # a build that was interrupted
        started = time.monotonic()
        say(f"building the environment of {checkout} in {directory} (once; later runs reuse it)")
        try:
            notes = _build(directory, checkout, torch, base, say)
        except EnvironmentFailed as error:
            shutil.rmtree(directory, ignore_errors=True)
            if not error.log:
                raise
            log = directory.with_name(f"{directory.name}.failed.log")
            log.write_text(error.log)
            raise EnvironmentFailed(f"{error} (full log: {log})") from None
        except BaseException:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        seconds = round(time.monotonic() - started, 1)
        record = {"checkout": str(checkout), "torch": torch.version, "index": torch.index_url, "notes": notes}
        (directory / "ready.json").write_text(json.dumps({**record, "seconds": seconds}, indent=2) + "\n")
        say(f"environment ready in {seconds:.0f} s" + "".join(f"; {note}" for note in notes))
    return python_of(directory)


def _build(
    directory: Path, checkout: Path, torch: TorchSource, base: Path | None, say: Callable[[str], None]
) -> list[str]:
    python = python_of(directory)
    say("environment: creating the virtual environment")
    if base is None:
        _run([sys.executable, "-m", "venv", str(directory)], "the virtual environment")
    else:
        _layered_venv(directory, base)
    constraints = directory / "constraints.txt"
    constraints.write_text(f"torch=={torch.version}\n")
    say(f"environment: torch=={torch.version}" + (f" from {torch.index_url}" if torch.index_url else ""))
    _pip(python, [f"torch=={torch.version}", *_index(torch)], [], only_index=torch.index_url is not None)
    say("environment: reading the checkout's requirements from its metadata")
    try:
        wanted = read_requirements(python, checkout)
        wanted.check_torch(torch.version)
    except RequirementFailed as error:
        raise EnvironmentFailed(f"cannot build the environment of {checkout}: {error}", error.log) from None
    say(f"environment: installing {len(wanted.others)} requirement(s) of the checkout and its extras")
    uncompiled = [] if base is None else ["--no-compile"]
    _pip(python, [*uncompiled, "-c", str(constraints), *(str(r) for r in wanted.others)], wanted.others, checkout)
    notes = _bound(python, constraints, wanted, torch, say)
    bound = [canonicalize_name(r.name) for r in wanted.bound] if torch.index_url and not notes else []
    needed = ["torch", *wanted.imported, *bound]
    say(f"environment: checking that {', '.join(needed)} import")
    broken = failed_imports(python, needed)
    if broken:
        name, why = next(iter(broken.items()))
        more = f" (and {len(broken) - 1} more)" if len(broken) > 1 else ""
        raise EnvironmentFailed(f"cannot build the environment of {checkout}: {name} does not import: {why}{more}")
    return notes


def _bound(
    python: Path, constraints: Path, wanted: CheckoutRequirements, torch: TorchSource, say: Callable[[str], None]
) -> list[str]:
    """Install the torch-build-bound requirements from torch's own index, or say why they were left out."""
    if not wanted.bound:
        return []
    names = ", ".join(str(r) for r in wanted.bound)
    if torch.index_url is None:
        return [f"left out {names}: only torch's own index has builds matching torch {torch.version}"]
    say(f"environment: {names} from {torch.index_url}")
    try:
        arguments = ["-c", str(constraints), *(str(r) for r in wanted.bound), *_index(torch)]
        _pip(python, arguments, wanted.bound, only_index=True)
    except EnvironmentFailed as error:
        return [f"left out {names}: {error}"]
    return []


_PATH_PROBE = (
    "import importlib.util as u, json, sys, sysconfig as c; "
    "print(json.dumps([sys.path, c.get_path('purelib'), u.find_spec('pip') is not None]))"
)


def _layered_venv(directory: Path, base: Path) -> None:
    """A venv seeing `base`'s whole import path (with what its .pth files add) beneath its own (a .pth line is read
    after site-packages); using the base's pip where it has one, not one of its own (ensurepip: seconds a build)."""
    base_path, _, base_has_pip = json.loads(_run([str(base), "-c", _PATH_PROBE], f"the base interpreter {base}"))
    without_pip = ["--without-pip"] if base_has_pip else []
    _run([sys.executable, "-m", "venv", *without_pip, str(directory)], "the virtual environment")
    own_path, own_packages, _ = json.loads(_run([str(python_of(directory)), "-c", _PATH_PROBE], "the new environment"))
    beneath = [path for path in base_path if path and path not in own_path]
    (Path(own_packages) / "codemod-base-packages.pth").write_text("".join(f"{path}\n" for path in beneath))


# pip's environment variables override its configuration files; a blank (not empty: pip ignores an
# empty one) makes an empty list of extra indexes and find-links.
_ONLY_THE_GIVEN_INDEX = {"PIP_EXTRA_INDEX_URL": " ", "PIP_FIND_LINKS": " "}


def _index(torch: TorchSource) -> list[str]:
    return ["--index-url", torch.index_url] if torch.index_url else []


def _pip(
    python: Path, arguments: list[str], requirements: list, checkout: Path | None = None, only_index: bool = False
) -> None:
    """pip install `arguments`; `only_index`: from the `--index-url` given alone, whatever pip is configured with."""
    command = [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *arguments]
    environment = {**os.environ, **(_ONLY_THE_GIVEN_INDEX if only_index else {})}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=environment)
    if done.returncode == 0:
        return
    output = done.stdout + done.stderr
    culprit = failing_requirement(output, requirements) or (str(requirements[0]) if len(requirements) == 1 else None)
    where = f" of {checkout}" if checkout else ""
    named = f"requirement '{culprit}' failed: " if culprit else ""
    raise EnvironmentFailed(f"cannot build the environment{where}: {named}{last_error(output)}", output)


def _run(command: list[str], what: str) -> str:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        output = done.stdout + done.stderr
        raise EnvironmentFailed(f"cannot build the environment: {what}: {last_error(output)}", output)
    return done.stdout


@contextmanager
def _lock(path: Path) -> Iterator[None]:
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def check_interpreter(python: Path) -> Path:
    """`python` if it can run the verifier's workers (Python 3.10+ with torch); else a one-line error.

    A bare name (`--python python3`) is looked up on PATH, as a shell would.
    """
    if python.parent == Path(".") and not python.is_file():
        python = Path(shutil.which(str(python)) or python)
    if not python.is_file() or not os.access(python, os.X_OK):
        raise EnvironmentFailed(f"--python {python}: no such interpreter")
    probe = "import sys, torch; print(sys.version_info[0], sys.version_info[1], torch.__version__)"
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise EnvironmentFailed(f"--python {python}: cannot import torch there: {last_error(done.stderr)}")
    major, minor, _ = done.stdout.split()
    if (int(major), int(minor)) < MIN_PYTHON:
        raise EnvironmentFailed(f"--python {python}: Python {major}.{minor}; the verifier needs 3.10 or newer")
    return python


def require_cuda(python: Path | None) -> None:
    """`--device cuda` on an interpreter that sees no CUDA device is a one-line error before any work,
    not a report of changes that could not be verified."""
    interpreter = str(python or sys.executable)
    probe = "import torch; print(torch.cuda.is_available(), torch.__version__)"
    done = subprocess.run([interpreter, "-c", probe], capture_output=True, text=True, check=False)
    available, version = (done.stdout.split() + ["False", "(not importable)"])[:2]
    if done.returncode != 0 or available != "True":
        raise EnvironmentFailed(
            f"--device cuda: {interpreter} sees no CUDA device (torch {version}); on a machine without one, "
            "use --device emu (the emulated device counts the same copies and syncs)"
        )


def interpreter_for(
    src: Path,
    python: Path | None = None,
    torch: TorchSource = TorchSource(),
    progress: Callable[[str], None] | None = None,
) -> Path | None:
    """What runs the trees of `src`: `python` if given; the checkout's environment for a tree in a
    checkout; None (this interpreter) for any other tree, such as an installed release."""
    if python is not None:
        return check_interpreter(python)
    checkout = checkout_of(src)
    return environment_for(checkout, torch, progress=progress) if checkout else None
