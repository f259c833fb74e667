"""Adding an argument to a call the way `ruff format` (diffusers' `make style`) would leave it.

ruff lays a call out from scratch: on one line if it fits; else the arguments move onto one
indented line of their own ("hugged") if that fits; else one argument a line with a trailing
comma. A trailing comma already there ("magic") keeps one argument a line. The three layouts
here, chosen at detection time from the line lengths (see `argument_layout`), follow that:
- `keep`: the call's own (ruff-shaped) layout: `, kw=v` after the last argument on its line (a
  one-line call, or a hugged one), or a new last line in a call with a magic trailing comma;
- `hug`: a one-line call that no longer fits: the arguments move onto one indented line;
- `explode`: not even that fits (or the call was not laid out as ruff would): one argument a line.
What this cannot see (the rest of an enclosing statement) is the formatter gate's to check.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from codemods.findings import Edit, Fix, FixSafety
from codemods.lazy import libcst as cst
from codemods.source import Ancestors, SourceFile

if TYPE_CHECKING:
    import libcst

Layout = tuple[tuple[str, str], ...]

_ONLY_CLOSERS = re.compile(r"^[\s)\]},]*(#.*)?$")


def argument_layout(
    source: SourceFile, call: ast.Call, added: str, line_length: int, statement: ast.stmt, suffix: str, rest: str
) -> Layout | None:
    """Pick the layout for adding `added` (e.g. "return_dict=False") as `call`'s last argument.

    After the rewrite the call is followed by `suffix` (e.g. "[0]" for ".sample"), then `rest`, what
    follows the rewritten expression on its line.
    None when the line would overflow and ruff would re-wrap something else than this call (an
    enclosing comprehension, a trailing method call): no layout of ours would survive `make style`.
    """
    first_line = source.lines[call.lineno - 1]
    indent = first_line[: len(first_line) - len(first_line.lstrip())]
    arguments = sorted([*call.args, *call.keywords], key=lambda a: (a.lineno, a.col_offset))
    separator = ", " if arguments else ""
    if arguments and "," in source.text_between(arguments[-1], call):
        # A magic trailing comma: ruff keeps (or makes) it one argument a line.
        return _layout("keep" if _one_per_line(call, arguments) else "explode", indent)
    if call.lineno != call.end_lineno:
        if not arguments:
            return None
        if _hugged(call, arguments):
            line = source.lines[arguments[-1].end_lineno - 1]
            return _layout("keep" if len(line) + len(separator + added) <= line_length else "explode", indent)
        return _layout("explode", indent)
    span = source.span(call)
    rewritten = first_line[: span.end_column - 1] + separator + added + ")" + suffix + rest
    if len(rewritten) <= line_length:
        return _layout("keep", indent)
    if statement.lineno != call.lineno or not _ONLY_CLOSERS.match(rest):
        return None
    opening = first_line.index("(", source.span(call.func).end_column)
    hugged = first_line[opening + 1 : span.end_column - 1] + separator + added
    return _layout("hug" if len(indent) + 4 + len(hugged) <= line_length else "explode", indent)


def device_keyword_fix(
    source: SourceFile,
    call: ast.Call,
    anchor: ast.Call,
    ancestors: Ancestors,
    device: str,
    line_length: int,
    safety: FixSafety,
) -> Fix | None:
    """`device=<device>` added to the torch factory `call`, as a fix on `anchor`: the call itself (edit
    `add_device`), or the `.to()` that moves it, which then goes (edit `create_on_device`). None when the
    statement would need re-wrapping."""
    statement = next(n for n in reversed(ancestors) if isinstance(n, ast.stmt))
    rest = source.lines[(anchor.end_lineno or anchor.lineno) - 1][source.span(anchor).end_column :]
    added = f"device={device}"
    layout = argument_layout(source, call, added, line_length, statement, "", rest)
    if layout is None:
        return None
    moved = anchor is not call
    op = "create_on_device" if moved else "add_device"
    edit = Edit(source.ref(anchor, "Call"), op, (*layout, ("device", device)))
    description = f"create the tensor with `{added}`" + (" instead of moving it" if moved else "")
    return Fix(safety, description, (edit,))


def _layout(wrap: str, indent: str) -> Layout:
    return (("wrap", wrap), ("indent", indent))


def _hugged(call: ast.Call, arguments: list[ast.expr]) -> bool:
    """`f(\n    a, b\n)`: every argument on one line between the brackets' own lines."""
    line = arguments[0].lineno
    return line > call.func.end_lineno and arguments[-1].end_lineno == line < call.end_lineno


