"""Fix groups: one rule and one family of files, so a maintainer reviews one idea in one place.

A family is a pipeline folder (`pipelines/flux`), or the module for models, schedulers and
everything else (`models/autoencoders/autoencoder_kl`). `# Copied from` ties cross families:
diffusers' `make fix-copies` keeps a copy equal to its source, so a source and all its copies
are always one group (the families they touch are merged).

A group's fingerprint is its rule, its files and a hash of the rewritten snippets (the lines
removed and added, not their line numbers), so the same fix keeps its fingerprint while
unrelated code around it moves, and a PR can be recognised whatever its title says.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from bot.verify.planning.changes import VERIFIED_OPT_INS
from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.copies import copy_pairs
from codemods.project.index import ProjectIndex
from codemods.project.tree_paths import inside_tree

PACKAGE_DIR = PurePosixPath("src/diffusers")


@dataclass(frozen=True)
class Rewrite:
    path: str  # repository-relative
    line: int
    message: str
    end_line: int = 0  # 0: the finding's one line

    @property
    def last_line(self) -> int:
        return self.end_line or self.line


@dataclass(frozen=True)
class ReportOnly:
    """A finding the engine reports without a fix (none offered, or declined): listed, never a PR."""

    rule: str
    path: str  # repository-relative
    line: int
    end_line: int
    message: str
    reason: str | None = None  # why an offered fix was declined
    # Paid per step on a tensor whose place is traced: listed in full; the rest is counted in a folded section.
    hot: bool = True
    frequency: str = ""  # how often it costs, in words (`Cost.text()`)
    pattern: str = ""  # the code shape: the same shape in N places is one entry (`Finding.pattern`)

    @property
    def family(self) -> str:
        return family(PurePosixPath(self.path).relative_to(PACKAGE_DIR).as_posix())

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class FixGroup:
    rule: str
    families: tuple[str, ...]  # sorted; the first is the one the branch is named after
    files: dict[str, tuple[str, str]]  # repository-relative path -> (before, after)
    rewrites: tuple[Rewrite, ...]
    copies: tuple[str, ...] = ()  # "copy (copy of source)" for each `# Copied from` pair the fixes touch
    fingerprint: str = field(init=False)

    def __post_init__(self) -> None:
        self.fingerprint = fingerprint(self.rule, self.files)

    @property
    def family(self) -> str:
        return self.families[0]

    @property
    def slug(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.family.lower()).strip("-")

    @property
    def id(self) -> str:
        return f"{self.rule.lower()}-{self.slug}"

    @property
    def branch(self) -> str:
        return f"codemod/{self.rule.lower()}/{self.slug}"

    def describe(self) -> str:
        others = len(self.families) - 1
        return f"{self.rule} {self.family}" + (
            f" (+{others} copied famil{'y' if others == 1 else 'ies'})" if others else ""
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "rule": self.rule,
            "families": list(self.families),
            "branch": self.branch,
            "fingerprint": self.fingerprint,
            "files": {path: {"before": before, "after": after} for path, (before, after) in sorted(self.files.items())},
            "rewrites": [
                {"path": r.path, "line": r.line, "end_line": r.last_line, "message": r.message} for r in self.rewrites
            ],
            "copies": list(self.copies),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FixGroup:
        group = cls(
            rule=data["rule"],
            families=tuple(data["families"]),
            files={path: (f["before"], f["after"]) for path, f in data["files"].items()},
            rewrites=tuple(Rewrite(r["path"], r["line"], r["message"], r.get("end_line", 0)) for r in data["rewrites"]),
            copies=tuple(data["copies"]),
        )
        if group.fingerprint != data["fingerprint"]:
            raise ValueError(f"group {data['id']}: its files do not match its fingerprint; the plan was edited")
        return group


def family(package_path: str) -> str:
    """`pipelines/flux/pipeline_flux.py` -> `pipelines/flux`; `models/x/y.py` -> `models/x/y` (the module)."""
    parts = PurePosixPath(package_path).with_suffix("").parts
    if parts[0] == "pipelines" and len(parts) > 2:
        depth = 3 if parts[1] == "deprecated" and len(parts) > 3 else 2
        return "/".join(parts[:depth])
    return "/".join(parts)


def fingerprint(rule: str, files: dict[str, tuple[str, str]]) -> str:
    digest = hashlib.sha256(rule.encode())
    for path in sorted(files):
        before, after = (text.splitlines(keepends=True) for text in files[path])
        digest.update(f"\0file\0{path}".encode())
        matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag != "equal":
                digest.update(("\0-" + "".join(before[i1:i2]) + "\0+" + "".join(after[j1:j2])).encode())
    return f"{rule.lower()}-{digest.hexdigest()[:16]}"


class _Families:
    """Union-find over families: two families sharing a `# Copied from` pair are one group."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        self.parent.setdefault(name, name)
        while self.parent[name] != name:
            self.parent[name] = self.parent[self.parent[name]]
            name = self.parent[name]
        return name

    def union(self, a: str, b: str) -> None:
        self.parent[self.find(a)] = self.find(b)


