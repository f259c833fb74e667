"""Which repository checks the changed files can affect, read from what each check reads.

A one-file change need not run every check of the checkout: `ruff`, `doc-builder style` and
`check_forward_call_docstrings.py` read each file on its own, so they run on the changed files
alone; a check that reads only other files (the docs' table of contents, `.ai/`, the dependency
table) cannot be affected and is left out, with the reason; `check_copies.py` runs when a changed
file holds a `# Copied from` block or is the source of one; `check_dummies.py` when the package's
`__init__.py` or a dummy-object file changes. A check this module does not know runs as it is.
What each check reads was read from diffusers' `utils/check_*.py` and its Makefile; paths are
relative to the checkout (`src/diffusers/models/x.py`). No torch here.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, replace
from fnmatch import fnmatch
from functools import cached_property
from pathlib import Path

from bot.verify.checkout.repo_check_list import RepoCheck
from codemods.project.copies import copy_sources

PER_FILE_TOOLS = ("ruff", "doc-builder")
"""Tools that read each path given on their own: run on the changed files under their paths."""


@dataclass(frozen=True)
class ScopedCheck:
    check: RepoCheck  # as the checkout runs it, or narrowed to the changed files
    runs: bool
    why: str  # why it runs, or why the change cannot affect it


class ChangedFiles:
    """The changed files of one package tree, as the checkout names them, and what their text says."""

    def __init__(self, checkout: Path, trees: dict[str, Path], changed: list[str]) -> None:
        self.checkout = checkout
        self.trees = trees  # "original" / "rewritten" -> package directory
        self.package_relative = changed  # "models/x.py"
        self.paths = [f"src/{trees['original'].name}/{path}" for path in changed]

    def texts(self, path: str) -> list[str]:
        """The file's text on both trees (`path` relative to the package)."""
        files = [tree / path for tree in self.trees.values()]
        return [file.read_text("utf-8", errors="replace") for file in files if file.is_file()]

    @cached_property
    def copied_modules(self) -> set[str]:
        """Every module (`models.x`) some `# Copied from` mark of the original tree names a definition of."""
        modules = set()
        for file in self.trees["original"].rglob("*.py"):
            text = file.read_text("utf-8", errors="replace")
            if "Copied from" in text:
                for dotted in copy_sources(text):
                    parts = dotted.split(".")
                    modules.update(".".join(parts[:end]) for end in range(1, len(parts)))
        return modules

    def with_copies(self) -> list[str]:
        """The changed files that hold a `# Copied from` block, or whose definitions one copies."""
        found = []
        for path, relative in zip(self.paths, self.package_relative):
            module = relative.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
            if module in self.copied_modules or any(copy_sources(text) for text in self.texts(relative)):
                found.append(path)
        return found

    def matching(self, *patterns: str) -> list[str]:
        return [path for path in self.paths if any(fnmatch(path, pattern) for pattern in patterns)]


@dataclass(frozen=True)
class Reads:
    """What one known check reads, as the changed files that can affect it (none: it cannot be affected)."""

    what: str  # for the report: "the package's __init__.py and utils/dummy_*.py"
    affecting: Callable[[ChangedFiles, RepoCheck, Path], list[str]]


def _patterns(*patterns: str) -> Callable[[ChangedFiles, RepoCheck, Path], list[str]]:
    return lambda changed, check, checkout: changed.matching(*patterns)


def _named_in_script(changed: ChangedFiles, check: RepoCheck, checkout: Path) -> list[str]:
    """The changed files the check's script names by path (`check_support_list.py` reads five source files)."""
    script = re.search(r"utils/\w+\.py", " ".join(check.lines))
    text = (checkout / script.group(0)).read_text("utf-8", errors="replace") if script else ""
    named = set(re.findall(r"[\"'](src/[\w/.-]+\.py)[\"']", text))
    return [path for path in changed.paths if path in named]


