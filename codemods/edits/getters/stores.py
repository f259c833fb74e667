"""DIF001's rewrite of a constant table that a method moves and stores back on the module.

    if self.pos_freqs.device != device:        # or the store alone, unguarded
        self.pos_freqs = self.pos_freqs.to(device)
        self.neg_freqs = self.neg_freqs.to(device)
    ...
    txt_freqs = self.pos_freqs[a:b, ...]

becomes, with the getter `codemods.edits.getters.plan` adds (diffusers #13406's idiom; #10959 and #12061
removed such stores by hand):

    # Use cached device-transferred freqs instead of storing them back on the module
    pos_freqs_device, _ = self._get_device_freqs(device)
    ...
    txt_freqs = pos_freqs_device[a:b, ...]

It is planned only when nothing else relied on the store: every later read of the attribute is in
the same method, after the store, with the device expression unchanged in between; other methods
only move it with `.to(device)` (sites the getter replaces too). A read anywhere else (QwenImage's
`_compute_video_freqs` before diffusers 0.37 read `self.pos_freqs` expecting the stored copy) keeps
the store, and the finding says where.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from codemods.analysis.values.device_moves import Site, device_move
from codemods.findings import Edit
from codemods.node_index import nodes_within
from codemods.source import SourceFile, dotted_name, self_attribute


@dataclass(frozen=True)
class StoreUnit:
    """The statement that stores moved tables back: one `self.A = self.A.to(d)`, or the `if` guarding several."""

    statement: ast.stmt
    sites: tuple[Site, ...]
    device: str  # the device expression's text, the same for every store in the unit


def is_store(site: Site) -> bool:
    """`self.A = self.A.to(d)`: the move's result is stored back on the attribute it came from."""
    parent = site.ancestors[-1] if site.ancestors else None
    return (
        isinstance(parent, ast.Assign)
        and parent.value is site.call
        and len(parent.targets) == 1
        and dotted_name(parent.targets[0]) == f"self.{site.attribute}"
    )


def store_unit(source: SourceFile, method: ast.FunctionDef, stores: list[Site]) -> StoreUnit | str:
    """The one top-level statement of `method` holding its stores, or why there is none to rewrite."""
    statements = {id(s.ancestors[-1]): s.ancestors[-1] for s in stores}
    guards = {id(s.ancestors[-2]): s.ancestors[-2] for s in stores if len(s.ancestors) >= 2}
    if len(statements) != len(stores):
        return "one attribute is stored twice in the method; rewrite it by hand"
    if all(any(st is s.ancestors[-1] for st in method.body) for s in stores) and len(stores) == 1:
        unit: ast.stmt = stores[0].ancestors[-1]  # type: ignore[assignment]
    elif len(guards) == 1 and _is_guard(next(iter(guards.values())), stores):
        unit = next(iter(guards.values()))  # type: ignore[assignment]
    else:
        return f"the stores in `{method.name}` are not one top-level statement or one `if` holding only them"
    if not any(s is unit for s in method.body):
        return f"the store at line {unit.lineno} runs only on some paths through `{method.name}`"
    devices = {source.segment(s.move.device) for s in stores}
    if len(devices) != 1:
        return f"the stores at line {unit.lineno} move to different devices"
    return StoreUnit(unit, tuple(stores), devices.pop())


def _is_guard(statement: ast.AST, stores: list[Site]) -> bool:
    """`if self.A.device != d:` whose body is exactly these stores, with no `else`."""
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and len(statement.body) == len(stores)
        and all(any(st is s.ancestors[-1] for s in stores) for st in statement.body)
    )


def later_reads(unit: StoreUnit, method: ast.FunctionDef, attributes: set[str]) -> list[ast.Attribute] | str:
    """The reads of the stored attributes after the store (they become the getter's locals), or why not."""
    reads = []
    inside = {id(n) for n in nodes_within(unit.statement, ast.Attribute)}
    for node in nodes_within(method, ast.Attribute, breadth_first=True):
        if not (isinstance(node.ctx, ast.Load) and id(node) not in inside):
            continue
        if dotted_name(node) not in {f"self.{a}" for a in attributes}:
            continue
        if node.lineno < unit.statement.lineno:
            return f"line {node.lineno} reads `{dotted_name(node)}` before the store, as the last call left it"
        reads.append(node)
    rebound = _rebinds_device(unit, method)
    if reads and rebound is not None:
        return f"line {rebound} rebinds a name of the device `{unit.device}` after the store"
    return sorted(reads, key=lambda n: (n.lineno, n.col_offset))


def _rebinds_device(unit: StoreUnit, method: ast.FunctionDef) -> int | None:
    """The first line after the store that binds a name the device expression reads."""
    names = {n.id for n in nodes_within(ast.parse(unit.device, mode="eval"), ast.Name)}
    for node in nodes_within(method, ast.Name, breadth_first=True):
        stores = isinstance(node.ctx, ast.Store | ast.Del) and node.id in names
        if stores and node.lineno > unit.statement.lineno:
            return node.lineno
    return None


def store_edits(
    source: SourceFile, unit: StoreUnit, reads: list[ast.Attribute], unpack: str, comment: str, locals_: dict[str, str]
) -> list[Edit]:
    """The unit replaced by the getter's unpacking (or removed, when nothing reads the tables after it)."""
    ref = source.statement_ref(unit.statement)
    if not reads:
        return [Edit(ref, "remove_statement")]
    edits = [Edit(ref, "replace_with_getter_call", (("text", unpack + "\n"), ("comment", comment)))]
    for read in reads:
        local = locals_[read.attr]
        edits.append(Edit(source.ref(read, "Attribute"), "use_local", (("name", local),)))
    return edits


def stored_only(cls: ast.ClassDef, lazily_moved: frozenset[str]) -> frozenset[str]:
    """Attributes changed after `__init__` only by `self.A = self.A.to(<device>)`: still constant tables."""
    found = set()
    for attribute in lazily_moved:
        values = [
            node.value
            for method in cls.body
            if isinstance(method, ast.FunctionDef | ast.AsyncFunctionDef) and method.name != "__init__"
            for node in nodes_within(method, ast.Assign)
            if any(self_attribute(t) == attribute for t in node.targets)
        ]
        moves = [device_move(v) if isinstance(v, ast.Call) else None for v in values]
        if values and all(m is not None and m.device_only for m in moves):
            found.add(attribute)
    return frozenset(found)
