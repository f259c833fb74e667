from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from codemods.analysis.models.output_proof import OutputForm, output_form
from codemods.analysis.models.output_reads import OutputRead, output_read, return_dict_blocker
from codemods.edits.call_layout import Layout, add_keyword_argument, argument_layout
from codemods.findings import Cost, Edit, Finding, Fix, FixSafety, Frequency
from codemods.lazy import libcst as cst
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, enclosing
from codemods.triggers import AnyOf

if TYPE_CHECKING:
    import libcst

_ADDED = "return_dict=False"
_NO_LAYOUT = "the rewritten line must be re-wrapped around more than this call; fix by hand, then `make style`"
_MIXED_FORMS = "the classes the callee may be return a tuple or the value itself under `return_dict=False`"
_SELF_CALL = (
    "a model reading its own method's output: built once per call, and traced away under torch.compile "
    '(no measured effect, docs/dif004-evidence.md); `[tool.codemod] opt-in = ["DIF004-self-calls"]` fixes it'
)

# The callee of the examples below: its `forward` returns `(out,)` or `Output(sample=out)`.
_MODEL = (
    "class Model:\n"
    "    def forward(self, x, return_dict: bool = True):\n"
    "        out = x * 2\n"
    "        if not return_dict:\n"
    "            return (out,)\n"
    "        return Output(sample=out)\n\n\n"
)


