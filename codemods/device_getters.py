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
import itertools
import re
from dataclasses import dataclass

from codemods.analysis.device_moves import DeviceMove, changed_in_place
from codemods.findings import Edit, ImportRequest
from codemods.project import TreeInfo
from codemods.source import Ancestors, SourceFile, dotted_name

_CACHED_HELPER = "lru_cache_unless_export"
_NOT_HOISTABLE = (
    ast.IfExp, ast.BoolOp, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.NamedExpr,
    ast.Await, ast.Yield, ast.YieldFrom,
)  # fmt: skip
_SIMPLE_STATEMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


@dataclass(frozen=True)
class Site:
    """One `self.<attribute>.to(<device>)` in a method of a class."""

    call: ast.Call
    attribute: str
    move: DeviceMove
    ancestors: Ancestors
    method: ast.FunctionDef
    hot: bool


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
        decorator, imports = self._decorator()
        annotation = "torch.Tensor"
        if len(self.attributes) > 1:
            annotation = f"{self._tuple()}[{', '.join('torch.Tensor' for _ in self.attributes)}]"
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

    def _decorator(self) -> tuple[str, tuple[ImportRequest, ...]]:
        source, tree = self.source, self.tree
        package = source.module if source.path.endswith("__init__.py") else source.package
        if _CACHED_HELPER in tree.torch_utils_names and tree.root and package.split(".")[0] == tree.package:
            if _imported_names(source.tree).get(_CACHED_HELPER):
                return f"{_CACHED_HELPER}(maxsize=None)", ()
            module = _torch_utils_spelling(source.tree, package, tree.package)
            return f"{_CACHED_HELPER}(maxsize=None)", (ImportRequest(module, _CACHED_HELPER),)
        # A tree without the helper (diffusers before 2026-03): the standard library's cache.
        if any(
            isinstance(n, ast.Import) and any(a.name == "functools" and not a.asname for a in n.names)
            for n in source.tree.body
        ):
            return "functools.lru_cache(maxsize=None)", ()
        if _imported_names(source.tree).get("lru_cache") == "functools":
            return "lru_cache(maxsize=None)", ()
        return "functools.lru_cache(maxsize=None)", (ImportRequest("", "functools"),)

    def _tuple(self) -> str:
        text = self.source.text
        if "from __future__ import annotations" in text or re.search(r"\btuple\[", text):
            return "tuple"
        return "Tuple" if _imported_names(self.source.tree).get("Tuple") == "typing" else "tuple"

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
        statements = [_hoistable_statement(self.source, site, taken) for site in remaining]
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
        candidates = [(s, _ternary_move(s)) for s in sites]
        candidates = [(s, statement) for s, statement in candidates if statement is not None]
        done: set[int] = set()
        for site, statement in candidates:
            if id(site) in done:
                continue
            run = _consecutive_run(self.source, statement, {id(st): s for s, st in candidates}, len(self.attributes))
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


def _imported_names(tree: ast.Module) -> dict[str, str]:
    """Names bound by top-level `from X import name` (without an alias) -> X (with its dots)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname is None:
                    found[alias.name] = "." * node.level + (node.module or "")
    return found


def _torch_utils_spelling(tree: ast.Module, package: str, root: str) -> str:
    """How this file names `<root>.utils.torch_utils`: as an existing import spells it, else relatively."""
    wanted = f"{root}.utils.torch_utils"
    parts = package.split(".")
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            resolved = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if resolved == wanted:
                return "." * node.level + (node.module or "")
    return "." * len(parts) + "utils.torch_utils"


def _ternary_move(site: Site) -> ast.Assign | None:
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


def _consecutive_run(
    source: SourceFile, statement: ast.stmt, candidates: dict[int, Site], length: int
) -> list[tuple[Site, ast.Assign]] | None:
    """`length` candidate statements in a row, on consecutive lines with nothing else on them, starting at `statement`."""
    body = _enclosing_body(candidates[id(statement)].ancestors, statement)
    if body is None:
        return None
    start = next(i for i, s in enumerate(body) if s is statement)
    run = body[start : start + length]
    if len(run) != length or any(id(s) not in candidates for s in run):
        return None
    for previous, current in itertools.pairwise(run):
        if current.lineno != previous.end_lineno + 1:
            return None
    if any("#" in source.lines[s.end_lineno - 1][s.end_col_offset :] for s in run) or not _alone(source, run[0], body):
        return None
    if any(not _alone(source, s, body) for s in run):
        return None
    return [(candidates[id(s)], s) for s in run]


def _enclosing_body(ancestors: Ancestors, statement: ast.stmt) -> list[ast.stmt] | None:
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


def _alone(source: SourceFile, statement: ast.stmt, body: list[ast.stmt]) -> bool:
    """On lines of its own: not after a `:` on its block's header line, no `;` neighbour."""
    line = source.lines[statement.lineno - 1]
    if line[: len(line) - len(line.lstrip())] != line[: source.span(statement).column]:
        return False
    return all(
        other is statement or not (other.lineno <= statement.end_lineno and other.end_lineno >= statement.lineno)
        for other in body
    )


def _hoistable_statement(source: SourceFile, site: Site, taken: set[str]) -> ast.stmt | None:
    """The simple statement a getter call can go before, evaluated unconditionally where the site was."""
    if _local(site.attribute) in taken:
        return None
    if not isinstance(site.move.device, ast.Name | ast.Attribute) or dotted_name(site.move.device) is None:
        return None
    statement_at = max(i for i, n in enumerate(site.ancestors) if isinstance(n, ast.stmt))
    statement = site.ancestors[statement_at]
    if not isinstance(statement, _SIMPLE_STATEMENTS):
        return None
    if any(isinstance(n, _NOT_HOISTABLE) for n in site.ancestors[statement_at:]):
        return None
    body = _enclosing_body(site.ancestors, statement)
    return statement if body is not None and _alone(source, statement, body) else None
