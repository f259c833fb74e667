"""Tensors built from constants: `torch.tensor([0.5, 0.25])`, `torch.tensor(self.vae.config.latents_mean)`.

Their values never change, so DIF001 reports a copy of one to the device on every call.
"""

from __future__ import annotations

import ast

from codemods.source import dotted_name

_TENSOR_FACTORIES = {"torch.tensor", "torch.Tensor", "torch.as_tensor"}


def constant_tensor(node: ast.expr) -> bool:
    """`torch.tensor(<literal or config value>)`, possibly followed by `.view(...)`-like calls."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        if dotted_name(node.func) in _TENSOR_FACTORIES:
            return bool(node.args) and is_constant(node.args[0])
        node = node.func.value
    return False


def is_constant(node: ast.expr) -> bool:
    """A number, a list of numbers, or a value read from a config (`self.vae.config.latents_mean`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float | complex) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return is_constant(node.operand)
    if isinstance(node, ast.List | ast.Tuple):
        return bool(node.elts) and all(is_constant(e) for e in node.elts)
    return "config" in (dotted_name(node) or "").split(".")[:-1]
