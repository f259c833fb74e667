"""Docstrings and comments that describe what a rewrite takes away, updated with the code or the rewrite refused.

diffusers documents its RoPE tables in prose: SANA-WM's class docstring says the complex table
"is moved to the activations' device on each call". After DIF001 caches it per device that
sentence is wrong. A rule names the sentence it makes stale as a `StaleClaim`: a pattern for the
claim, the group of it that no longer holds, and what to say instead. Within the scope the rule
rewrites (a class's docstring, the docstrings and comments of the methods it changes), every claim
found on one line is rewritten in place, keeping the line within the project's length; a claim
that cannot be (wrapped over lines, or a line that would grow too long) refuses the whole fix,
with a reason naming the line, rather than leave the documentation contradicting the code.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass

from codemods.findings import Edit, NodeRef
from codemods.source import SourceFile


@dataclass(frozen=True)
class StaleClaim:
    pattern: re.Pattern[str]  # matches the claim within one line; group "stale" is what no longer holds
    replacement: str  # what the "stale" group becomes

    def loose(self) -> re.Pattern[str]:
        """The same claim with any whitespace (line breaks and indentation included) between words."""
        return re.compile(self.pattern.pattern.replace(r"[ \t]+", r"\s+"), self.pattern.flags)


def refresh_stale_text(
    source: SourceFile, scopes: list[ast.AST], claims: list[StaleClaim], line_length: int
) -> list[Edit] | str:
    """The edits that update every claim in the docstrings and comments of `scopes`, or why they cannot be made."""
    edits: list[Edit] = []
    for kind, node_line, node_column, end_line, end_column, text in _texts(source, scopes):
        new = text
        for claim in claims:
            new = claim.pattern.sub(lambda m, c=claim: _replaced(m, c), new)
            spread = claim.loose().search(new)
            if spread is not None and not claim.pattern.search(new):
                line = node_line + new[: spread.start()].count("\n")
                return f"line {line} states the old behaviour over several lines; update it with the code, by hand"
        if new == text:
            continue
        for offset, (before, after) in enumerate(zip(text.splitlines(), new.splitlines())):
            width = len(after) + (node_column if offset == 0 else 0)
            if before != after and width > line_length:
                return (
                    f"line {node_line + offset} states the old behaviour and would exceed {line_length} characters "
                    "once updated; update it by hand"
                )
        target = NodeRef(kind, node_line, node_column, end_line, end_column)
        edits.append(Edit(target, "replace_text", (("old", text), ("new", new))))
    return edits


def _replaced(match: re.Match[str], claim: StaleClaim) -> str:
    start, end = match.span("stale")
    whole = match.group(0)
    return whole[: start - match.start()] + claim.replacement + whole[end - match.start() :]


def _texts(source: SourceFile, scopes: list[ast.AST]) -> list[tuple[str, int, int, int, int, str]]:
    """(libcst kind, start line, start column, end line, end column, text) of each docstring and comment."""
    found = []
    for scope in scopes:
        body = getattr(scope, "body", [])
        first = body[0] if body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            span = source.span(first.value)
            text = source.segment(first.value)
            if text[:1] in "\"'" and text[-1:] in "\"'":  # a plain literal, not implicit concatenation
                found.append(("SimpleString", span.line, span.column, span.end_line, span.end_column, text))
        if not isinstance(scope, ast.ClassDef):
            found.extend(_comments(source, scope))
    return found


def _comments(source: SourceFile, scope: ast.AST) -> list[tuple[str, int, int, int, int, str]]:
    first, last = scope.lineno, scope.end_lineno or scope.lineno  # type: ignore[attr-defined]
    lines = source.lines[first - 1 : last]
    found = []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    except (tokenize.TokenError, IndentationError):
        return found  # a method that does not tokenize on its own: leave its comments alone
    for token in tokens:
        if token.type == tokenize.COMMENT:
            line = first + token.start[0] - 1
            found.append(("Comment", line, token.start[1], line, token.end[1], token.string))
    return found
