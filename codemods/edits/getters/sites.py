"""The statements around DIF001's `.to(device)` sites: which can be rewritten as a pair, which hoisted.

`codemods.edits.getters.plan` plans the rewrite; this module answers its questions about one site's
statement: is it `a = self.A.to(d) if d is not None else self.A`, do such statements follow each
other on lines of their own, and can a getter call go on the line before.
"""

from __future__ import annotations

import ast
import itertools

from codemods.analysis.values.device_moves import Site
from codemods.source import Ancestors, SourceFile, dotted_name

_NOT_HOISTABLE = (
    ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr,
    ast.Await, ast.Yield, ast.YieldFrom,
)  # fmt: skip
_SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


def ternary_move(site: Site) -> ast.Assign | None:
    """The statement when the site is `name = self.A.to(d) if d is not None else self.A`."""
    if len(site.ancestors) < 2:
        return None
    ternary, statement = site.ancestors[-1], site.ancestors[-2]
    if not (isinstance(ternary, ast.IfExp) and ternary.body is site.call and isinstance(statement, ast.Assign)):
        return None
    if statement.value is not ternary or len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
        return None
    device, test = site.move.device, ternary.test
    if not (
        isinstance(device, ast.Name)
        and isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == device.id
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    ):
        return None
    if dotted_name(ternary.orelse) != f"self.{site.attribute}":
        return None
    return statement


def consecutive_run(
    source: SourceFile, statement: ast.stmt, candidates: dict[int, Site], length: int
) -> list[tuple[Site, ast.Assign]] | None:
    """`length` candidate statements in a row, on consecutive lines with nothing else on them, starting at `statement`."""
    body = enclosing_body(candidates[id(statement)].ancestors, statement)
    if body is None:
        return None
    start = next(i for i, s in enumerate(body) if s is statement)
    run = body[start : start + length]
    if len(run) != length or any(id(s) not in candidates for s in run):
        return None
    for previous, current in itertools.pairwise(run):
        if current.lineno != previous.end_lineno + 1:
            return None
    if any("#" in source.lines[s.end_lineno - 1][s.end_col_offset :] for s in run) or not alone(source, run[0], body):
        return None
    if any(not alone(source, s, body) for s in run):
        return None
    return [(candidates[id(s)], s) for s in run]


def enclosing_body(ancestors: Ancestors, statement: ast.stmt) -> list[ast.stmt] | None:
    position = next((i for i, n in enumerate(ancestors) if n is statement), len(ancestors))
    parent = ancestors[position - 1] if position > 0 else None
    for field in ("body", "orelse", "finalbody"):
        block = getattr(parent, field, None)
        if isinstance(block, list) and any(s is statement for s in block):
            return block
    for handler in getattr(parent, "handlers", ()):
        if any(s is statement for s in handler.body):
            return handler.body
    return None


def alone(source: SourceFile, statement: ast.stmt, body: list[ast.stmt]) -> bool:
    """On lines of its own: not after a `:` on its block's header line, no `;` neighbour."""
    line = source.lines[statement.lineno - 1]
    if line[: len(line) - len(line.lstrip())] != line[: source.span(statement).column]:
        return False
    return all(
        other is statement or not (other.lineno <= statement.end_lineno and other.end_lineno >= statement.lineno)
        for other in body
    )


def hoistable_statement(source: SourceFile, site: Site, taken: set[str], local: str) -> ast.stmt | None:
    """The simple statement a getter call can go before, evaluated unconditionally where the site was."""
    if local in taken:
        return None
    if not isinstance(site.move.device, ast.Name | ast.Attribute) or dotted_name(site.move.device) is None:
        return None
    statement_at = max(i for i, n in enumerate(site.ancestors) if isinstance(n, ast.stmt))
    statement = site.ancestors[statement_at]
    if not isinstance(statement, _SIMPLE_STATEMENTS):
        return None
    if any(isinstance(n, _NOT_HOISTABLE) for n in site.ancestors[statement_at:]):
        return None
    body = enclosing_body(site.ancestors, statement)
    return statement if body is not None and alone(source, statement, body) else None
