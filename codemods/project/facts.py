"""Per-file facts that other files' findings depend on, extracted once from the parsed tree.

A rule in one file may need to know about another: what a model's `forward` returns when
`return_dict=False`, which blocks are `# Copied from` which source. Facts are plain data,
cached by file content, so a warm run never re-parses a file to learn them.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

from codemods.lines import LineIndex
from codemods.source import statements
from codemods.triggers import Trigger

# A line-start regex: `re` would try it at every offset of the text; the trigger, on the lines naming it only.
_COPIED_FROM = Trigger(
    r"^([ \t]*)#[ \t]*Copied from[ \t]+diffusers\.(\S+\.\S+)[ \t]*($|\S.*$)",
    "Copied from",
    flags=re.MULTILINE,
    line_start=True,
)


@dataclass(frozen=True)
class OutputReturn:
    """`return SomeOutput(sample=x)`: the dataclass and the source text of each field's value."""

    output_class: str
    keywords: tuple[tuple[str, str], ...]
    positional: tuple[str, ...]


# Not frozen, as `ClassFacts`: a frozen dataclass sets each field through `object.__setattr__`, five times slower,
# and a tree has one of these for every method (13k in diffusers' src). Never changed once extracted.
@dataclass
class MethodFacts:
    name: str
    positional: tuple[str, ...]  # positional parameters, `self` left out
    keyword_only: tuple[str, ...]
    has_var_kwargs: bool
    line: int  # of the `def` (its decorators above it): a reader parses only these lines of the file
    end_line: int
    # When the method takes `return_dict`: the first items of the tuples it returns under
    # `if not return_dict:`, and the output dataclasses it returns otherwise.
    tuple_firsts: tuple[str, ...] = ()
    # What it returns under `if not return_dict:` that is not a tuple display (`return x`: Kandinsky 5).
    bare_returns: tuple[str, ...] = ()
    output_returns: tuple[OutputReturn, ...] = ()
    # `return self.other(..., return_dict=return_dict)`: what `other` returns, this returns.
    delegates: tuple[str, ...] = ()

    @property
    def takes_return_dict(self) -> bool:
        return "return_dict" in self.positional or "return_dict" in self.keyword_only


@dataclass
class ClassFacts:
    name: str
    module: str
    path: str
    line: int
    end_line: int
    bases: tuple[str, ...]
    methods: dict[str, MethodFacts]
    fields: tuple[str, ...]  # annotated class attributes in order (dataclass fields)
    enum_members: tuple[str, ...]
    metaclass: str | None = None

    @property
    def is_placeholder(self) -> bool:
        # diffusers' `utils/dummy_*_objects.py` define same-named stand-ins for missing backends.
        return self.metaclass == "DummyObject"


@dataclass(frozen=True)
class CopyBlock:
    """A definition marked `# Copied from diffusers.<source>`; lines cover the `def`/`class` statement."""

    path: str
    qualname: str  # dotted inside its module: "Class.method"
    source: str  # "models.x.Y.method" (without the "diffusers." prefix)
    replacements: str  # "with A->B, C->D" or ""
    comment_line: int
    start_line: int
    end_line: int


@dataclass
class FileFacts:
    path: str
    module: str
    classes: dict[str, ClassFacts] = field(default_factory=dict)
    definitions: dict[str, tuple[int, int]] = field(default_factory=dict)  # qualname -> (start, end) lines
    copies: tuple[CopyBlock, ...] = ()
    by_rule: dict[str, Any] = field(default_factory=dict)  # what rules gathered for findings elsewhere


def extract_facts(path: str, module: str, text: str, tree: ast.Module, lines: LineIndex | None = None) -> FileFacts:
    """`lines`: the text's line index where the caller has one (a scanned file's rules build it anyway)."""
    facts = FileFacts(path=path, module=module)
    copied = "Copied from" in text
    starts: dict[int, str] = {}  # the first line of each definition (its decorators'), read by copies alone
    definitions, classes = facts.definitions, facts.classes
    for qualname, node in _definitions(tree.body, "", []):
        definitions[qualname] = (node.lineno, node.end_lineno or node.lineno)
        if copied:
            starts[min([node.lineno, *(d.lineno for d in node.decorator_list)])] = qualname
        if isinstance(node, ast.ClassDef) and node.name not in classes:
            classes[node.name] = _class_facts(node, module, path)
    if copied:
        facts.copies = tuple(_copy_blocks(path, text, lines or LineIndex(text), starts, definitions))
    return facts


Definition = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
_DEFINITIONS = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)


def _definitions(
    body: list[ast.stmt], prefix: str, found: list[tuple[str, Definition]]
) -> list[tuple[str, Definition]]:
    """The classes and functions of `body` and, inside classes, theirs, by qualname, in source order (into `found`:
    no generator each definition passes up through)."""
    for node in body:
        if isinstance(node, _DEFINITIONS):
            qualname = prefix + node.name
            found.append((qualname, node))
            if isinstance(node, ast.ClassDef):
                _definitions(node.body, qualname + ".", found)
    return found


