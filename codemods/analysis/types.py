"""What class an expression holds, as far as one file can tell without running it.

Pipelines declare their components in `__init__` (`unet: UNet2DConditionModel`, then
`self.register_modules(unet=unet)`); models build theirs (`self.proj = Transformer2DModel(...)`);
scripts load them (`unet = UNet2DConditionModel.from_pretrained(...)`). Anything else is
unknown, and unknown means no rewrite.
"""

from __future__ import annotations

import ast

from codemods.source import statements

Types = tuple[str, ...]

_CONSTRUCTORS = ("from_pretrained", "from_config", "from_single_file")
_CONTAINERS = ("list", "tuple", "List", "Tuple", "Sequence")


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


def attribute_types(cls: ast.ClassDef, elements: bool = False) -> dict[str, Types | None]:
    """`self.<name>` -> the classes it may hold, from every assignment in the class (None: unknown).

    `elements`: read annotations as `annotation_types` does with it (a list of A holds A).
    """
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    parameters = _init_parameters(init) if init else {}
    found: dict[str, Types | None] = {}

    def record(name: str, types: Types | None) -> None:
        if name in found and (found[name] is None or types is None):
            found[name] = None
        else:
            found[name] = tuple(dict.fromkeys((*(found.get(name) or ()), *(types or ())))) if types is not None else None

    def value_types(value: ast.expr) -> Types | None:
        if isinstance(value, ast.Name) and value.id in parameters:
            return annotation_types(parameters[value.id], elements)
        return constructed_type(value)

    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in (statement for method in methods for statement in statements(method.body)):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if _is_self_attribute(target):
                    record(target.attr, value_types(node.value))
        elif isinstance(node, ast.AnnAssign) and node.value is not None and _is_self_attribute(node.target):
            record(node.target.attr, value_types(node.value))
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_register_modules(node.value):
            for keyword in node.value.keywords:
                if keyword.arg:
                    record(keyword.arg, value_types(keyword.value))
    return found


def registered_components(cls: ast.ClassDef) -> tuple[str, ...]:
    """The names a pipeline registers as components: the keywords of its `self.register_modules(...)` calls."""
    found: list[str] = []
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    for node in (statement for method in methods for statement in statements(method.body)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and _is_register_modules(node.value):
            found.extend(keyword.arg for keyword in node.value.keywords if keyword.arg)
    return tuple(dict.fromkeys(found))


def local_types(scope: ast.AST) -> dict[str, Types | None]:
    """Plain names in `scope` (a function or module) bound only to one kind of model; None when bound otherwise."""
    found: dict[str, Types | None] = {}

    def bind(name: str, types: Types | None) -> None:
        found[name] = types if name not in found or found[name] == types else None

    if isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
        for name, annotation in _init_parameters(scope).items():
            bind(name, annotation_types(annotation))
    for node in ast.walk(scope):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                types = constructed_type(node.value) if isinstance(target, ast.Name) else None
                for name in _names(target):
                    bind(name, types)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.NamedExpr | ast.For | ast.AsyncFor):
            value = getattr(node, "value", None) if isinstance(node, ast.AnnAssign) else None
            for name in _names(node.target):
                bind(name, constructed_type(value) if value is not None else None)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                for name in _names(item.optional_vars):
                    bind(name, None)
    return found


def _names(target: ast.AST | None) -> list[str]:
    if target is None:
        return []
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _is_self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _is_register_modules(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Attribute)
        and node.func.attr == "register_modules"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
    )
