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

from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.place import Place
from codemods.analysis.values.enclosing import module_functions
from codemods.source import SourceFile, dotted_name, statements

if TYPE_CHECKING:
    from codemods.analysis.placement.placer import Placer

# Decorators that hand the call's arguments to the function and its result back unchanged.
_TRANSPARENT_DECORATORS = ("cache", "no_grad", "inference_mode")


class ModuleCalls:
    """The top-level functions of one file, placed per call."""

    def __init__(self, tree: ast.Module) -> None:
        self.functions = module_functions(tree)
        self._results: dict[tuple, Place] = {}

    def call_place(self, caller: Placer, call: ast.Call) -> Place | None:
        """Where `call`'s result lives, `call` a call of a function of this file by its name; None for any other call."""
        function = self.functions.get(call.func.id) if isinstance(call.func, ast.Name) else None
        if function is None:
            return None
        given = _given(function, call, caller)
        if given is None or not all(_transparent(d) for d in function.decorator_list):
            return Place.UNKNOWN
        key = (id(function), tuple(sorted(given.items())), caller.annotations)
        if key not in self._results:
            self._results[key] = Place.UNKNOWN  # a recursion guard: a call under way places nothing
            self._results[key] = _returned(
                FunctionPlaces(function, annotations=caller.annotations, given=given, module=self)
            )
        return self._results[key]


def _given(function: ast.FunctionDef, call: ast.Call, caller: Placer) -> dict[str, Place] | None:
    """Where each parameter's value lives in this call (a default: Python where it is a constant); None: not known."""
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    arguments = function.args
    positional = [*arguments.posonlyargs, *arguments.args]
    if len(call.args) > len(positional):
        return None
    passed = {a.arg: value for a, value in zip(positional, call.args, strict=False)}
    passed.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(arguments.defaults) :], arguments.defaults))
    defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
    given = {}
    for parameter in (*positional, *arguments.kwonlyargs):
        if parameter.arg in passed:
            given[parameter.arg] = caller.place(passed[parameter.arg])
        elif parameter.arg in defaults:
            given[parameter.arg] = Place.PYTHON if isinstance(defaults[parameter.arg], ast.Constant) else Place.UNKNOWN
        else:
            return None
    return given


def _returned(places: FunctionPlaces) -> Place:
    returns = [s.value for s in statements(places.function.body) if isinstance(s, ast.Return)]  # type: ignore[union-attr]
    found = {places.place(value) if value is not None else Place.PYTHON for value in returns}
    return next(iter(found)) if len(found) == 1 and found <= {Place.DEVICE, Place.HOST} else Place.UNKNOWN


def _transparent(decorator: ast.expr) -> bool:
    name = (dotted_name(decorator.func if isinstance(decorator, ast.Call) else decorator) or "").rsplit(".", 1)[-1]
    return any(word in name for word in _TRANSPARENT_DECORATORS)


def module_calls(source: SourceFile) -> ModuleCalls:
    return source.memo("module_calls", lambda: ModuleCalls(source.tree))
