"""A case's spec from an edited copy: which lines of the module it keeps, and our patch for the rest.

To make a case, write a spec that takes the module (whole, or the definitions you need), `write` it
to a scratch directory, trim and change it there, then `record` it: the lines kept from the module
become the spec's `take` (named definitions where whole ones are kept, line ranges otherwise) and
every line that is ours becomes `<case>.patch`. The edited copy itself is never committed.
"""

from __future__ import annotations

import difflib
import json
import tomllib
from dataclasses import dataclass, field

from tools.fixture_cases.cases import Case, CaseError, comment_lines
from tools.fixture_cases.selection import LINE_RANGE, line_owners, named_lines
from tools.fixture_cases.sources import module_text
from tools.fixture_cases.unified_diff import make_diff

TRIVIAL = set("()[]{},:")
# A line of ours that reads like the module's line in the same place is that line changed: the module's
# line is kept and the patch shows `-`/`+`; other lines of ours are plain additions.
ALIKE = 0.7


def kept_lines(module: str, wanted: str) -> list[int]:
    """0-based lines of `module` that `wanted` keeps (in order), so that the patch to `wanted` is small."""
    source, target = module.splitlines(keepends=True), wanted.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, source, target, autojunk=False)
    blocks = [block for block in matcher.get_matching_blocks() if block.size]
    blocks = [block for i, block in enumerate(blocks) if not _stray(block, blocks, i, source)]
    kept: set[int] = set()
    previous_source = previous_target = 0
    for block in [*blocks, difflib.Match(len(source), len(target), 0)]:
        changed = _changed_lines(source[previous_source : block.a], target[previous_target : block.b])
        kept |= {previous_source + offset for offset in changed}
        kept |= set(range(block.a, block.a + block.size))
        previous_source, previous_target = block.a + block.size, block.b + block.size
    return sorted(kept)


def _trivial(line: str) -> bool:
    return set(line.strip()) <= TRIVIAL


def _stray(block: difflib.Match, blocks: list[difflib.Match], index: int, source: list[str]) -> bool:
    """A short match of blank lines or brackets far from its neighbours: an accident of the alignment."""
    if block.size > 2 or not all(_trivial(line) for line in source[block.a : block.a + block.size]):
        return False
    before = blocks[index - 1] if index else None
    after = blocks[index + 1] if index + 1 < len(blocks) else None
    touches_before = before is not None and before.a + before.size == block.a
    touches_after = after is not None and block.a + block.size == after.a
    return not (touches_before or touches_after)


def _changed_lines(gap_source: list[str], gap_target: list[str]) -> set[int]:
    """Offsets in `gap_source` of lines that `gap_target` changes: pairs of alike lines at the same
    distance from either end of the gap (where an edit next to kept lines sits), never searched for."""
    changed: set[int] = set()
    for step in (1, -1):
        sources, targets = gap_source[::step], gap_target[::step]
        for offset, (old, new) in enumerate(zip(sources, targets)):
            if difflib.SequenceMatcher(None, old, new).ratio() < ALIKE:
                break
            changed.add(offset if step == 1 else len(gap_source) - 1 - offset)
    # Both ends may claim lines of a short gap; a source line can be changed into one target line only.
    return changed if len(changed) <= len(gap_target) else set(range(min(len(gap_source), len(gap_target))))


def take_items(module: str, lines: list[int]) -> list[str]:
    """The fewest `take` items naming exactly `lines` of `module`: definitions where whole, ranges elsewhere."""
    wanted = set(lines)
    chosen: list[tuple[str, set[int]]] = []
    for name, covered in sorted(named_lines(module).items(), key=lambda candidate: -len(candidate[1])):
        if not covered or not covered <= wanted:
            continue
        union = set().union(*(c for _, c in chosen))
        if covered <= union:
            continue
        if len(chosen) + 1 + len(_ranges(wanted - union - covered)) <= len(chosen) + len(_ranges(wanted - union)):
            chosen.append((name, covered))
    union = set().union(*(c for _, c in chosen))
    items = [(min(covered), name) for name, covered in chosen]
    items += [(first - 1, text) for first, text in _ranges(wanted - union)]
    return [text for _, text in sorted(items)]


def _ranges(lines: set[int]) -> list[tuple[int, str]]:
    """(first line, "first-last") for each run of consecutive lines, 1-based."""
    runs: list[list[int]] = []
    for line in sorted(lines):
        if runs and runs[-1][1] == line - 1:
            runs[-1][1] = line
        else:
            runs.append([line, line])
    return [(first + 1, f"{first + 1}-{last + 1}" if last > first else f"{first + 1}") for first, last in runs]


