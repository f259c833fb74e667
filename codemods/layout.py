"""Adding an argument to a call the way `ruff format` (diffusers' `make style`) would leave it.

Three layouts, chosen at detection time from the line lengths (see `argument_layout`):
- `keep`: the call's own style: a new last line in a call with a trailing comma, `, kw=v` otherwise;
- `hug`: the arguments did not fit on the line: they move onto one indented line of their own;
- `explode`: not even that fits: one argument a line, with a trailing comma.
"""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from codemods.lazy import libcst as cst
from codemods.source import SourceFile

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
    arguments = [*call.args, *call.keywords]
    between = source.text_between(arguments[-1], call) if arguments else ""
    if "," in between:  # a trailing comma: the new argument gets a line of its own
        return (("wrap", "keep"), ("indent", indent))
    separator = ", " if arguments else ""
    if call.lineno != call.end_lineno:
        last_line = source.lines[(arguments[-1].end_lineno if arguments else call.end_lineno) - 1]
        fits = len(last_line) + len(separator + added) <= line_length
        return (("wrap", "keep" if fits else "explode"), ("indent", indent))
    span = source.span(call)
    rewritten = first_line[: span.end_column - 1] + separator + added + ")" + suffix + rest
    if len(rewritten) <= line_length:
        return (("wrap", "keep"), ("indent", indent))
    if statement.lineno != call.lineno or not _ONLY_CLOSERS.match(rest):
        return None
    opening = first_line.index("(", source.span(call.func).end_column)
    hugged = first_line[opening + 1 : span.end_column - 1] + separator + added
    return (("wrap", "hug" if len(indent) + 4 + len(hugged) <= line_length else "explode"), ("indent", indent))


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
    separator = args[-2].comma if len(args) >= 2 and isinstance(args[-2].comma, cst.Comma) else None
    if separator is None:
        separator = cst.Comma(whitespace_after=_after_open_paren(call))
    trailing_comma = isinstance(last.comma, cst.Comma)
    before_close = last.comma.whitespace_after if trailing_comma else last.whitespace_after_arg
    if isinstance(before_close, cst.ParenthesizedWhitespace):
        # One argument a line: the last one keeps its end-of-line comment, the new one takes the
        # line before `)`, indented like the others.
        line = separator.whitespace_after
        next_line = before_close.with_changes(
            indent=line.indent if isinstance(line, cst.ParenthesizedWhitespace) else before_close.indent,
            last_line=line.last_line if isinstance(line, cst.ParenthesizedWhitespace) else before_close.last_line,
        )
        closing = before_close.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        whitespace_before = last.comma.whitespace_before if trailing_comma else cst.SimpleWhitespace("")
        args[-1] = last.with_changes(
            comma=cst.Comma(whitespace_before=whitespace_before, whitespace_after=next_line),
            whitespace_after_arg=cst.SimpleWhitespace(""),
        )
        if trailing_comma:
            return [*args, new.with_changes(comma=cst.Comma(whitespace_after=closing))]
        return [*args, new.with_changes(whitespace_after_arg=closing)]
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
