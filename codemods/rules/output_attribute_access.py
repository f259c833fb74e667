from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from codemods.analysis.types import Types, attribute_types, local_types
from codemods.facts import MethodFacts, OutputReturn
from codemods.findings import Edit, Finding, FixSafety
from codemods.layout import add_keyword_argument, argument_layout
from codemods.lazy import libcst as cst
from codemods.project import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import Ancestors, SourceFile, enclosing

if TYPE_CHECKING:
    import libcst

_FIELDS = ("sample", "prev_sample")
_ADDED = "return_dict=False"


class OutputAttributeAccess(Rule):
    """
    ## What it does
    Finds `.sample` / `.prev_sample` (or `["sample"]`) read off the output of a diffusers model or
    scheduler call, such as `self.unet(...).sample`, `self.vae.decode(latents).sample` or
    `self.scheduler.step(...).prev_sample`, where the callee is known (from the pipeline's
    `__init__` annotations, the model's own submodules, or a local `X.from_pretrained(...)`) and
    its source proves that `return_dict=False` returns the same tensor first.

    ## Why is this bad?
    The call builds a `BaseOutput` dataclass just to read one field. Under
    `torch.compile(fullgraph=True)` the dataclass is one more object Dynamo must trace through,
    and a common source of graph breaks; diffusers' own pipelines use the tuple form for that
    reason, and it is the fullgraph-friendly idiom in the compile docs.

    ## Example
    ```python
    noise_pred = self.unet(latent_model_input, t, encoder_hidden_states=prompt_embeds).sample
    latents = self.scheduler.step(noise_pred, t, latents, **extra_step_kwargs).prev_sample
    ```

    ## Use instead
    ```python
    noise_pred = self.unet(latent_model_input, t, encoder_hidden_states=prompt_embeds, return_dict=False)[0]
    latents = self.scheduler.step(noise_pred, t, latents, **extra_step_kwargs, return_dict=False)[0]
    ```
    In a multi-line call `return_dict=False,` goes on its own line, last; a line pushed past the
    project's line length is wrapped the way `ruff format` (diffusers' `make style`) wraps it.

    ## Fix safety
    Safe: the fix is offered only when every class the callee can be has a `return_dict`
    parameter that the call does not already fill, returns a tuple under `if not return_dict:`,
    and that tuple's first item is the value its output dataclass stores in the field read.
    Calls with `*args`/`**kwargs` (which may already carry `return_dict`) are reported without a
    fix. `.sample(...)` method calls (`latent_dist.sample(generator)`) and fields other than the
    first (`.pred_original_sample`) are never touched.

    ## Evidence
    diffusers PRs #4315 and #5453 made this change by hand across the Stable Diffusion
    pipelines; the torch.compile guide asks for `return_dict=False` with `fullgraph=True`.
    """

    code = "DIF004"
    name = "output-attribute-access"
    summary = "`.sample` read off a model/scheduler output; use `return_dict=False)[0]`"
    fix_safety = FixSafety.SAFE
    trigger = re.compile(r"\.(?:prev_)?sample\b|\[\s*[\"'](?:prev_)?sample[\"']\s*\]")
    trigger_text = ("sample",)

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        for node, ancestors in source.walk_lines(source.lines_matching(self.trigger)):
            read = _field_read(node, ancestors)
            if read is None:
                continue
            call, field = read
            callee = _callee(call, ancestors, source)
            if callee is None:
                continue
            types, method = callee
            access = f".{field}" if isinstance(node, ast.Attribute) else f'["{field}"]'
            layout = argument_layout(
                source, call, _ADDED, tree.line_length, _statement(ancestors), "[0]", _rest_of_line(source, node)
            )
            blocker = _why_no_fix(call, layout)
            fix = None
            if blocker is None:
                fix = self.fix(
                    f"pass `{_ADDED}` and index `[0]`",
                    Edit(source.ref(node, type(node).__name__), "first_output", layout),
                )
            yield self.finding(
                source,
                node,
                f"`{access}` read off `{ast.unparse(call.func)}(...)` builds an output dataclass; "
                f"pass `{_ADDED}` and take `[0]` (fullgraph-friendly)",
                fix,
                requires=tuple(("returns_first", t, method, field) for t in types),
                not_fixed_reason=blocker,
                positional=len(call.args),
            )

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        for _, type_name, method, field in finding.requires:
            for class_name in index.expand_types(type_name):
                if not _proves(class_name, method, field, finding.extra["positional"], index):
                    return None
        return finding

    def edit_first_output(self, node: libcst.BaseExpression, wrap: str, indent: str) -> libcst.BaseExpression:
        call = node.value
        updated_call = add_keyword_argument(call, "return_dict", cst.Name("False"), wrap=wrap, indent=indent)
        index = cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))
        if isinstance(node, cst.Subscript):
            return node.with_changes(value=updated_call, slice=[index])
        return cst.Subscript(value=updated_call, slice=[index], lpar=node.lpar, rpar=node.rpar)

    valid = (
        # A `.sample(...)` method call is a distribution draw, not an output field.
        "latents = self.vae.encode(image).latent_dist.sample(generator)\n",
        # Not the first field of the output.
        "x0 = self.scheduler.step(noise_pred, t, latents).pred_original_sample\n",
        # The callee is unknown: no proof, no rewrite.
        "def run(model, x):\n    return model(x).sample\n",
    )
    invalid = (
        Example(
            "class Model:\n"
            "    def forward(self, x, return_dict: bool = True):\n"
            "        out = x * 2\n"
            "        if not return_dict:\n"
            "            return (out,)\n"
            "        return Output(sample=out)\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, unet: Model):\n"
            "        self.register_modules(unet=unet)\n\n"
            "    def __call__(self, x):\n"
            "        return self.unet(x).sample\n",
            "class Model:\n"
            "    def forward(self, x, return_dict: bool = True):\n"
            "        out = x * 2\n"
            "        if not return_dict:\n"
            "            return (out,)\n"
            "        return Output(sample=out)\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, unet: Model):\n"
            "        self.register_modules(unet=unet)\n\n"
            "    def __call__(self, x):\n"
            "        return self.unet(x, return_dict=False)[0]\n",
        ),
    )


