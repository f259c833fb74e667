"""Which of a checkout's test modules cover a set of changed files, best first. No torch, no import of tests.

For each changed file, in this order of trust:
1. layout: `src/diffusers/<dir>/<name>.py` -> `tests/<dir>/test_*<name>.py` (diffusers names its tests
   after the module: `scheduling_ddim` -> `test_scheduler_ddim`, `transformer_flux` ->
   `test_models_transformer_flux`, `pipeline_stable_diffusion` -> `test_stable_diffusion`);
2. configuration: a test class whose `pipeline_class`/`model_class` is a class the file defines
   (the tests *of* that class, wherever they live);
3. import: a test module that imports a class the file defines, the most specific first (fewest
   diffusers names imported), only for a file the first two found nothing for.
Modules are interleaved across files rank by rank, so a time budget spent in order goes to
the closest tests of every file first.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

# Areas whose tests need the Hub, a GPU or a quantization backend even in their fast tests.
SKIPPED_AREAS = frozenset({"remote", "single_file", "quantization"})

CONFIGURED_PER_FILE = 2
IMPORTING_PER_FILE = 1

_PREFIXES = re.compile(r"^(?:test_)?(?:models_|scheduler_|scheduling_|pipeline_)?")
_CLASS = re.compile(r"^class (\w+)\b", re.MULTILINE)


@dataclass(frozen=True)
class ModuleFacts:
    path: str  # relative to the checkout: "tests/pipelines/flux/test_pipeline_flux.py"
    configures: frozenset[str]  # classes its test classes take as `pipeline_class`/`model_class`
    imports: frozenset[str]  # names it imports from diffusers


class CheckoutTests:
    """The test modules of a checkout's `tests/`, parsed once."""

    def __init__(self, tests_dir: Path) -> None:
        self.tests_dir = tests_dir

    @cached_property
    def modules(self) -> list[ModuleFacts]:
        found = []
        for path in sorted(self.tests_dir.rglob("test_*.py")):
            relative = path.relative_to(self.tests_dir)
            if relative.parts[0] in SKIPPED_AREAS:
                continue
            parsed = _parse(path)
            if parsed is not None:
                found.append(ModuleFacts(f"tests/{relative.as_posix()}", *parsed))
        return found

    def covering(self, package: Path, changed: list[str]) -> list[str]:
        """Test modules for the package-relative `changed` files, best first, each once."""
        per_file = [self._for_file(package, relative) for relative in changed]
        ordered: list[str] = []
        for rank in range(3):
            depth = max((len(ranks[rank]) for ranks in per_file), default=0)
            for index in range(depth):
                for ranks in per_file:
                    if index < len(ranks[rank]) and ranks[rank][index] not in ordered:
                        ordered.append(ranks[rank][index])
        return ordered

    def _for_file(self, package: Path, relative: str) -> tuple[list[str], list[str], list[str]]:
        directory, stem = f"tests/{Path(relative).parent.as_posix()}/", _key(Path(relative).stem)
        by_layout = [
            m.path for m in self.modules if m.path.startswith(directory) and stem and _key(Path(m.path).stem) == stem
        ]
        classes = set(_CLASS.findall(_read(package / relative)))
        configuring = [m.path for m in self.modules if m.configures & classes and m.path not in by_layout]
        configuring = configuring[:CONFIGURED_PER_FILE]
        importing: list[str] = []
        if not by_layout and not configuring:
            users = [m for m in self.modules if m.imports & classes]
            importing = [m.path for m in sorted(users, key=lambda m: (len(m.imports), m.path))][:IMPORTING_PER_FILE]
        return by_layout, configuring, importing


def _key(stem: str) -> str:
    return _PREFIXES.sub("", stem, count=1)


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""


def _parse(path: Path) -> tuple[frozenset[str], frozenset[str]] | None:
    try:
        tree = ast.parse(_read(path), filename=str(path))
    except (SyntaxError, ValueError):
        return None
    imports = {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "diffusers"
        for alias in node.names
    }
    configures = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            if any(isinstance(t, ast.Name) and t.id in ("pipeline_class", "model_class") for t in node.targets):
                configures.add(node.value.id)
        elif isinstance(node, ast.FunctionDef) and node.name == "model_class":
            configures.update(
                n.value.id for n in ast.walk(node) if isinstance(n, ast.Return) and isinstance(n.value, ast.Name)
            )
    return frozenset(configures), frozenset(imports)
