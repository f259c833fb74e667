"""The tree a file belongs to: its package root, and an index of facts across its files.

Findings in one file can depend on another (a pipeline's `self.unet(...)` on the model's
`forward`; a `# Copied from` copy on its source). The index answers those questions
lazily: files already scanned by the run contribute their facts for free, any other file
of the tree is read and parsed only when a question names it.
"""

from __future__ import annotations

import ast
import bisect
import importlib.util
import os
import re
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any, TypeVar

from codemods.project.facts import ClassFacts, CopyBlock, FileFacts, MethodFacts, cited_source, extract_facts
from codemods.project.files import FileMemo, SourceDecodeError, read_source, uncached

T = TypeVar("T")

_DEFINED_FUNCTION = re.compile(r"^def (\w+)", re.MULTILINE)
_CLASS_KEYWORD = re.compile(r"class (\w+)")
_CITED = re.compile(r"Copied from[ \t]+diffusers\.(\S+)")


def installed_diffusers() -> Path | None:
    """The installed diffusers package directory, found without importing it (nor torch)."""
    spec = importlib.util.find_spec("diffusers")
    return Path(spec.origin).parent if spec and spec.origin else None


def tree_relative(path: str | Path, root: Path | None) -> str:
    """How a message names a file: from the package's parent (`diffusers/models/x.py`), or from the checkout in a
    `src/` layout (`src/diffusers/models/x.py`, as diffusers names its own files); a file outside any package by its
    name. Never the machine's absolute path: the same tree gives the same text wherever it lies."""
    if root is None:
        return Path(path).name
    top = root.parent.parent if root.parent.name == "src" else root.parent
    return Path(path).relative_to(top).as_posix() if Path(path).is_relative_to(top) else str(path)


def module_name(path: Path, root: Path | None) -> str:
    if root is None:
        return path.stem
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@dataclass(frozen=True)
class TreeInfo:
    """What a worker needs to know about a file's tree; small, so it travels to every process."""

    root: str | None
    package: str
    torch_utils_names: tuple[str, ...]  # helpers the tree's `utils/torch_utils.py` defines (sorted: a cache key)
    line_length: int
    opt_ins: tuple[str, ...] = ()  # `[tool.codemod] opt-in` (sorted: a cache key)

    @classmethod
    def of(cls, root: Path | None, line_length: int, opt_ins: tuple[str, ...] = ()) -> TreeInfo:
        opt_ins = tuple(sorted(set(opt_ins)))
        if root is None:
            return cls(None, "", (), line_length, opt_ins)
        torch_utils = root / "utils" / "torch_utils.py"
        text = torch_utils.read_text("utf-8") if torch_utils.is_file() else ""
        return cls(str(root), root.name, tuple(sorted(set(_DEFINED_FUNCTION.findall(text)))), line_length, opt_ins)

    def placeless(self) -> TreeInfo:
        """These settings wherever the tree lies (a scan reads `root` only as there or not): every copy of a tree
        gets the same value, so copies share their scans (codemods/engine/scan_keys.py)."""
        return self if self.root is None else replace(self, root="<a package root>")


def _class_names(text: str) -> list[str]:
    """The names after each `class ` that only indentation precedes on its line, without parsing. A search for the
    literal, then a look back along its line, is several times faster than `^\\s*class` tried at every line's start:
    a run on a few files of a tree (or with `--context`) pays it on every other file."""
    names = []
    for match in _CLASS_KEYWORD.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        if line_start == match.start() or text[line_start : match.start()].isspace():
            names.append(match.group(1))
    return names


def _cited(text: str) -> set[str]:
    return {cited_source(cited) for cited in _CITED.findall(text)}


FactsLoader = Callable[[str, str, str], FileFacts | None]


def parse_facts(path: str, module: str, text: str) -> FileFacts | None:
    try:
        return extract_facts(path, module, text, ast.parse(text, filename=path))
    except (SyntaxError, ValueError):
        return None


