"""Which repository checks a checkout's CI runs, read from its `Makefile` and `.github/workflows/`.

diffusers' PR workflow runs `make quality` (ruff check, ruff format --check, doc-builder style,
`utils/check_doc_toc.py`, ...) and a repository-consistency job (`python utils/check_copies.py`,
`check_dummies.py`, ..., `make deps_table_check_updated`); its Makefile's `repo-consistency`
target lists more (`check_repo.py`, `check_inits.py`). Nothing is hard-coded here: the list is
whatever those files say, so a checkout that adds a check gets it checked.

Read from the workflows: every `run:` line that calls `make <target>` or a `python utils/check_*.py`
script. Read from the Makefile: the targets `quality` and `repo-consistency`, and every target a
workflow calls, with `$(variables)` expanded and `$(MAKE) target` lines replaced by that
target's lines. A recipe line is one check; a target made only of shell plumbing around one
command (`deps_table_check_updated`) is one check of several lines. Stdlib and PyYAML only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

MAKEFILE_TARGETS = ("quality", "repo-consistency")

_ASSIGNMENT = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*:?=\s*(.*)$")
_RULE = re.compile(r"^([A-Za-z0-9_.-]+)\s*:(?!=)(.*)$")
_REFERENCE = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")
_SUB_MAKE = re.compile(r"^(?:\$[({]MAKE[)}]|make)\s+([A-Za-z0-9_.-]+)\s*$")
_CHECK_SCRIPT = re.compile(r"^python3?\s+utils/check_\w+\.py\b")


@dataclass(frozen=True)
class RepoCheck:
    name: str  # what a maintainer reads: the command, or `make <target>` for a multi-line target
    lines: tuple[str, ...]  # shell lines run in order from the checkout root; the first that fails fails it
    source: (
        str  # where it was read: "Makefile: quality", ".github/workflows/pr_tests.yml: check_repository_consistency"
    )


@dataclass(frozen=True)
class Makefile:
    variables: dict[str, str]
    exported: dict[str, str]  # `export NAME = value`: the environment every recipe line runs in
    targets: dict[str, list[str]]

    def expand(self, text: str) -> str:
        return _REFERENCE.sub(lambda match: self.variables.get(match.group(1), match.group(0)), text).strip()

    def lines_of(self, target: str, seen: frozenset[str] = frozenset()) -> list[str]:
        """The target's recipe, expanded, with sub-make lines replaced by their target's recipe."""
        if target in seen or target not in self.targets:
            return []
        lines = []
        for line in self.targets[target]:
            sub = _SUB_MAKE.match(line)
            if sub and sub.group(1) in self.targets:
                lines += self.lines_of(sub.group(1), seen | {target})
            else:
                lines.append(line)
        return lines


def read_makefile(path: Path) -> Makefile:
    variables: dict[str, str] = {}
    exported: dict[str, str] = {}
    targets: dict[str, list[str]] = {}
    current: str | None = None
    for raw in _read(path).splitlines():
        if raw.startswith("\t"):
            if current is not None and raw.strip() and not raw.strip().startswith("#"):
                targets[current].append(raw.strip())
            continue
        current = None
        line = raw.split("#", 1)[0].rstrip()
        assignment = _ASSIGNMENT.match(line)
        if assignment:
            variables[assignment.group(1)] = assignment.group(2).strip()
            if line.startswith("export"):
                exported[assignment.group(1)] = assignment.group(2).strip()
            continue
        rule = _RULE.match(line)
        if rule and not rule.group(1).startswith("."):
            current = rule.group(1)
            targets[current] = []
    makefile = Makefile(variables, exported, {})
    expanded = {name: [_unquiet(makefile.expand(line)) for line in lines] for name, lines in targets.items()}
    return Makefile(variables, exported, expanded)


def repo_checks(checkout: Path) -> list[RepoCheck]:
    """The checks the checkout's Makefile targets and PR workflows run, each once (with every place that
    runs it), in the order read."""
    makefile = read_makefile(checkout / "Makefile")
    found: list[RepoCheck] = []
    for workflow, job, line in _workflow_lines(checkout / ".github" / "workflows"):
        source = f".github/workflows/{workflow}: {job}"
        sub = _SUB_MAKE.match(line)
        if sub:
            found += _target_checks(makefile, sub.group(1), source)
        elif _CHECK_SCRIPT.match(line):
            found.append(RepoCheck(line, (line,), source))
    for target in MAKEFILE_TARGETS:
        found += _target_checks(makefile, target, f"Makefile: {target}")
    sources: dict[tuple[str, ...], list[str]] = {}
    first: dict[tuple[str, ...], RepoCheck] = {}
    for check in found:
        first.setdefault(check.lines, check)
        if check.source not in sources.setdefault(check.lines, []):
            sources[check.lines].append(check.source)
    return [replace(check, source=_places(sources[lines])) for lines, check in first.items()]


def _places(sources: list[str]) -> str:
    return sources[0] + (f" (+{len(sources) - 1} more)" if len(sources) > 1 else "")


def _target_checks(makefile: Makefile, target: str, source: str, seen: frozenset[str] = frozenset()) -> list[RepoCheck]:
    """One check per command line of the target (a sub-make line: its target's checks); one check for a
    target of shell plumbing."""
    own = makefile.targets.get(target, []) if target not in seen else []
    if any(_is_plumbing(line) for line in own):
        return [RepoCheck(f"make {target}", tuple(makefile.lines_of(target)), f"{source} (make {target})")]
    checks = []
    for line in own:
        sub = _SUB_MAKE.match(line)
        if sub and sub.group(1) in makefile.targets:
            checks += _target_checks(makefile, sub.group(1), source, seen | {target})
        else:
            checks.append(RepoCheck(line, (line,), source))
    return checks


def _is_plumbing(line: str) -> bool:
    """A line that only makes sense with its neighbours (md5sum a file, compare it after the next line)."""
    return bool(re.match(r"^(?:md5sum|rm|cp|mv|echo|printf|test|if|cd)\b", line))


def _workflow_lines(folder: Path) -> list[tuple[str, str, str]]:
    """(workflow file, job, command line) for each `make`/`utils/check_*` line of a job's `run:` steps."""
    found = []
    for path in sorted([*folder.glob("*.yml"), *folder.glob("*.yaml")]):
        try:
            workflow = yaml.safe_load(_read(path)) or {}
        except yaml.YAMLError:
            continue
        jobs = workflow.get("jobs") if isinstance(workflow, dict) else None
        for job_name, job in (jobs or {}).items():
            for step in (job or {}).get("steps") or []:
                run = step.get("run") if isinstance(step, dict) else None
                for line in str(run or "").splitlines():
                    line = line.strip()
                    if _SUB_MAKE.match(line) or _CHECK_SCRIPT.match(line):
                        found.append((path.name, str(job_name), line))
    return found


def _unquiet(line: str) -> str:
    return line.lstrip("@-+").strip()


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""
