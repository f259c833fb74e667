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

from codemods.analysis.device_moves import changed_in_place
from codemods.device_getter_decorator import cache_decorator, tuple_spelling
from codemods.device_getter_sites import Site, consecutive_run, hoistable_statement, ternary_move
from codemods.findings import Edit, ImportRequest
from codemods.project import TreeInfo
from codemods.source import SourceFile, dotted_name


@dataclass(frozen=True)
class GetterPlan:
    description: str
    edits: tuple[Edit, ...]
    imports: tuple[ImportRequest, ...]


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
        self.noun = _noun(self.attributes)
        self.getter = f"_get_device_{self.noun}"
        self.methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        self.edits: list[Edit] = []

    def plan(self) -> GetterPlan:
        if not re.search(r"^import torch$", self.source.text, re.MULTILINE):
            raise _Declined("the file does not `import torch`, which the getter's annotations use")
        imports = self._add_getter()
        # The getter's own `.to(device)` calls stay (an existing getter is reused, not rewritten into recursion).
        self.sites = [s for s in self.sites if s.method.name != self.getter]
        for method in dict.fromkeys(s.method for s in self.sites):
            self._rewrite_method(method, [s for s in self.sites if s.method is method])
        listing = ", ".join(f"`{a}`" for a in self.attributes)
        return GetterPlan(
            f"cache {listing} per device in `{self.getter}` and use it at {len(self.sites)} site(s)",
            tuple(self.edits),
            imports,
        )

    def _add_getter(self) -> tuple[ImportRequest, ...]:
        existing = self.methods.get(self.getter)
        if existing is not None:
            if _returns_moves(existing) == self.attributes:
                return ()  # already there (a second pass, or a hand-written one): reuse it
            raise _Declined(f"the class already defines `{self.getter}`, returning something else")
        decorator, imports = cache_decorator(self.source, self.tree)
        annotation = "torch.Tensor"
        if len(self.attributes) > 1:
            annotation = f"{tuple_spelling(self.source)}[{', '.join('torch.Tensor' for _ in self.attributes)}]"
        lines = [
            f"@{decorator}",
            f"def {self.getter}(self, device: torch.device) -> {annotation}:",
            f'    """Return {_spoken(self.attributes)} on the given device."""',
            f"    return {', '.join(f'self.{a}.to(device)' for a in self.attributes)}",
        ]
        indent = _indent_of(self.source, self.cls.body[0])
        self._check_width(lines, indent, "the getter")
        before = "forward" if "forward" in self.methods else self.sites[0].method.name
        text = "\n".join(lines) + "\n"
        self.edits.append(
            Edit(
                self.source.ref(self.cls, "ClassDef"),
                "add_device_getter",
                (("text", text), ("before", before)),
                inserts=True,
            )
        )
        return imports

    def _rewrite_method(self, method: ast.FunctionDef, sites: list[Site]) -> None:
        mutated = changed_in_place(method, [s.call for s in sites])
        if mutated is not None:
            raise _Declined(
                f"line {mutated.lineno} changes in place a tensor that may share storage with the moved copy; "
                "a cached copy would keep the change"
            )
        remaining = [s for s in sites if id(s) not in self._rewrite_pairs(sites)]
        if len(self.attributes) == 1:
            for site in remaining:
                self._call_getter(site, None)
            return
        taken = {n.id for n in ast.walk(method) if isinstance(n, ast.Name)} | {
            a.arg for a in ast.walk(method.args) if isinstance(a, ast.arg)
        }
        statements = [hoistable_statement(self.source, site, taken, _local(site.attribute)) for site in remaining]
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

    def _rewrite_pairs(self, sites: list[Site]) -> set[int]:
        """`a = self.A.to(d) if d is not None else self.A` for every attribute, one statement after the other."""
        candidates = [(s, ternary_move(s)) for s in sites]
        candidates = [(s, statement) for s, statement in candidates if statement is not None]
        done: set[int] = set()
        for site, statement in candidates:
            if id(site) in done:
                continue
            run = consecutive_run(self.source, statement, {id(st): s for s, st in candidates}, len(self.attributes))
            if run is None or sorted(s.attribute for s, _ in run) != sorted(self.attributes):
                continue
            tests = {self.source.segment(st.value.test) for _, st in run}
            devices = {self.source.segment(s.move.device) for s, _ in run}
            if len(tests) != 1 or len(devices) != 1:
                continue
            targets = {s.attribute: st.targets[0].id for s, st in run}
            value = (
                f"self.{self.getter}({devices.pop()}) if {tests.pop()} "
                f"else ({', '.join(f'self.{a}' for a in self.attributes)})"
            )
            assigned = f"{', '.join(targets[a] for a in self.attributes)} = "
            indent = _indent_of(self.source, run[0][1])
            if len(indent) + len(assigned) + len(value) <= self.tree.line_length:
                text = f"{assigned}{value}\n"
            else:
                self._check_width([value], indent + "    ", "the rewritten pair")
                text = f"{assigned}(\n    {value}\n)\n"
            first, *rest = [st for _, st in run]
            self.edits.append(
                Edit(self.source.ref(first, "SimpleStatementLine"), "replace_statement", (("text", text),))
            )
            self.edits.extend(Edit(self.source.ref(st, "SimpleStatementLine"), "remove_statement") for st in rest)
            done |= {id(s) for s, _ in run}
        return done

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
        targets = ", ".join(_local(a) if a in used else "_" for a in self.attributes)
        text = f"{targets} = self.{self.getter}({device})"
        forward = "forward " if "forward" in self.methods else ""
        comment = f"# Use cached device-transferred {self.noun} to avoid CPU→GPU sync every {forward}call"
        indent = _indent_of(self.source, statement)
        self._check_width([text, comment], indent, "the hoisted getter call")
        above = self.source.lines[statement.lineno - 2].strip() if statement.lineno > 1 else ""
        # A comment about the per-call copy being removed would now be wrong: the new one replaces it.
        stale = above.startswith("#") and bool(re.search(r"device|copy", above, re.IGNORECASE))
        params = (("text", text + "\n"), ("comment", comment), ("replace_comment", stale))
        self.edits.append(Edit(self.source.ref(statement, "SimpleStatementLine"), "hoist_getter", params))
        for site in sites:
            self.edits.append(
                Edit(self.source.ref(site.call, "Call"), "use_local", (("name", _local(site.attribute)),))
            )

    def _check_line_after(self, call: ast.Call, replacement: str) -> None:
        span = self.source.span(call)
        if span.line != span.end_line:
            raise _Declined(f"the move at line {span.line} spans several lines; rewrite it by hand")
        line = self.source.lines[span.line - 1]
        rewritten = line[: span.column] + replacement + line[span.end_column :]
        if len(rewritten) > self.tree.line_length:
            raise _Declined(
                f"line {span.line} would exceed {self.tree.line_length} characters; rewrite it by hand, then `make style`"
            )

    def _check_width(self, lines: list[str], indent: str, what: str) -> None:
        if any(len(indent) + len(line) > self.tree.line_length for line in lines):
            raise _Declined(f"{what} would exceed {self.tree.line_length} characters; add it by hand")