@dataclass(frozen=True)
class RecordedFile:
    """One `[[file]]` of a spec being written, with a note for each line range (what it is part of)."""

    path: str
    module: str | None
    take: list[str] | None
    comment: str = ""
    release: str | None = None  # only where it differs from the case's release
    notes: dict[str, str] = field(default_factory=dict)


def range_notes(module: str, items: list[str]) -> dict[str, str]:
    """For each line-range item, the definitions it is part of (shown as a TOML comment beside it)."""
    owners, lines, notes = line_owners(module), module.splitlines(), {}
    for item in items:
        span = LINE_RANGE.match(item)
        if span:
            first, last = int(span[1]), int(span[2] or span[1])
            names = dict.fromkeys(owners[i] for i in range(first - 1, last) if lines[i].strip())
            named = [name for name in names if name != "module"] or ["module"]
            notes[item] = ", ".join(named if len(named) <= 3 else [named[0], "...", named[-1]])
    return notes


def spec_toml(release: str, files: list[RecordedFile]) -> str:
    out = [f"release = {_string(release)}\n"]
    for spec in files:
        out.append(f"\n[[file]]\npath = {_string(spec.path)}\n")
        if spec.release:
            out.append(f"release = {_string(spec.release)}\n")
        if spec.module:
            out.append(f"module = {_string(spec.module)}\n")
        if spec.comment:
            out.append(
                f"comment = '''\n{spec.comment.strip(chr(10))}\n'''\n"
                if "'''" not in spec.comment
                else f"comment = {_string(spec.comment)}\n"
            )
        if spec.take == []:
            out.append("take = []\n")
        elif spec.take is not None:
            out.append("take = [\n" + "".join(_take_line(item, spec.notes.get(item)) for item in spec.take) + "]\n")
    return "".join(out)


def _take_line(item: str, note: str | None) -> str:
    line = f"    {_string(item)},"
    return f"{line:<18} # {note}\n" if note else line + "\n"


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)  # a JSON string is a valid TOML basic string


def rerecord(case: Case, edited: dict[str, str]) -> tuple[str, str]:
    """A new spec and patch for `case` from its edited input tree (path -> text): a file taken whole
    from one module gets its `take` re-derived; every file gets the patch from what is taken to what
    was edited. The spec's leading `#` lines and each file's comment, path and release are kept."""
    specs = case.file_specs()
    unknown = sorted(path for path, text in edited.items() if path not in {s.path for s in specs} and text.strip())
    if unknown:
        raise CaseError(f"{case.name}: {', '.join(unknown)} not in the spec (add a [[file]] for it first)")
    taken_before = case.taken_files()
    recorded, taken, wanted = [], {}, {}
    for spec in specs:
        body = _without_comment(case, spec.path, edited.get(spec.path, ""))
        single = [s.path for s in specs].count(spec.path) == 1 and spec.module is not None
        module = module_text(spec.release, spec.module) if spec.module else ""
        take = spec.take
        if single:
            lines = module.splitlines(keepends=True)
            kept = kept_lines(module, body)
            take = None if len(kept) == len(lines) else take_items(module, kept)
            taken[spec.path] = "".join(lines[i] for i in kept)
        else:
            taken[spec.path] = taken_before[spec.path]
        notes = range_notes(module, take or [])
        wanted[spec.path] = body
        release = spec.release if spec.release != _default_release(case) else None
        recorded.append(RecordedFile(spec.path, spec.module, take, spec.comment, release, notes))
    header = "".join(line for line in _leading_comments(case.source.read_text(encoding="utf-8")))
    return header + spec_toml(_default_release(case), recorded), make_diff(taken, wanted)


def _without_comment(case: Case, path: str, text: str) -> str:
    comment = "".join(comment_lines(s.comment) for s in case.file_specs() if s.path == path)
    if not text.startswith(comment):
        raise CaseError(f"{case.name}: {path} no longer starts with its comment from the spec (edit it in the spec)")
    return text[len(comment) :]


def _default_release(case: Case) -> str:
    return tomllib.loads(case.source.read_text(encoding="utf-8")).get("release", "")


def _leading_comments(toml: str) -> list[str]:
    lines = toml.splitlines(keepends=True)
    count = next((i for i, line in enumerate(lines) if not line.startswith("#")), len(lines))
    return lines[:count]
