"""Which targets to run for a set of rewrites, and which rewrites each target actually ran.

A target is run when a file it could reach changed: the file of a class it builds, or a
module that file imports (one level, relative imports inside the package). Whether it is
credited with a rewrite is decided after the fact, from the lines its warm-up executed, and for
DIF005 also from whether it drove the arguments that shape the loop after the insertion
(`LoopShapes`). No torch import here.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from bot.verify.planning.changes import Rewrite
from bot.verify.targets import TargetSpec
from codemods.analysis.models.loop_arguments import LoopShaping, loop_shaping

# At a line's start: after a newline, the text searched with one put before it (5x faster than `^` and MULTILINE).
_DEFINITION = re.compile(r"\n(?:class|def) (\w+)\b")


class TreeMap:
    """Where classes and top-level functions live in a package tree, and what each module imports from it."""

    def __init__(self, package: Path) -> None:
        self.package = package
        self._imports: dict[str, set[str]] = {}  # every target asks about the same few hundred files

    @cached_property
    def definition_files(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = {}
        for path in sorted(self.package.rglob("*.py")):
            relative = path.relative_to(self.package).as_posix()
            if relative.startswith("utils/dummy_"):
                continue  # placeholders for missing backends, same names as the real classes
            for name in _DEFINITION.findall("\n" + path.read_text("utf-8", errors="replace")):
                found.setdefault(name, []).append(relative)
        return found

    def files_of(self, spec: TargetSpec) -> set[str]:
        own = self._own_files(spec)
        return own | {imported for path in own for imported in self.imports(path)}

    def reaches(self, spec: TargetSpec, changed: set[str]) -> bool:
        """Whether `files_of(spec)` holds a changed file, parsing only the files that may import one."""
        own = self._own_files(spec)
        return bool(own & changed) or any(
            self.imports(path) & changed for path in own if self._may_import(path, changed)
        )

    def _own_files(self, spec: TargetSpec) -> set[str]:
        return {path for name in spec.classes for path in self.definition_files.get(name, [])}

    def _may_import(self, relative: str, changed: set[str]) -> bool:
        """False only where `imports(relative)` cannot hold a changed file: a module it names by a relative import is
        spelled out in its text (`from .x.y import z` names `y.py` and `z.py`), except a package's `__init__.py` and
        the `.py` beside a directory above it (`from . import z`)."""
        above = {f"{parent.as_posix()}.py" for parent in Path(relative).parents}
        if any(path.endswith("__init__.py") or path in above for path in changed):
            return True
        try:
            text = (self.package / relative).read_text("utf-8", errors="replace")
        except OSError:
            return True
        return any(Path(path).stem in text for path in changed)

    def imports(self, relative: str) -> set[str]:
        if relative not in self._imports:
            self._imports[relative] = self._read_imports(relative)
        return self._imports[relative]

    def _read_imports(self, relative: str) -> set[str]:
        path = self.package / relative
        try:
            tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        except (OSError, SyntaxError, ValueError):
            return set()
        package_parts = Path(relative).parent.parts
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package_parts[: len(package_parts) - (node.level - 1)] if node.level > 1 else package_parts
                module = (*base, *(node.module.split(".") if node.module else ()))
                found.update(self._module_file(module, [alias.name for alias in node.names]))
        return found

    def _module_file(self, module: tuple[str, ...], names: list[str]) -> set[str]:
        candidates = [Path(*module).with_suffix(".py"), Path(*module, "__init__.py")] if module else []
        # `from . import x` names submodules, not attributes.
        candidates += [Path(*module, f"{name}.py") for name in names]
        return {c.as_posix() for c in candidates if (self.package / c).is_file()}


def targets_to_run(specs: Iterable[TargetSpec], tree: TreeMap, changed: set[str]) -> list[TargetSpec]:
    return [spec for spec in specs if tree.reaches(spec, changed)]


def exercised(rewrite: Rewrite, lines: dict[str, list[int]], functions: dict[str, list[str]]) -> bool:
    """Whether a run that executed `lines` and `functions` (by file) went through `rewrite`."""
    ran = set(lines.get(rewrite.path, ()))
    if rewrite.lines & ran:
        return True
    ran_functions = functions.get(rewrite.path, ())
    if rewrite.class_level:
        # A class attribute runs at import; the class is exercised if any of its methods ran.
        return any(name.startswith(f"{rewrite.owner}.") for name in ran_functions)
    if not rewrite.lines:
        return rewrite.qualname in ran_functions  # a pure deletion: its function ran
    return False


class LoopShapes:
    """Where a pipeline's arguments decide whether the loop after a DIF005 insertion reaches `scheduler.step()`.

    `set_begin_index(0)` is right only if every iteration steps the scheduler once. A target is
    credited with such a rewrite only if its run went through every place where an argument makes
    an iteration skip the step or leave the loop (`codemods.analysis.models.loop_arguments`): a run that
    never does cannot show that the fix keeps the results.
    """

    def __init__(self, rewritten: Path) -> None:
        self.rewritten = rewritten
        self._places: dict[str, list[LoopShaping]] = {}

    def places(self, rewrite: Rewrite) -> list[LoopShaping]:
        """The loop-shaping places of the first stepping loop after `rewrite`, in the same function."""
        if "DIF005" not in rewrite.rules:
            return []
        if rewrite.path not in self._places:
            text = (self.rewritten / rewrite.path).read_text("utf-8", errors="replace")
            self._places[rewrite.path] = loop_shaping(text)
        after = [p for p in self._places[rewrite.path] if p.function == rewrite.qualname and p.loop_line > rewrite.line]
        first = min((p.loop_line for p in after), default=None)
        return [p for p in after if p.loop_line == first]

    def undriven(self, rewrite: Rewrite, lines: dict[str, list[int]]) -> list[LoopShaping]:
        ran = set(lines.get(rewrite.path, ()))
        return [p for p in self.places(rewrite) if p.line is None or p.line not in ran]

    def held_back(
        self, rewrites: list[Rewrite], lines: dict[str, list[int]], functions: dict[str, list[str]]
    ) -> dict[str, str]:
        """`where -> why` for the DIF005 rewrites a run went through without driving their loop's arguments."""
        held = {}
        for rewrite in rewrites:
            if exercised(rewrite, lines, functions):
                missing = self.undriven(rewrite, lines)
                if missing:
                    held[rewrite.where] = "; ".join(place.describe() for place in missing)
        return held
