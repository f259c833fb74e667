"""One Python file as the rules see it: text, stdlib `ast` tree, positions, suppressions.

Detection uses stdlib `ast` (10x faster to parse than libcst); libcst is paid for only
in files that get a fix (see `codemods.engine.apply`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from codemods.findings import NodeRef
from codemods.line_walk import DECORATED, children_on_lines, nodes_below, signature_on_lines
from codemods.lines import LineIndex, split_lines
from codemods.node_index import BLOCK_FIELDS, CHILD_FIELDS, Kind, NodeIndex, index_when_asked
from codemods.triggers import AnyOf, Trigger

_SUPPRESSION = re.compile(r"#\s*codemod:\s*ignore\[([A-Za-z0-9_,\s]+)\]")

Ancestors = tuple[ast.AST, ...]

_COMPOUND_STATEMENTS = (
    ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try, ast.TryStar, ast.Match,
    ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
)  # fmt: skip


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int


class SourceFile:
    """A file's text and its parsed tree; `module` is its dotted name inside its package ("" if none)."""

    def __init__(self, path: str, text: str, module: str = "") -> None:
        self.path = path
        self.text = text
        self.module = module
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, compute: Callable[[], Any]) -> Any:
        """An analysis of this file computed once, however many rules ask for it."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def release(self) -> None:
        """Drop the memoized analyses. They point back at this file, a cycle that only the garbage
        collector could free, and the scan workers run with it off."""
        self._memo.clear()

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    @cached_property
    def tree(self) -> ast.Module:
        tree = ast.parse(self.text, filename=self.path)
        index_when_asked(self)  # then every node of it leads to this file's index
        return tree

    @cached_property
    def index(self) -> NodeIndex:
        """Every node of `tree` by kind and subtree (what `nodes_within` answers for any node of it)."""
        return NodeIndex(self.tree)

    @cached_property
    def package(self) -> str:
        """The dotted package this module lives in (for resolving relative imports)."""
        return self.module.rsplit(".", 1)[0] if "." in self.module else self.module

    def char_column(self, line: int, byte_column: int) -> int:
        """`ast` columns count UTF-8 bytes, libcst's count characters."""
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        if text.isascii():
            return byte_column
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="ignore"))

    def span(self, node: ast.AST) -> Span:
        return Span(
            node.lineno,
            self.char_column(node.lineno, node.col_offset),
            node.end_lineno or node.lineno,
            self.char_column(node.end_lineno or node.lineno, node.end_col_offset or 0),
        )

    def ref(self, node: ast.AST, kind: str) -> NodeRef:
        """Where libcst will find `node` (as a node of class `kind`)."""
        span = self.span(node)
        return NodeRef(kind, span.line, span.column, span.end_line, span.end_column)

    def statement_ref(self, statement: ast.stmt) -> NodeRef:
        """Where libcst will find a whole statement: a compound one (`if`, `for`, `with`...) by its class,
        a simple one as the `SimpleStatementLine` holding it (alone on its line, or nothing matches)."""
        simple = not isinstance(statement, _COMPOUND_STATEMENTS)
        return self.ref(statement, "SimpleStatementLine" if simple else type(statement).__name__)

    def segment(self, node: ast.AST) -> str:
        """The source text of `node` (`ast.get_source_segment` without re-splitting the file each call)."""
        end_line, end_column = getattr(node, "end_lineno", None), getattr(node, "end_col_offset", None)
        if getattr(node, "lineno", None) is None or end_line is None or end_column is None:
            return ""
        return self.text[self.offset(node.lineno, node.col_offset) : self.offset(end_line, end_column)]

    def offset(self, line: int, byte_column: int) -> int:
        """Character offset in `text` of an `ast` position."""
        return self.line_index.start_of(line) + self.char_column(line, byte_column)

    def text_between(self, inner: ast.AST, outer: ast.AST) -> str:
        """What follows `inner` up to the end of `outer` (e.g. a trailing comma and the closing paren)."""
        start = self.offset(inner.end_lineno or inner.lineno, inner.end_col_offset or 0)
        return self.text[start : self.offset(outer.end_lineno or outer.lineno, outer.end_col_offset or 0)]

    def suppressed(self, code: str, *lines: int) -> bool:
        """`# codemod: ignore[DIF004] reason` on any of `lines` silences DIF004 there."""
        for line in lines:
            if not 0 < line <= len(self.lines):
                continue
            match = _SUPPRESSION.search(self.lines[line - 1])
            if match and any(code.startswith(c.strip()) for c in match.group(1).split(",") if c.strip()):
                return True
        return False

    @cached_property
    def line_index(self) -> LineIndex:
        return LineIndex(self.text)

    @cached_property
    def classes(self) -> list[ast.ClassDef]:
        """Every class of the module, nested ones too (found by walking statements only)."""
        return [s for s in statements(self.tree.body, into_scopes=True) if isinstance(s, ast.ClassDef)]

    def lines_matching(
        self, pattern: re.Pattern[str] | Trigger | AnyOf, within: Iterable[tuple[int, int]] | None = None
    ) -> list[int]:
        """1-based numbers of the lines where `pattern` occurs (the cheap first pass of a rule).

        `within`: (first, last) line ranges to search, e.g. the hot code; the rest is not even scanned.
        """
        if within is None:
            return sorted({self.line_index.line_of(match.start()) for match in pattern.finditer(self.text)})
        found: set[int] = set()
        for first, last in _merged(within):
            start = self.line_index.start_of(first)
            end = self.line_index.start_of(last + 1)  # the end of the text past its last line
            found.update(self.line_index.line_of(m.start()) for m in pattern.finditer(self.text, start, end))
        return sorted(found)

    def walk_lines(
        self, lines: Iterable[int], root: ast.AST | None = None, kinds: Kind[ast.AST] | None = None
    ) -> Iterator[tuple[ast.AST, Ancestors]]:
        """Every node whose line range holds one of `lines`, with its ancestors, skipping the rest of the tree.
        In preorder, from a stack: nested generators would pass each node up through every enclosing one.
        `kinds`: only the nodes of these kinds are yielded; those below a node on one line come from the index."""
        wanted = sorted(set(lines))
        stack: list[tuple[ast.AST, Ancestors]] = [(root or self.tree, ())] if wanted else []
        while stack:
            node, ancestors = stack.pop()
            if kinds is None or isinstance(node, kinds):
                yield node, ancestors
            line = getattr(node, "lineno", None)
            if line is None and node.__class__ is ast.arguments and not signature_on_lines(ancestors[-1], wanted):
                continue  # a function's parameters (no position of their own), none on a wanted line
            # Below the root, a node on one line is on a wanted one, and so is all it holds (but for a function's or a
            # class's decorators: those are always walked line by line).
            if not ancestors or line is None or node.end_lineno != line or node.__class__ in DECORATED:
                children = children_on_lines(node, wanted)
            elif kinds is None:
                children = child_nodes(node)
            else:
                yield from nodes_below(self.index, node, ancestors, kinds)
                continue
            if children:
                inner = (*ancestors, node)
                stack += [(child, inner) for child in reversed(children)]


