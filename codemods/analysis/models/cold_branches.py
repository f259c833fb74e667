"""Branches that hot code takes only once or never on CUDA, so what they run is cold.

An `if` whose test says the branch runs only for non-tensor inputs (`if not torch.is_tensor(t):`, `if not
isinstance(t, torch.Tensor):`), only under export or tracing (`torch.compiler.is_exporting()`), only on a
scheduler's first step (`if self.step_index is None:`), or only on another backend than CUDA (`if
x.device.type in {"mps", "npu"}:`, `if XLA_AVAILABLE:`).
"""

from __future__ import annotations

import ast

from codemods.source import dotted_name

_EXPORT_ONLY = {"is_exporting", "is_tracing", "is_scripting"}
_STEP_INDEX = {"step_index", "_step_index"}
# Device types other than CUDA: a path for one of them is one CUDA never takes.
OTHER_BACKENDS = {"mps", "npu", "xla", "xpu", "cpu", "hpu", "musa"}
_OTHER_BACKEND_FLAGS = {"XLA_AVAILABLE", "is_torch_xla_available", "is_torch_npu_available", "is_mps"}


def in_cold_branch(branch: ast.If, child: ast.AST) -> bool:
    """Whether `child`, a statement of `branch`, runs only where hot code is cold (see the module docstring)."""
    kind = _branch_kind(branch.test)
    if kind is None:
        return False  # most tests: which block holds `child` does not matter
    if kind == "tensor":  # `if torch.is_tensor(t):` -> the else branch handles Python numbers
        return any(child is statement for statement in branch.orelse)
    # "not tensor", "export", "first step", "other backend": the body is the cold branch.
    return any(child is statement for statement in branch.body)


def _branch_kind(test: ast.expr) -> str | None:
    if _is_first_step_test(test):
        return "first step"
    if is_other_backend_test(test):
        return "other backend"
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if negated else test
    if isinstance(inner, ast.Call):
        name = (dotted_name(inner.func) or "").rsplit(".", 1)[-1]
        if name == "is_tensor" or (name == "isinstance" and _mentions_tensor_type(inner)):
            return "not tensor" if negated else "tensor"
        if name in _EXPORT_ONLY and not negated:
            return "export"
    return None


def _is_first_step_test(test: ast.expr) -> bool:
    """`self.step_index is None` (alone or first in an `or`): true once per generation."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or):
        return all(_is_first_step_test(value) for value in test.values)
    return (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, ast.Attribute)
        and test.left.attr in _STEP_INDEX
        and isinstance(test.left.value, ast.Name)
        and test.left.value.id == "self"
    )


def is_other_backend_test(test: ast.expr) -> bool:
    """`if x.device.type == "mps":`, `in {"mps", "npu"}`, `if XLA_AVAILABLE:`: a path CUDA never takes."""
    name = dotted_name(test.func if isinstance(test, ast.Call) else test) or ""
    if name.rsplit(".", 1)[-1] in _OTHER_BACKEND_FLAGS:
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq | ast.In)):
        return False
    if not (isinstance(test.left, ast.Attribute) and test.left.attr == "type"):
        return False
    right = test.comparators[0]
    values = right.elts if isinstance(right, ast.Set | ast.Tuple | ast.List) else [right]
    return bool(values) and all(isinstance(v, ast.Constant) and v.value in OTHER_BACKENDS for v in values)


def _mentions_tensor_type(call: ast.Call) -> bool:
    return len(call.args) == 2 and any((dotted_name(n) or "").endswith("Tensor") for n in ast.walk(call.args[1]))
