"""The promises a release sweep checks on a rewritten tree against the release as published.

Shared by `benchmarks/sweep.py` (every release) and the test suite's slice of old releases.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from codemods.project.copies import CopyPair, copy_is_consistent, copy_pairs
from codemods.project.files import read_source
from codemods.project.index import ProjectIndex

_PATH = re.compile(r"\s*\(?(/[^\s)]+)+\)?")

# Imported in a fresh interpreter per tree: each module's failure, not the first one, is what counts.
_IMPORT_EACH = """
import importlib, json, sys
try:
    import diffusers
except BaseException as error:
    print(json.dumps({"": f"{type(error).__name__}: {error}"}))
    raise SystemExit
failures = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as error:
        failures[name] = f"{type(error).__name__}: {str(error)[:200]}"
print(json.dumps(failures))
"""


def changed_files(original: Path, rewritten: Path) -> list[str]:
    """Paths (relative to the package) of the Python files whose bytes differ."""
    return sorted(
        str(path.relative_to(rewritten))
        for path in rewritten.rglob("*.py")
        if "__pycache__" not in path.parts and path.read_bytes() != (original / path.relative_to(rewritten)).read_bytes()
    )


def uncompilable(tree: Path, changed: list[str]) -> list[tuple[str, str]]:
    failures = []
    for relative in changed:
        try:
            compile(read_source(tree / relative).text, relative, "exec", dont_inherit=True)
        except (SyntaxError, ValueError) as error:
            failures.append((relative, str(error)))
    return failures


def broken_copies(original: Path, rewritten: Path, changed: list[str]) -> list[str]:
    """`# Copied from` pairs touching a changed file that agreed in the release and no longer do."""
    before_index = ProjectIndex([original], {})
    after_index = ProjectIndex([rewritten], {})

    def before(path: str) -> str:
        return str(original / Path(path).relative_to(rewritten))

    changed_paths = {str(rewritten / relative) for relative in changed}
    pairs: set[CopyPair] = set()
    for path in sorted(changed_paths):
        facts = after_index.facts(path)
        for first, last in facts.definitions.values() if facts else ():
            pairs |= copy_pairs(after_index, path, first, last)
    broken = []
    for pair in sorted(p for p in pairs if {p.copy_path, p.source_path} & changed_paths):
        agreed = copy_is_consistent(
            pair, lambda p: before_index.text(before(p)) or "", lambda p: before_index.facts(before(p))
        )
        if agreed and not copy_is_consistent(pair, lambda p: after_index.text(p) or "", after_index.facts):
            broken.append(pair.describe().replace(f"{rewritten}/", ""))
    return broken


def import_failures(original_parent: Path, rewritten_parent: Path, changed: list[str]) -> tuple[str, dict[str, str]]:
    """Changed modules that import from the release but not from the rewritten tree.

    Returns a one-line status ("ok (N modules)", or why the check does not apply) and the failures.
    """
    modules = sorted(_module(relative) for relative in changed)
    after = _import_each(rewritten_parent, modules)
    if "" in after:
        before = _import_each(original_parent, [])
        if "" in before:
            return f"n/a: the release does not import here ({before['']})", {}
        return "failed", {"diffusers": after[""]}
    if after:
        before = _import_each(original_parent, sorted(after))
        if "" in before:
            return f"n/a: the release does not import here ({before['']})", {}
        regressions = {name: why for name, why in after.items() if name not in before}
        untestable = len(after) - len(regressions)
        status = f"ok ({len(modules) - len(after)} modules; {untestable} fail in the release too)"
        return ("failed" if regressions else status), regressions
    return f"ok ({len(modules)} modules)", {}


def _module(relative: str) -> str:
    return "diffusers." + relative.removesuffix(".py").replace("/", ".").removesuffix(".__init__")


def _import_each(parent: Path, modules: list[str]) -> dict[str, str]:
    env = {
        **os.environ,
        "PYTHONPATH": str(parent),
        "PYTHONDONTWRITEBYTECODE": "1",  # the release cache stays as downloaded
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *modules], cwd=parent, env=env, capture_output=True, text=True, timeout=900
    )
    lines = done.stdout.strip().splitlines()
    try:
        failures = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        failures = {"": f"the import subprocess ended with code {done.returncode}: {done.stderr.strip()[-200:]}"}
    # Messages go into docs/releases.md: no paths of this machine.
    return {name: _PATH.sub("", why) for name, why in failures.items()}
