"""What a diffusers checkout asks to be installed, read from its own metadata, and which pip step failed.

The checkout's `setup.py`/`pyproject.toml` is code (diffusers' builds its extras from a table),
so its requirements are what pip's metadata build says, not what a parser guesses: pip prepares
the metadata of a scratch copy (the checkout itself may be read-only) and reports it as JSON.
No torch here.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

# diffusers' CI installs `.[torch,test]`: `torch` brings accelerate (its model tests import it), `test` the rest.
EXTRAS = ("torch", "test")

# Their wheels are built against one torch build (CPU or one CUDA version): from any index but
# torch's own they bring the wrong build, or fail to load beside the pinned one.
TORCH_BUILD_BOUND = frozenset({"torchvision", "torchaudio"})

# Files whose content decides what the checkout requires.
DEPENDENCY_FILES = ("setup.py", "setup.cfg", "pyproject.toml")

# What the verifier itself runs in the environment, whatever the checkout lists.
VERIFIER_NEEDS = ("pytest",)

# Of the extras, what the targets import: the pipelines' text encoders and tokenizers.
TARGETS_IMPORT = ("transformers",)


class RequirementFailed(Exception):
    """A pip step failed; the message names the requirement and pip's reason, on one line."""

    def __init__(self, message: str, log: str = "") -> None:
        super().__init__(message)
        self.log = log  # pip's whole output, for the file the one-line message points to


@dataclass(frozen=True)
class CheckoutRequirements:
    torch: list[Requirement]  # what the checkout asks of torch; the pin must satisfy each
    bound: list[Requirement]  # torch-build-bound ones (torchvision): only from torch's own index
    others: list[Requirement]  # everything else: runtime requirements and the extras
    # What must import before the environment counts as built: the runtime requirements and
    # `TARGETS_IMPORT` (torch and the bound ones are the builder's to add: it knows what it installed).
    imported: list[str] = field(default_factory=list)

    def check_torch(self, version: str) -> None:
        for requirement in self.torch:
            if not requirement.specifier.contains(version, prereleases=True):
                raise RequirementFailed(f"'{requirement}': the checkout needs it, the torch pin is {version}")


def is_checkout(root: Path) -> bool:
    return any((root / name).is_file() for name in DEPENDENCY_FILES[:2]) or _has_project_table(root)


def _has_project_table(root: Path) -> bool:
    pyproject = root / "pyproject.toml"
    return pyproject.is_file() and re.search(r"^\[project\]", pyproject.read_text("utf-8"), re.MULTILINE) is not None


def read_requirements(python: Path, checkout: Path, extras: tuple[str, ...] = EXTRAS) -> CheckoutRequirements:
    """The checkout's runtime requirements and its `extras`, split for the environment's build order."""
    with tempfile.TemporaryDirectory(prefix="codemod-metadata-") as scratch:
        copy = _metadata_copy(checkout, Path(scratch) / "checkout")
        report = Path(scratch) / "report.json"
        command = [str(python), "-m", "pip", "install", "--dry-run", "--no-deps", "--ignore-installed"]
        command += ["--quiet", "--report", str(report), str(copy)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            output = done.stdout + done.stderr
            raise RequirementFailed(f"the checkout's own metadata: {last_error(output)}", output)
        metadata = json.loads(report.read_text())["install"][0]["metadata"]
    return split_requirements(metadata.get("requires_dist", []), extras)


def _metadata_copy(checkout: Path, copy: Path) -> Path:
    """The top-level files and `src/` of the checkout: what a metadata build reads (and writes egg-info into)."""
    copy.mkdir(parents=True)
    for entry in checkout.iterdir():
        if entry.is_file():
            shutil.copy2(entry, copy / entry.name)
    if (checkout / "src").is_dir():
        shutil.copytree(checkout / "src", copy / "src", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def split_requirements(requires_dist: list[str], extras: tuple[str, ...] = EXTRAS) -> CheckoutRequirements:
    torch, bound, others, imported, seen = [], [], [], [], set()
    for line in requires_dist:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            raise RequirementFailed(f"'{line}': not a valid requirement in the checkout's metadata") from None
        marker = requirement.marker
        if marker is not None and not any(marker.evaluate({"extra": extra}) for extra in ("", *extras)):
            continue
        runtime = marker is None or marker.evaluate({"extra": ""})
        requirement.marker = None
        name = canonicalize_name(requirement.name)
        if str(requirement) in seen:
            continue
        seen.add(str(requirement))
        if name == "torch":
            torch.append(requirement)
        elif name in TORCH_BUILD_BOUND:
            bound.append(requirement)
        else:
            others.append(requirement)
            if (runtime or name in TARGETS_IMPORT) and name not in imported:
                imported.append(name)
    names = {canonicalize_name(r.name) for r in others}
    others += [Requirement(need) for need in VERIFIER_NEEDS if canonicalize_name(need) not in names]
    return CheckoutRequirements(torch, bound, others, imported)


_NAMED_FAILURES = (
    re.compile(r"No matching distribution found for (\S+)"),
    re.compile(r"Could not find a version that satisfies the requirement (\S+)"),
    re.compile(r"Failed (?:to build|building wheel for) (\S+)"),
    re.compile(r"Could not build wheels for (\S+)"),
    re.compile(r"The user requested (\S+)"),
    re.compile(r"Building wheel for (\S+) .*did not run successfully"),
)


def failing_requirement(output: str, requirements: list[Requirement]) -> Requirement | str | None:
    """The requirement pip's output blames: one of `requirements` when it is theirs, else the name pip gave."""
    by_name = {canonicalize_name(r.name): r for r in requirements}
    for pattern in _NAMED_FAILURES:
        for match in pattern.finditer(output):
            named = re.split(r"[<>=!~\[;( ]", match.group(1).strip("'\","), maxsplit=1)[0]
            if named and canonicalize_name(named) != "torch":
                return by_name.get(canonicalize_name(named), named)
    return None


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b")
"""The last line of a Python traceback: `FileNotFoundError: [Errno 2] ... 'README.md'`."""

_PIP_TRAILERS = ("note: ", "hint: ", "error: subprocess-exited-with-error", "[end of output]")
"""Lines pip adds after a subprocess's own output: never the cause."""


def last_error(output: str) -> str:
    """The cause, one line: the exception a build subprocess (the checkout's setup.py) ended with,
    else pip's last `ERROR:` line, else its last line that is not one of pip's trailers."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    raised = [line for line in lines if _EXCEPTION_LINE.match(line)]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    others = [line for line in lines if not line.startswith(_PIP_TRAILERS)]
    return (raised or errors or others or lines or ["pip failed without a message"])[-1][:300]
