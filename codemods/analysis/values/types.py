"""What class an expression holds, as far as one file can tell without running it.

Pipelines declare their components in `__init__` (`unet: UNet2DConditionModel`, then
`self.register_modules(unet=unet)`); models build theirs (`self.proj = Transformer2DModel(...)`,
`self.attentions = nn.ModuleList(attentions)` after `attentions.append(Transformer2DModel(...))`);
scripts load them (`unet = UNet2DConditionModel.from_pretrained(...)`) and hand them through
accelerate (`accelerator.prepare(unet)`, `accelerator.unwrap_model(unet)`). Locals follow the
assignments that reach their use (`unet = self.unet`, `for attn in self.attentions`). Anything
else is unknown, and unknown means no rewrite.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from codemods.analysis.values.binding_sites import Binding
from codemods.analysis.values.bindings import FunctionBindings
from codemods.node_index import method_calls_within
from codemods.source import SourceFile, dotted_name, self_attribute, statements

Types = tuple[str, ...]
Function = ast.FunctionDef | ast.AsyncFunctionDef

_CONSTRUCTORS = ("from_pretrained", "from_config", "from_single_file")
_CONTAINERS = ("list", "tuple", "List", "Tuple", "Sequence")
_UNWRAPPERS = ("unwrap_model",)


def annotation_types(node: ast.expr | None, elements: bool = False) -> Types | None:
    """Class names an annotation allows (`A | B`, `Optional[A]`, `"A"`); None if any part is not a plain class.

    With `elements`, a container stands for what it holds (`list[A]`, `tuple[A, ...]` -> A): what a
    component may be made of rather than what it is.
    """
    if node is None:
        return None
    if isinstance(node, ast.Constant) and node.value is None:
        return ()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            return annotation_types(ast.parse(node.value, mode="eval").body, elements)
        except SyntaxError:
            return None
    if isinstance(node, ast.Name):
        return (node.id,)
    if isinstance(node, ast.Attribute):
        return (node.attr,)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = annotation_types(node.left, elements), annotation_types(node.right, elements)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name | ast.Attribute):
        wrapper = node.value.id if isinstance(node.value, ast.Name) else node.value.attr
        if wrapper not in ("Optional", "Union") and not (elements and wrapper in _CONTAINERS):
            return None
        members = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        found: list[str] = []
        for member in members:
            if elements and isinstance(member, ast.Constant) and member.value is Ellipsis:
                continue  # `tuple[A, ...]`
            types = annotation_types(member, elements)
            if types is None:
                return None
            found.extend(types)
        return tuple(found)
    return None


def constructed_type(value: ast.expr) -> Types | None:
    """`Foo(...)`, `Foo.from_pretrained(...)` -> ("Foo",)."""
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    if isinstance(func, ast.Attribute) and func.attr in _CONSTRUCTORS:
        func = func.value
    if isinstance(func, ast.Name) and func.id[:1].isupper():
        return (func.id,)
    if isinstance(func, ast.Attribute) and func.attr[:1].isupper():
        return (func.attr,)
    return None


def _init_parameters(init: ast.FunctionDef) -> dict[str, ast.expr | None]:
    args = init.args
    return {a.arg: a.annotation for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}


def class_memo(
    source: SourceFile, compute: Callable[[ast.ClassDef], dict[str, Types | None]], cls: ast.ClassDef
) -> dict[str, Types | None]:
    """`compute(cls)` (`element_types`) once per class of `source`, however many rules ask; shared, so never to be
    changed."""
    return source.memo(f"{compute.__name__}:{id(cls)}", lambda: compute(cls))


def class_attribute_types(source: SourceFile, cls: ast.ClassDef, elements: bool = False) -> dict[str, Types | None]:
    """`self.<name>` -> the classes it may hold, from every assignment in `cls` of `source` (None: unknown); `elements`:
    annotations read as `annotation_types` does with it (a list of A holds A).

    Once per class, however many rules ask (a pipeline's attribute types: DIF002's facts, DIF004, DIF005; DIF003's
    facts with `elements`), its methods walked once for both readings; shared, so never to be changed."""
    bindings = source.memo(f"self_bindings:{id(cls)}", lambda: _self_bindings(cls))
    return source.memo(f"attribute_types:{elements}:{id(cls)}", lambda: _bound_types(cls, bindings, elements))


def _self_bindings(cls: ast.ClassDef) -> list[tuple[str, ast.expr]]:
    """Each `self.<name>` its methods bind and the value bound (`self.x = v`, `self.x: T = v`,
    `self.register_modules(x=v)`), in the order met; nested functions and classes left out."""
    found: list[tuple[str, ast.expr]] = []
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in (statement for method in methods for statement in statements(method.body)):
        if isinstance(node, ast.Assign):
            found.extend((name, node.value) for name in filter(None, map(self_attribute, node.targets)))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and (name := self_attribute(node.target)):
            found.append((name, node.value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_register_modules(node.value):
            found.extend((keyword.arg, keyword.value) for keyword in node.value.keywords if keyword.arg)
    return found


def _bound_types(cls: ast.ClassDef, bindings: list[tuple[str, ast.expr]], elements: bool) -> dict[str, Types | None]:
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    parameters = _init_parameters(init) if init else {}
    found: dict[str, Types | None] = {}
    for name, value in bindings:
        if isinstance(value, ast.Name) and value.id in parameters:
            types = annotation_types(parameters[value.id], elements)
        else:
            types = constructed_type(value)
        if name in found and (found[name] is None or types is None):
            found[name] = None
        else:
            found[name] = (
                tuple(dict.fromkeys((*(found.get(name) or ()), *(types or ())))) if types is not None else None
            )
    return found


def registered_components(cls: ast.ClassDef) -> tuple[str, ...]:
    """The names a pipeline registers as components: the keywords of its `self.register_modules(...)` calls."""
    if not method_calls_within(cls, "register_modules"):
        return ()  # a class that registers nothing (most of a pipeline's file): no method walked
    found: list[str] = []
    methods = [
        n
        for n in cls.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and method_calls_within(n, "register_modules")
    ]
    for node in (statement for method in methods for statement in statements(method.body)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_register_modules(node.value):
            found.extend(keyword.arg for keyword in node.value.keywords if keyword.arg)
    return tuple(dict.fromkeys(found))


class LocalTypes:
    """What class a local name holds where it is used, in one function: every assignment that may
    reach the use must say (a constructor, an annotated parameter, a component `self.unet`, an
    element of a `ModuleList`, a wrapper that hands its model back); one that does not makes it unknown.
    """

    def __init__(
        self, function: Function, attributes: dict[str, Types | None], elements: dict[str, Types | None]
    ) -> None:
        self.bindings = FunctionBindings(function)
        self.attributes = attributes  # `self.<name>` -> classes (attribute_types)
        self.elements = elements  # `self.<name>` -> classes of its elements (element_types)

    def of(self, name: str, use: ast.AST, seen: frozenset[int] = frozenset()) -> Types | None:
        reaching = self.bindings.reaching(name, use)
        if not reaching:
            return None
        found: list[str] = []
        for binding in reaching:
            if id(binding) in seen:
                continue  # a loop feeding a name back to itself adds no class of its own
            types = self._binding(binding, seen | {id(binding)})
            if types is None:
                return None
            found.extend(types)
        return tuple(dict.fromkeys(found))

    def value(self, value: ast.expr, seen: frozenset[int] = frozenset()) -> Types | None:
        """The classes an expression evaluates to (None: unknown)."""
        if isinstance(value, ast.IfExp):
            branches = (self.value(value.body, seen), self.value(value.orelse, seen))
            return None if None in branches else tuple(dict.fromkeys(branches[0] + branches[1]))
        if isinstance(value, ast.Name):
            return self.of(value.id, value, seen)
        attribute = self_attribute(value)
        if attribute is not None:
            return self.attributes.get(attribute)
        if isinstance(value, ast.Subscript) and self_attribute(value.value) is not None:
            return self.elements.get(self_attribute(value.value))  # `self.attentions[i]`
        wrapped = unwrapped(value)
        if wrapped is not None:
            return self.value(wrapped, seen)
        return constructed_type(value)

    def _binding(self, binding: Binding, seen: frozenset[int]) -> Types | None:
        if binding.kind == "parameter" and binding.argument is not None:
            return annotation_types(binding.argument.annotation)
        if binding.kind == "value" and binding.value is not None:
            return self.value(binding.value, seen)
        if binding.kind == "element" and binding.value is not None:
            iterable = binding.value.value if isinstance(binding.value, ast.Subscript) else binding.value  # `[1:]`
            attribute = self_attribute(iterable)
            return self.elements.get(attribute) if attribute is not None else None
        if binding.kind == "item" and _is_prepare(binding.value):
            # `unet, optimizer = accelerator.prepare(unet, optimizer)`: each item is its argument, wrapped.
            arguments = binding.value.args  # type: ignore[union-attr]
            return self.value(arguments[binding.position], seen) if binding.position < len(arguments) else None
        return None


def unwrapped(value: ast.expr) -> ast.expr | None:
    """The model a wrapper call hands back: `accelerator.unwrap_model(m)`, a script's own `unwrap_model(m)`,
    `accelerator.prepare(m)`. Their results forward `return_dict` to the model's own `forward`."""
    if not isinstance(value, ast.Call) or len(value.args) != 1:
        return None
    name = dotted_name(value.func) or ""
    if name.rsplit(".", 1)[-1] in _UNWRAPPERS or _is_prepare(value):
        return value.args[0]
    return None


def _is_prepare(value: ast.expr | None) -> bool:
    """`accelerator.prepare(...)` (accelerate): hands back each argument, wrapped for distributed training."""
    return isinstance(value, ast.Call) and dotted_name(value.func) == "accelerator.prepare"


def _is_register_modules(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_modules"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )
