from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from codemods.findings import Edit, Finding, FixSafety
from codemods.lazy import libcst as cst
from codemods.project import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, dotted_name

if TYPE_CHECKING:
    import libcst

_ATTRIBUTE = "_repeated_blocks"
_AFTER = "_no_split_modules"
_BLOCK_NAME = re.compile(r"Block|Layer$")


class MissingRepeatedBlocks(Rule):
    """
    ## What it does
    Finds a `ModelMixin` subclass whose `__init__` stacks transformer or residual blocks
    (`nn.ModuleList([FooBlock(...) for _ in range(n)])`) but that defines no `_repeated_blocks`,
    and adds `_repeated_blocks = ["FooBlock", ...]`, naming every block class it stacks. Also
    reports an existing `_repeated_blocks` that leaves out a block class the model stacks.

    ## Why is this bad?
    `model.compile_repeated_blocks()` (regional compilation) compiles each submodule whose class
    name is listed in `_repeated_blocks`; without the list it raises, and users fall back to
    compiling the whole model, whose cold-start compile time is far longer for the same speed-up.

    ## Example
    ```python
    class SanaTransformer2DModel(ModelMixin, ConfigMixin):
        _supports_gradient_checkpointing = True
        _no_split_modules = ["SanaTransformerBlock", "PatchEmbed", "SanaModulatedNorm"]

        @register_to_config
        def __init__(self, num_layers: int = 20, ...):
            self.transformer_blocks = nn.ModuleList([SanaTransformerBlock(...) for _ in range(num_layers)])
    ```

    ## Use instead
    ```python
    class SanaTransformer2DModel(ModelMixin, ConfigMixin):
        _supports_gradient_checkpointing = True
        _no_split_modules = ["SanaTransformerBlock", "PatchEmbed", "SanaModulatedNorm"]
        _repeated_blocks = ["SanaTransformerBlock"]
    ```
    The attribute goes right after `_no_split_modules` when there is one, else at the end of the
    class attributes, just before `__init__`.

    ## Fix safety
    Safe: only `compile_repeated_blocks` reads `_repeated_blocks`, and every name listed is a block
    class the model really builds (classes are matched by name, so the name is the one the class
    is defined or imported under in that file). Stacks of `nn.Linear`/torch modules, of whole
    models (`Multi*ControlNetModel.nets`) and factory-built lists (`get_down_block(...)`) are left
    alone. Reported without a fix: stacks of a wrapper around several block classes, of a class
    held in a variable, or of a class whose name cannot be resolved in the file; a model that also
    builds blocks through `get_down_block(...)`-like factories (which of its classes to list is a
    choice); and an existing `_repeated_blocks` that leaves a stacked class out (maybe on purpose).

    ## Evidence
    diffusers PR #11705 added `compile_repeated_blocks`, driven by `_repeated_blocks`, because
    regional compilation suits diffusion models (PyTorch's "Reducing torch.compile cold start
    compilation time with regional compilation" recipe). PRs #12736 (Z-Image), #13019
    (LongCat-Image) and #13496 (ERNIE-Image) each added exactly this one line to a model.
    """

    code = "DIF003"
    name = "missing-repeated-blocks"
    summary = "a model stacks blocks but defines no `_repeated_blocks`; regional compilation cannot find them"
    fix_safety = FixSafety.SAFE
    trigger = re.compile(r"ModuleList\(")

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        models: dict[ast.ClassDef, _Stacks] = {}
        for node, ancestors in source.walk_lines(source.lines_matching(self.trigger)):
            if not (isinstance(node, ast.Call) and (dotted_name(node.func) or "").endswith("ModuleList") and node.args):
                continue
            cls = _model_class(ancestors)
            if cls is not None:
                _collect(node.args[0], models.setdefault(cls, _Stacks()))
        if not models:
            return
        names = source.memo("file_class_names", lambda: _class_names(source.tree))
        for cls, stacks in models.items():
            finding = self._check_model(source, tree, cls, stacks, names)
            if finding is not None:
                yield finding

    def _check_model(
        self, source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, stacks: _Stacks, names: _Names
    ) -> Finding | None:
        blocks = list(dict.fromkeys(stacks.blocks))
        reason = stacks.problem() or (_built_by_factory(cls) if blocks else None)
        if reason is None:
            reason = next((names.why_unclear(b) for b in blocks if names.why_unclear(b)), None)
        blocks = [b for b in blocks if b not in names.models]
        if not blocks and reason is None:
            return None
        existing = _existing(cls)
        if existing is not None:
            missing = [b for b in blocks if b not in existing]
            if not missing or existing is _UNREADABLE:
                return None
            listed = ", ".join(f"`{b}`" for b in missing)
            return self.finding(
                source,
                cls,
                f"`{cls.name}._repeated_blocks` leaves out {listed}, which it stacks; `compile_repeated_blocks()` "
                "will not compile them",
                not_fixed_reason="an existing list is the maintainers' choice; add the classes by hand if they were missed",
                requires=tuple(("block_class", b) for b in missing),
            )
        listed = ", ".join(f"`{b}`" for b in blocks) or "blocks"
        message = f"`{cls.name}` stacks {listed} but defines no `_repeated_blocks`; `compile_repeated_blocks()` cannot find them"
        fix = None
        if reason is None:
            fix = self._fix(source, tree, cls, blocks)
            if isinstance(fix, str):
                fix, reason = None, fix
        return self.finding(
            source, cls, message, fix, not_fixed_reason=reason, requires=tuple(("block_class", b) for b in blocks)
        )

    def _fix(self, source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, blocks: list[str]):
        indent = " " * (cls.body[0].col_offset if cls.body else cls.col_offset + 4)
        quoted = [f'"{b}"' for b in blocks]
        text = f"{_ATTRIBUTE} = [{', '.join(quoted)}]\n"
        if len(indent) + len(text) - 1 > tree.line_length:
            text = f"{_ATTRIBUTE} = [\n" + "".join(f"    {q},\n" for q in quoted) + "]\n"
        position = _insert_position(cls)
        if position is None:
            return "the class has no `__init__` in its body to place the attribute before"
        after, before, blank = position
        params = (("text", text), ("after", after), ("before", before), ("blank_before", blank))
        edit = Edit(source.ref(cls, "ClassDef"), "add_class_attribute", params, inserts=True)
        return self.fix(f"add `{_ATTRIBUTE} = [{', '.join(quoted)}]`", edit)

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        """Drop the finding when a stacked class turns out to be a whole model (defined in another file)."""
        for _, name in finding.requires:
            if any("ModelMixin" in c.bases for c in index.classes(name)):
                return None
        return finding

    def edit_add_class_attribute(
        self, node: libcst.ClassDef, text: str, after: str | None, before: str, blank_before: bool
    ) -> libcst.ClassDef:
        body = list(node.body.body)
        if after is not None:
            position = 1 + next(i for i, s in enumerate(body) if _assigns(s, after))
        else:
            position = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == before)
        statement = cst.parse_statement(text)
        if blank_before:
            statement = statement.with_changes(leading_lines=[cst.EmptyLine(indent=False)])
        following = body[position] if position < len(body) else None
        if isinstance(following, cst.FunctionDef) and not any(
            line.comment is None for line in following.leading_lines[:1]
        ):
            # A method right after the new attribute needs its blank line (ruff format puts one there).
            body[position] = following.with_changes(
                leading_lines=[cst.EmptyLine(indent=False), *following.leading_lines]
            )
        body.insert(position, statement)
        return node.with_changes(body=node.body.with_changes(body=body))

    valid = (
        # Already there.
        (
            'class FooModel(ModelMixin, ConfigMixin):\n    _repeated_blocks = ["FooBlock"]\n\n'
            "    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n"
        ),
        # A list of torch layers, not of blocks.
        (
            "class FooControlNet(ModelMixin, ConfigMixin):\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.controlnet_blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(n)])\n"
        ),
        # A factory-built list: `get_down_block` may return different classes.
        (
            "class FooUNet(ModelMixin, ConfigMixin):\n    def __init__(self, types):\n        super().__init__()\n"
            "        self.down_blocks = nn.ModuleList([get_down_block(t) for t in types])\n"
        ),
    )
    invalid = (
        Example(
            "class FooBlock(nn.Module):\n    pass\n\n\n"
            "class FooModel(ModelMixin, ConfigMixin):\n    _supports_gradient_checkpointing = True\n\n"
            "    @register_to_config\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n",
            "class FooBlock(nn.Module):\n    pass\n\n\n"
            "class FooModel(ModelMixin, ConfigMixin):\n    _supports_gradient_checkpointing = True\n"
            '    _repeated_blocks = ["FooBlock"]\n\n'
            "    @register_to_config\n    def __init__(self, n):\n        super().__init__()\n"
            "        self.blocks = nn.ModuleList([FooBlock() for _ in range(n)])\n",
        ),
    )


