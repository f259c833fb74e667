"""Where what a function of the same file returns lives, given where its caller's arguments live.

`attn_mask = _normalize_attn_mask(attn_mask, batch_size, seq_len_kv)` in the varlen attention backends hands a
device mask to a helper that reshapes and reduces it: the helper's returns are placed with its parameters bound
to the places of the arguments of that one call (`FunctionPlaces(..., given=...)`), so the mask stays on the device
for the `nonzero()` that follows. Calls that unpack `*args`/`**kwargs` and helpers under decorators other than a
cache or a grad mode are left `UNKNOWN`.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from codemods.analysis.placement.function_places import FunctionPlaces, function_bindings
from codemods.analysis.placement.place import Place
from codemods.analysis.values.enclosing import module_functions
from codemods.source import SourceFile, dotted_name, statements

if TYPE_CHECKING:
    from codemods.analysis.placement.placer import Placer
    from codemods.analysis.values.bindings import FunctionBindings

# Decorators that hand the call's arguments to the function and its result back unchanged.
_TRANSPARENT_DECORATORS = ("cache", "no_grad", "inference_mode")


class ModuleCalls:
    """The top-level functions of one file, placed per call."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions = module_functions(tree)
        self._results: dict[tuple, Place] = {}
        self._bindings: dict[int, FunctionBindings] = {}
        self._parameters: dict[int, _Parameters] = {}

    def bindings(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> FunctionBindings:
        """One `function_bindings` per function of the file, for every call of it placed (and its own places)."""
        if id(function) not in self._bindings:
            self._bindings[id(function)] = function_bindings(function)
        return self._bindings[id(function)]

    def call_place(self, caller: Placer, call: ast.Call, path: tuple[int, ...] = ()) -> Place | None:
        """Where `call`'s result lives (with `path`, the item at those positions of the tuples it returns: `(_, seqlens_k),
        ... = _prepare_for_flash_attn_or_sage_varlen(...)`), `call` a call of a function of this file by its name;
        None for any other call."""
        function = self.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if function is None:
            return None
        if id(function) not in self._parameters:
            self._parameters[id(function)] = _Parameters(function)
        given = _given(self._parameters[id(function)], call, caller)
        if given is None or not all(_transparent(d) for d in function.decorator_list):
            return Place.UNKNOWN
        key = (id(function), tuple(sorted(given.items())), caller.annotations, path)
        if key not in self._results:
            self._results[key] = Place.UNKNOWN  # a recursion guard: a call under way places nothing
            places = FunctionPlaces(
                function, annotations=caller.annotations, given=given, module=self, bindings=self.bindings(function)
            )
            returns = [s.value for s in statements(function.body) if isinstance(s, ast.Return)]
            found = {self._item_place(places, value, path) if value is not None else Place.PYTHON for value in returns}
            self._results[key] = next(iter(found)) if found in ({Place.DEVICE}, {Place.HOST}) else Place.UNKNOWN
        return self._results[key]

    def _item_place(self, places: FunctionPlaces, value: ast.expr, path: tuple[int, ...]) -> Place:
        """The item at `path` of `value`, a returned expression: through tuple displays, and calls of this file's functions."""
        while path and isinstance(value, ast.Tuple) and len(value.elts) > path[0]:
            if any(isinstance(e, ast.Starred) for e in value.elts):
                return Place.UNKNOWN
            value, path = value.elts[path[0]], path[1:]
        if not path:
            return places.place(value)
        found = self.call_place(places, value, path) if isinstance(value, ast.Call) else None
        return found if found is not None else Place.UNKNOWN


class _Parameters:
    """A function's parameters, as each call of it binds them: worked out once per function, not once per call."""

    def __init__(self, function: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = function.args
        self.positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
        self.names = [*self.positional, *(a.arg for a in arguments.kwonlyargs)]
        defaults = dict(zip(self.positional[len(self.positional) - len(arguments.defaults) :], arguments.defaults))
        defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
        # A default places its parameter: Python where it is a constant.
        self.defaults = {
            name: Place.PYTHON if isinstance(default, ast.Constant) else Place.UNKNOWN
            for name, default in defaults.items()
        }


def _given(parameters: _Parameters, call: ast.Call, caller: Placer) -> dict[str, Place] | None:
    """Where each parameter's value lives in this call (a default: Python where it is a constant); None: not known."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    if len(call.args) > len(parameters.positional):
        return None
    passed = dict(zip(parameters.positional, call.args, strict=False))
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    given = {}
    for name in parameters.names:
        if name in passed:
            given[name] = caller.place(passed[name])
        elif name in parameters.defaults:
            given[name] = parameters.defaults[name]
        else:
            return None
    return given


def _transparent(decorator: ast.expr) -> bool:
    name = (dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator) or "").rsplit(".", 1)[-1]
    return any(word in name for word in _TRANSPARENT_DECORATORS)


def module_calls(source: SourceFile) -> ModuleCalls:
    return source.memo("module_calls", lambda: ModuleCalls(source.tree))