def _merged(ranges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or nested line ranges joined, so no text is searched twice."""
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def child_nodes(node: ast.AST) -> list[ast.AST]:
    """`ast.iter_child_nodes` without a generator frame per node, nor the contexts and operators `ast.parse`
    shares between trees (`Load()`, `Add()`): the inner loop of every walk here."""
    children: list[ast.AST] = []
    for name in CHILD_FIELDS[node.__class__]:
        value = getattr(node, name, None)
        if value.__class__ is list:
            children += [item for item in value if isinstance(item, ast.AST)]
        elif isinstance(value, ast.AST):
            children.append(value)
    return children


def walk(node: ast.AST) -> Iterator[ast.AST]:
    """`ast.walk` (in another order), with a list instead of a deque of generators: about twice as fast."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack += child_nodes(current)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def statements(body: Iterable[ast.stmt], into_scopes: bool = False) -> Iterator[ast.stmt]:
    """Every statement in `body`, nested blocks included; nested functions and classes only with `into_scopes`.

    Statements are about a tenth of a tree's nodes: walking only them is what keeps facts cheap.
    """
    pending = list(body)
    pending.reverse()
    while pending:  # a stack, not nested generators: each yield would pass through every enclosing one
        statement = pending.pop()
        yield statement
        fields = BLOCK_FIELDS[statement.__class__]
        if not fields or not into_scopes and isinstance(statement, _SCOPES):
            continue
        inner: list[ast.stmt] = []
        for field in fields:
            if field in ("handlers", "cases"):  # `except` handlers and `case`s hold statements, are none
                for part in getattr(statement, field, ()):
                    inner += part.body
            else:
                inner += getattr(statement, field, ())
        inner.reverse()
        pending += inner


def enclosing(ancestors: Ancestors, kind: type[ast.AST] | tuple[type[ast.AST], ...]) -> ast.AST | None:
    """The innermost ancestor of the given kind."""
    for node in reversed(ancestors):
        if isinstance(node, kind):
            return node
    return None


def dotted_name(node: ast.AST) -> str | None:
    """`self.vae.decode` for the expression `self.vae.decode`; None for anything that is not a plain name chain."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def same_expression(first: ast.AST, second: ast.AST) -> bool:
    """The same expression, read or stored. Not `ast.dump`: it tells the contexts apart, and its recursive
    closure leaves a reference cycle per call, which the scan workers (gc off) would keep."""
    return ast.unparse(first) == ast.unparse(second)


def self_attribute(node: ast.AST) -> str | None:
    """`unet` for the expression `self.unet`; None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def local_or_self_name(node: ast.AST) -> str | None:
    """`x` -> "x", `self.x` -> "self.x", anything else None: the names a binding is tracked by."""
    if isinstance(node, ast.Name):
        return node.id
    attribute = self_attribute(node)
    return None if attribute is None else f"self.{attribute}"


def call_argument(call: ast.Call, keyword: str, position: int | None) -> ast.expr | None:
    """The argument given as `keyword=`, else the one at `position` (None: keyword only, or after a `*args`)."""
    for item in call.keywords:
        if item.arg == keyword:
            return item.value
    if position is not None and len(call.args) > position and not any(isinstance(a, ast.Starred) for a in call.args):
        return call.args[position]
    return None


def shortened(text: str, width: int = 60) -> str:
    """`text` on one line, cut to `width` characters with "...": for quoting code in a message."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."
