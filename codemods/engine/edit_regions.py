"""The parts of a file its edits fall in, so that libcst parses, positions and regenerates only those lines
(codemods/engine/apply.py) and finds there the nodes a parse of the whole file would give it.

A region is a run of sibling statements of a module, class or function body, with the blank and comment lines
after it up to the next line of code, parsed below `class _:` lines that put its first line at its own
indentation (columns are kept; lines shift by a known number). Its nodes then print as in the whole file, and
the whole file's default indent and newline (what libcst writes for new code) hold in the region too: the
headers are indented by that indent and end with that newline.

Only a statement's own `leading_lines` (the comments above it) and the footers of blocks that end where the
region ends depend on lines outside a run, so an edit must start below the first line of its run's first
statement (else the run takes in the statement before it, or the enclosing statement), and the region keeps the
comment lines after its run. Imports requested by fixes go to the module's first import block: its region runs
from the file's first line to the end of that block, which is all `apply.add_imports` reads. Where a file gives
no such guarantee (bare `\\r` line ends, form feeds, a region at an indentation that is not a multiple of the
default one, statements sharing a line), there is no plan and the whole file is parsed.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass, replace

from codemods.findings import NodeRef
from codemods.line_walk import first_line
from codemods.lines import split_lines
from codemods.node_index import BLOCK_FIELDS

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LIBCST_FALLBACK_INDENT = "    "  # libcst's default indent for a file with no indented block
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Region:
    first_line: int  # in the file, 1-based
    last_line: int  # inclusive
    header: str  # the `class _:` lines above the run ("" at the top level)
    imports: bool  # holds the module's first import block: requested imports go here

    def to_region(self, ref: NodeRef) -> NodeRef:
        shift = self.header.count("\n") - self.first_line + 1
        return replace(ref, line=ref.line + shift, end_line=ref.end_line + shift)

    def to_file(self, ref: NodeRef) -> NodeRef:
        shift = self.first_line - 1 - self.header.count("\n")
        return replace(ref, line=ref.line + shift, end_line=ref.end_line + shift)

    def holds(self, ref: NodeRef) -> bool:
        return self.first_line <= ref.line and ref.end_line <= self.last_line


@dataclass(frozen=True)
class RegionPlan:
    regions: list[Region]  # in file order, disjoint
    indent: str  # the whole file's `default_indent` and `default_newline`, as libcst finds them
    newline: str


@dataclass(frozen=True)
class _Run:
    """Statements `first`..`last` of one body (`block`), by index, and the line its region starts on."""

    block: list[ast.stmt]
    first: int
    last: int
    start: int
    imports: bool = False

    @property
    def last_line(self) -> int:
        return self.block[self.last].end_lineno or self.block[self.last].lineno


def plan_regions(text: str, targets: Iterable[NodeRef], imports: bool) -> RegionPlan | None:
    """Disjoint regions holding every target (and the import block if `imports`), or None: parse the whole file."""
    if "\f" in text or re.search(r"\r(?!\n)", text):
        return None
    indent = _libcst_default_indent(text)
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return None
    lines = split_lines(text, keepends=True)
    runs = [_run_holding(body, target, lines) for target in targets]
    if imports:
        runs.append(_import_run(body))
    merged = _merged(runs) if runs and None not in runs else None  # type: ignore[arg-type]
    if indent is None or merged is None:
        return None
    newline = match.group() if (match := _LINE_END.search(text)) else "\n"
    regions: list[Region] = []
    for run, following in zip(merged, [*merged[1:], None]):
        region = _region(run, lines, indent, newline, following.start if following else len(lines) + 1)
        if region is None:
            return None
        regions.append(region)
    return RegionPlan(regions, indent, newline)


def _libcst_default_indent(text: str) -> str | None:
    """What libcst takes for the file's indent: the first INDENT token's (four spaces if none)."""
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.INDENT:
                return token.string  # the first indent is from column 0: all of it is relative
    except (tokenize.TokenError, SyntaxError):
        return None
    return _LIBCST_FALLBACK_INDENT


def _run_holding(body: list[ast.stmt], target: NodeRef, lines: list[str]) -> _Run | None:
    """The innermost run of a module, class or function body that holds `target` below its first line."""
    candidates: list[tuple[list[ast.stmt], int]] = []  # (body, index) of the statements holding the target
    block: list[ast.stmt] | None = body
    scope = True
    while block is not None:
        index = next(
            (i for i, s in enumerate(block) if first_line(s) <= target.line and target.end_line <= (s.end_lineno or 0)),
            None,
        )
        if index is None:
            break
        statement = block[index]
        if scope:
            candidates.append((block, index))
        scope = isinstance(statement, _SCOPES)
        block = next((inner for inner in _blocks(statement) if _holds(inner, target)), None)
    for block, index in reversed(candidates):
        statement = block[index]
        if target.line > statement.lineno:
            return _Run(block, index, index, 1 if block is body and index == 0 else first_line(statement))
        if block is body and index == 0:  # from the file's first line on, the region's text is the file's
            return _Run(block, 0, 0, 1)
        if index > 0:  # the target may be the statement itself, which owns the comment lines above it
            return _with_lines_above(block, index, lines)
    return None


def _with_lines_above(block: list[ast.stmt], index: int, lines: list[str]) -> _Run:
    """The statement with the lines between it and the one before: its own in the whole file's parse when none is
    indented beyond it (the block of a compound statement before it takes the lines indented as deep as it is);
    else the statement before too."""
    start, first = (block[index - 1].end_lineno or 0) + 1, first_line(block[index])
    own = len(_indent_of(lines[first - 1]))
    if all(_is_blank_or_comment(line) and len(_indent_of(line)) <= own for line in lines[start - 1 : first - 1]):
        return _Run(block, index, index, start)
    return _Run(block, index - 1, index, first_line(block[index - 1]))


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _is_blank_or_comment(line: str) -> bool:
    return not line.strip() or line.lstrip().startswith("#")


def _blocks(statement: ast.stmt) -> list[list[ast.stmt]]:
    blocks = []
    for field in BLOCK_FIELDS[statement.__class__]:
        if field in ("handlers", "cases"):
            blocks += [part.body for part in getattr(statement, field)]
        else:
            blocks.append(getattr(statement, field))
    return blocks


def _holds(block: list[ast.stmt], target: NodeRef) -> bool:
    return bool(block) and first_line(block[0]) <= target.line and target.end_line <= (block[-1].end_lineno or 0)


def _import_run(body: list[ast.stmt]) -> _Run | None:
    """The module's statements up to the end of its first block of imports (past one of `__future__` only):
    no further than `apply.add_imports` reads, nor than where it inserts."""
    if not body:
        return None
    imports = [isinstance(s, (ast.Import, ast.ImportFrom)) for s in body]
    real = [imports[i] and not _future(s) for i, s in enumerate(body)]
    start = real.index(True) if any(real) else imports.index(True) if any(imports) else 0
    last = start
    while last + 1 < len(body) and imports[last + 1]:
        last += 1
    # `ast` and libcst must see the same statements: one line holding two (`x = 1; import y`) would not do.
    read = body[: last + 2]
    if any(first_line(after) <= (before.end_lineno or 0) for before, after in zip(read, read[1:])):
        return None
    return _Run(body, 0, last, 1, imports=True)


def _future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__" and not statement.level


def _merged(runs: list[_Run]) -> list[_Run] | None:
    """Runs of one body joined where they share or neighbour statements (a statement after the import block could
    become an import), runs inside another one dropped; None where two overlap otherwise."""
    merged: list[_Run] = []
    for run in sorted(runs, key=lambda r: (r.start, -r.last_line)):
        if merged:
            current = merged[-1]
            if run.block is current.block and run.first <= current.last + 1:
                merged[-1] = replace(current, last=max(current.last, run.last), imports=current.imports or run.imports)
                continue
            if run.start <= current.last_line:
                if run.last_line > current.last_line or run.imports:
                    return None
                continue
        merged.append(run)
    return merged


def _region(run: _Run, lines: list[str], indent: str, newline: str, following: int) -> Region | None:
    """The run's region: its lines, with the blank and comment lines after it up to `following` (the next region's
    first line), below the headers of its indentation; None where its lines are not whole statements."""
    first_statement = run.block[run.first]
    first_text = lines[first_line(first_statement) - 1]
    own_indent = _indent_of(first_text)
    decorated = bool(getattr(first_statement, "decorator_list", None))
    if (
        not first_text[len(own_indent) :].startswith("@")
        if decorated
        else first_statement.col_offset != len(own_indent)
    ):
        return None  # another statement before it on its line
    if run.last + 1 < len(run.block) and first_line(run.block[run.last + 1]) <= run.last_line:
        return None  # the next statement starts on the run's last line (after a `;`)
    depth = len(own_indent) // len(indent)
    if indent * depth != own_indent:
        return None
    last = run.last_line
    while last + 1 < following and _is_blank_or_comment(lines[last]):
        last += 1
    header = "".join(f"{indent * level}class _:{newline}" for level in range(depth))
    if not header and run.start != 1:
        # Lines above a module's first statement are the module's header, not the statement's own.
        header = f"pass{newline}"
    return Region(run.start, last, header, run.imports)
