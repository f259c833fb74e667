"""The layout is the architecture, and this keeps it so.

Each package's docstring ends with `May import:` and the packages its modules may import besides its
own (an entry allows the modules directly in that package, not its subpackages). Every import counts:
module level, inside functions, under `TYPE_CHECKING`. No module imports one that imports it back, no
private name crosses modules, no module passes 300 lines, and docs/architecture.md names exactly the
packages there are.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
TOP_LEVEL = ("codemod_cli", "codemods", "bot")
LONGEST_MODULE = 300


@dataclass(frozen=True)
class Module:
    name: str  # dotted
    package: str  # the nearest package: the module itself for an `__init__`
    path: Path


@cache
def modules() -> dict[str, Module]:
    found = {}
    for top in TOP_LEVEL:
        for path in sorted((REPOSITORY / top).rglob("*.py")):
            parts = path.relative_to(REPOSITORY).with_suffix("").parts
            if parts[-1] == "__init__":
                name = ".".join(parts[:-1])
                found[name] = Module(name, name, path)
            else:
                found[".".join(parts)] = Module(".".join(parts), ".".join(parts[:-1]), path)
    return found


def packages() -> list[str]:
    return sorted({m.package for m in modules().values()})


def allowed_imports(package: str) -> set[str] | None:
    """The packages named by the docstring's `May import:` line; None when the line is missing."""
    docstring = ast.get_docstring(ast.parse(modules()[package].path.read_text())) or ""
    line = re.search(r"^May import: (.*)$", docstring, re.M)
    if line is None:
        return None
    return {entry.strip() for entry in line.group(1).split(",") if re.fullmatch(r"[\w.]+", entry.strip())} & set(
        packages()
    )


def imported_names(module: Module) -> list[tuple[str, int]]:
    """Every project module `module` imports (its dotted name as imported, line)."""
    names = []
    for node in ast.walk(ast.parse(module.path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [(alias.name, node.lineno) for alias in node.names]
    return [(name, line) for name, line in names if name.split(".")[0] in TOP_LEVEL]


def resolved(dotted: str) -> Module | None:
    """The module an imported name lives in: `codemods.findings.Finding` -> `codemods.findings`."""
    while dotted and dotted not in modules():
        dotted = dotted.rpartition(".")[0]
    return modules().get(dotted)


@cache
def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module in modules().values():
        targets = (resolved(name) for name, _ in imported_names(module))
        graph[module.name] = {t.name for t in targets if t is not None and t.name != module.name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_every_package_says_what_it_may_import():
    assert [p for p in packages() if allowed_imports(p) is None] == []


def test_every_import_stays_within_what_its_package_may_import():
    stray = []
    for module in modules().values():
        allowed = (allowed_imports(module.package) or set()) | {module.package}
        for name, line in imported_names(module):
            target = resolved(name)
            if target is not None and target.package not in allowed and target.name != module.package:
                stray.append(f"{module.path.relative_to(REPOSITORY)}:{line} imports {target.name}")
    assert stray == []


def test_the_static_engine_never_imports_the_bot_or_the_command_line():
    upward = [
        f"{module} -> {target}"
        for module, targets in import_graph().items()
        if module.startswith("codemods")
        for target in targets
        if not target.startswith("codemods")
    ]
    assert upward == []


def test_no_module_imports_one_that_imports_it_back():
    assert cycles(import_graph()) == []


def test_a_cycle_is_found_when_there_is_one():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_private_name_is_imported_across_modules():
    private = []
    for path in _python_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in TOP_LEVEL:
                private += [
                    f"{path.relative_to(REPOSITORY)}:{node.lineno} {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_") and not alias.name.startswith("__")
                ]
    assert private == []


def test_no_module_is_longer_than_300_lines():
    long = [
        f"{path.relative_to(REPOSITORY)}: {n}"
        for path in _python_files()
        if (n := len(path.read_text().splitlines())) > LONGEST_MODULE
    ]
    assert long == []


def test_the_architecture_page_names_exactly_the_packages_there_are():
    page = (REPOSITORY / "docs" / "architecture.md").read_text()
    named = {m.group(1).strip("/").replace("/", ".") for m in re.finditer(r"`((?:codemod_cli|codemods|bot)(?:/\w+)*/)`", page)}
    assert named == set(packages())


def _python_files() -> list[Path]:
    roots = (*TOP_LEVEL, "tests", "tools", "benchmarks")
    return sorted(p for root in roots for p in (REPOSITORY / root).rglob("*.py") if "fixtures" not in p.parts)
