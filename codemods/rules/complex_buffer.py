from __future__ import annotations

import ast
from collections.abc import Iterator

from codemods.findings import Finding
from codemods.node_index import nodes_within
from codemods.project.index import TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, dotted_name, enclosing
from codemods.triggers import Trigger

_COMPLEX_DTYPES = {"complex64", "complex128", "complex32", "cfloat", "cdouble", "chalf"}
_COMPLEX_MAKERS = {"polar", "view_as_complex", "complex"}
# Results that are real even when their input is complex.
_REAL_RESULTS = {"real", "imag", "abs", "angle", "view_as_real"}
# diffusers' RoPE helper returns `torch.polar(...)` unless `use_real=True`.
_COMPLEX_HELPERS = {"get_1d_rotary_pos_embed": "use_real"}


class ComplexBuffer(Rule):
    """
    ## What it does
    Finds `self.register_buffer(name, value)` where `value` is a complex tensor: made by
    `torch.polar`, `torch.view_as_complex`, `torch.complex`, a `complex64`/`complex128` dtype,
    a complex Python constant, diffusers' `get_1d_rotary_pos_embed` without `use_real=True`,
    or a local name or method of the class that returns one of those.

    ## Why is this bad?
    `model.to(torch.bfloat16)` (and `torch_dtype=` in `from_pretrained`) casts every floating
    or complex buffer to the new dtype: a complex RoPE table becomes real and silently loses its
    imaginary part, and the model's output is wrong with no error. QwenImage keeps its complex
    RoPE tables as plain attributes for this reason ("DO NOT USING REGISTER BUFFER HERE, IT
    WILL CAUSE COMPLEX NUMBERS LOSE ITS IMAGINARY PART").

    ## Example
    ```python
    freqs = torch.polar(torch.ones_like(freqs), freqs)
    self.register_buffer("freqs", freqs, persistent=False)
    ```

    ## Use instead
    ```python
    # real cos/sin tables survive `model.to(dtype)` (Wan, #11649) ...
    self.register_buffer("freqs_cos", freqs.cos(), persistent=False)
    self.register_buffer("freqs_sin", freqs.sin(), persistent=False)
    # ... or a plain attribute, moved to the device once per device (QwenImage)
    self.freqs = torch.polar(torch.ones_like(freqs), freqs)
    ```

    ## Fix safety
    No fix: both remedies change how the table is stored and used (a real cos/sin pair changes
    the attention code; a plain attribute is no longer moved by `model.to(device)`).

    ## Evidence
    The comment in QwenImage's `QwenEmbedRope.__init__`; diffusers #11649 replaced Wan 2.1's
    complex RoPE table by real cos/sin buffers.
    """

    code = "DIF008"
    name = "complex-buffer"
    summary = "complex tensor registered as a buffer: `model.to(dtype)` drops its imaginary part"
    fix_safeties = ()
    trigger = Trigger(r"register_buffer\(", "register_buffer(")

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        for node, ancestors in source.walk_lines(source.lines_matching(self.trigger), kinds=ast.Call):
            if not _is_register_buffer(node) or len(node.args) < 2 and not _keyword(node, "tensor"):
                continue
            value = node.args[1] if len(node.args) >= 2 else _keyword(node, "tensor")
            function = enclosing(ancestors, (ast.FunctionDef, ast.AsyncFunctionDef))
            cls = enclosing(ancestors, ast.ClassDef)
            why = _complex_origin(value, function, cls, depth=0)
            if why is None:
                continue
            name = ast.unparse(node.args[0]) if node.args else "the buffer"
            yield self.finding(
                source,
                node,
                f"buffer {name} holds a complex tensor ({why}): `model.to(dtype)` casts buffers and drops its "
                "imaginary part; register real cos/sin tables, or keep it as a plain attribute",
            )

    valid = (
        (
            "import torch\n\n\n"
            "class Rope(torch.nn.Module):\n"
            "    def __init__(self, freqs):\n"
            "        super().__init__()\n"
            '        self.register_buffer("freqs_cos", freqs.cos(), persistent=False)\n'
        ),
        # A plain attribute is not cast by `model.to(dtype)`.
        (
            "import torch\n\n\n"
            "class Rope(torch.nn.Module):\n"
            "    def __init__(self, freqs):\n"
            "        super().__init__()\n"
            "        self.freqs = torch.polar(torch.ones_like(freqs), freqs)\n"
        ),
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "class Rope(torch.nn.Module):\n"
            "    def __init__(self, freqs):\n"
            "        super().__init__()\n"
            "        freqs = torch.polar(torch.ones_like(freqs), freqs)\n"
            '        self.register_buffer("freqs", freqs, persistent=False)\n'
        ),
    )