# Keyed by a pattern over the check's lines. Read from diffusers main's utils/ scripts and Makefile.
KNOWN_CHECKS: tuple[tuple[re.Pattern[str], Reads], ...] = (
    (
        re.compile(r"\butils/check_copies\.py\b"),
        Reads("every `# Copied from` block and its source", lambda changed, check, checkout: changed.with_copies()),
    ),
    (
        re.compile(r"\butils/check_dummies\.py\b"),
        Reads("the package's __init__.py and utils/dummy_*.py", _patterns("src/*/__init__.py", "src/*/utils/dummy_*")),
    ),
    (
        re.compile(r"\butils/check_repo\.py\b"),
        Reads("every module of the package (it imports them)", _patterns("src/*")),
    ),
    (re.compile(r"\butils/check_inits\.py\b"), Reads("the __init__.py files", _patterns("*__init__.py"))),
    (
        re.compile(r"\butils/check_doc_toc\.py\b"),
        Reads("docs/source/en/_toctree.yml", _patterns("docs/source/en/_toctree.yml")),
    ),
    (re.compile(r"\butils/check_ai\.py\b"), Reads("the .ai/ folder", _patterns(".ai/*"))),
    (re.compile(r"\butils/check_support_list\.py\b"), Reads("the source files its script names", _named_in_script)),
    (
        re.compile(r"\bsetup\.py deps_table_update\b"),
        Reads("setup.py and the dependency table", _patterns("setup.py", "src/*/dependency_versions_table.py")),
    ),
    (
        re.compile(r"\butils/modular_auto_docstring\.py\b"),
        Reads("the modular pipelines' blocks", _patterns("src/*/modular_pipelines/*")),
    ),
    (
        re.compile(r"\butils/check_forward_call_docstrings\.py\b"),
        Reads("each model and pipeline file on its own", _patterns("src/*/models/*", "src/*/pipelines/*")),
    ),
)

# Checks that take the files to read as arguments: narrowed to the affecting changed files.
_PATHS_OPTION = {"check_forward_call_docstrings.py": "--paths"}


def scoped_checks(checks: list[RepoCheck], changed: ChangedFiles, checkout: Path) -> list[ScopedCheck]:
    return [scoped(check, changed, checkout) for check in checks]


def scoped(check: RepoCheck, changed: ChangedFiles, checkout: Path) -> ScopedCheck:
    """`check` as it must run for `changed` (narrowed where it takes files), or why it cannot be affected."""
    if len(check.lines) == 1:
        per_file = _per_file(check, changed, checkout)
        if per_file is not None:
            return per_file
    for pattern, reads in KNOWN_CHECKS:
        if any(pattern.search(line) for line in check.lines):
            affecting = reads.affecting(changed, check, checkout)
            if not affecting:
                return ScopedCheck(check, False, f"reads {reads.what}; no changed file is one")
            return ScopedCheck(_with_paths(check, affecting), True, f"reads {reads.what}: {', '.join(affecting)}")
    return ScopedCheck(check, True, "what it reads is not known here: run as the checkout runs it")


def _per_file(check: RepoCheck, changed: ChangedFiles, checkout: Path) -> ScopedCheck | None:
    """A per-file tool's check run on the changed files under its paths; None for any other check."""
    words = shlex.split(check.lines[0])
    if not words or words[0] not in PER_FILE_TOOLS:
        return None
    given = [word for word in words[1:] if not word.startswith("-") and (checkout / word).exists()]
    under = [path for path in changed.paths if any(path == g or path.startswith(f"{g.rstrip('/')}/") for g in given)]
    if not under:
        return ScopedCheck(check, False, f"reads each file on its own; no changed file is under {' '.join(given)}")
    first = words.index(given[0])
    narrowed = [*(w for w in words[:first] if w not in given), *under, *(w for w in words[first:] if w not in given)]
    line = shlex.join(narrowed)
    return ScopedCheck(replace(check, lines=(line,)), True, f"reads each file on its own: run on {', '.join(under)}")


def _with_paths(check: RepoCheck, affecting: list[str]) -> RepoCheck:
    """The check given the affecting files, where its script takes them (`--paths`); else as it is."""
    for script, option in _PATHS_OPTION.items():
        if len(check.lines) == 1 and check.lines[0].split()[-1].endswith(script):
            return replace(check, lines=(shlex.join([*shlex.split(check.lines[0]), option, *affecting]),))
    return check
