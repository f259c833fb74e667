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
the closest tests of every file first. The modules are read once per run, with every other reader of the
checkout's tests (`codemods.project.test_modules`).
"""

from __future__ import annotations

import re
from functools import cached_property
from pathlib import Path

from codemods.project.test_modules import CheckoutTestModules, TestModule

# Areas whose tests need the Hub, a GPU or a quantization backend even in their fast tests.
SKIPPED_AREAS = frozenset({"remote", "single_file", "quantization"})

CONFIGURED_PER_FILE = 2
IMPORTING_PER_FILE = 1

_PREFIXES = re.compile(r"^(?:test_)?(?:models_|scheduler_|scheduling_|pipeline_)?")
_CLASS = re.compile(r"^class (\w+)\b", re.MULTILINE)


class CheckoutTests:
    """The test modules of a checkout's `tests/` that may cover a change: `test_*.py` outside `SKIPPED_AREAS`."""

    def __init__(self, tests: CheckoutTestModules) -> None:
        self.tests = tests

    @cached_property
    def modules(self) -> dict[str, TestModule]:
        """Checkout-relative path ("tests/pipelines/flux/test_pipeline_flux.py") -> what the module says."""
        found = {}
        for path, module in self.tests.modules.items():
            relative = path.relative_to(self.tests.tests_dir)
            if path.name.startswith("test_") and relative.parts[0] not in SKIPPED_AREAS:
                found[f"tests/{relative.as_posix()}"] = module
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
            path for path in self.modules if path.startswith(directory) and stem and _key(Path(path).stem) == stem
        ]
        classes = set(_CLASS.findall(_read(package / relative)))
        configuring = [path for path, m in self.modules.items() if m.configures & classes and path not in by_layout]
        configuring = configuring[:CONFIGURED_PER_FILE]
        importing: list[str] = []
        if not by_layout and not configuring:
            users = sorted((len(m.imports), path) for path, m in self.modules.items() if m.imports & classes)
            importing = [path for _, path in users][:IMPORTING_PER_FILE]
        return by_layout, configuring, importing


def _key(stem: str) -> str:
    return _PREFIXES.sub("", stem, count=1)


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except OSError:
        return ""