class OutputAttributeAccess(Rule):
    """
    ## What it does
    Finds `.sample` / `.prev_sample` (or `["sample"]`) read off the output of a diffusers model or
    scheduler call, such as `self.unet(...).sample`, `self.scheduler.step(...).prev_sample`,
    `attn(hidden_states).sample` in a loop over `self.attentions`, or `unet(...).sample` in a
    training script, where the classes the callee may be are known (a pipeline's `__init__`
    annotations, a model's submodules and `ModuleList`s, locals assigned from those, from
    `X.from_pretrained(...)`, or through `accelerator.prepare` / `unwrap_model`) and their source
    proves that `return_dict=False` returns the same tensor first.

    ## Why is this bad?
    The call builds a `BaseOutput` dataclass just to read one field: about ten Python calls and
    a few microseconds per read in eager mode, paid on every denoising step by a pipeline's UNet
    and scheduler calls. It is not a graph break: `BaseOutput` is a pytree node, and Dynamo
    traces it (torch 2.13: same graphs, breaks and recompiles with either form). diffusers' own
    pipelines use the tuple form; the fix makes the rest read the same.

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
    project's line length is wrapped the way `ruff format` (diffusers' `make style`) wraps it. An
    explicit `return_dict=True` is flipped. A callee that returns the value itself rather than a
    tuple under `if not return_dict:` (Kandinsky 5's transformer: `return x`) is read without `[0]`:
    `self.transformer(..., return_dict=True).sample` becomes `self.transformer(..., return_dict=False)`.

    ## Fix safety
    Safe: the fix is offered only when every class the callee can be has a `return_dict`
    parameter that the call does not already fill, returns a tuple under `if not return_dict:`,
    and that tuple's first item is the value its output dataclass stores in the field read (or,
    for every class alike, returns that value itself: then no `[0]`; classes that differ in the
    form are reported without a fix).
    A call that unpacks `**name` is fixed only where the function proves which keys the dict can
    hold and `return_dict` is not one of them: one assignment of a dict display with string keys,
    or of a call to a method of the same class that returns such a local (a pipeline's
    `prepare_extra_step_kwargs`: `eta`, `generator`), then only `name["key"] = ...` stores.
    Calls with `*args`, or a `**` dict built any other way, are reported without a fix. `.sample(...)` method calls (`latent_dist.sample(generator)`) and fields other than the
    first (`.pred_original_sample`) are never touched. A function's reads of one callee change
    together or not at all: if one cannot be fixed, the others are reported without a fix.
    A model reading its own method's output (`self._decode(z).sample` in `decode`) is reported
    without a fix unless the target opts in (`[tool.codemod] opt-in = ["DIF004-self-calls"]`):
    measured, it saves nothing (see Evidence).

    ## Evidence
    diffusers PRs #4315 and #5453 made this change by hand across the Stable Diffusion
    pipelines. `benchmarks/dif004_output_access.py` (docs/dif004-evidence.md) measured tiny
    models of diffusers 0.42.1 before and after the rewrite, on torch 2.13: graphs, graph breaks,
    recompiles and `fullgraph=True` results are identical in every case. In eager mode each read
    rewritten removes one dataclass, about 3-4 us (`UNet2DConditionOutput` 3.1 us,
    `DDIMSchedulerOutput` 4.6 us, against 0.4 us for a tuple); with the callee compiled
    (`torch.compile(pipe.unet)`) the compiled module builds no dataclass either way. A model's
    reads of its own methods (AutoencoderKL `decode`/`forward`) run once per generation and vanish
    under compile: report-only. A pipeline's reads recur every step (a 10-step DDIM generation
    builds 21 output objects before, 1 after): fixed by default.
    """

    code = "DIF004"
    name = "output-attribute-access"
    summary = "`.sample` read off a model/scheduler output; use `return_dict=False)[0]`"
    fix_safeties = (FixSafety.SAFE,)
    opt_ins = ("self-calls",)
    trigger = AnyOf(r"\.(?:prev_)?sample\b", r"\[\s*[\"'](?:prev_)?sample[\"']\s*\]")
    trigger_text = ("sample",)

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        sites = []
        for node, ancestors in source.walk_lines(
            source.lines_matching(self.trigger), kinds=(ast.Attribute, ast.Subscript)
        ):
            read = output_read(node, ancestors, source)
            if read is None:
                continue
            statement = next(n for n in reversed(ancestors) if isinstance(n, ast.stmt))
            scope = enclosing(ancestors, (ast.FunctionDef, ast.AsyncFunctionDef))
            blocker = return_dict_blocker(read.call, scope, enclosing(ancestors, ast.ClassDef))
            site = _Site(read, scope, statement, blocker)
            if site.blocker is None:
                # The tuple form's layout decides whether the site can be fixed; the other is laid out for a fix only.
                site.layout = _layout(source, site, _TUPLE, tree)
                site.blocker = _NO_LAYOUT if site.layout is None else None
            sites.append(site)
        for group in _by_callee(sites):
            _all_or_none(group, source)
            requires = tuple(
                dict.fromkeys(("returns_first", t, s.read.method, s.read.field) for s in group for t in s.read.types)
            )
            positional = max(len(s.read.call.args) for s in group)
            for site in group:
                if site.blocker is None and site.read.own_method and not self.opted_in(tree, "self-calls"):
                    site.blocker = _SELF_CALL
                yield self._finding(source, tree, site, requires, positional)

    def _finding(self, source: SourceFile, tree: TreeInfo, site: _Site, requires: tuple, positional: int) -> Finding:
        read = site.read
        fix = None
        bare_fix = None
        if site.blocker is None and site.layout is not None:
            fix = self._fix(source, read, _TUPLE, site.layout)
            # Which form the callee returns is known only in `resolve`, which has no source to lay the call out.
            bare_layout = _layout(source, site, _BARE, tree)
            bare_fix = None if bare_layout is None else self._fix(source, read, _BARE, bare_layout)
        problem = f"`{read.access}` read off `{ast.unparse(read.call.func)}(...)` builds an output dataclass"
        return self.finding(
            source,
            read.node,
            _TUPLE.message(problem),
            fix,
            requires=requires,
            not_fixed_reason=site.blocker,
            cost=Cost(Frequency.NO_EFFECT, "docs/dif004-evidence.md") if site.blocker == _SELF_CALL else None,
            positional=positional,
            problem=problem,
            bare_fix=bare_fix,
        )

    def _fix(self, source: SourceFile, read: OutputRead, rewrite: _Rewrite, layout: Layout) -> Fix:
        target = source.ref(read.node, type(read.node).__name__)
        return self.fix(rewrite.fix, Edit(target, rewrite.edit, layout))

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        # Every site of one callee in a function asks for the same proof, so they stand or fall together.
        forms: set[OutputForm] = set()
        for _, type_name, method, field in finding.requires:
            for class_name in index.expand_types(type_name):
                form = output_form(class_name, method, field, finding.extra["positional"], index)
                if form is None:
                    return None
                forms.add(form)
        if forms == {"tuple"}:
            return finding
        # A callee that may return the value itself is read without `[0]`; where both forms stand behind
        # it, `return_dict=False` is all the message can advise.
        message = _BARE.message(finding.extra["problem"])
        if finding.fix is None:
            return replace(finding, message=message)
        if forms == {"bare"} and finding.extra["bare_fix"] is not None:
            return replace(finding, message=message, fix=finding.extra["bare_fix"])
        # Both forms behind one callee (no single rewrite reads the value), or no layout without `[0]`.
        reason = _MIXED_FORMS if forms != {"bare"} else _NO_LAYOUT
        return replace(finding, message=message, fix=None, not_fixed_reason=reason)

    def edit_first_output(self, node: libcst.BaseExpression, wrap: str, indent: str) -> libcst.BaseExpression:
        call = node.value
        updated_call = add_keyword_argument(call, "return_dict", cst.Name("False"), wrap=wrap, indent=indent)
        index = cst.SubscriptElement(slice=cst.Index(value=cst.Integer("0")))
        if isinstance(node, cst.Subscript):
            return node.with_changes(value=updated_call, slice=[index])
        return cst.Subscript(value=updated_call, slice=[index], lpar=node.lpar, rpar=node.rpar)

    def edit_field_value(self, node: libcst.BaseExpression, wrap: str, indent: str) -> libcst.BaseExpression:
        """`call(...).sample` -> `call(..., return_dict=False)`, for a callee that returns the value itself."""
        call = add_keyword_argument(node.value, "return_dict", cst.Name("False"), wrap=wrap, indent=indent)
        return call.with_changes(lpar=[*node.lpar, *call.lpar], rpar=[*call.rpar, *node.rpar])

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
            _MODEL + "class Pipe:\n"
            "    def __init__(self, unet: Model):\n"
            "        self.register_modules(unet=unet)\n\n"
            "    def __call__(self, x):\n"
            "        return self.unet(x).sample\n",
            _MODEL + "class Pipe:\n"
            "    def __init__(self, unet: Model):\n"
            "        self.register_modules(unet=unet)\n\n"
            "    def __call__(self, x):\n"
            "        return self.unet(x, return_dict=False)[0]\n",
        ),
        Example(
            _MODEL + "class Block(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        self.layers = nn.ModuleList([Model() for _ in range(n)])\n\n"
            "    def forward(self, x):\n"
            "        for layer in self.layers:\n"
            "            x = layer(x).sample\n"
            "        return x\n",
            _MODEL + "class Block(nn.Module):\n"
            "    def __init__(self, n):\n"
            "        self.layers = nn.ModuleList([Model() for _ in range(n)])\n\n"
            "    def forward(self, x):\n"
            "        for layer in self.layers:\n"
            "            x = layer(x, return_dict=False)[0]\n"
            "        return x\n",
        ),
    )