_UNREADABLE: list[str] = []


@dataclass
class _Stacks:
    """What a model's `__init__` stacks in `nn.ModuleList`s."""

    blocks: list[str] = field(default_factory=list)
    wrapped: dict[str, list[str]] = field(default_factory=dict)  # wrapper class -> the block classes it wraps
    variables: list[str] = field(default_factory=list)  # `block_cls(...)`: a class held in a variable

    def problem(self) -> str | None:
        if self.wrapped:
            wrapper, inner = next(iter(self.wrapped.items()))
            listed = ", ".join(f"`{i}`" for i in dict.fromkeys(inner))
            return f"`{wrapper}` wraps other blocks ({listed}); choose which classes to compile by hand"
        if self.variables:
            return f"the stacked class is held in `{self.variables[0]}`; name it in `{_ATTRIBUTE}` by hand"
        return None


@dataclass
class _Names:
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


def _built_by_factory(cls: ast.ClassDef) -> str | None:
    """A model that also builds blocks through `get_down_block(...)`-like factories (a UNet, a ControlNet).

    Its stacks seen here are a side part; the repeated units that matter come out of the factory,
    and which of their classes to list (UNet2DConditionModel lists `BasicTransformerBlock`) is a choice.
    """
    init = next(s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__")
    for node in ast.walk(init):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name.startswith("get_") and "block" in name:
                return f"the model also builds blocks with `{name}(...)`; choose the repeated classes by hand"
    return None


def _class_names(tree: ast.Module) -> _Names:
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
    return _Names(defined, imported, models)


def _model_class(ancestors: tuple[ast.AST, ...]) -> ast.ClassDef | None:
    """The class whose `__init__` holds the node, when it derives from ModelMixin and only from mixins."""
    for position in range(len(ancestors) - 1):
        cls, method = ancestors[position], ancestors[position + 1]
        if isinstance(cls, ast.ClassDef) and isinstance(method, ast.FunctionDef) and method.name == "__init__":
            bases = [(dotted_name(b) or "").rsplit(".", 1)[-1] for b in cls.bases]
            # Another base (a model class) may already define `_repeated_blocks`.
            if "ModelMixin" in bases and all(b.endswith("Mixin") for b in bases):
                return cls
            return None
    return None


def _collect(listed: ast.expr, stacks: _Stacks) -> None:
    if isinstance(listed, ast.ListComp | ast.GeneratorExp):
        elements = [listed.elt]
    elif isinstance(listed, ast.List) and len(listed.elts) > 1:
        elements = listed.elts
    else:
        return
    # `A(...) if cond else B(...)`: both classes are stacked.
    units = [u for e in elements for u in ((e.body, e.orelse) if isinstance(e, ast.IfExp) else (e,))]
    classes = [_block_class(u) for u in units]
    if isinstance(listed, ast.List) and len(set(classes)) != 1:
        return  # a literal list of different modules is not a stack
    for unit, name in zip(units, classes):
        if name is None:
            # `block_cls(...)`: a block class chosen at run time; `get_down_block(...)` is a factory, left alone.
            called = unit.func.id if isinstance(unit, ast.Call) and isinstance(unit.func, ast.Name) else ""
            if "block" in called.lower() and called[:1].islower() and not called.startswith("get_"):
                stacks.variables.append(called)
            continue
        inner = [c for a in (*unit.args, *(k.value for k in unit.keywords)) for c in [_block_class(a)] if c]
        if inner:
            stacks.wrapped.setdefault(name, []).extend(inner)
        stacks.blocks.append(name)


def _block_class(node: ast.expr) -> str | None:
    """`FooBlock(...)` -> "FooBlock" for a block-like class called by its plain name (not `nn.X`, not a factory)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name[:1].isupper() and _BLOCK_NAME.search(name) and not name.endswith("Model"):
            return name
    return None


def _existing(cls: ast.ClassDef) -> list[str] | None:
    for statement in cls.body:
        targets = statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
        if any(isinstance(t, ast.Name) and t.id == _ATTRIBUTE for t in targets):
            value = getattr(statement, "value", None)
            if isinstance(value, ast.List | ast.Tuple) and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts
            ):
                return [e.value for e in value.elts]
            return _UNREADABLE
    return None


def _insert_position(cls: ast.ClassDef) -> tuple[str | None, str, bool] | None:
    """(after which attribute, before which method, whether a blank line goes first)."""
    init = next((i for i, s in enumerate(cls.body) if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
    if init is None:
        return None
    if any(isinstance(s, ast.Assign | ast.AnnAssign) and _target_is(s, _AFTER) for s in cls.body):
        return (_AFTER, "__init__", False)
    previous = cls.body[init - 1] if init > 0 else None
    after_docstring = isinstance(previous, ast.Expr) and isinstance(previous.value, ast.Constant)
    return (None, "__init__", after_docstring)


def _target_is(statement: ast.Assign | ast.AnnAssign, name: str) -> bool:
    targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def _assigns(statement: libcst.CSTNode, name: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets
        ):
            return True
        if isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == name:
            return True
    return False
