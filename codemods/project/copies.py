"""`# Copied from` awareness: a fix inside copied code lands in the source and every copy, or nowhere.

diffusers' `utils/check_copies.py` keeps each block marked `# Copied from diffusers.X` equal
to X's body (after its `with A->B` renames). Rules fix each file on its own; the engine then
asks this module which copy pairs a fix touches and checks them with the same comparison
`check_copies` makes, before and after the rewrite.

Where a copy renames (`with A->B`), check_copies formats the renamed source before comparing
(`ruff format` today, black and doc-builder's docstring reflow in releases before 0.25), so a
renamed line may wrap differently in the copy. Those pairs are compared modulo layout: the same
tokens, with line breaks and the whitespace inside strings and comments set aside.
"""

from __future__ import annotations

import io
import re
import textwrap
import tokenize
from collections.abc import Callable
from dataclasses import dataclass

from codemods.lines import split_lines
from codemods.project.facts import CopyBlock, FileFacts
from codemods.project.index import ProjectIndex

_COPY_COMMENT = re.compile(r"^(\s*)#\s*Copied from\s+diffusers\.(\S+\.\S+)\s*($|\S.*$)")
_REPLACEMENT = re.compile(r"^\s*(\S+)->(\S+)(\s+.*|$)")
_LAYOUT_TOKENS = (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
_CLOSERS = (")", "]", "}")


@dataclass(frozen=True, order=True)
class CopyPair:
    copy_path: str
    copy_qualname: str
    source_path: str
    source_qualname: str
    replacements: str

    def describe(self) -> str:
        return f"{self.copy_path}::{self.copy_qualname} (copy of {self.source_path}::{self.source_qualname})"


def copy_sources(text: str) -> list[str]:
    """What each `# Copied from diffusers.X` mark of `text` names: X (`models.x.Y.f`), in order."""
    return [match.group(2) for line in text.splitlines() if (match := _COPY_COMMENT.match(line))]


def copy_pairs(index: ProjectIndex, path: str, line: int, end_line: int) -> frozenset[CopyPair]:
    """Every copy relation that must hold for a change to lines `line..end_line` of `path`."""
    return copy_relations(index, path, line, end_line)[0]


def copy_relations(
    index: ProjectIndex, path: str, line: int, end_line: int
) -> tuple[frozenset[CopyPair], frozenset[CopyBlock]]:
    """The copy pairs a change to lines `line..end_line` of `path` must keep, and the copies among
    them whose source this tree does not define (check_copies would find it, or fail: either way a
    change there cannot be shown to keep the copy)."""
    pairs: set[CopyPair] = set()
    unfound: set[CopyBlock] = set()
    seen: set[tuple[str, int, int]] = set()
    worklist = [(path, line, end_line, False)]
    while worklist:
        current, start, end, whole = worklist.pop()
        if (current, start, end) in seen:
            continue
        seen.add((current, start, end))
        facts = index.facts(current)
        if facts is None:
            continue
        module = facts.module.partition(".")[2]
        for qualname, (first, last) in facts.definitions.items():
            if not first <= start <= end <= last:
                continue
            for block in facts.copies:
                if block.qualname != qualname:
                    continue
                if (source := _resolve(index, block.source)) is None:
                    if module:  # check_copies reads the package only; a script's copy binds nothing
                        unfound.add(block)
                    continue
                source_path, source_qualname, source_range = source
                pairs.add(CopyPair(current, qualname, source_path, source_qualname, block.replacements))
                worklist.append((source_path, *source_range, True))
            is_region = whole and (first, last) == (start, end)
            for copy in index.copies_citing(f"{module}.{qualname}", inner=is_region):
                source_qualname = copy.source[len(module) + 1 :]
                pairs.add(CopyPair(copy.path, copy.qualname, current, source_qualname, copy.replacements))
                worklist.append((copy.path, copy.start_line, copy.end_line, True))
    return frozenset(pairs), frozenset(unfound)


def _resolve(index: ProjectIndex, dotted: str) -> tuple[str, str, tuple[int, int]] | None:
    """`models.x.Y.f` -> (path of models/x.py, "Y.f", its lines), looking for the module as check_copies does."""
    parts = dotted.split(".")
    for split in range(1, len(parts)):
        path = index.module_path(".".join(parts[:split]))
        if path is None:
            continue
        qualname = ".".join(parts[split:])
        facts = index.facts(path)
        if facts and qualname in facts.definitions:
            return path, qualname, facts.definitions[qualname]
        return None
    return None


def copy_is_consistent(pair: CopyPair, text_of: Callable[[str], str], facts_of: Callable[[str], FileFacts | None]) -> bool:
    """The comparison check_copies makes: copy body == source body after renames (and, with renames,
    the formatter pass, approximated by comparing modulo layout)."""
    copy_facts, source_facts = facts_of(pair.copy_path), facts_of(pair.source_path)
    if copy_facts is None or source_facts is None:
        return False
    if pair.copy_qualname not in copy_facts.definitions or pair.source_qualname not in source_facts.definitions:
        return False
    observed = _body(text_of(pair.copy_path), copy_facts.definitions[pair.copy_qualname])
    theoretical = _body(text_of(pair.source_path), source_facts.definitions[pair.source_qualname])
    theoretical = "\n".join(line for line in theoretical.split("\n") if not _COPY_COMMENT.search(line))
    theoretical = _apply_replacements(theoretical, pair.replacements)
    if observed == theoretical:
        return True
    return bool(pair.replacements) and _layout_free(observed) == _layout_free(theoretical) is not None


def _layout_free(code: str) -> list[str] | None:
    """The tokens of `code` as a formatter cannot change them: no line breaks inside brackets,
    whitespace in strings and comments collapsed (docstrings are reflowed), a comma before a
    closing bracket dropped (a wrapped call gains one). None if `code` does not tokenize."""
    tokens: list[str] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(textwrap.dedent(code)).readline):
            if token.type in _LAYOUT_TOKENS:
                continue
            if token.type in (tokenize.STRING, tokenize.COMMENT):
                tokens.append(" ".join(token.string.split()))
            elif token.string in _CLOSERS and tokens and tokens[-1] == ",":
                tokens[-1] = token.string
            else:
                tokens.append(token.string)
    except (tokenize.TokenError, SyntaxError):
        return None
    return tokens


def _body(text: str, lines: tuple[int, int]) -> str:
    first, last = lines
    return "\n".join(split_lines(text)[first:last])


def _apply_replacements(code: str, replacements: str) -> str:
    # Mirrors check_copies, including its quirks: "with" is removed anywhere and patterns are regexes.
    if not replacements:
        return code
    for pattern in replacements.replace("with", "").split(","):
        match = _REPLACEMENT.search(pattern)
        if match is None:
            continue
        old, new, option = match.groups()
        code = re.sub(old, new, code)
        if option.strip() == "all-casing":
            code = re.sub(old.lower(), new.lower(), code)
            code = re.sub(old.upper(), new.upper(), code)
    return code
