"""Planning the per-device getter that DIF001 adds, and the rewrite of every `.to(device)` it replaces.

The shape is the one diffusers' maintainers chose in PR #13406 (QwenImage RoPE):
- one `@lru_cache_unless_export(maxsize=None)` getter per class, just before `forward`, named
  `_get_device_<noun>` and returning every cached attribute (a tuple when there are several);
- `a = self.A.to(d) if d is not None else self.A` / `b = ...` pairs become one
  `a, b = (self._get_device_x(d) if d is not None else (self.A, self.B))`;
- any other use of one attribute of a tuple getter is hoisted into
  `a_device, _ = self._get_device_x(d)` (with a comment) on the line before;
- with a single attribute, `self.A.to(d)` simply becomes `self._get_device_a(d)`.
Every line is planned against the project's line length here, at detection time; a rewrite that
would need re-wrapping is declined rather than written badly.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from codemods.analysis.values.device_moves import DeviceMove, Site, changed_in_place
from codemods.edits.getters.decorator import getter_definition, tuple_spelling
from codemods.edits.getters.names import (
    device_local,
    getter_noun,
    indent_of,
    line_after,
    returns_moves,
    spoken,
    too_wide,
)
from codemods.edits.getters.pairs import rewrite_pairs
from codemods.edits.getters.sites import hoistable_statement
from codemods.edits.getters.stores import is_store, later_reads, store_edits, store_unit
from codemods.edits.stale_text import StaleClaim, refresh_stale_text
from codemods.findings import Edit, ImportRequest
from codemods.node_index import nodes_within
from codemods.project.index import TreeInfo
from codemods.source import SourceFile, dotted_name


@dataclass(frozen=True)
class GetterPlan:
    description: str
    edits: tuple[Edit, ...]
    imports: tuple[ImportRequest, ...]


# "moved to the activations' device on each call": what the class's prose says the rewrite stops doing.
_PER_CALL_MOVE = re.compile(
    r"\b(?:moved|copied|transferred|sent)[ \t]+to[ \t]+(?:[\w'.-]+[ \t]+){0,4}?(?:device|gpu|accelerator)[ \t]+"
    r"(?P<stale>(?:on[ \t]+)?(?:each|every)[ \t]+(?:call|forward(?:[ \t]+(?:call|pass))?|step)|per[ \t]+call)",
    re.IGNORECASE,
)


def why_not_cached(attribute: str, move: DeviceMove, changed_at: int | None) -> str | None:
    """Why a per-device getter cannot replace `move` of `self.<attribute>` (None: it can).

    `changed_at`: the line where the attribute is first changed outside `__init__`, if it is.
    """
    if changed_at is not None:
        return f"`self.{attribute}` is reassigned or changed in place outside `__init__` (line {changed_at})"
    if move.dtype is not None:
        kind = "a constant" if move.constant_dtype else "a runtime"
        return f"the call also casts to {kind} dtype; a per-device cache would need the dtype in its key"
    if move.options:
        return f"the call passes `{'`, `'.join(move.options)}`; only plain device moves are cached"
    return None


class _Declined(Exception):
    """A rewrite this module will not plan; the message says why (it becomes the finding's not_fixed_reason)."""


def plan_getter(
    source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, sites: list[Site], init_values: dict[str, ast.expr]
) -> GetterPlan | str:
    """The getter and the rewrite of every site, or why there is none."""
    try:
        return _Planner(source, tree, cls, sites, init_values).plan()
    except _Declined as reason:
        return str(reason)


class _Planner:
    def __init__(
        self, source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, sites: list[Site], init_values: dict[str, ast.expr]
    ):
        self.source = source
        self.tree = tree
        self.cls = cls
        self.sites = sorted(sites, key=lambda s: (s.call.lineno, s.call.col_offset))
        self.attributes = sorted(
            {s.attribute for s in sites}, key=lambda a: (init_values[a].lineno, init_values[a].col_offset)
        )
        self.noun = getter_noun(self.attributes)
        self.getter = f"_get_device_{self.noun}"
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.edits: list[Edit] = []

    def plan(self) -> GetterPlan:
        if not re.search(r"^import torch$", self.source.text, re.MULTILINE):
            raise _Declined("the file does not `import torch`, which the getter's annotations use")
        imports = self._add_getter()
        # The getter's own `.to(device)` calls stay (an existing getter is reused, not rewritten into recursion).
        self.sites = [s for s in self.sites if s.method.name != self.getter]
        rewritten = list(dict.fromkeys(s.method for s in self.sites))
        for method in rewritten:
            self._rewrite_method(method, [s for s in self.sites if s.method is method])
        claim = StaleClaim(_PER_CALL_MOVE, f"once, then cached per device by `{self.getter}`")
        stale = refresh_stale_text(self.source, [self.cls, *rewritten], [claim], self.tree.line_length)
        if isinstance(stale, str):
            raise _Declined(stale)
        self.edits.extend(stale)
        listing = ", ".join(f"`{a}`" for a in self.attributes)
        return GetterPlan(
            f"cache {listing} per device in `{self.getter}` and use it at {len(self.sites)} site(s)",
            tuple(self.edits),
            imports,
        )

    def _add_getter(self) -> tuple[ImportRequest, ...]:
        existing = self.methods.get(self.getter)
        if existing is not None:
            if returns_moves(existing) == self.attributes:
                return ()  # already there (a second pass, or a hand-written one): reuse it
            raise _Declined(f"the class already defines `{self.getter}`, returning something else")
        annotation = "torch.Tensor"
        if len(self.attributes) > 1:
            annotation = f"{tuple_spelling(self.source)}[{', '.join('torch.Tensor' for _ in self.attributes)}]"
        returns = (
            annotation,
            f"Return {spoken(self.attributes)} on the given device.",
            ", ".join(f"self.{a}.to(device)" for a in self.attributes),
        )
        definition = getter_definition(
            self.source, self.tree, self.cls, self.getter, returns, self.sites[0].method.name
        )
        if isinstance(definition, str):
            raise _Declined(definition)
        added, imports = definition
        self.edits.append(added)
        return imports

    def _rewrite_method(self, method: ast.FunctionDef, sites: list[Site]) -> None:
        stores = [s for s in sites if is_store(s)]
        sites = [s for s in sites if not is_store(s)]
        reads = self._rewrite_stores(method, stores, sites) if stores else []
        mutated = changed_in_place(method, [*(s.call for s in sites), *reads])
        if mutated is not None:
            raise _Declined(
                f"line {mutated.lineno} changes in place a tensor that may share storage with the moved copy; "
                "a cached copy would keep the change"
            )
        pairs = rewrite_pairs(self.source, sites, self.attributes, self.getter, self.tree.line_length)
        if isinstance(pairs, str):
            raise _Declined(pairs)
        pair_edits, paired = pairs
        self.edits.extend(pair_edits)
        remaining = [s for s in sites if id(s) not in paired]
        if len(self.attributes) == 1:
            for site in remaining:
                self._call_getter(site, None)
            return
        taken = _names_taken(method)
        statements = [hoistable_statement(self.source, site, taken, device_local(site.attribute)) for site in remaining]
        if any(statement is None for statement in statements):
            # One style per method: where one use cannot be hoisted, every use indexes the tuple.
            for site in remaining:
                self._call_getter(site, self.attributes.index(site.attribute))
            return
        by_statement: dict[int, list[Site]] = {}
        for site, statement in zip(remaining, statements):
            by_statement.setdefault(id(statement), []).append(site)
        for group in by_statement.values():
            self._hoist(group)

    def _rewrite_stores(self, method: ast.FunctionDef, stores: list[Site], moves: list[Site]) -> list[ast.expr]:
        """Drop the stores; later reads in the method take the getter's locals. Returns those reads."""
        unit = store_unit(self.source, method, stores)
        if isinstance(unit, str):
            raise _Declined(unit)
        stored = {s.attribute for s in stores}
        reads = later_reads(unit, method, stored)
        if isinstance(reads, str):
            raise _Declined(reads)
        moved_again = [m for m in moves if m.attribute in stored and m.call.lineno > unit.statement.lineno]
        if moved_again:
            raise _Declined(f"line {moved_again[0].call.lineno} moves a stored table again after the store")
        self._check_no_other_reads(method, stored)
        taken = _names_taken(method)
        used = {read.attr for read in reads}
        if any(device_local(a) in taken for a in used):
            raise _Declined(f"`{method.name}` already uses the name the getter's result would take")
        targets = ", ".join(device_local(a) if a in used else "_" for a in self.attributes)
        unpack = f"{targets} = self.{self.getter}({unit.device})"
        comment = f"# Use cached device-transferred {self.noun} instead of storing them back on the module"
        self._check_width([unpack, comment], indent_of(self.source, unit.statement), "the getter call")
        locals_ = {a: device_local(a) for a in used}
        self.edits.extend(store_edits(self.source, unit, reads, unpack, comment, locals_))
        return list(reads)

    def _check_no_other_reads(self, method: ast.FunctionDef, stored: set[str]) -> None:
        """Other methods may only move a stored table with `.to(device)` (a site the getter replaces)."""
        receivers = {id(s.call.func.value) for s in self.sites}  # type: ignore[attr-defined]
        names = {f"self.{a}" for a in stored}
        for other in self.methods.values():
            if other is method or other.name in ("__init__", self.getter):
                continue
            for node in nodes_within(other, ast.Attribute, breadth_first=True):
                if dotted_name(node) in names and id(node) not in receivers:
                    raise _Declined(
                        f"line {node.lineno} (`{other.name}`) reads `{dotted_name(node)}` as the store left it, "
                        "on the device; it would read the host copy"
                    )

    def _call_getter(self, site: Site, index: int | None) -> None:
        device = self.source.segment(site.move.device)
        replacement = f"self.{self.getter}({device})" + (f"[{index}]" if index is not None else "")
        self._check_line_after(site.call, replacement)
        params = (("getter", self.getter), ("index", index))
        self.edits.append(Edit(self.source.ref(site.call, "Call"), "call_getter", params))

    def _hoist(self, sites: list[Site]) -> None:
        statement = next(n for n in reversed(sites[0].ancestors) if isinstance(n, ast.stmt))
        device = self.source.segment(sites[0].move.device)
        used = {s.attribute for s in sites}
        targets = ", ".join(device_local(a) if a in used else "_" for a in self.attributes)
        text = f"{targets} = self.{self.getter}({device})"
        forward = "forward " if "forward" in self.methods else ""
        comment = f"# Use cached device-transferred {self.noun} to avoid CPU→GPU sync every {forward}call"
        indent = indent_of(self.source, statement)
        self._check_width([text, comment], indent, "the hoisted getter call")
        above = self.source.lines[statement.lineno - 2].strip() if statement.lineno > 1 else ""
        # A comment about the per-call copy being removed would now be wrong: the new one replaces it.
        stale = above.startswith("#") and bool(re.search(r"device|copy", above, re.IGNORECASE))
        params = (("text", text + "\n"), ("comment", comment), ("replace_comment", stale))
        self.edits.append(Edit(self.source.ref(statement, "SimpleStatementLine"), "hoist_getter", params))
        for site in sites:
            self.edits.append(
                Edit(self.source.ref(site.call, "Call"), "use_local", (("name", device_local(site.attribute)),))
            )

    def _check_line_after(self, call: ast.Call, replacement: str) -> None:
        reason = line_after(self.source, call, replacement, self.tree.line_length)
        if reason is not None:
            raise _Declined(reason)

    def _check_width(self, lines: list[str], indent: str, what: str) -> None:
        if too_wide(lines, indent, self.tree.line_length):
            raise _Declined(f"{what} would exceed {self.tree.line_length} characters; add it by hand")


def _names_taken(method: ast.FunctionDef) -> set[str]:
    """The names `method` uses or binds, its parameters included: a local the rewrite adds must be none of them."""
    return {n.id for n in nodes_within(method, ast.Name)} | {a.arg for a in nodes_within(method.args, ast.arg)}
