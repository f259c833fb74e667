"""What the placement tables ask of the function and the class they place values in.

`FunctionPlaces` (function_places) places a function's values and hands itself to the tables kept in
their own modules (call_places, device_places, discarded_results), which ask it back about operands:
a mutual recursion by design. These protocols are that contract, so the tables import no placer and the
placer imports no `ClassPlaces` (class_places) to be annotated: no import circle.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from codemods.analysis.placement.place import Place
    from codemods.analysis.values.bindings import FunctionBindings


class MethodOwner(Protocol):
    """The class a placed function is a method of (`ClassPlaces`)."""

    @property
    def is_module(self) -> bool: ...

    @property
    def components(self) -> frozenset[str]: ...

    @property
    def methods(self) -> Mapping[str, ast.FunctionDef | ast.AsyncFunctionDef]: ...

    def attribute_place(self, name: str) -> Place: ...

    def returned_place(self, method_name: str, annotations: bool = True) -> Place: ...

    def returned_item_place(self, method_name: str, position: int) -> Place: ...

    def submodule_item_place(self, name: str, position: int) -> Place: ...

    def instance_call_place(self, name: str, annotations: bool) -> Place: ...

    def passed_place(
        self, method: ast.FunctionDef | ast.AsyncFunctionDef, parameter: ast.arg, annotations: bool
    ) -> Place: ...


class ModuleScope(Protocol):
    """The functions of the file a placed function is in (`ModuleCalls`, module_calls)."""

    def call_place(self, caller: Placer, call: ast.Call, path: tuple[int, ...] = ()) -> Place | None: ...


class Placer(Protocol):
    """A function whose values are being placed (`FunctionPlaces`)."""

    function: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    cls: MethodOwner | None
    module: ModuleScope | None
    bindings: FunctionBindings
    annotations: bool

    def place(self, node: ast.expr) -> Place: ...

    def device_place(self, device: ast.expr) -> Place: ...
