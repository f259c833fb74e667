"""Which code runs per call or per step (hot) and which runs once (cold), within one module.

Hot:
- `forward` of any class (diffusers' modules), `__call__` of an attention processor (a class
  named `*Processor*`: it runs inside every attention forward), an attention backend (a function
  registered with `@_AttentionBackendRegistry.register(...)`, which processors dispatch to), and a scheduler's `step`,
  `step_*` (`step_pred`, `step_correct`...) and `scale_model_input`, which loops call every step
  (a scheduler: a `*Scheduler` class or a subclass of `SchedulerMixin`);
- a pipeline's denoising loop: a `for` over `timesteps` or over `self.progress_bar(...)`, or a
  `for`/`while` whose body calls `<...>scheduler.step(...)` (in any class but a scheduler, whose
  loops over `timesteps` walk a batch of them, e.g. in `add_noise`);
- any function or method called from hot code, transitively, through `self.m(...)` (same class)
  or `f(...)` (same module).
Each hot function also records what makes it hot (`HotPaths.entries`): a denoising loop or a scheduler's
step (`STEP`), an attention processor or backend (`ATTENTION`), or the classes whose `forward` reaches it,
which only the tree's pipelines can place (codemods/analysis/models/frequency.py).
Cold, even inside hot code (the branches are told apart in cold_branches.py):
- `__init__`, and methods reached only from it;
- methods already cached (`lru_cache_unless_export`, `functools.lru_cache`/`cache`): their body
  runs once per key, not per call;
- branches that run only for non-tensor inputs (`if not torch.is_tensor(t):`, `if not
  isinstance(t, torch.Tensor):`), only under export/tracing (`torch.compiler.is_exporting()`),
  only on a scheduler's first step (`if self.step_index is None:`, where the step index is
  looked up once per generation; DIF005 is about that lookup), or only on another backend than
  CUDA (`if x.device.type in {"mps", "npu"}:`, a workaround the CUDA path never runs).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from codemods.analysis.models.cold_branches import OTHER_BACKENDS, in_cold_branch
from codemods.analysis.models.loop_arguments import is_scheduler_step
from codemods.line_walk import first_line, spans_a_line
from codemods.node_index import nodes_within, parent_of
from codemods.source import Ancestors, SourceFile, child_nodes, dotted_name, statements

Function = ast.FunctionDef | ast.AsyncFunctionDef
# What a hot scope that is no function may be: a denoising loop (`hot_scope` answers one per step).
STEP_LOOPS = (ast.For, ast.AsyncFor, ast.While)

_CACHING_DECORATORS = {"lru_cache_unless_export", "lru_cache", "cache", "cached_property"}
_HOT_ENTRY_METHODS = {"forward"}
_MODULE_BASES = ("Module", "ModelMixin")
_SCHEDULER_ENTRY_METHODS = {"step", "scale_model_input"}
_PROCESSOR_ENTRY_METHODS = {"__call__"}
# `step` ending a word; that it starts one is tested by hand: `re` scans for a pattern opening on a literal in C,
# and one opening on `\b` a character at a time (twenty times slower).
_STEP_END = re.compile(r"step\b")
_WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


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


def is_module_class(cls: ast.ClassDef) -> bool:
    """A model or a block of one: an `nn.Module`/`ModelMixin` subclass, or a non-scheduler class with `forward`."""
    bases = [(dotted_name(b) or "").rsplit(".", 1)[-1] for b in cls.bases]
    methods = [n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    defines_forward = "forward" in methods
    return not is_scheduler(cls) and (any(b in _MODULE_BASES for b in bases) or defines_forward)


def is_attention_processor(cls: ast.ClassDef) -> bool:
    return "Processor" in cls.name


def is_denoising_loop(loop: ast.AST) -> bool:
    if not isinstance(loop, ast.For | ast.AsyncFor):
        return False
    for node in ast.walk(loop.iter):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        if "timesteps" in name or name == "progress_bar":
            return True
    return False


def _is_attention_backend(function: Function) -> bool:
    """`@_AttentionBackendRegistry.register(...)`: an attention backend, run by every attention forward;
    not one for another backend than CUDA (`AttentionBackendName._NATIVE_NPU`, `_NATIVE_XLA`)."""
    for decorator in function.decorator_list:
        if isinstance(decorator, ast.Call) and (dotted_name(decorator.func) or "").endswith(
            "AttentionBackendRegistry.register"
        ):
            name = (dotted_name(decorator.args[0]) or "") if decorator.args else ""
            words = set(name.rsplit(".", 1)[-1].lower().split("_"))
            return not words & OTHER_BACKENDS
    return False


def _step_lines(source: SourceFile) -> list[int]:
    """The lines where the word `step` is written (a `.step(...)` call is written on one of them), sorted."""
    text = source.text
    starts = (m.start() for m in _STEP_END.finditer(text))
    return sorted({source.line_index.line_of(i) for i in starts if i == 0 or text[i - 1] not in _WORD_CHARACTERS})


def _may_loop(source: SourceFile, method: Function, step_lines: list[int]) -> bool:
    """Whether `method` names what a denoising loop calls (`step`) or walks (`timesteps`, `progress_bar`): most
    methods name none, and their statements are not walked for loops (searching their text is cheaper)."""
    start = source.line_index.start_of(method.lineno)
    end = source.line_index.start_of((method.end_lineno or method.lineno) + 1)
    text = source.text
    return (
        spans_a_line(method, step_lines)
        or text.find("timesteps", start, end) >= 0
        or text.find("progress_bar", start, end) >= 0
    )


def _steps_a_scheduler(loop: ast.AST, step_lines: list[int]) -> bool:
    """A `for`/`while` loop whose own body, not a loop nested in it, calls `<...>scheduler.step(...)`: a step
    loop, whatever it walks (LLaDA2 refines a block `while should_continue:`). A loop over segments or
    blocks that runs a whole denoising loop each time (Wan Animate) is not one. `step_lines` (sorted): the
    lines naming `step` at all; a loop spanning none of them is not walked."""
    if not isinstance(loop, STEP_LOOPS) or not spans_a_line(loop, step_lines):
        return False
    stack: list[ast.AST] = list(loop.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (*STEP_LOOPS, *_SCOPES)):
            continue
        if is_scheduler_step(node):
            return True
        stack.extend(child_nodes(node))
    return False


@dataclass
class HotPaths:
    """Hot functions and denoising loops of one module (computed once per file, on demand)."""

    functions: set[int] = field(default_factory=set)  # id() of hot function nodes
    loops: set[int] = field(default_factory=set)  # id() of denoising loop nodes
    # (first, last) lines of the hot functions and loops: rules that only report hot code search these.
    ranges: list[tuple[int, int]] = field(default_factory=list)
    # The same without a hot function's signature and docstring, which run once, where the function is defined: the
    # lines a rule of per-call reads searches (a read there would be in no node of the lines kept).
    run_ranges: list[tuple[int, int]] = field(default_factory=list)
    # id() of a hot function -> what makes it hot: STEP (a denoising loop or a scheduler's step calls it),
    # ATTENTION (an attention processor or backend), or the name of a class whose `forward` reaches it.
    entries: dict[int, set[str]] = field(default_factory=dict)

    def is_hot(self, ancestors: Ancestors, node: ast.AST | None = None) -> bool:
        """Whether `node` (with its ancestors) runs per call/step and not in a cold branch."""
        return self.hot_scope(ancestors, node) is not None

    def hot_scope(self, ancestors: Ancestors, node: ast.AST | None = None) -> ast.AST | None:
        """The denoising loop or hot function that makes `node` run per step/call; None if it is cold."""
        chain = (*ancestors, node) if node is not None else ancestors
        for position in range(len(chain) - 1, -1, -1):
            current = chain[position]
            child = chain[position + 1] if position + 1 < len(chain) else None
            if isinstance(current, ast.If) and child is not None and in_cold_branch(current, child):
                return None
            if id(current) in self.loops and any(child is statement for statement in current.body):
                return current
            if isinstance(current, _FUNCTIONS_AND_LAMBDAS):
                if id(current) in self.functions:
                    return current
                if not isinstance(current, ast.Lambda):
                    return None
        return None

    def hot_function(self, function: Function) -> bool:
        return id(function) in self.functions


# What makes a hot function hot, besides a class's `forward` (named by its class).
STEP = "step"
ATTENTION = "attention"


def hot_paths(source: SourceFile) -> HotPaths:
    """The module's hot code (see the module docstring), computed once per file."""
    return source.memo("hot_paths", lambda: _analyse(source))


