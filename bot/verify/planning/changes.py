"""What the engine changed in a tree: rewrites, each with its rule codes, place and owner.

Two copies of the tree are made side by side: `original/diffusers` (as given) and
`rewritten/diffusers` (the engine's fixes applied, unsafe ones included). A rewrite is one
contiguous block of changed lines; it is credited to the rules whose fix edits touched it,
and it belongs to the top-level class (or function) around it. No torch import here.
"""

from __future__ import annotations

import difflib
import os
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.findings import Finding
from codemods.project.facts import FileFacts
from codemods.project.index import module_name, parse_facts
from codemods.project.layout import package_root
from codemods.rules.missing_repeated_blocks import TURNED_ON_TESTS, MissingRepeatedBlocks

_IGNORED_IN_COPY = shutil.ignore_patterns("__pycache__", "*.pyc")

# The fixes that turn on checkout tests: a verification runs those tests (checkout.turned_on_tests), so it takes them.
VERIFIED_OPT_INS = (f"{MissingRepeatedBlocks.code}-{TURNED_ON_TESTS}",)


@dataclass(frozen=True)
class Rewrite:
    path: str  # relative to the package: "models/x.py"
    line: int  # first changed line in the rewritten file
    end_line: int
    rules: tuple[str, ...]
    owner: str  # the top-level class or function around it: "NucleusMoEEmbedRope"
    qualname: str  # the innermost definition around it: "NucleusMoEEmbedRope.forward"
    lines: frozenset[int]  # lines of the rewritten file that hold new or changed code
    class_level: bool  # only class-body statements (run at import, never per call)

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class ChangeSet:
    original: Path  # the copy's package directory, as given
    rewritten: Path  # the copy's package directory, rewritten
    rewrites: list[Rewrite]
    result: RunResult

    @property
    def changed_files(self) -> list[str]:
        return sorted({r.path for r in self.rewrites})

    def original_site(self, site: str) -> str | None:
        """`path:line` of the rewritten tree as the same line of the original; None for a new line."""
        path, _, line = site.rpartition(":")
        if not line.isdigit():
            return site
        changed = self.result.changes.get(str(self.rewritten / path))
        if changed is None:
            return site
        mapped = _line_map(*changed).get(int(line))
        return f"{path}:{mapped}" if mapped else None


def copy_tree(src: Path, destination: Path) -> Path:
    """`destination/<package name>`, a copy of `src` without bytecode; a pyproject beside it pins the config.

    The checkout's own pyproject.toml (its `[tool.codemod]` table and line length) comes along;
    without one, an empty file keeps the engine from reading whatever pyproject is above the copy.
    """
    package = destination / src.name
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(src, package, ignore=_IGNORED_IN_COPY)
    checkout_config = src.parent.parent / "pyproject.toml" if src.parent.name == "src" else None
    config = destination / "pyproject.toml"
    if checkout_config is not None and checkout_config.is_file():
        shutil.copyfile(checkout_config, config)
    else:
        config.write_text("")
    return package


def linked_tree(tree: Path, destination: Path) -> Path:
    """`destination/<package name>`: `tree`'s files hard-linked there, bytecode included, and the pyproject beside
    `tree` copied. A copy for the engine to rewrite: it replaces the files it writes, never writes into one
    (`codemods/engine/tree_write.py`), as Python replaces the bytecode it writes."""
    package = destination / tree.name
    if package.exists():
        shutil.rmtree(package)
    shutil.copytree(tree, package, copy_function=_link_or_copy)
    shutil.copyfile(tree.parent / "pyproject.toml", destination / "pyproject.toml")
    return package


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def rewrite_copy(
    src: Path,
    work_dir: Path,
    select: tuple[str, ...] | None = None,
    paths: tuple[Path, ...] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
    cache_dir: Path | None = None,
    original: Path | None = None,
) -> ChangeSet:
    """Copy `src` twice under `work_dir` and apply every fix (unsafe ones included) to the second copy.

    With `cache_dir`, the engine reuses the scans an earlier run kept there, of this tree or of another
    copy of it (the bot's planning run, the group verified before: codemods/engine/scan_keys.py).
    `original`: where several runs of one tree (the bot's groups) share its copy, made by the first of them, and
    linked as `work_dir/original`: nothing writes there but the workers' bytecode, which the next run's workers
    import instead of compiling the same modules again; the rewritten copy is then hard links to it (`linked_tree`),
    the rewritten files' bytecode left out."""
    src = src.resolve()
    linked = work_dir / "original"
    if linked.is_symlink():  # an earlier run's link: never a folder to clear
        linked.unlink()
    if original is None:
        original = copy_tree(src, linked)
        rewritten = copy_tree(src, work_dir / "rewritten")
    else:
        if not (original / src.name).is_dir():
            copy_tree(src, original)
        shutil.rmtree(linked, ignore_errors=True)
        linked.parent.mkdir(parents=True, exist_ok=True)
        linked.symlink_to(original.resolve(), target_is_directory=True)
        original = linked / src.name
        rewritten = linked_tree(original, work_dir / "rewritten")
    targets = (rewritten,) if paths is None else tuple(rewritten / _relative(src, p) for p in paths)
    # The same fixes as the bot's plan: the tests a fix turns on are the verifier's to run (`turned_on_tests`).
    options = RunOptions(
        paths=targets, mode=Mode.WRITE, unsafe_fixes=True, select=select, cache_dir=cache_dir, opt_in=VERIFIED_OPT_INS
    )
    result = run(options, progress)
    for path in map(Path, result.changes):
        # Linked from the original's: checked by its source's size and mtime in seconds, it could pass a rewrite.
        for stale in path.parent.glob(f"__pycache__/{path.stem}.*.pyc"):
            stale.unlink()
    rewrites = []
    for path, (before, after) in sorted(result.changes.items()):
        relative = Path(path).relative_to(rewritten).as_posix()
        fixed = [f for f in result.findings if f.fixed and f.path == path]
        rewrites.extend(rewrites_of(relative, path, before, after, fixed))
    return ChangeSet(original, rewritten, rewrites, result)


