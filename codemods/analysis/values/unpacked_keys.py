"""The keys a `**name` dict can hold where a function unpacks it, proved from where the function builds it.

diffusers pipelines pass their scheduler's optional arguments as `**extra_step_kwargs`, built by
the pipeline's own `prepare_extra_step_kwargs` (`{}` plus `["eta"]` and `["generator"]` when the
scheduler's `step` takes them), and a VAE's as `**decode_kwargs` (`{}` plus `["num_frames"]`).
Which keys such a dict may hold is a matter of where it is written: one assignment of a dict
display with string keys (or of a call to a method of the same class whose every `return` hands
back such a local), then only `name["key"] = ...` stores. Any other use of the name (passed to a
call that might add to it, `update`, a computed key, a parameter, a second assignment) leaves the
keys unproved. The proof is flow-insensitive: every key stored anywhere counts, so it over-approximates.
"""

from __future__ import annotations

import ast

from codemods.node_index import in_walk_order, names_within, nodes_within, parent_of

Function = ast.FunctionDef | ast.AsyncFunctionDef

# Calls followed into a method of the same class (`self.prepare_extra_step_kwargs(...)` built from a helper).
_MAX_DEPTH = 2


def unpacked_keys(name: str, function: Function, owner: ast.ClassDef | None) -> frozenset[str] | None:
    """Every key `**name` can carry in `function` (a method of `owner`, if any); None when unproved."""
    return _local_keys(name, function, owner, returned=False, depth=0)


def _local_keys(
    name: str, function: Function, owner: ast.ClassDef | None, returned: bool, depth: int
) -> frozenset[str] | None:
    arguments = function.args
    parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg, arguments.kwarg]
    if any(p is not None and p.arg == name for p in parameters):
        return None
    keys: set[str] = set()
    built: frozenset[str] | None = None
    for node in in_walk_order(names_within(function, name)):
        parent = parent_of(node)
        if isinstance(parent, ast.Assign) and parent.targets == [node]:
            if built is not None:
                return None  # one assignment only: a second could rebind it to anything
            built = _value_keys(parent.value, owner, depth)
            if built is None:
                return None
        elif isinstance(parent, ast.keyword) and parent.arg is None:
            continue  # `f(**name)` reads the dict and leaves it as it is
        elif returned and isinstance(parent, ast.Return):
            continue
        elif (key := _stored_key(node, parent)) is not None:
            keys.add(key)
        else:
            return None
    return None if built is None else built | keys


def _stored_key(node: ast.Name, parent: ast.AST) -> str | None:
    """`"k"` for `name["k"] = ...` (the name being the subscript's value, stored to)."""
    if isinstance(parent, ast.Subscript) and parent.value is node and isinstance(parent.ctx, ast.Store):
        key = parent.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str):
            return key.value
    return None


def _value_keys(value: ast.expr, owner: ast.ClassDef | None, depth: int) -> frozenset[str] | None:
    if isinstance(value, ast.Dict):
        keys = [k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None for k in value.keys]
        return None if None in keys else frozenset(keys)  # a `**other` entry has key None
    if isinstance(value, ast.Call) and owner is not None and depth < _MAX_DEPTH:
        method = _own_method(value.func, owner)
        if method is not None:
            return _returned_keys(method, owner, depth + 1)
    return None


def _own_method(func: ast.expr, owner: ast.ClassDef) -> Function | None:
    """The method `self.m` names, when `owner` defines it itself (an inherited one is not looked up)."""
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    for statement in owner.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and statement.name == func.attr:
            if any(not _is_staticmethod(d) for d in statement.decorator_list):
                return None
            return statement
    return None


def _is_staticmethod(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


def _returned_keys(method: Function, owner: ast.ClassDef, depth: int) -> frozenset[str] | None:
    """The keys of every dict `method` returns: each `return` hands back one local built as above."""
    returns = nodes_within(method, ast.Return)
    if not returns or any(not isinstance(r.value, ast.Name) for r in returns):
        return None
    keys: set[str] = set()
    for name in {r.value.id for r in returns}:
        local = _local_keys(name, method, owner, returned=True, depth=depth)
        if local is None:
            return None
        keys |= local
    return frozenset(keys)
