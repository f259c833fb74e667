"""The whole engine on programs it was not built on: no crash, nothing that does not compile, idempotent.

Hypothesis varies real inputs the ways Python allows: the seeds are every rule's own documented
examples (each a program with a fix) and small pipelines of the installed diffusers (each fixed
from the installed package's classes); the variations are line endings, a BOM, a PEP 263
encoding, tabs, form feeds, trailing whitespace and statements taken out. Derandomized, so CI
sees the same examples every time.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.files import read_source
from codemods.project.index import installed_diffusers
from codemods.rules import all_rules

DIFFUSERS_FILES = (
    "pipelines/dit/pipeline_dit.py",
    "pipelines/ddpm/pipeline_ddpm.py",
    "pipelines/ddim/pipeline_ddim.py",
    "pipelines/consistency_models/pipeline_consistency_models.py",
)


def _seeds() -> list[str]:
    examples = [example.source for rule in all_rules() for example in rule.invalid if example.fixed is not None]
    return examples + [(installed_diffusers() / relative).read_text("utf-8") for relative in DIFFUSERS_FILES]


SEEDS = _seeds()


@st.composite
def variants(draw: st.DrawFn) -> tuple[bytes, str, bool]:
    """A seed program varied as Python allows: (its bytes, its line ending, whether it has a BOM)."""
    text = draw(st.sampled_from(SEEDS))
    lines = text.split("\n")
    removable = _removable_statements(text)
    removed: list[tuple[int, int]] = []
    for first, last in sorted(draw(st.sets(st.sampled_from(removable), max_size=3)) if removable else (), reverse=True):
        kept = lines[: first - 1] + lines[last:]
        if not any(first <= r_last and r_first <= last for r_first, r_last in removed) and _parses(kept):
            lines, removed = kept, [*removed, (first, last)]
    if draw(st.booleans()):  # tabs for every level of indentation
        lines = [_tabbed(line) for line in lines]
    if draw(st.booleans()):  # a form feed line before each top-level definition
        lines = [f"\x0c\n{line}" if line.startswith(("class ", "def ")) else line for line in lines]
    trailing = draw(st.sets(st.integers(0, len(lines) - 1), max_size=5))
    lines = [line + "  " if number in trailing and line.strip() else line for number, line in enumerate(lines)]
    cookie = draw(st.sampled_from([None, "utf-8", "latin-1", "cp1252"]))
    bom = cookie in (None, "utf-8") and draw(st.booleans())
    if cookie:
        lines = [f"# -*- coding: {cookie} -*-", "# caf\u00e9 cr\u00e8me", *lines]
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    data = ending.join("\n".join(lines).split("\n")).encode(cookie or "utf-8", errors="replace")
    return (b"\xef\xbb\xbf" if bom else b"") + data, ending, bom


def _removable_statements(text: str) -> list[tuple[int, int]]:
    """Line ranges of statements that can go: a sibling stays, and no other statement shares their lines."""
    found = []
    for node in ast.walk(ast.parse(text)):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if not isinstance(body, list) or len(body) < 2:
                continue
            for statement in body:
                first = min([statement.lineno, *(d.lineno for d in getattr(statement, "decorator_list", ()))])
                shared = any(o is not statement and o.lineno <= statement.end_lineno and first <= o.end_lineno for o in body)
                if not shared:
                    found.append((first, statement.end_lineno))
    return sorted(set(found))


def _parses(lines: list[str]) -> bool:
    try:
        ast.parse("\n".join(lines))
    except SyntaxError:
        return False
    return True


def _tabbed(line: str) -> str:
    stripped = line.lstrip(" ")
    return "\t" * ((len(line) - len(stripped)) // 4) + " " * ((len(line) - len(stripped)) % 4) + stripped


@settings(max_examples=20, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(variant=variants())
def test_the_engine_fixes_varied_programs_without_errors_and_a_second_run_changes_nothing(
    tmp_path_factory, variant: tuple[bytes, str, bool]
) -> None:
    data, ending, bom = variant
    target = tmp_path_factory.mktemp("generated") / "program.py"
    target.write_bytes(data)
    first = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.WRITE, unsafe_fixes=True, jobs=1))
    assert first.errors == []
    written = target.read_bytes()
    text = read_source(target).text
    compile(text, str(target), "exec", dont_inherit=True)
    assert written.startswith(b"\xef\xbb\xbf") == bom
    assert {match for match in _line_endings(text)} <= {ending}
    second = run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.DIFF, unsafe_fixes=True, jobs=1))
    assert (second.changes, second.errors) == ({}, [])


def _line_endings(text: str) -> list[str]:
    return re.findall(r"\r\n|\r|\n", text)


def test_the_seeds_get_fixes_so_the_property_is_not_vacuous(tmp_path: Path) -> None:
    fixed = 0
    for number, seed in enumerate(SEEDS):
        target = tmp_path / f"seed{number}.py"
        target.write_text(seed)
        fixed += bool(run(RunOptions(context=installed_diffusers(), paths=(target,), mode=Mode.DIFF, unsafe_fixes=True, jobs=1)).changes)
    assert fixed == len(SEEDS)