def _is_register_buffer(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "register_buffer"


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _complex_origin(value: ast.expr, function: ast.AST | None, cls: ast.AST | None, depth: int) -> str | None:
    """What makes `value` complex (`torch.polar(...)`, ...), or None if nothing shows it is."""
    if depth > 8:
        return None
    if isinstance(value, ast.Constant) and isinstance(value.value, complex):
        return f"the complex constant `{ast.unparse(value)}`"
    if isinstance(value, ast.BinOp):
        return _complex_origin(value.left, function, cls, depth + 1) or _complex_origin(
            value.right, function, cls, depth + 1
        )
    if isinstance(value, ast.Subscript):
        return _complex_origin(value.value, function, cls, depth + 1)
    if isinstance(value, ast.List | ast.Tuple):  # `torch.cat([...])`: complex if a part is
        return next((f for f in (_complex_origin(e, function, cls, depth + 1) for e in value.elts) if f), None)
    if isinstance(value, ast.Name) and function is not None:
        return _name_origin(value.id, function, cls, depth)
    if not isinstance(value, ast.Call):
        return None
    name = dotted_name(value.func) or ""
    short = name.rsplit(".", 1)[-1]
    dtype = _keyword(value, "dtype")
    if dtype is not None and (dotted_name(dtype) or "").rsplit(".", 1)[-1] in _COMPLEX_DTYPES:
        return f"`dtype={ast.unparse(dtype)}`"
    if name.startswith("torch.") and short in _COMPLEX_MAKERS:
        return f"`{name}(...)`"
    if short in _COMPLEX_HELPERS:
        flag = _keyword(value, _COMPLEX_HELPERS[short])
        if flag is None or isinstance(flag, ast.Constant) and flag.value is False:
            return f"`{short}(...)` without `{_COMPLEX_HELPERS[short]}=True` returns `torch.polar(...)`"
        return None
    if isinstance(value.func, ast.Attribute):
        receiver = value.func.value
        if short in ("to", "type") and value.args:
            target = (dotted_name(value.args[0]) or "").rsplit(".", 1)[-1]
            if target in _COMPLEX_DTYPES:
                return f"`.{short}({ast.unparse(value.args[0])})`"
        if isinstance(receiver, ast.Name) and receiver.id == "self" and cls is not None:
            return _method_origin(short, cls, depth)
        if short in _REAL_RESULTS:
            return None
        if name.startswith("torch."):
            for argument in value.args[:1]:  # the tensor operand of `torch.cat(...)`, `torch.outer(...)`
                found = _complex_origin(argument, function, cls, depth + 1)
                if found:
                    return found
            return None
        return _complex_origin(receiver, function, cls, depth + 1)
    return None


def _name_origin(name: str, function: ast.AST, cls: ast.AST | None, depth: int) -> str | None:
    """A local name bound to a complex value, or a list built by appending complex values."""
    for node in nodes_within(function, ast.Assign | ast.Call, breadth_first=True):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            found = _complex_origin(node.value, function, cls, depth + 1)
            if found:
                return found
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "append"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == name
            and node.args
        ):
            found = _complex_origin(node.args[0], function, cls, depth + 1)
            if found:
                return found
    return None


def _method_origin(method: str, cls: ast.AST, depth: int) -> str | None:
    for item in getattr(cls, "body", ()):
        if isinstance(item, ast.FunctionDef) and item.name == method:
            returns = [n.value for n in nodes_within(item, ast.Return, breadth_first=True) if n.value is not None]
            found = [_complex_origin(r, item, cls, depth + 1) for r in returns]
            if returns and all(found):
                return f"`self.{method}()` returns {found[0]}"
    return None