def _class_facts(node: ast.ClassDef, module: str, path: str) -> ClassFacts:
    methods: dict[str, MethodFacts] = {}
    fields: list[str] = []
    enum_members: list[str] = []
    bases = tuple(b for b in (_base_name(base) for base in node.bases) if b)
    is_enum = any(b.endswith("Enum") for b in bases)
    for item in node.body:
        kind = item.__class__
        if kind is ast.FunctionDef or kind is ast.AsyncFunctionDef:
            methods[item.name] = _method_facts(item)
        elif kind is ast.AnnAssign and item.target.__class__ is ast.Name:
            fields.append(item.target.id)
        elif is_enum and kind is ast.Assign:
            enum_members.extend(t.id for t in item.targets if isinstance(t, ast.Name))
    return ClassFacts(
        name=node.name,
        module=module,
        path=path,
        line=node.lineno,
        end_line=node.end_lineno or node.lineno,
        bases=bases,
        methods=methods,
        fields=tuple(fields),
        enum_members=tuple(enum_members),
        metaclass=next((_base_name(k.value) for k in node.keywords if k.arg == "metaclass"), None),
    )


def _base_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _method_facts(node: ast.FunctionDef | ast.AsyncFunctionDef) -> MethodFacts:
    args = node.args
    positional = [a.arg for a in args.args]
    if args.posonlyargs:
        positional[:0] = [a.arg for a in args.posonlyargs]
    if positional and positional[0] in ("self", "cls"):
        del positional[0]
    keyword_only = tuple([a.arg for a in args.kwonlyargs])
    line, end_line = node.lineno, node.end_lineno or node.lineno
    if "return_dict" not in positional and "return_dict" not in keyword_only:  # nine methods in ten
        return MethodFacts(node.name, tuple(positional), keyword_only, args.kwarg is not None, line, end_line)
    tuple_firsts: list[str] = []
    bare_returns: list[str] = []
    outputs: list[OutputReturn] = []
    delegates: list[str] = []
    for inner in statements(node.body):
        if isinstance(inner, ast.If) and _is_not_return_dict(inner.test):
            for statement in statements(inner.body):
                if isinstance(statement, ast.Return) and isinstance(statement.value, ast.Tuple):
                    elements = statement.value.elts
                    tuple_firsts.append(ast.unparse(elements[0]) if elements else "")
                elif isinstance(statement, ast.Return):
                    bare_returns.append(ast.unparse(statement.value) if statement.value else "None")
        elif isinstance(inner, ast.Return) and isinstance(inner.value, ast.Call):
            name = _base_name(inner.value.func)
            if _passes_return_dict_through(inner.value) and _is_self_method(inner.value.func):
                delegates.append(name)
            elif name and name[:1].isupper():
                outputs.append(
                    OutputReturn(
                        output_class=name,
                        keywords=tuple((k.arg, ast.unparse(k.value)) for k in inner.value.keywords if k.arg),
                        positional=tuple(ast.unparse(a) for a in inner.value.args),
                    )
                )
    return MethodFacts(
        name=node.name,
        positional=tuple(positional),
        keyword_only=keyword_only,
        has_var_kwargs=args.kwarg is not None,
        line=line,
        end_line=end_line,
        tuple_firsts=tuple(tuple_firsts),
        bare_returns=tuple(bare_returns),
        output_returns=tuple(outputs),
        delegates=tuple(delegates),
    )


def _passes_return_dict_through(call: ast.Call) -> bool:
    return any(
        k.arg == "return_dict" and isinstance(k.value, ast.Name) and k.value.id == "return_dict" for k in call.keywords
    )


def _is_self_method(func: ast.expr) -> bool:
    return isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"


def _is_not_return_dict(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.UnaryOp)
        and isinstance(test.op, ast.Not)
        and isinstance(test.operand, ast.Name)
        and test.operand.id == "return_dict"
    )


def cited_source(cited: str) -> str:
    """The dotted source of a `# Copied from diffusers.<cited>` comment. check_copies joins the
    dotted parts into a file path, so a `/` written in the comment separates modules as a `.` does."""
    return cited.replace("/", ".")


def _copy_blocks(
    path: str, text: str, lines: LineIndex, starts: dict[int, str], definitions: dict[str, tuple[int, int]]
):
    for match in _COPIED_FROM.finditer(text):
        comment_line = lines.line_of(match.start())
        qualname = starts.get(comment_line + 1)
        if qualname is None:
            continue  # a comment check_copies would reject anyway; nothing of ours relies on it
        start, end = definitions[qualname]
        yield CopyBlock(
            path=path,
            qualname=qualname,
            source=cited_source(match.group(2)),
            replacements=match.group(3).strip(),
            comment_line=comment_line,
            start_line=start,
            end_line=end,
        )
