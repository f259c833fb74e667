"""What a module's `__init__` stacks in `nn.ModuleList`s, and how its file binds the stacked class names.

`compile_repeated_blocks` matches class names against `type(module).__name__`, so a stacked class
counts only under the name it was defined with: `nn.ModuleList([FooBlock(...) for _ in range(n)])`
stacks `FooBlock` when the file defines or imports `FooBlock` under that name, once.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from codemods.source import dotted_name

REPEATED_BLOCKS = "_repeated_blocks"
_BLOCK_NAME = re.compile(r"Block|Layer$")


@dataclass
class Stacks:
    """What a class stacks in `nn.ModuleList`s."""

    blocks: list[str] = field(default_factory=list)
    wrapped: dict[str, list[str]] = field(default_factory=dict)  # wrapper class -> the block classes it wraps
    variables: list[str] = field(default_factory=list)  # `block_cls(...)`: a class held in a variable

    def problem(self) -> str | None:
        if self.wrapped:
            wrapper, inner = next(iter(self.wrapped.items()))
            listed = ", ".join(f"`{i}`" for i in dict.fromkeys(inner))
            return f"`{wrapper}` wraps other blocks ({listed}); choose which classes to compile by hand"
        if self.variables:
            return f"the stacked class is held in `{self.variables[0]}`; name it in `{REPEATED_BLOCKS}` by hand"
        return None


@dataclass
class ClassNames:
    """How the file binds class names: defined here, imported (with the name they were defined under), or both."""

    defined: dict[str, int]
    imported: dict[str, str | None]  # bound name -> original name
    models: set[str]  # classes defined here that are themselves ModelMixin subclasses

    def why_unclear(self, name: str) -> str | None:
        times = self.defined.get(name, 0) + (name in self.imported)
        if times > 1:
            return f"`{name}` is bound more than once in this file; which class the model stacks is unclear"
        if times == 0:
            return f"`{name}` is neither defined nor imported by name in this file"
        original = self.imported.get(name)
        if original is not None and original != name:
            return f"`{name}` is `{original}` imported under another name; classes are matched by their own name"
        return None


def class_names(tree: ast.Module) -> ClassNames:
    defined: dict[str, int] = {}
    imported: dict[str, str | None] = {}
    models: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            defined[node.name] = defined.get(node.name, 0) + 1
            if any((dotted_name(b) or "").rsplit(".", 1)[-1] == "ModelMixin" for b in node.bases):
                models.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            for alias in node.names:
                imported[alias.asname or alias.name] = alias.name
    return ClassNames(defined, imported, models)


def is_module_list(node: ast.AST) -> bool:
    """`nn.ModuleList([...])`, `torch.nn.ModuleList(...)`: a call that stacks what its argument holds."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    # The last name first: every call of every `__init__` is asked, and few call a `...ModuleList`.
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return called.endswith("ModuleList") and dotted_name(func) is not None


def collect(listed: ast.expr, stacks: Stacks) -> None:
    """Add what the argument of an `nn.ModuleList(...)` stacks (a comprehension or a literal list of one class)."""
    if isinstance(listed, ast.ListComp | ast.GeneratorExp):
        elements = [listed.elt]
    elif isinstance(listed, ast.List) and len(listed.elts) > 1:
        elements = listed.elts
    else:
        return
    # `A(...) if cond else B(...)`: both classes are stacked.
    units = [u for e in elements for u in ((e.body, e.orelse) if isinstance(e, ast.IfExp) else (e,))]
    classes = [block_class(u) for u in units]
    if isinstance(listed, ast.List) and len(set(classes)) != 1:
        return  # a literal list of different modules is not a stack
    for unit, name in zip(units, classes):
        if name is None:
            # `block_cls(...)`: a block class chosen at run time; `get_down_block(...)` is a factory, left alone.
            called = unit.func.id if isinstance(unit, ast.Call) and isinstance(unit.func, ast.Name) else ""
            if "block" in called.lower() and called[:1].islower() and not is_block_factory(called):
                stacks.variables.append(called)
            continue
        inner = [c for a in (*unit.args, *(k.value for k in unit.keywords)) for c in [block_class(a)] if c]
        if inner:
            stacks.wrapped.setdefault(name, []).extend(inner)
        stacks.blocks.append(name)


def block_class(node: ast.expr) -> str | None:
    """`FooBlock(...)` -> "FooBlock" for a block-like class called by its plain name (not `nn.X`, not a factory)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name[:1].isupper() and _BLOCK_NAME.search(name) and not name.endswith("Model"):
            return name
    return None


def is_block_name(name: str) -> bool:
    """`Kandinsky3ResNetBlock`, `DecoderLayer`: named as a block, not as a transformer or a model."""
    return bool(_BLOCK_NAME.search(name))


def is_block_factory(name: str) -> bool:
    """`get_down_block`, `get_mid_block`, `_get_up_block_dreamlite`: functions that pick a block class by its type name."""
    return name.lstrip("_").startswith("get_") and "block" in name


def is_model_class(cls: ast.ClassDef) -> bool:
    """A class that may be a ModelMixin subclass deriving only from mixins: no other base (a model class) may define
    `_repeated_blocks` for it already. A base like `LegacyModelMixin` (of `Transformer2DModel`) counts only once the
    tree shows it derives from `ModelMixin` (`FromOriginalModelMixin` does not): the rule's resolve asks."""
    bases = [(dotted_name(b) or "").rsplit(".", 1)[-1] for b in cls.bases]
    return any(b.endswith("ModelMixin") for b in bases) and all(b.endswith("Mixin") for b in bases)


UNREADABLE: list[str] = []


def existing_list(cls: ast.ClassDef) -> list[str] | None:
    """The class's own `_repeated_blocks` (UNREADABLE when it is not a literal list of names); None if it has none."""
    for statement in cls.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == REPEATED_BLOCKS for t in targets):
            value = getattr(statement, "value", None)
            if isinstance(value, ast.List | ast.Tuple) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                return [e.value for e in value.elts]
            return UNREADABLE
    return None
