"""Where a class keeps its tensors: `self.<name>` on the device, on the host, or a component to call.

- nn.Module classes: registered buffers and parameters follow `model.to()` (device); submodules
  are modules; tensors built once in `__init__` and never reassigned stay where they were made
  (the host), which is why QwenImage moves its RoPE tables per call.
- Schedulers: what `set_timesteps` leaves in an attribute (`self.timesteps = ....to(device)` is on
  the device, `self.sigmas = sigmas.to("cpu")` on the host). A scheduler's sigmas left on the
  device are DIF002's (it knows the fix): they read as UNKNOWN here, so no other rule reports them.
- Pipelines: components registered with `register_modules` are modules.
- Plain helper classes (no base): what `__init__` left in an attribute no other method reassigns; an object of
  one a class of the file builds and calls (`self.smoothing(x)`) returns where its `__call__` does.
"""

from __future__ import annotations

import ast
import weakref
from functools import cached_property

from codemods.analysis.models.attributes import class_attributes
from codemods.analysis.models.hot_paths import is_module_class, is_scheduler
from codemods.analysis.placement.function_places import FunctionPlaces
from codemods.analysis.placement.method_calls import (
    attribute_assignments,
    built_class,
    callers,
    is_own_statement,
    passed_argument,
)
from codemods.analysis.placement.module_calls import module_calls
from codemods.analysis.placement.place import Place, join
from codemods.node_index import method_calls_within, parent_of
from codemods.source import Ancestors, SourceFile, dotted_name, statements

Function = ast.FunctionDef | ast.AsyncFunctionDef
# Set up by `set_timesteps`; what `__init__` put there is replaced before any step runs.
_SCHEDULE_SETTER = "set_timesteps"


