"""How often a finding's cost is paid, from the call graph `hot_paths` already builds, not from a method's name.

Two stages, because a model's `forward` is hot only when something that runs per step reaches it, which
one file cannot tell:
- `site_cost` (per file, in the scan worker, cached with the finding): the denoising loop, scheduler step,
  attention processor, or class `forward` whose call graph reaches the finding's statement, or why none
  does (`__init__`, a cached method, a first-step branch, a pipeline's set-up);
- `ModelReach` (per tree, when the engine resolves findings): a `forward` is paid per step when some pipeline
  of the tree calls its class inside a denoising loop, or calls a model that builds it (blocks, attention,
  embeddings), once per generation when pipelines only call it outside their loops (safety checkers, VAEs,
  condition encoders), and otherwise on no path the tree shows. A tree with no pipeline at all (a file or a
  snippet alone) cannot tell, and keeps a `forward` per step.

A rule whose cost is not paid where it reports (DIF005's lookup, on the scheduler's first step) sets the
cost itself. Only per-step costs (`findings.HOT`) are listed by default: the rest is real but paid once per
generation or less. `pattern_tokens`/`grouped_patterns` give the same code shape in N places one key.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from codemods.analysis.models.denoisers import PIPELINE_TEXT
from codemods.analysis.models.hot_paths import (
    ATTENTION,
    STEP,
    STEP_LOOPS,
    Function,
    hot_paths,
    is_cached,
    is_module_class,
    is_scheduler,
)
from codemods.analysis.models.model_graph import denoising, graph_of, lineage
from codemods.findings import Cost, Finding, Frequency
from codemods.project.index import ProjectIndex
from codemods.source import Ancestors, SourceFile, enclosing

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCHEDULE_WORDS = ("sigma", "variance", "alpha")
# What the rules write for "per step" and "per call": one place turns it into the exact frequency.
_GENERIC_WHEN = re.compile(r"every denoising step|every call of `\w+`")


def with_site_cost(source: SourceFile, finding: Finding) -> Finding:
    """The finding with its cost as far as its file shows, and its pattern key (in the scan worker)."""
    cost = finding.cost or site_cost(source, finding.line)  # a rule that knows better has set it
    return replace(finding, cost=cost, pattern=pattern_tokens(finding, source))


def site_cost(source: SourceFile, line: int) -> Cost:
    """The cost of the statement on `line`, as far as this file shows (a `forward` is resolved later)."""
    chain = _deepest_statement(source, line)
    if chain is None:
        return Cost(Frequency.CALL)
    statement, ancestors = chain
    hot = hot_paths(source)
    scope = hot.hot_scope(ancestors, statement)
    if scope is None:
        return _cold_cost(source, statement, ancestors, hot.hot_function)
    last = _last_step_branch(ancestors[ancestors.index(scope) :], statement)
    if isinstance(scope, STEP_LOOPS):
        return Cost(Frequency.LAST_STEP if last else Frequency.STEP)
    entries = hot.entries.get(id(scope), set())
    name = scope.name  # type: ignore[attr-defined]
    if STEP in entries:
        if last:
            return Cost(Frequency.LAST_STEP, f"a branch of `{name}`")
        cls = enclosing(ancestors, ast.ClassDef)
        if isinstance(cls, ast.ClassDef) and is_scheduler(cls):
            entry = name in ("step", "scale_model_input") or name.startswith("step_")
            return Cost(Frequency.STEP, f"in `{cls.name}.{name}`" + ("" if entry else ", which its `step` calls"))
        return Cost(Frequency.STEP, f"in `{name}`, which the denoising loop calls")
    if ATTENTION in entries:
        return Cost(Frequency.ATTENTION, f"`{name}`")
    return Cost(Frequency.UNREACHED_FORWARD, owners=tuple(sorted(entries)))


def _cold_cost(
    source: SourceFile, statement: ast.AST, ancestors: Ancestors, is_hot: Callable[[Function], bool]
) -> Cost:
    function = enclosing(ancestors, _FUNCTIONS)
    cls = enclosing(ancestors, ast.ClassDef)
    if function is None:
        # A class-level finding (a model missing `_repeated_blocks`): what it costs, its `forward` costs.
        if isinstance(statement, ast.ClassDef) and is_module_class(statement):
            return Cost(Frequency.UNREACHED_FORWARD, owners=(statement.name,))
        return Cost(Frequency.CALL)
    if is_hot(function):  # a cold branch of hot code: the first step, a non-tensor fallback, another backend
        return Cost(Frequency.GENERATION, f"a branch of `{function.name}` taken on the first step or not on CUDA")
    if function.name == "__init__" or is_cached(function):
        return Cost(Frequency.BUILD, f"`{function.name}`")
    if cls is not None and PIPELINE_TEXT in source.segment(cls):
        return Cost(Frequency.GENERATION, f"`{cls.name}.{function.name}` runs outside the denoising loop")
    return Cost(Frequency.CALL, f"`{function.name}`")


def _deepest_statement(source: SourceFile, line: int) -> tuple[ast.AST, Ancestors] | None:
    """The innermost statement on `line`, with its ancestors (asked twice per finding: its cost, its pattern)."""
    return source.memo(f"deepest_statement:{line}", lambda: _walked_to_statement(source, line))


def _walked_to_statement(source: SourceFile, line: int) -> tuple[ast.AST, Ancestors] | None:
    found = None
    for node, ancestors in source.walk_lines([line], kinds=ast.stmt):
        found = (node, ancestors)
    return found


def _last_step_branch(chain: Ancestors, statement: ast.AST) -> bool:
    """Inside `if i == len(timesteps) - 1:` (or `== num_inference_steps - 1`), or in the `else` of `if sigma > 0:`
    (a schedule value reaches zero only at the schedule's end)."""
    path = (*chain, statement)
    for position, node in enumerate(path[:-1]):
        child = path[position + 1]
        if not isinstance(node, ast.If):
            continue
        if any(child is s for s in node.body) and _is_last_step_test(node.test):
            return True
        if any(child is s for s in node.orelse) and _is_positive_schedule_test(node.test):
            return True
    return False


def _is_positive_schedule_test(test: ast.expr) -> bool:
    """`sigma > 0`, `variance > 0.0`: false only where the schedule ends."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Gt)):
        return False
    right, left = test.comparators[0], ast.unparse(test.left)
    positive = isinstance(right, ast.Constant) and right.value == 0
    return positive and any(word in left for word in _SCHEDULE_WORDS)


def _is_last_step_test(test: ast.expr) -> bool:
    if isinstance(test, ast.BoolOp):
        return isinstance(test.op, ast.And) and any(_is_last_step_test(value) for value in test.values)
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    text = ast.unparse(test)
    return text.endswith(" - 1") and ("timesteps" in text or "num_inference_steps" in text)


def pattern_tokens(finding: Finding, source: SourceFile) -> str:
    """Two keys, space-separated, that `grouped_patterns` joins: the flagged code's text (formatting aside), and
    the statement holding it, so that the same expression anywhere, and sibling sites of one statement (a
    reorder's `torch.cat([x[m], y[n], ...])`), fall into one pattern."""
    lines = source.lines[finding.line - 1 : finding.end_line]
    if lines:
        lines = [*lines[:-1], lines[-1][: finding.end_column]] if len(lines) > 1 else [lines[0][: finding.end_column]]
        lines[0] = lines[0][finding.column :]
    shape = " ".join(" ".join(lines).split())
    chain = _deepest_statement(source, finding.line)
    statement = f"{finding.path}:{chain[0].lineno}" if chain is not None else f"{finding.path}:{finding.line}"
    return f"{_digest(finding.code, shape)} {_digest(finding.code, statement)}"


def grouped_patterns(findings: list[Finding]) -> list[Finding]:
    """The findings with one pattern key per group of findings that share a token (`pattern_tokens`)."""
    parent: dict[str, str] = {}

    def root(token: str) -> str:
        while parent.setdefault(token, token) != token:
            token = parent[token]
        return token

    for finding in findings:
        tokens = finding.pattern.split()
        for token in tokens[1:]:
            first, other = root(tokens[0]), root(token)
            parent[max(first, other)] = min(first, other)
    return [replace(f, pattern=root(f.pattern.split()[0])) if f.pattern else f for f in findings]


def _digest(code: str, text: str) -> str:
    return f"{code}:{hashlib.blake2b(text.encode(), digest_size=6).hexdigest()}"


@dataclass(frozen=True)
class ModelReach:
    """The tree's model classes, by how often its pipelines run their `forward`."""

    per_step: dict[str, str]  # class -> the pipeline whose denoising loop runs it (or a model that builds it)
    per_call: dict[str, str]  # class -> a pipeline that only runs it outside its denoising loop
    pipelines: int  # how many the tree has: with none (a file alone, a snippet), no forward can be placed

    @classmethod
    def of(cls, index: ProjectIndex, graph_code: str) -> ModelReach:
        """`graph_code`: the rule whose facts hold each file's module graph and pipelines (DIF003's)."""
        tree = denoising(index, graph_code)
        per_step = _built_closure(index, graph_code, tree.per_step)
        per_call = _built_closure(index, graph_code, tree.registered)
        per_call = {name: pipeline for name, pipeline in per_call.items() if name not in per_step}
        return cls(per_step, per_call, tree.pipelines)

    def apply(self, finding: Finding) -> Finding:
        """The finding with its cost resolved against the tree, and its message saying it exactly."""
        if finding.cost is None:
            return finding
        cost = self.resolve(finding.cost)
        return replace(finding, cost=cost, message=exact_message(finding.message, cost))

    def resolve(self, cost: Cost) -> Cost:
        if cost.frequency is not Frequency.UNREACHED_FORWARD:
            return cost
        if not self.pipelines:
            # Nothing in the run calls models: a model's `forward` keeps the benefit of the doubt.
            names = ", ".join(f"`{owner}`" for owner in cost.owners)
            return Cost(Frequency.MODEL_FORWARD, f"{names}; no pipeline in the run shows how often")
        for owner in cost.owners:
            if owner in self.per_step:
                return Cost(Frequency.MODEL_FORWARD, f"`{owner}`, which `{self.per_step[owner]}` runs per step")
        for owner in cost.owners:
            if owner in self.per_call:
                where = f"`{owner}.forward`: `{self.per_call[owner]}` runs it outside its denoising loop"
                return Cost(Frequency.GENERATION, where)
        return replace(cost, where=", ".join(f"`{owner}`" for owner in cost.owners))


def _built_closure(index: ProjectIndex, code: str, roots: dict[str, str]) -> dict[str, str]:
    """`roots` and every class their `__init__`s build (transitively, factories followed), with the classes
    each derives from (an inherited `forward` runs as the subclass's): class -> the pipeline that runs it."""
    found: dict[str, str] = {}
    pending = list(roots.items())
    while pending:
        name, pipeline = pending.pop()
        if name in found:
            continue
        found[name] = pipeline
        pending.extend((base, pipeline) for base in lineage(index, name)[1:])
        for defined in index.classes(name):
            graph = graph_of(index, defined.path, code)
            parts = graph.classes.get(name) if graph is not None else None
            if parts is None:
                continue
            pending.extend((built, pipeline) for built in (*parts.builds, *parts.stacks, *parts.appended))
            for factory, module in parts.factories:
                where = (index.module_path(module) if module else defined.path) or ""
                factory_graph = graph_of(index, where, code) if where else None
                returned = factory_graph.factories.get(factory) if factory_graph is not None else None
                pending.extend((built, pipeline) for built in returned or ())
    return found


def exact_message(message: str, cost: Cost) -> str:
    """The rule's message with its generic "every denoising step" / "every call of `f`" made exact."""
    return _GENERIC_WHEN.sub(lambda _: cost.text(), message, count=1)
