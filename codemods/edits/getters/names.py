"""The names and layout of what DIF001 writes: the getter's noun, its locals, indentation and width.

`codemods.edits.getters.plan` plans the rewrite; this module spells its pieces and recognizes a getter
that is already there.
"""

from __future__ import annotations

import ast

from codemods.source import SourceFile, dotted_name


def getter_noun(attributes: list[str]) -> str:
    """pos_freqs, neg_freqs -> freqs (the shared last word); freqs -> freqs."""
    words = [a.strip("_").split("_") for a in attributes]
    if len(words) == 1:
        return "_".join(words[0])
    suffix: list[str] = []
    while all(len(w) > len(suffix) for w in words) and len({w[-1 - len(suffix)] for w in words}) == 1:
        suffix.insert(0, words[0][-1 - len(suffix)])
    return "_".join(suffix) if suffix else "tensors"


def spoken(attributes: list[str]) -> str:
    return attributes[0] if len(attributes) == 1 else f"{', '.join(attributes[:-1])} and {attributes[-1]}"


def device_local(attribute: str) -> str:
    """The local that holds an attribute's device copy: `_pos_freqs` -> `pos_freqs_device`."""
    return f"{attribute.strip('_')}_device"


def indent_of(source: SourceFile, node: ast.AST) -> str:
    line = source.lines[node.lineno - 1]
    return line[: len(line) - len(line.lstrip())]


def too_wide(lines: list[str], indent: str, line_length: int) -> bool:
    return any(len(indent) + len(line) > line_length for line in lines)


def line_after(source: SourceFile, call: ast.Call, replacement: str, line_length: int) -> str | None:
    """Why `call` cannot be replaced by `replacement` on its line (it spans lines, or the line grows too long)."""
    span = source.span(call)
    if span.line != span.end_line:
        return f"the move at line {span.line} spans several lines; rewrite it by hand"
    line = source.lines[span.line - 1]
    if len(line[: span.column] + replacement + line[span.end_column :]) > line_length:
        return f"line {span.line} would exceed {line_length} characters; rewrite it by hand, then `make style`"
    return None


def returned(method: ast.AST) -> ast.expr | None:
    """What a method returns when its body (past a docstring) is one `return`."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return):
        return None
    return body[0].value


def returns_text(method: ast.AST, expected: str) -> bool:
    """The method's body is one `return` of `expected` (source text, compared as parsed)."""
    value = returned(method)
    # ast.unparse, not ast.dump: dump leaves a reference cycle per call.
    return value is not None and ast.unparse(value) == ast.unparse(ast.parse(expected, mode="eval").body)


def returns_moves(method: ast.AST) -> list[str] | None:
    """`return self.a.to(device), self.b.to(device)` -> ["a", "b"]."""
    result = returned(method)
    if result is None:
        return None
    values = result.elts if isinstance(result, ast.Tuple) else [result]
    names = []
    for value in values:
        name = dotted_name(value.func) if isinstance(value, ast.Call) else None
        if not name or not name.startswith("self.") or not name.endswith(".to") or name.count(".") != 2:
            return None
        names.append(name.split(".")[1])
    return names