class ClassPlaces:
    def __init__(self, cls: ast.ClassDef, source: SourceFile | None = None) -> None:
        self.cls = cls
        self.source = source
        self._attributes: dict[str, Place] = {}
        self._in_progress: set[str] = set()
        self._functions: dict[int, FunctionPlaces] = {}
        self._returning: set[tuple[str, int]] = set()  # returned items being worked out (a recursion guard)
        self._returns: dict[str, list[ast.expr | None]] = {}  # the values of each method's `return`s
        self._traced: dict[int, FunctionPlaces] = {}  # `annotations=False` places of the callers of a helper
        self._passing: set[tuple[int, str, bool]] = set()  # parameters being placed from their callers (a guard)
        self._callers: dict[int, list[tuple[Function, ast.Call]] | None] = {}  # per helper: a walk of every method

    @cached_property
    def methods(self) -> dict[str, Function]:
        return {n.name: n for n in self.cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}

    @cached_property
    def is_scheduler(self) -> bool:
        return is_scheduler(self.cls)

    @cached_property
    def is_module(self) -> bool:
        return is_module_class(self.cls)

    @cached_property
    def components(self) -> frozenset[str]:
        """Names registered with `self.register_modules(name=...)` (a pipeline's models and scheduler)."""
        found = set()
        for method in self.methods.values():
            # From the index of method calls, not a walk of every statement of every method.
            for call in method_calls_within(method, "register_modules"):
                if is_own_statement(method, parent_of(call)):  # the call is a statement of its own
                    found.update(k.arg for k in call.keywords if k.arg)
        return frozenset(found)

    def function(self, function: Function) -> FunctionPlaces:
        if id(function) not in self._functions:
            # A weak back-reference: a cycle here would keep every parsed tree alive in the scan
            # workers, which run with the garbage collector off. The bindings are the file's, shared with
            # every other placing of the method (`schedule_on_device`, a call of it).
            module = module_calls(self.source) if self.source is not None else None
            bindings = module.bindings(function) if module is not None else None
            self._functions[id(function)] = FunctionPlaces(
                function, weakref.proxy(self), module=module, bindings=bindings
            )
        return self._functions[id(function)]

    def attribute_place(self, name: str) -> Place:
        if name in self._attributes:
            return self._attributes[name]
        if name in self._in_progress:
            return Place.PENDING
        self._in_progress.add(name)
        place = self._attribute_place(name)
        self._in_progress.discard(name)
        self._attributes[name] = place
        return place

    def _attribute_place(self, name: str) -> Place:
        if name in self.components:
            return Place.MODULE
        if self.is_module:
            return self._module_attribute_place(name)
        if self.is_scheduler:
            place = self._scheduler_attribute_place(name)
            return Place.UNKNOWN if name == "sigmas" and place is not Place.HOST else place
        # A plain helper class, no base (LEdits++'s `LeditsGaussianSmoothing`): nothing but its own methods can
        # reassign what `__init__` left on it, and no `.to()` moves it.
        init = self.methods.get("__init__")
        if self.cls.bases or self.cls.keywords or init is None:
            return Place.UNKNOWN
        if any(self.function(m).assigns(f"self.{name}") for m in self.methods.values() if m is not init):
            return Place.UNKNOWN
        return self.exit_place(init, name)

    @cached_property
    def _class_attributes(self):
        return class_attributes(self.cls, source=self.source)

    def _module_attribute_place(self, name: str) -> Place:
        attributes = self._class_attributes
        if name in attributes.buffers:
            return Place.DEVICE
        if name in attributes.registered:
            return Place.DEVICE if name in self._parameters else Place.MODULE
        if name in attributes.init_tensors and name not in attributes.changed_after_init:
            return Place.HOST
        return Place.UNKNOWN

    @cached_property
    def _parameters(self) -> frozenset[str]:
        found = set()
        for node in (s for method in self.methods.values() for s in statements(method.body)):
            is_call = isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            if is_call and (dotted_name(node.value.func) or "").rsplit(".", 1)[-1] in ("Parameter", "Buffer"):
                found.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
        return frozenset(found)

    def _scheduler_attribute_place(self, name: str) -> Place:
        setter = self.methods.get(_SCHEDULE_SETTER)
        if setter is not None and self.function(setter).assigns(f"self.{name}"):
            return self.exit_place(setter, name)
        found: Place | None = None
        for method in self.methods.values():
            if self.function(method).assigns(f"self.{name}"):
                found = join(found, self.exit_place(method, name))
        return found if found not in (None, Place.PENDING) else Place.UNKNOWN

    def returned_place(self, method_name: str, annotations: bool = True) -> Place:
        """Where `self.<method_name>(...)`'s result lives: DEVICE (HOST) where every `return` gives a device (CPU) tensor."""
        return self._returned(method_name, None, annotations)

    def returned_item_place(self, method_name: str, position: int) -> Place:
        """Where item `position` of `self.<method_name>(...)`'s result lives, when every return is a tuple
        display (`return latents, target_mask, shapes`): DEVICE where each return's item is, else UNKNOWN."""
        return self._returned(method_name, position, True)

    def _returned(self, method_name: str, position: int | None, annotations: bool) -> Place:
        method = self.methods.get(method_name)
        key = (method_name, -1 if position is None else position)
        if method is None or key in self._returning:
            return Place.UNKNOWN
        if method_name not in self._returns:  # asked again for each call of the method placed
            self._returns[method_name] = [s.value for s in statements(method.body) if isinstance(s, ast.Return)]
        returns = self._returns[method_name]
        if position is None:
            values = [value for value in returns if value is not None]
        elif all(
            isinstance(value, ast.Tuple)
            and len(value.elts) > position
            and not any(isinstance(e, ast.Starred) for e in value.elts[: position + 1])
            for value in returns
        ):
            values = [value.elts[position] for value in returns]  # type: ignore[union-attr]
        else:
            return Place.UNKNOWN
        if not values or len(values) != len(returns):
            return Place.UNKNOWN
        self._returning.add(key)
        places = self._placer(method, annotations)
        found = {places.place(value) for value in values}
        self._returning.discard(key)
        if position is None and found == {Place.HOST}:
            return Place.HOST  # `get_num_transfer_tokens`: built on the CPU whatever it is handed
        return Place.DEVICE if found == {Place.DEVICE} else Place.UNKNOWN

    def submodule_item_place(self, name: str, position: int) -> Place:
        """Where item `position` of `self.<name>(...)`'s result lives, `self.<name>` a module of a class of this file
        (`topk_idx, topk_weight, aux_loss = self.gate(x)`): what its `forward` returns there."""
        if self.source is None or not self.is_module:
            return Place.UNKNOWN
        built = built_class(self.source.classes, self.methods.values(), name)
        if built is None or not is_module_class(built) or built is self.cls:
            return Place.UNKNOWN
        return class_places(self.source, built).returned_item_place("forward", position)

    def instance_call_place(self, name: str, annotations: bool) -> Place:
        """Where `self.<name>(...)`'s result lives, `self.<name>` built from a plain class of this file that defines
        `__call__` (LEdits++'s `self.smoothing = LeditsGaussianSmoothing(self.device)`): where that `__call__` returns."""
        built = built_class(self.source.classes, self.methods.values(), name) if self.source else None
        if built is None or built is self.cls or is_module_class(built):
            return Place.UNKNOWN
        return class_places(self.source, built).returned_place("__call__", annotations)  # type: ignore[arg-type]

    def passed_place(self, method: Function, parameter: ast.arg, annotations: bool) -> Place:
        """Where the value every `self.<method>(...)` call of this class passes for `parameter` lives: DEVICE where
        each is (`annotations` as in `FunctionPlaces`), else UNKNOWN. A helper only this class calls sees nothing else."""
        key = (id(method), parameter.arg, annotations)
        if id(method) not in self._callers:
            self._callers[id(method)] = callers(self.methods.values(), method)
        found = self._callers[id(method)] if key not in self._passing else None
        if found is None:
            return Place.UNKNOWN
        self._passing.add(key)
        places = set()
        for caller, call in found:
            value = passed_argument(method, call, parameter)
            places.add(self._placer(caller, annotations).place(value) if value is not None else Place.UNKNOWN)
            if places != {Place.DEVICE}:
                break
        self._passing.discard(key)
        return Place.DEVICE if places == {Place.DEVICE} else Place.UNKNOWN

    def _placer(self, method: Function, annotations: bool) -> FunctionPlaces:
        if annotations:
            return self.function(method)
        if id(method) not in self._traced:
            self._traced[id(method)] = self.function(method).without_annotations()
        return self._traced[id(method)]

    def may_exit_on_device(self, method: Function, name: str) -> bool:
        """Whether some path through `method` leaves `self.<name>` on the device."""
        places = self.function(method)
        return any(places.may_be_on_device(value) for _, value in self._exit_assignments(method, name))

    def _exit_assignments(self, method: Function, name: str) -> list[tuple[ast.stmt, ast.expr]]:
        """The assignments of `self.<name>` that may hold when `method` returns."""
        assignments = attribute_assignments(method, name)
        last_top_level = max(
            (i for i, (statement, _) in enumerate(assignments) if statement in method.body), default=None
        )
        return assignments[last_top_level:] if last_top_level is not None else assignments

    def exit_place(self, method: Function, name: str) -> Place:
        """Where `self.<name>` lives when `method` returns: its last assignment, unless branches follow it."""
        considered = self._exit_assignments(method, name)
        if not considered:
            return Place.UNKNOWN
        places = self.function(method)
        found: Place | None = None
        for _, value in considered:
            found = join(found, places.place(value))
        return found if found not in (None, Place.PENDING) else Place.UNKNOWN