def why_nothing_changed(result: RunResult, select: tuple[str, ...] | None, narrowed: bool) -> str:
    """Why the engine rewrote nothing, in one line: no finding, findings without a fix, or fixes declined (why)."""
    rules = f"{'/'.join(select)} " if select else ""
    where = "the selected files" if narrowed else "the tree"
    if not result.findings:
        left_alone = f" ({len(result.skipped)} in files the engine leaves alone)" if result.skipped else ""
        return f"no {rules}finding in {where}{left_alone}"
    declined = Counter(f.not_fixed_reason for f in result.findings if f.not_fixed_reason and not f.fixed)
    report_only = sum(f.fix is None and not f.not_fixed_reason for f in result.findings)
    if not declined:
        if report_only:
            return f"no {rules}finding with a fix in {where}: {report_only} finding(s), each report-only"
        return f"the {rules}fixes in {where} changed no line"
    reasons = "; ".join(f"{why} ({count})" for why, count in declined.most_common(3))
    also = f"; {report_only} other finding(s) report-only" if report_only else ""
    return f"no {rules}fix applied in {where}: {sum(declined.values())} declined: {reasons}{also}"


def _relative(src: Path, path: Path) -> Path:
    if not path.is_absolute():
        return path
    resolved = path.resolve()
    if not resolved.is_relative_to(src):
        raise ValueError(f"{path} is not inside the tree {src}")
    return resolved.relative_to(src)


def rewrites_of(relative: str, path: str, before: str, after: str, fixed: list[Finding]) -> list[Rewrite]:
    """The changed blocks of one file, credited to the fixed findings whose edits touched them."""
    before_lines, after_lines = before.splitlines(), after.splitlines()
    after_facts = _facts(path, after)
    before_facts = _facts(path, before)
    blocks = [op for op in difflib.SequenceMatcher(None, before_lines, after_lines, autojunk=False).get_opcodes()]
    rewrites = []
    for tag, b1, b2, a1, a2 in blocks:
        if tag == "equal":
            continue
        # 1-based lines; a pure deletion is placed on the line that follows it.
        lines = frozenset(range(a1 + 1, a2 + 1))
        if lines:
            qualname = max((_innermost(after_facts, line) for line in lines), key=lambda name: name.count("."))
        else:
            qualname = _innermost(before_facts, b1 + 1, b2 - b1)
        owner = qualname.split(".")[0] if qualname else "<module>"
        rules = _rules_touching(fixed, b1 + 1, max(b2, b1 + 1), before_facts, owner)
        rewrites.append(
            Rewrite(
                path=relative,
                line=a1 + 1,
                end_line=max(a2, a1 + 1),
                rules=rules,
                owner=owner,
                qualname=qualname or "<module>",
                lines=lines,
                class_level=_class_level(after_facts, lines),
            )
        )
    return rewrites


def _line_map(before: str, after: str) -> dict[int, int]:
    """Rewritten line -> original line, for the lines the rewrite left as they were."""
    matcher = difflib.SequenceMatcher(None, before.splitlines(), after.splitlines(), autojunk=False)
    mapping = {}
    for tag, b1, _, a1, a2 in matcher.get_opcodes():
        if tag == "equal":
            mapping.update({a1 + offset + 1: b1 + offset + 1 for offset in range(a2 - a1)})
    return mapping


def _facts(path: str, text: str) -> FileFacts | None:
    root = package_root(Path(path))
    return parse_facts(path, module_name(Path(path), root), text)


def _innermost(facts: FileFacts | None, line: int, span: int = 0) -> str:
    """The innermost definition whose lines hold `line` (and `span` more)."""
    if facts is None:
        return ""
    holding = [
        (start, -end, name) for name, (start, end) in facts.definitions.items() if start <= line and line + span <= end
    ]
    return max(holding)[2] if holding else ""


def _class_level(facts: FileFacts | None, lines: frozenset[int]) -> bool:
    """Whether every changed line sits in a class body, outside any function."""
    if facts is None or not lines:
        return False
    for line in lines:
        qualname = _innermost(facts, line)
        if not qualname or qualname.split(".")[-1] not in _class_names(facts):
            return False
    return True


def _class_names(facts: FileFacts) -> set[str]:
    return {name.split(".")[-1] for name in facts.definitions if name.split(".")[-1] in facts.classes}


def _rules_touching(
    fixed: list[Finding], start: int, end: int, before_facts: FileFacts | None, owner: str
) -> tuple[str, ...]:
    """Rules whose fix edits overlap the changed lines [start, end] of the original file.

    An edit that inserts into a node (a method into a class) spans the whole node; it counts
    only when no edit made for a narrower reason does. Last resort: the fixes in the same owner.
    """
    narrow, wide = set(), set()
    for finding in fixed:
        for edit in finding.fix.edits if finding.fix else ():
            if edit.target.line <= end and start <= edit.target.end_line:
                (wide if edit.inserts else narrow).add(finding.code)
    if narrow or wide:
        return tuple(sorted(narrow or wide))
    if owner == "<module>":
        importing = {f.code for f in fixed if f.fix and f.fix.imports}
        if importing:
            return tuple(sorted(importing))  # the import a fix added
    same_owner = {f.code for f in fixed if _innermost(before_facts, f.line).split(".")[0] == owner}
    return tuple(sorted(same_owner or {f.code for f in fixed}))
