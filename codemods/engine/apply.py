"""Apply planned fixes to one file with libcst: every edit in one pass, imports once, formatting kept.

Imported only when a file gets a fix: detection never pays for libcst.
"""

from __future__ import annotations

import bisect
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from codemods.engine.edit_regions import RegionPlan, plan_regions
from codemods.findings import Edit, Fix, ImportRequest, NodeRef
from codemods.lines import split_lines

if TYPE_CHECKING:
    from codemods.rules.base import Rule


class EditNotApplied(Exception):
    """An edit found no node where the rule said it would be: the file is left as it was."""


def apply_fixes(text: str, fixes: Sequence[tuple[Rule, Fix]]) -> str:
    edits: dict[NodeRef, list[tuple[Rule, Edit]]] = {}
    for rule, fix in fixes:
        for edit in fix.edits:
            # Findings that share one fix (every site of a class rewritten together) carry the same edits: once each.
            if (rule, edit) not in edits.setdefault(edit.target, []):
                edits[edit.target].append((rule, edit))
    requests = list(dict.fromkeys(request for _, fix in fixes for request in fix.imports))
    # Parsing, positioning and printing a whole file with libcst cost ten times what the lines holding the edits do.
    plan = None if any(ref.kind == "Module" for ref in edits) else plan_regions(text, edits, bool(requests))
    if plan is not None and (code := _apply_in_regions(text, plan, edits, requests)) is not None:
        return code
    module, pending = _transformed(cst.parse_module(text), edits)
    if pending:
        raise _not_applied(pending)
    code = add_imports(module, requests).code
    # libcst drops the last line ending of a file whose lines end in a bare "\r" (old Mac style).
    if text.endswith("\r") and not code.endswith(("\r", "\n")):
        code += "\r"
    return code


def _apply_in_regions(
    text: str, plan: RegionPlan, edits: dict[NodeRef, list[tuple[Rule, Edit]]], requests: list[ImportRequest]
) -> str | None:
    """The file with each region parsed, edited and printed alone; None where a region's parse would not give
    the nodes (and defaults) of the whole file's, which is then parsed instead."""
    lines = split_lines(text, keepends=True)
    if sum(region.holds(ref) for region in plan.regions for ref in edits) != len(edits):
        return None
    modules, pending = [], []
    for region in plan.regions:
        try:
            module = cst.parse_module(region.header + "".join(lines[region.first_line - 1 : region.last_line]))
        except cst.ParserSyntaxError:
            return None
        if (module.default_indent, module.default_newline) != (plan.indent, plan.newline):
            return None
        module, missing = _transformed(module, {region.to_region(r): e for r, e in edits.items() if region.holds(r)})
        modules.append(module)
        pending += [region.to_file(ref) for ref in missing]
    if pending:
        raise _not_applied(pending)
    pieces, line = [], 1
    for region, module in zip(plan.regions, modules):
        code = (add_imports(module, requests) if region.imports else module).code
        if not code.startswith(region.header):
            return None
        pieces += [*lines[line - 1 : region.first_line - 1], code[len(region.header) :]]
        line = region.last_line + 1
    return "".join([*pieces, *lines[line - 1 :]])


def _transformed(
    module: cst.Module, edits: dict[NodeRef, list[tuple[Rule, Edit]]]
) -> tuple[cst.Module, Iterable[NodeRef]]:
    """`module` with `edits` applied, and the targets no node matched."""
    applier = _EditApplier(_positions(module), edits)
    return module.visit(applier), applier.pending