def places_at(source: SourceFile, ancestors: Ancestors) -> FunctionPlaces | None:
    """The places of the function a node is in (its class's attributes included, for a method)."""
    for position in range(len(ancestors) - 1, -1, -1):
        function = ancestors[position]
        if isinstance(function, Function):
            break
    else:
        return None
    parent = ancestors[position - 1] if position > 0 else None
    cache: dict[int, object] = source.memo("function_places", dict)
    if id(function) not in cache:
        if isinstance(parent, ast.ClassDef):
            if id(parent) not in cache:
                cache[id(parent)] = ClassPlaces(parent, source)
            cache[id(function)] = cache[id(parent)].function(function)  # type: ignore[union-attr]
        else:
            module = module_calls(source)
            cache[id(function)] = FunctionPlaces(function, module=module, bindings=module.bindings(function))
    return cache[id(function)]  # type: ignore[return-value]


# What a finding adds when only an annotation puts its value on the device (`value`: the value's source text).
PLACEMENT_UNKNOWN = (
    "; placement unknown: `{value}` is on the device only as far as a type annotation says; nothing here shows where "
    "it was made or moved"
)


def traced_places_at(source: SourceFile, ancestors: Ancestors) -> FunctionPlaces | None:
    """`places_at`, where a parameter's tensor annotation alone places nothing on the device: `DEVICE` here rests
    on where the function makes or moves the value (a factory's `device=`, `.to`, a model's output, a buffer)."""
    found = places_at(source, ancestors)
    if found is None:
        return None
    cache: dict[int, FunctionPlaces] = source.memo("traced_function_places", dict)
    if id(found.function) not in cache:
        cache[id(found.function)] = found.without_annotations()
    return cache[id(found.function)]


def class_places(source: SourceFile, cls: ast.ClassDef) -> ClassPlaces:
    cache: dict[int, object] = source.memo("function_places", dict)
    if id(cls) not in cache:
        cache[id(cls)] = ClassPlaces(cls, source)
    return cache[id(cls)]  # type: ignore[return-value]