def _analyse(source: SourceFile) -> HotPaths:
    paths = HotPaths()
    module_functions = {n.name: n for n in source.tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    worklist: list[tuple[Function, dict[str, Function], str]] = []
    step_lines = _step_lines(source)
    for cls in source.classes:
        methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
        entries = {name: cls.name for name in _HOT_ENTRY_METHODS}
        if is_scheduler(cls):
            entries |= {name: STEP for name in _SCHEDULER_ENTRY_METHODS | {m for m in methods if m.startswith("step_")}}
        if is_attention_processor(cls):
            entries |= {name: ATTENTION for name in _PROCESSOR_ENTRY_METHODS}
        worklist.extend((methods[name], methods, entry) for name, entry in entries.items() if name in methods)
        for method in methods.values() if not is_scheduler(cls) else ():
            if not _may_loop(source, method, step_lines):
                continue
            for loop in (n for n in own_loops(method) if is_denoising_loop(n) or _steps_a_scheduler(n, step_lines)):
                paths.loops.add(id(loop))
                paths.ranges.append((loop.lineno, loop.end_lineno or loop.lineno))
                paths.run_ranges.append(paths.ranges[-1])
                callees = _callees(loop, methods, module_functions)
                worklist.extend((callee, methods, STEP) for callee in callees)
    backends = (function for function in module_functions.values() if _is_attention_backend(function))
    worklist.extend((function, {}, ATTENTION) for function in backends)
    # A function reached from several entries (a module helper of many classes' `forward`s) is walked once.
    callees_of: dict[tuple[int, int], list[Function]] = {}
    while worklist:
        function, methods, entry = worklist.pop()
        reached = paths.entries.get(id(function), set())
        if entry in reached or is_cached(function) or function.name == "__init__":
            continue
        paths.entries[id(function)] = reached | {entry}
        if id(function) not in paths.functions:
            paths.functions.add(id(function))
            paths.ranges.append((function.lineno, function.end_lineno or function.lineno))
            paths.run_ranges += _statement_lines(function)
        key = (id(function), id(methods))
        if key not in callees_of:
            callees_of[key] = _callees(function, methods, module_functions)
        worklist.extend((callee, methods, entry) for callee in callees_of[key])
    return paths


def _statement_lines(function: Function) -> list[tuple[int, int]]:
    """The lines of `function`'s statements after its docstring (its decorators, signature and docstring run once)."""
    body = function.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    return [(first_line(body[0]), function.end_lineno or function.lineno)] if body else []


def _callees(
    owner: Function | ast.For | ast.AsyncFor | ast.While,
    methods: dict[str, Function],
    module_functions: dict[str, Function],
) -> list[Function]:
    """What `owner`'s body runs outside cold branches: `self.m(...)` and `f(...)` of this module, and the helpers
    defined inside it (`def apply_rotary_emb(...)` in a processor runs with it)."""
    found = []
    for node in nodes_within(owner, _CALLS_AND_FUNCTIONS):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
                callee = methods.get(func.attr)
            else:
                callee = module_functions.get(func.id) if isinstance(func, ast.Name) else None
        else:
            callee = node if node is not owner else None
        if callee is not None and _runs_with(node, owner):
            found.append(callee)
    return found


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (*_FUNCTIONS, ast.ClassDef)
_CALLS_AND_FUNCTIONS = (ast.Call, *_FUNCTIONS)
_FUNCTIONS_AND_LAMBDAS = (*_FUNCTIONS, ast.Lambda)  # tuples, not `A | B`: `hot_scope` tests every ancestor


def own_loops(method: Function) -> list[ast.AST]:
    """The loops of `method`'s own body, not of the functions and classes nested in it, in source order.
    Loops are statements: walking the statements alone finds them without the file's node index, which a
    fifth of the files would build only for this."""
    loops = [node for node in statements(method.body) if isinstance(node, STEP_LOOPS)]
    # `statements` walks a `try`'s handlers after its `else` and `finally`; two statements never start at one place.
    return sorted(loops, key=lambda loop: (loop.lineno, loop.col_offset))


def _runs_with(node: ast.AST, owner: ast.AST) -> bool:
    """Whether `node` (in `owner`'s subtree) runs when `owner`'s body does: it lies in that body, in no nested
    function or class (a nested one itself does) and in no cold branch."""
    child, current = node, parent_of(node)
    while current is not owner:
        if current is None or isinstance(current, _SCOPES):
            return False
        if isinstance(current, ast.If) and in_cold_branch(current, child):
            return False
        child, current = current, parent_of(current)
    return any(child is statement for statement in owner.body)