def _noun(attributes: list[str]) -> str:
    """pos_freqs, neg_freqs -> freqs (the shared last word); freqs -> freqs."""
    words = [a.strip("_").split("_") for a in attributes]
    if len(words) == 1:
        return "_".join(words[0])
    suffix: list[str] = []
    while all(len(w) > len(suffix) for w in words) and len({w[-1 - len(suffix)] for w in words}) == 1:
        suffix.insert(0, words[0][-1 - len(suffix)])
    return "_".join(suffix) if suffix else "tensors"


def _spoken(attributes: list[str]) -> str:
    return attributes[0] if len(attributes) == 1 else f"{', '.join(attributes[:-1])} and {attributes[-1]}"


def _local(attribute: str) -> str:
    return f"{attribute.strip('_')}_device"


def _indent_of(source: SourceFile, node: ast.AST) -> str:
    line = source.lines[node.lineno - 1]
    return line[: len(line) - len(line.lstrip())]


def _returns_moves(method: ast.AST) -> list[str] | None:
    """`return self.a.to(device), self.b.to(device)` -> ["a", "b"]."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or body[0].value is None:
        return None
    values = body[0].value.elts if isinstance(body[0].value, ast.Tuple) else [body[0].value]
    names = []
    for value in values:
        name = dotted_name(value.func) if isinstance(value, ast.Call) else None
        if not name or not name.startswith("self.") or not name.endswith(".to") or name.count(".") != 2:
            return None
        names.append(name.split(".")[1])
    return names