def _one_per_line(call: ast.Call, arguments: list[ast.expr]) -> bool:
    """`f(\n    a,\n    b,\n)`: each argument starts a line, and `)` has one of its own."""
    starts_after = [call.func.end_lineno, *(a.end_lineno for a in arguments[:-1])]
    return all(a.lineno > before for a, before in zip(arguments, starts_after)) and call.end_lineno > arguments[-1].end_lineno


def add_keyword_argument(
    call: libcst.Call, keyword: str, value: libcst.BaseExpression, wrap: str, indent: str
) -> libcst.Call:
    """`call` with `keyword=value` last (or its existing `keyword=` set to `value`)."""
    for position, argument in enumerate(call.args):
        if argument.keyword is not None and argument.keyword.value == keyword:
            args = list(call.args)
            args[position] = argument.with_changes(value=value)
            return call.with_changes(args=args)
    new = cst.Arg(
        keyword=cst.Name(keyword),
        value=value,
        equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")),
    )
    if wrap == "keep":
        return call.with_changes(args=_append_in_style(call, new))
    return _relaid(call, [*call.args, new], indent, exploded=wrap == "explode")


def _append_in_style(call: libcst.Call, new: libcst.Arg) -> list[libcst.Arg]:
    args = list(call.args)
    if not args:
        return [new]
    last = args[-1]
    if isinstance(last.comma, cst.Comma) and isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace):
        # One argument a line (a magic trailing comma): the last one keeps its end-of-line comment,
        # the new one takes the line before `)`, indented like the others, with a trailing comma.
        line = args[-2].comma.whitespace_after if len(args) >= 2 else _after_open_paren(call)
        before_close = last.comma.whitespace_after
        next_line = before_close.with_changes(
            indent=line.indent if isinstance(line, cst.ParenthesizedWhitespace) else before_close.indent,
            last_line=line.last_line if isinstance(line, cst.ParenthesizedWhitespace) else before_close.last_line,
        )
        closing = before_close.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        args[-1] = last.with_changes(comma=last.comma.with_changes(whitespace_after=next_line))
        return [*args, new.with_changes(comma=cst.Comma(whitespace_after=closing))]
    # A one-line call, or a hugged one: `, new` right after the last argument, on its line; whatever
    # followed the last argument (the line break before `)`, a comment) now follows the new one.
    separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    args[-1] = last.with_changes(comma=separator, whitespace_after_arg=cst.SimpleWhitespace(""))
    return [*args, new.with_changes(comma=last.comma, whitespace_after_arg=last.whitespace_after_arg)]


def _after_open_paren(call: libcst.Call) -> libcst.BaseParenthesizableWhitespace:
    # A one-argument call: the space after "(" shows whether arguments sit on lines of their own.
    if isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
        return call.whitespace_before_args
    return cst.SimpleWhitespace(" ")


def _newline(indent: str) -> libcst.ParenthesizedWhitespace:
    return cst.ParenthesizedWhitespace(
        first_line=cst.TrailingWhitespace(), indent=False, last_line=cst.SimpleWhitespace(indent)
    )


def _relaid(call: libcst.Call, args: list[libcst.Arg], indent: str, exploded: bool) -> libcst.Call:
    inner = indent + "    "
    between = _newline(inner) if exploded else cst.SimpleWhitespace(" ")
    relaid = [
        argument.with_changes(comma=cst.Comma(whitespace_after=between), whitespace_after_arg=cst.SimpleWhitespace(""))
        for argument in args[:-1]
    ]
    closing = _newline(indent)
    if exploded:
        relaid.append(args[-1].with_changes(comma=cst.Comma(whitespace_after=closing)))
    else:
        relaid.append(args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=closing))
    return call.with_changes(args=relaid, whitespace_before_args=_newline(inner))
