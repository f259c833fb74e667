"""`if mask.any():` guards whose body changes nothing when the mask is all False: the test alone syncs.

A truth test of a device mask makes the host wait for the device. Where the guarded body is a
no-op on an empty mask, the test buys nothing and can go; the rule says so in its message (no
fix: dropping a branch changes the code's structure). Two shapes are proved:

- `block_x[:, -n:] = torch.where(mask, new, block_tokens)`, `block_tokens` being `block_x[:, -n:]`
  (the same expression, or a name bound to it by basic slicing earlier in the same block with
  nothing rebound since: a view of the same memory): with the mask all False it writes back what
  is there (LLaDA2's refinement loop). The same statement runs whenever the mask is not empty, so
  its shapes and dtypes already work without the test;
- `prev_sample[mask] = sampled_tokens[mask]`: a masked copy through an empty mask writes nothing
  (BlockRefinementScheduler.step); the copy's own mask read syncs too, and `torch.where(mask,
  sampled_tokens, prev_sample)` replaces both where the three tensors share the mask's shape.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.node_index import names_within, nodes_within
from codemods.source import SourceFile, dotted_name, same_expression

if TYPE_CHECKING:
    from codemods.analysis.placement.function_places import FunctionPlaces


def empty_mask_guard(source: SourceFile, branch: ast.AST, test: ast.AST, places: FunctionPlaces) -> str | None:
    """What to add to the report of `if <test>:` (`test` the whole test, `mask.any()`) when its body is a
    no-op on an empty mask; None for any other body."""
    segment = source.segment
    if not isinstance(branch, ast.If) or branch.test is not test or branch.orelse or len(branch.body) != 1:
        return None
    mask = _any_of(test)
    statement = branch.body[0]
    if mask is None or not isinstance(statement, ast.Assign) or len(statement.targets) != 1:
        return None
    target, value = statement.targets[0], statement.value
    shown = f"`{segment(mask)}`"
    if _is_where(value, mask) and _same_view(value.args[2], target, branch, places):  # type: ignore[attr-defined]
        return (
            f"; with {shown} all False the guarded `{segment(target)} = torch.where(...)` writes back what is "
            "there, so the test can simply go"
        )
    if _masked_copy(target, value, mask):
        source = segment(value.value)  # type: ignore[attr-defined]
        return (
            f"; the guarded masked copy writes nothing when {shown} is all False, and its mask read syncs as "
            f"well: `{segment(target.value)} = torch.where({segment(mask)}, {source}, "  # type: ignore[attr-defined]
            f"{segment(target.value)})` makes the copy without either sync, for tensors of the mask's shape"  # type: ignore[attr-defined]
        )
    return None


def _any_of(test: ast.expr) -> ast.expr | None:
    """`mask` of `mask.any()` or `torch.any(mask)`."""
    if not isinstance(test, ast.Call) or test.keywords:
        return None
    if isinstance(test.func, ast.Attribute) and test.func.attr == "any" and not test.args:
        return test.func.value
    if dotted_name(test.func) == "torch.any" and len(test.args) == 1:
        return test.args[0]
    return None


def _is_where(value: ast.expr, mask: ast.expr) -> bool:
    return (
        isinstance(value, ast.Call)
        and dotted_name(value.func) == "torch.where"
        and len(value.args) == 3
        and not value.keywords
        and same_expression(value.args[0], mask)
    )


def _masked_copy(target: ast.expr, value: ast.expr, mask: ast.expr) -> bool:
    return (
        isinstance(target, ast.Subscript)
        and isinstance(value, ast.Subscript)
        and same_expression(target.slice, mask)
        and same_expression(value.slice, mask)
    )


def _same_view(kept: ast.expr, target: ast.expr, branch: ast.If, places: FunctionPlaces) -> bool:
    """Whether `kept` (what `torch.where` keeps where the mask is False) holds what `target` does."""
    if same_expression(kept, target):
        return True
    if not isinstance(kept, ast.Name) or not _basic_slice(target):
        return False
    bindings = places.bindings.reaching(kept.id, kept)
    if len(bindings) != 1 or bindings[0].kind != "value" or not same_expression(bindings[0].value, target):
        return False
    made = bindings[0].owner
    block = _block_holding(places.function, made, branch)
    if block is None:
        return False
    between = block[_index(block, made) + 1 : _index(block, branch)]
    names = {n.id for n in nodes_within(target, ast.Name)} | {kept.id}
    return not any(_binds(between, name) for name in names)


def _basic_slice(node: ast.expr) -> bool:
    """`x[:, -n:]`: slices only, so the result is a view of `x`."""
    if not isinstance(node, ast.Subscript):
        return False
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return bool(parts) and all(isinstance(part, ast.Slice) for part in parts)


def _block_holding(function: ast.AST, first: ast.AST, second: ast.AST) -> list[ast.stmt] | None:
    """The statement list holding both statements, `first` before `second`."""
    for node in nodes_within(function, ast.stmt | ast.excepthandler | ast.match_case):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(s is first for s in block) and any(s is second for s in block):
                return block if _index(block, first) < _index(block, second) else None
    return None


def _index(block: list[ast.stmt], statement: ast.AST) -> int:
    return next(i for i, s in enumerate(block) if s is statement)


def _binds(statements: list[ast.stmt], name: str) -> bool:
    for statement in statements:
        if any(isinstance(node.ctx, ast.Store | ast.Del) for node in names_within(statement, name)):
            return True
        scopes = nodes_within(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        if any(node.name == name for node in scopes):
            return True
    return False