@dataclass
class Grouping:
    groups: list[FixGroup]
    errors: list[str]  # files the engine could not handle (left out of every group)
    report_only: list[ReportOnly] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)  # the repository-relative paths the engine read


def find_groups(
    repo_root: Path,
    rules: tuple[str, ...],
    only: tuple[str, ...] = (),
    cache_dir: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> Grouping:
    """Run the engine once per rule (safe and unsafe fixes, nothing written) and split its changes into groups;
    the findings it leaves unfixed are kept as report-only."""
    src = (repo_root / PACKAGE_DIR).resolve()
    if not src.is_dir():
        raise FileNotFoundError(f"{repo_root} has no {PACKAGE_DIR}: not a diffusers checkout")
    # As users type them: from the checkout's root (`src/diffusers/pipelines/ddpm`), or inside src/diffusers.
    paths = tuple(src / inside_tree(src, p, "--only", cwd=repo_root) for p in only) or (src,)
    groups: list[FixGroup] = []
    errors: list[str] = []
    report_only: list[ReportOnly] = []
    for rule in rules:
        log(f"engine: {rule} on {', '.join(str(p.relative_to(src.parent)) for p in paths)}")
        # pipelines/deprecated/ takes no changes: never proposed, whatever the checkout's configuration says.
        # A fix that turns on checkout tests is taken: each group's verification runs them (`turned_on_tests`).
        options = RunOptions(
            paths,
            Mode.DIFF,
            unsafe_fixes=True,
            select=(rule,),
            cache_dir=cache_dir,
            include_deprecated=False,
            opt_in=VERIFIED_OPT_INS,
        )
        result = run(options)
        errors += [f"{_relative(e.path, repo_root)}: {e.message}" for e in result.errors]
        if result.changes:
            groups += _split(rule, result, src, repo_root)
        report_only += [
            ReportOnly(
                f.code,
                _relative(f.path, repo_root),
                f.line,
                f.end_line,
                f.message,
                f.not_fixed_reason,
                f.shown_by_default,
                f.cost.text() if f.cost else "",
                f.pattern,
            )
            for f in result.remaining
        ]
    scope = [_relative(str(path), repo_root) for path in paths]
    return Grouping(sorted(groups, key=lambda g: (g.rule, g.family)), errors, report_only, scope)


def _split(rule: str, result: Any, src: Path, repo_root: Path) -> list[FixGroup]:
    def family_of(path: str) -> str:
        return family(Path(path).relative_to(src).as_posix())

    families = _Families()
    index = ProjectIndex([src], {})
    pairs_by_root: dict[str, set[Any]] = {}
    fixed = [f for f in result.findings if f.fixed and f.path in result.changes]
    for path in result.changes:
        families.find(family_of(path))
    for finding in fixed:
        for pair in copy_pairs(index, finding.path, finding.line, finding.end_line):
            families.union(family_of(pair.copy_path), family_of(pair.source_path))
            families.union(family_of(pair.copy_path), family_of(finding.path))
            pairs_by_root.setdefault(family_of(finding.path), set()).add(pair)
    members: dict[str, list[str]] = {}
    for path in result.changes:
        members.setdefault(families.find(family_of(path)), []).append(path)
    groups = []
    for paths in members.values():
        root = families.find(family_of(paths[0]))
        pairs = {p for name, ps in pairs_by_root.items() if families.find(name) == root for p in ps}
        names = sorted(
            {family_of(p) for p in paths}
            | {family_of(p.copy_path) for p in pairs}
            | {family_of(p.source_path) for p in pairs}
        )
        # A group with copies is named after the family of the code everything was copied from.
        sources = {family_of(p.source_path) for p in pairs} - {family_of(p.copy_path) for p in pairs}
        first = min(sources) if sources else names[0]
        groups.append(
            FixGroup(
                rule=rule,
                families=(first, *(n for n in names if n != first)),
                files={_relative(p, repo_root): result.changes[p] for p in sorted(paths)},
                rewrites=tuple(
                    Rewrite(_relative(f.path, repo_root), f.line, f.message, f.end_line)
                    for f in fixed
                    if f.path in paths
                ),
                copies=tuple(sorted(_describe(p, repo_root) for p in pairs)),
            )
        )
    return groups


def _relative(path: str, repo_root: Path) -> str:
    return Path(path).resolve().relative_to(repo_root.resolve()).as_posix()


def _describe(pair: Any, repo_root: Path) -> str:
    return (
        f"{_relative(pair.copy_path, repo_root)}::{pair.copy_qualname} "
        f"(copy of {_relative(pair.source_path, repo_root)}::{pair.source_qualname})"
    )
