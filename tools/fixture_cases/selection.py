"""What a case takes from a diffusers module: line ranges, named definitions, the imports.

A `take` item is one of
- `"120-164"` or `"120"`: those lines (1-based, inclusive) of the module as released;
- `"imports"`: every top-level `import` / `from ... import` statement;
- `"Name"`: a top-level class, function or assignment; `"Class.name"`: a method or class attribute,
  with the lines of its class header (`class X(...):`) so that the result still parses.
A definition comes with its decorators, the comment lines right above it (`# Copied from ...`) and
the blank lines above those, so that taken definitions are laid out as in the module.
The lines taken are the union of the items, in the module's order.
"""

from __future__ import annotations

import ast
import re

LINE_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef, ast.Assign, ast.AnnAssign)


class SelectionError(Exception):
    """A `take` item that names nothing in the module."""


def selected_lines(text: str, take: list[str] | None, where: str) -> list[int]:
    """0-based indices of the lines `take` names in `text` (every line when `take` is None)."""
    lines = text.splitlines()
    if take is None:
        return list(range(len(lines)))
    tree = ast.parse(text) if any(not LINE_RANGE.match(item) for item in take) else None
    chosen: set[int] = set()
    for item in take:
        chosen |= _item_lines(item, lines, tree, where)
    return sorted(chosen)


def _item_lines(item: str, lines: list[str], tree: ast.Module | None, where: str) -> set[int]:
    span = LINE_RANGE.match(item)
    if span:
        first, last = int(span[1]), int(span[2] or span[1])
        if not 1 <= first <= last <= len(lines):
            raise SelectionError(f"{where}: lines {item} are not within the module's {len(lines)} lines")
        return set(range(first - 1, last))
    assert tree is not None
    if item == "imports":
        return _imports(tree, lines)
    owner_name, _, member_name = item.partition(".")
    owner = _named(tree.body, owner_name)
    if owner is None:
        raise SelectionError(f"{where}: no top-level definition named {owner_name!r}")
    if not member_name:
        return _with_surroundings(owner, lines)
    member = _named(owner.body, member_name) if isinstance(owner, ast.ClassDef) else None
    if member is None:
        raise SelectionError(f"{where}: {owner_name!r} has no member named {member_name!r}")
    return _class_header(owner, lines) | _with_surroundings(member, lines)


def _imports(tree: ast.Module, lines: list[str]) -> set[int]:
    """The top-level import statements, with the blank lines that separate their groups."""
    taken = {i for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)) for i in _span(node)}
    for line in range(min(taken, default=0), max(taken, default=0)):
        if not lines[line].strip():
            below = next(i for i in range(line, len(lines)) if lines[i].strip())
            above = next(i for i in range(line, -1, -1) if lines[i].strip())
            if above in taken and below in taken:
                taken.add(line)
    return taken


def named_lines(text: str) -> dict[str, set[int]]:
    """Every name `take` accepts for this module ("imports", definitions, `Class.member`s) -> its lines."""
    tree, lines = ast.parse(text), text.splitlines()
    found = {"imports": _item_lines("imports", lines, tree, "")}
    for node in tree.body:
        name = _name_of(node)
        if name:
            found[name] = _item_lines(name, lines, tree, "")
            for member in node.body if isinstance(node, ast.ClassDef) else ():
                if _name_of(member):
                    found[f"{name}.{_name_of(member)}"] = _item_lines(f"{name}.{_name_of(member)}", lines, tree, "")
    return found


def _name_of(node: ast.stmt) -> str | None:
    if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
        return node.name
    targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
    if len(targets) == 1 and isinstance(targets[0], ast.Name):
        return targets[0].id
    return None


def _named(body: list[ast.stmt], name: str) -> ast.stmt | None:
    # The last binding wins, as at run time (a name redefined under a fallback is the later one).
    matches = [node for node in body if isinstance(node, DEFINITIONS) and _name_of(node) == name]
    return matches[-1] if matches else None


def _span(node: ast.stmt) -> range:
    decorators = getattr(node, "decorator_list", [])
    first = min([node.lineno, *(d.lineno for d in decorators)])
    return range(first - 1, node.end_lineno)


def _with_surroundings(node: ast.stmt, lines: list[str]) -> set[int]:
    span = _span(node)
    first = span.start
    while first > 0 and lines[first - 1].lstrip().startswith("#"):
        first -= 1
    while first > 0 and not lines[first - 1].strip():
        first -= 1
    return set(range(first, span.stop))


def _class_header(node: ast.ClassDef, lines: list[str]) -> set[int]:
    """The class's surroundings and `class X(...):` lines, up to (not into) its first statement."""
    surroundings = _with_surroundings(node, lines) - set(range(node.lineno - 1, node.end_lineno))
    last = max([node.lineno, *(base.end_lineno for base in [*node.bases, *node.keywords])]) - 1
    while not lines[last].split("#")[0].rstrip().endswith(":"):  # `):` may sit below the last base
        last += 1
    return surroundings | set(range(node.lineno - 1, last + 1))


def line_owners(text: str) -> list[str]:
    """For each line (0-based), the innermost `take` name whose definition holds it: "imports", a
    definition's name, or "module" for lines outside them all."""
    owners = ["module"] * len(text.splitlines())
    for node in ast.parse(text).body:
        name = "imports" if isinstance(node, (ast.Import, ast.ImportFrom)) else _name_of(node)
        for line in _span(node) if name else ():
            owners[line] = name
        for member in node.body if isinstance(node, ast.ClassDef) else ():
            for line in _span(member) if _name_of(member) else ():
                owners[line] = f"{name}.{_name_of(member)}"
    return owners