@dataclass(frozen=True)
class _Rewrite:
    """How a read is rewritten for one form the callee returns under `return_dict=False`."""

    suffix: str  # what follows the rewritten call: `[0]` after a tuple, nothing after the value itself
    edit: str  # the `edit_<name>` method that rewrites it
    fix: str  # the fix's description
    advice: str  # what the finding's message asks for

    def message(self, problem: str) -> str:
        return f"{problem}; {self.advice}"


_TUPLE = _Rewrite("[0]", "first_output", f"pass `{_ADDED}` and index `[0]`", f"pass `{_ADDED}` and take `[0]`")
_BARE = _Rewrite("", "field_value", f"pass `{_ADDED}`", f"pass `{_ADDED}`")


@dataclass
class _Site:
    read: OutputRead
    scope: ast.AST | None  # the function the read is in
    statement: ast.stmt  # the statement the read is in, which the layout must keep within the line length
    blocker: str | None  # why this site cannot be fixed (None: it can)
    layout: Layout | None = None  # the tuple form's layout; laid out only for a call nothing else blocks


def _layout(source: SourceFile, site: _Site, rewrite: _Rewrite, tree: TreeInfo) -> Layout | None:
    span = source.span(site.read.node)
    rest = source.lines[span.end_line - 1][span.end_column :]
    return argument_layout(source, site.read.call, _ADDED, tree.line_length, site.statement, rewrite.suffix, rest)


def _by_callee(sites: list[_Site]) -> list[list[_Site]]:
    """Sites grouped by function and callee (`self._decode` in `decode`), in source order. A name bound
    to other classes elsewhere in the function (`attn` in two loops) is another callee there."""
    groups: dict[tuple, list[_Site]] = {}
    for site in sites:
        read = site.read
        groups.setdefault((id(site.scope), ast.unparse(read.call.func), read.types, read.method), []).append(site)
    return list(groups.values())


def _all_or_none(group: list[_Site], source: SourceFile) -> None:
    """A callee's reads in one function are fixed together or not at all: half a method is a change
    a maintainer would send back (`decode` with one branch in each form)."""
    blocked = next((site for site in group if site.blocker is not None), None)
    if blocked is None:
        return
    line = source.span(blocked.read.node).line
    callee = ast.unparse(blocked.read.call.func)
    for site in group:
        if site.blocker is None:
            site.blocker = (
                f"`{callee}(...)` is also read at line {line}, where it cannot be fixed; "
                "a function's reads of one callee change together or not at all"
            )
