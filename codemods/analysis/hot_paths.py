"""Which code runs per call or per step (hot) and which runs once (cold), within one module.

Hot:
- `forward` of any class (diffusers' modules), and `step` of a scheduler (`*Scheduler` class or
  a subclass of `SchedulerMixin`);
- a pipeline's denoising loop: a `for` over `timesteps` or over `self.progress_bar(...)`;
- any function or method called from hot code, transitively, through `self.m(...)` (same class)
  or `f(...)` (same module).
Cold, even inside hot code:
- `__init__`, and methods reached only from it;
- methods already cached (`lru_cache_unless_export`, `functools.lru_cache`/`cache`): their body
  runs once per key, not per call;
- branches that run only for non-tensor inputs (`if not torch.is_tensor(t):`, `if not
  isinstance(t, torch.Tensor):`) or only under export/tracing (`torch.compiler.is_exporting()`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from codemods.source import Ancestors, SourceFile, dotted_name

Function = ast.FunctionDef | ast.AsyncFunctionDef

_CACHING_DECORATORS = {"lru_cache_unless_export", "lru_cache", "cache", "cached_property"}
_EXPORT_ONLY = {"is_exporting", "is_tracing", "is_scripting"}
_HOT_ENTRY_METHODS = {"forward"}
_SCHEDULER_ENTRY_METHODS = {"step"}


def is_cached(function: Function) -> bool:
    """Decorated with a memoizing decorator: the body runs once per distinct key."""
    for decorator in function.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = dotted_name(target) or ""
        if name.rsplit(".", 1)[-1] in _CACHING_DECORATORS:
            return True
    return False


def is_scheduler(cls: ast.ClassDef) -> bool:
    bases = [dotted_name(b) or "" for b in cls.bases]
    return cls.name.endswith("Scheduler") or any(b.rsplit(".", 1)[-1] == "SchedulerMixin" for b in bases)


def is_denoising_loop(loop: ast.AST) -> bool:
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return False
    for node in ast.walk(loop.iter):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if "timesteps" in name or name == "progress_bar":
            return True
    return False


@dataclass
class HotPaths:
    """Hot functions and denoising loops of one module (computed once per file, on demand)."""

    functions: set[int] = field(default_factory=set)  # id() of hot function nodes
    loops: set[int] = field(default_factory=set)  # id() of denoising loop nodes

    def is_hot(self, ancestors: Ancestors, node: ast.AST | None = None) -> bool:
        """Whether `node` (with its ancestors) runs per call/step and not in a cold branch."""
        chain = (*ancestors, node) if node is not None else ancestors
        for position in range(len(chain) - 1, -1, -1):
            current = chain[position]
            child = chain[position + 1] if position + 1 < len(chain) else None
            if isinstance(current, ast.If) and child is not None and _in_cold_branch(current, child):
                return False
            if id(current) in self.loops and any(child is statement for statement in current.body):
                return True
            if isinstance(current, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                if id(current) in self.functions:
                    return True
                if not isinstance(current, ast.Lambda):
                    return False
        return False

    def hot_function(self, function: Function) -> bool:
        return id(function) in self.functions


def hot_paths(source: SourceFile) -> HotPaths:
    """The module's hot code (see the module docstring), computed once per file."""
    return source.memo("hot_paths", lambda: _analyse(source.tree))


def _analyse(tree: ast.Module) -> HotPaths:
    paths = HotPaths()
    module_functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    worklist: list[tuple[Function, dict[str, Function]]] = []
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        entries = set(_HOT_ENTRY_METHODS) | (_SCHEDULER_ENTRY_METHODS if is_scheduler(cls) else set())
        worklist.extend((methods[name], methods) for name in entries if name in methods)
        for method in methods.values():
            for loop in (n for n in ast.walk(method) if is_denoising_loop(n)):
                paths.loops.add(id(loop))
                worklist.extend((callee, methods) for callee in _callees(loop.body, methods, module_functions))
    while worklist:
        function, methods = worklist.pop()
        if id(function) in paths.functions or is_cached(function) or function.name == "__init__":
            continue
        paths.functions.add(id(function))
        worklist.extend((callee, methods) for callee in _callees(function.body, methods, module_functions))
    return paths


def _callees(body: list[ast.stmt], methods: dict[str, Function], module_functions: dict[str, Function]) -> list[Function]:
    """Functions of this module called from `body` outside cold branches: `self.m(...)` and `f(...)`."""
    found = []
    for node in _hot_nodes(body):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            if func.attr in methods:
                found.append(methods[func.attr])
        elif isinstance(func, ast.Name) and func.id in module_functions:
            found.append(module_functions[func.id])
    return found


def _hot_nodes(body: list[ast.stmt]):
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If):
            stack.append(node.test)
            stack.extend(s for s in node.body if not _in_cold_branch(node, s))
            stack.extend(s for s in node.orelse if not _in_cold_branch(node, s))
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            stack.extend(ast.iter_child_nodes(node))


def _in_cold_branch(branch: ast.If, child: ast.AST) -> bool:
    in_body = any(child is statement for statement in branch.body)
    in_orelse = any(child is statement for statement in branch.orelse)
    kind = _branch_kind(branch.test)
    if kind == "tensor":  # `if torch.is_tensor(t):` -> the else branch handles Python numbers
        return in_orelse
    if kind == "not tensor":
        return in_body
    if kind == "export":
        return in_body
    return False


def _branch_kind(test: ast.expr) -> str | None:
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    if isinstance(inner, ast.Call):
        name = (dotted_name(inner.func) or "").rsplit(".", 1)[-1]
        if name == "is_tensor" or (name == "isinstance" and _mentions_tensor_type(inner)):
            return "not tensor" if negated else "tensor"
        if name in _EXPORT_ONLY and not negated:
            return "export"
    return None


def _mentions_tensor_type(call: ast.Call) -> bool:
    return len(call.args) == 2 and any(
        (dotted_name(n) or "").endswith("Tensor") for n in ast.walk(call.args[1])
    )