def _field_read(node: ast.AST, ancestors: Ancestors) -> tuple[ast.Call, str] | None:
    """`call(...).sample` or `call(...)["sample"]` read (not stored, not called as a method)."""
    if isinstance(node, ast.Attribute) and node.attr in _FIELDS and isinstance(node.ctx, ast.Load):
        parent = ancestors[-1] if ancestors else None
        if isinstance(parent, ast.Call) and parent.func is node:
            return None
        field = node.attr
    elif (
        isinstance(node, ast.Subscript)
        and isinstance(node.ctx, ast.Load)
        and isinstance(node.slice, ast.Constant)
        and node.slice.value in _FIELDS
    ):
        field = node.slice.value
    else:
        return None
    return (node.value, field) if isinstance(node.value, ast.Call) else None


def _callee(call: ast.Call, ancestors: Ancestors, source: SourceFile) -> tuple[Types, str] | None:
    """The classes the called object may be and the method that runs (`forward` for a module call)."""
    func = call.func
    method = "forward"
    if isinstance(func, ast.Attribute) and not _is_self(func):
        method, func = func.attr, func.value
    if _is_self(func):
        cls = enclosing(ancestors, ast.ClassDef)
        if cls is None:
            return None
        component = source.memo(f"attribute_types:{id(cls)}", lambda: attribute_types(cls)).get(func.attr)
        if component:
            return component, method
        defines = any(isinstance(n, ast.FunctionDef) and n.name == func.attr for n in cls.body)
        return ((cls.name,), func.attr) if defines and method == "forward" else None
    if isinstance(func, ast.Name):
        scope = enclosing(ancestors, (ast.FunctionDef, ast.AsyncFunctionDef)) or ancestors[0]
        types = source.memo(f"local_types:{id(scope)}", lambda: local_types(scope)).get(func.id)
        return (types, method) if types else None
    return None


def _is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _why_no_fix(call: ast.Call, layout: tuple | None) -> str | None:
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return "the call forwards `*args`/`**kwargs`, which may already carry `return_dict`"
    if any(k.arg == "return_dict" and not (isinstance(k.value, ast.Constant) and k.value.value is True) for k in call.keywords):
        return "the call already sets `return_dict` to something other than True"
    if layout is None:
        return "the rewritten line must be re-wrapped around more than this call; fix by hand, then `make style`"
    return None


def _proves(class_name: str, method: str, field: str, positional: int, index: ProjectIndex, depth: int = 0) -> bool:
    """`method(..., return_dict=False)[0]` is, for every definition it may run, the `.field` of its output."""
    definitions = index.methods(class_name, method)
    if not definitions or depth > 4:
        return False
    return all(_proves_one(class_name, m, field, positional, index, depth) for m in definitions)


def _proves_one(class_name: str, method: MethodFacts, field: str, positional: int, index: ProjectIndex, depth: int) -> bool:
    if not method.takes_return_dict:
        return False
    if "return_dict" in method.positional and positional > method.positional.index("return_dict"):
        return False
    # Delegates receive `return_dict` by keyword, so the caller's positional count does not reach them.
    if not all(_proves(class_name, d, field, 0, index, depth + 1) for d in method.delegates):
        return False
    if not method.tuple_firsts and not method.output_returns:
        return bool(method.delegates)
    firsts = set(method.tuple_firsts)
    if len(firsts) != 1 or not method.output_returns:
        return False
    (first,) = firsts
    return all(_stores_first(output, first, field, index) for output in method.output_returns)


def _stores_first(output: OutputReturn, first: str, field: str, index: ProjectIndex) -> bool:
    """`Output(field=first)`, or `Output(first, ...)` where `field` is the dataclass's first field."""
    if dict(output.keywords).get(field) == first:
        return True
    classes = index.classes(output.output_class)
    return output.positional[:1] == (first,) and bool(classes) and all(c.fields[:1] == (field,) for c in classes)


def _statement(ancestors: Ancestors) -> ast.stmt:
    return next(node for node in reversed(ancestors) if isinstance(node, ast.stmt))


def _rest_of_line(source: SourceFile, node: ast.expr) -> str:
    span = source.span(node)
    return source.lines[span.end_line - 1][span.end_column :]