class ProjectIndex:
    """Facts across the trees of a run, loaded on demand.

    `roots` are package directories, or single files that belong to no package (a script).
    Files the run scanned come with their facts; any other file of the trees is read, and
    parsed, only when a question names it.
    """

    def __init__(
        self,
        roots: Iterable[Path],
        known: dict[str, FileFacts],
        load: FactsLoader = parse_facts,
        reference: Path | None = None,
        file_memo: FileMemo = uncached,
    ) -> None:
        self._roots = sorted(set(roots))
        self._facts: dict[str, FileFacts | None] = dict(known)
        self._texts: dict[str, str | None] = {}
        self._holding: dict[str, list[tuple[str, FileFacts]]] = {}  # needle -> facts_holding(needle)
        self._load = load
        self._checkout_facts: dict[Hashable, Any] = {}
        self._tree_facts: dict[Hashable, Any] = {}
        self.file_memo = file_memo  # what the index reads of a file the run did not scan, kept per file digest
        # A tree consulted for class definitions only (never for copies), for files outside any package.
        outside = reference is not None and reference not in self._roots
        self._reference = ProjectIndex([reference], {}, load, file_memo=file_memo) if outside else None

    @cached_property
    def paths(self) -> list[str]:
        """Every Python file of the trees."""
        return [str(p) for root in self._roots for p in (sorted(root.rglob("*.py")) if root.is_dir() else [root])]

    def overlay(self, texts: dict[str, str], facts: dict[str, FileFacts | None]) -> ProjectIndex:
        """The same tree with some files rewritten (to check a fix before it is written)."""
        index = ProjectIndex(self._roots, {**self._facts, **facts}, self._load, file_memo=self.file_memo)
        index._reference = self._reference
        index._texts = {**self._texts, **texts}
        index._checkout_facts = self._checkout_facts
        return index

    def checkout_fact(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, once per run: a fact from outside the package (the checkout's `tests/`), which no fix
        changes, so an overlay shares it."""
        if key not in self._checkout_facts:
            self._checkout_facts[key] = compute()
        return self._checkout_facts[key]

    def tree_fact(self, key: Hashable, compute: Callable[[], T]) -> T:
        """`compute()`, once per index: an answer drawn from the tree's files (what its pipelines call per step),
        asked again for each finding, which an overlay computes anew (a fix may change it)."""
        if key not in self._tree_facts:
            self._tree_facts[key] = compute()
        return self._tree_facts[key]

    def text(self, path: str) -> str | None:
        if path not in self._texts:
            try:
                self._texts[path] = read_source(path).text
            except (OSError, SourceDecodeError):
                self._texts[path] = None
        return self._texts[path]

    def _of_file(self, path: str, of_facts: Callable[[FileFacts], T], kind: str, of_text: Callable[[str], T]) -> T:
        """`of_facts` of the file's facts if the index has them; else `of_text` of the text in hand (read, or an
        overlay's rewrite), or kept per file digest by the file memo: a warm run on a few files of a tree, or with
        `--context`, reads none of its other files."""
        if (known := self._facts.get(path)) is not None:
            return of_facts(known)
        if path in self._texts:
            return of_text(self._texts[path] or "")
        found = self.file_memo(path, kind, of_text)
        return of_text("") if found is None else found

    def _root_of(self, path: str) -> Path | None:
        return next((r for r in self._roots if r.is_dir() and Path(path).is_relative_to(r)), None)

    def shown(self, path: str) -> str:
        """`path` as messages name it (codemods.project.tree_relative)."""
        return tree_relative(path, self._root_of(path) or (self._reference._root_of(path) if self._reference else None))

    def facts(self, path: str) -> FileFacts | None:
        if path not in self._facts:
            text = self.text(path)
            root = self._root_of(path)
            module = module_name(Path(path), root)
            self._facts[path] = self._load(path, module, text) if text is not None else None
        return self._facts[path]

    @cached_property
    def _class_files(self) -> dict[str, list[str]]:
        where: dict[str, list[str]] = {}
        for path in self.paths:
            for name in self._of_file(path, lambda facts: list(facts.classes), "class-names", _class_names):
                where.setdefault(name, []).append(path)
        return where

    def classes(self, name: str) -> list[ClassFacts]:
        found = []
        for path in self._class_files.get(name, ()):
            facts = self.facts(path)
            if facts and name in facts.classes and not facts.classes[name].is_placeholder:
                found.append(facts.classes[name])
        if not found and self._reference is not None:
            return self._reference.classes(name)
        return found

    def methods(self, class_name: str, method: str, _seen: frozenset[str] = frozenset()) -> list[MethodFacts] | None:
        """Every definition `class_name.method` may resolve to (through bases); None if any class is unknown."""
        classes = self.classes(class_name)
        if not classes or class_name in _seen:
            return None
        found: list[MethodFacts] = []
        for cls in classes:
            if method in cls.methods:
                found.append(cls.methods[method])
                continue
            inherited = [self.methods(base, method, _seen | {class_name}) for base in cls.bases]
            resolved = [m for m in inherited if m]
            if not resolved:
                return None
            found.extend(resolved[0])  # the first base that defines it wins, as in the MRO
        return found

    def expand_types(self, name: str) -> list[str]:
        """Class names an annotation stands for: an Enum of scheduler names stands for its members."""
        classes = self.classes(name)
        members = [m for cls in classes for m in cls.enum_members]
        return members or [name]

    @cached_property
    def _modules(self) -> dict[str, str]:
        """`models.x.y` (dotted, without the package name) -> its file, for every file of the package roots."""
        modules: dict[str, str] = {}
        for root in self._roots:
            if root.is_dir():
                inside = os.path.join(root, "")  # `paths` are its files' paths below it, as `Path` spells them
                for path in self.paths:
                    if path.startswith(inside):
                        modules.setdefault(os.path.splitext(path[len(inside) :])[0].replace(os.sep, "."), path)
        return modules

    def module_path(self, module: str) -> str | None:
        """The file of `models.x.y` (dotted, without the package name) in any root."""
        return self._modules.get(module)

    def facts_holding(self, needle: str) -> list[tuple[str, FileFacts]]:
        """The facts of the tree's files, in path order, but of those the index has no facts of yet whose text does
        not hold `needle` (a cheap first pass before parsing any). A file the run scanned is not read again: what a
        rule gathers only from texts holding `needle` (its facts trigger) comes from those texts alone; a caller
        whose facts may not need `needle` checks the text of the few files its facts name."""
        # Memoized: rules ask once per finding. A file whose facts are read later either holds `needle` (it is in)
        # or gives such a caller nothing.
        if needle not in self._holding:
            self._holding[needle] = [
                (path, facts)
                for path in self.paths
                if (path in self._facts or needle in (self.text(path) or ""))
                and (facts := self.facts(path)) is not None
            ]
        return self._holding[needle]

    @cached_property
    def _citing_files(self) -> dict[str, list[str]]:
        """Each `# Copied from diffusers.X` source X -> the files citing it, found in the texts without parsing."""
        where: dict[str, list[str]] = {}
        for path in self.paths:
            for source in self._of_file(path, lambda facts: {b.source for b in facts.copies}, "cited-sources", _cited):
                where.setdefault(source, []).append(path)
        return where

    @cached_property
    def _cited_sources(self) -> list[str]:
        return sorted(self._citing_files)  # sorted: the sources starting with a name are one run

    def copies_citing(self, dotted: str, inner: bool = False) -> list[CopyBlock]:
        """Blocks marked `# Copied from diffusers.<dotted>`; with `inner`, also those copied from inside it."""
        blocks = []
        sources = self._cited_sources
        candidates = set()
        for position in range(bisect.bisect_left(sources, dotted), len(sources)):
            if not sources[position].startswith(dotted):
                break
            candidates.update(self._citing_files[sources[position]])
        for path in sorted(candidates):
            facts = self.facts(path)
            for block in facts.copies if facts else ():
                if block.source == dotted or (inner and block.source.startswith(dotted + ".")):
                    blocks.append(block)
        return blocks
