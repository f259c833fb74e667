"""Adding a class attribute (`_repeated_blocks = [...]`) where the maintainers put it: the libcst edit DIF003's
fixes are made of, and where in the class it goes.

A mixin of the rule, so that the engine finds `edit_add_class_attribute` on the rule as for every other rule.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codemods.analysis.models.block_stacks import REPEATED_BLOCKS
from codemods.findings import Edit, NodeRef
from codemods.lazy import libcst as cst
from codemods.project.index import TreeInfo
from codemods.source import SourceFile

if TYPE_CHECKING:
    import libcst

_AFTER = "_no_split_modules"


class ClassAttributeEdits:
    def edit_add_class_attribute(
        self, node: libcst.ClassDef, text: str, after: str | None, before: str, blank_before: bool
    ) -> libcst.ClassDef:
        body = list(node.body.body)
        if after is not None:
            position = 1 + next(i for i, s in enumerate(body) if _assigns(s, after))
        else:
            position = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == before)
        statement = cst.parse_statement(text)
        if blank_before:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        following = body[position] if position < len(body) else None
        if isinstance(following, cst.FunctionDef) and not any(
            line.comment is None for line in following.leading_lines[:1]
        ):
            # A method right after the new attribute needs its blank line (ruff format puts one there).
            body[position] = following.with_changes(
                leading_lines=[cst.EmptyLine(indent=False), *following.leading_lines]
            )
        body.insert(position, statement)
        return node.with_changes(body=node.body.with_changes(body=body))


@dataclass(frozen=True)
class ClassAttributePlacement:
    """Where the new attribute goes in the class, and how wide it may be written."""

    target: NodeRef
    indent: int
    line_length: int
    after: str | None  # the attribute it follows, else it goes before `before`
    before: str
    blank_before: bool

    @classmethod
    def of(cls, source: SourceFile, tree: TreeInfo, node: ast.ClassDef) -> ClassAttributePlacement:
        """In a class with an `__init__` (the only ones the graph describes)."""
        init = next(i for i, s in enumerate(node.body) if isinstance(s, ast.FunctionDef) and s.name == "__init__")
        indent = node.body[0].col_offset if node.body else node.col_offset + 4
        target = source.ref(node, "ClassDef")
        if any(isinstance(s, ast.Assign | ast.AnnAssign) and _target_is(s, _AFTER) for s in node.body):
            return cls(target, indent, tree.line_length, _AFTER, "__init__", False)
        previous = node.body[init - 1] if init > 0 else None
        after_docstring = isinstance(previous, ast.Expr) and isinstance(previous.value, ast.Constant)
        return cls(target, indent, tree.line_length, None, "__init__", after_docstring)

    def edit(self, blocks: tuple[str, ...]) -> tuple[str, Edit]:
        quoted = [f'"{b}"' for b in blocks]
        text = f"{REPEATED_BLOCKS} = [{', '.join(quoted)}]\n"
        if self.indent + len(text) - 1 > self.line_length:
            text = f"{REPEATED_BLOCKS} = [\n" + "".join(f"    {q},\n" for q in quoted) + "]\n"
        params = (("text", text), ("after", self.after), ("before", self.before), ("blank_before", self.blank_before))
        edit = Edit(self.target, "add_class_attribute", params, inserts=True)
        return f"add `{REPEATED_BLOCKS} = [{', '.join(quoted)}]`", edit


def _target_is(statement: ast.Assign | ast.AnnAssign, name: str) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _assigns(statement: libcst.CSTNode, name: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
        ):
            return True
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == name:
            return True
    return False