def _positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Each node's position in `module`. The provider is run through the hooks libcst documents for writing one:
    `MetadataWrapper.resolve` would walk the whole tree once more for the batchable providers asked for with it
    (none), which cost two thirds of what the positions do. A libcst without those hooks gets the wrapper."""
    provider = PositionProvider()
    try:
        provider._gen_impl(module)
        return provider._computed
    except AttributeError:
        return MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def _not_applied(pending: Iterable[NodeRef]) -> EditNotApplied:
    missing = ", ".join(f"{ref.kind} at {ref.line}:{ref.column + 1}" for ref in sorted(pending))
    return EditNotApplied(f"no node for edit(s): {missing}")


class _EditApplier(cst.CSTTransformer):
    def __init__(
        self, positions: Mapping[cst.CSTNode, CodeRange], edits: dict[NodeRef, list[tuple[Rule, Edit]]]
    ) -> None:
        super().__init__()
        self._positions = positions
        self._edits = edits
        self._first_lines = sorted(ref.line for ref in edits)
        self.pending = set(edits)

    def on_visit(self, node: cst.CSTNode) -> bool:
        # Descend only where an edit starts: most of a file is untouched, and visiting it cost as much
        # as parsing it.
        position = self._positions.get(node)
        if position is None:
            return True
        first = bisect.bisect_left(self._first_lines, position.start.line)
        return first < len(self._first_lines) and self._first_lines[first] <= position.end.line

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> cst.CSTNode:
        position = self._positions.get(original_node)
        if position is None:
            return updated_node
        start, end = position.start, position.end
        ref = NodeRef(type(original_node).__name__, start.line, start.column, end.line, end.column)
        for rule, edit in self._edits.get(ref, ()):
            updated_node = rule.apply(edit, updated_node)
        self.pending.discard(ref)
        return updated_node


def add_imports(module: cst.Module, requests: Iterable[ImportRequest]) -> cst.Module:
    for request in requests:
        module = _add_import(module, request)
    return module


def _add_import(module: cst.Module, request: ImportRequest) -> cst.Module:
    if not request.module:
        return _add_plain_import(module, request.name)
    body = list(module.body)
    last_import = None
    insert_after = None
    for position, statement in enumerate(body):
        imports = _imports_in(statement)
        if imports is None:
            if last_import is not None:
                break
            continue
        last_import = position
        for node in imports:
            if isinstance(node, cst.ImportFrom) and _module_text(node) == request.module:
                if not isinstance(node.names, cst.ImportStar) and request.name in _names(node):
                    return module
                if not isinstance(node.names, cst.ImportStar):
                    body[position] = statement.with_changes(body=[_with_name(node, request.name)])
                    return module.with_changes(body=body)
            if isinstance(node, cst.ImportFrom) and _sort_key(_module_text(node)) <= _sort_key(request.module):
                insert_after = position
    new = cst.parse_statement(f"from {request.module} import {request.name}\n")
    at = (insert_after if insert_after is not None else last_import if last_import is not None else -1) + 1
    body.insert(at, new)
    return module.with_changes(body=body)


def _add_plain_import(module: cst.Module, name: str) -> cst.Module:
    """`import name` (a standard-library module) in the file's first import block, as isort orders it."""
    body = list(module.body)
    first = None
    for position, statement in enumerate(body):
        imports = _imports_in(statement)
        if imports is None:
            if first is not None:
                break
            continue
        for node in imports:
            if isinstance(node, cst.Import) and any(a.evaluated_name == name and a.asname is None for a in node.names):
                return module
        if all(isinstance(n, cst.ImportFrom) and _module_text(n) == "__future__" for n in imports):
            continue
        if first is None:
            first = position
    new = cst.parse_statement(f"import {name}\n")
    if first is None:
        return module.with_changes(body=[new, *body])
    block_end = first
    while (
        block_end + 1 < len(body)
        and _imports_in(body[block_end + 1]) is not None
        and not body[block_end + 1].leading_lines
    ):
        block_end += 1
    block = body[first : block_end + 1]
    if not all(_top_module(n) in sys.stdlib_module_names for s in block for n in _imports_in(s)):
        # The first block is not the standard library's: a block of its own goes above it.
        body.insert(first, new.with_changes(leading_lines=block[0].leading_lines))
        body[first + 1] = block[0].with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        return module.with_changes(body=body)
    at = first
    for position in range(first, block_end + 1):
        node = _imports_in(body[position])[0]
        if isinstance(node, cst.Import) and _top_module(node) < name:
            at = position + 1
    if at == first:
        new = new.with_changes(leading_lines=body[first].leading_lines)
        body[first] = body[first].with_changes(leading_lines=[])
    body.insert(at, new)
    return module.with_changes(body=body)


def _top_module(node: cst.Import | cst.ImportFrom) -> str:
    if isinstance(node, cst.ImportFrom):
        return "" if node.relative else _module_text(node).split(".")[0]
    return node.names[0].evaluated_name.split(".")[0]


def _imports_in(statement: cst.CSTNode) -> list[cst.CSTNode] | None:
    if isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    ):
        return list(statement.body)
    return None


def _module_text(node: cst.ImportFrom) -> str:
    dots = "".join("." for _ in node.relative)
    name = cst.Module(body=[]).code_for_node(node.module) if node.module is not None else ""
    return dots + name


def _sort_key(module: str) -> tuple[int, str]:
    # isort (ruff) puts absolute imports first, then relative ones from the furthest (`...`) to the nearest (`.`).
    dots = len(module) - len(module.lstrip("."))
    return (0 if dots == 0 else 100 - dots, module.lstrip("."))


def _names(node: cst.ImportFrom) -> list[str]:
    return [alias.evaluated_alias or alias.evaluated_name for alias in node.names]


def _with_name(node: cst.ImportFrom, name: str) -> cst.ImportFrom:
    aliases = list(node.names)
    names = [alias.evaluated_name for alias in aliases]
    position = len(aliases)
    if names == sorted(names):
        position = next((i for i, existing in enumerate(names) if existing > name), len(aliases))
    new_alias = cst.ImportAlias(name=cst.Name(name))
    if position == len(aliases):
        last = aliases[-1]
        aliases[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        aliases.append(new_alias.with_changes(comma=last.comma))
    else:
        aliases.insert(position, new_alias.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))))
    return node.with_changes(names=aliases)
