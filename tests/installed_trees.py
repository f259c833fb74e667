"""The installed diffusers as test trees: a pristine copy and one rewritten by every rule.

A module of its own, not conftest.py: test modules import these names, and `conftest` is not a
unique module name once a subdirectory (tests/verify/) has a conftest of its own.
"""

import json
import os
import shutil
import subprocess
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warm_python import run_python

from bot.verify.planning.changes import VERIFIED_OPT_INS
from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.project.index import installed_diffusers
from tools.checkout_layout import write_checkout_config


@dataclass(frozen=True)
class DiffusersTrees:
    """A pristine copy of the installed diffusers and one rewritten by every rule (unsafe fixes included).

    The rewritten copy is laid out as a checkout (`<checkout>/src/diffusers`, diffusers' ruff settings
    and formatter pin beside it), so the run goes through the formatter gate as a user's would. The run
    takes the opt-ins `codemod verify` takes (the installed package has no tests for them to turn on, so
    it rewrites what a run without them does): its scans are then the ones every `verify()` of a copy of
    the installed diffusers asks for (`scan_cache`, tests/verify/conftest.py), and only this run analyses
    the whole tree.
    """

    original: Path  # parent directory holding `diffusers/`
    rewritten: Path  # `<checkout>/src`
    options: RunOptions  # the run's: a second run with them reads back the fixed files' scans, as a user's would
    result: RunResult

    @property
    def cache(self) -> Path:
        """The run's scan cache."""
        assert self.options.cache_dir is not None
        return self.options.cache_dir

    def changed_files(self) -> list[str]:
        """Paths relative to the package (`models/x.py`) of the files the run changed."""
        root = self.rewritten / "diffusers"
        return sorted(str(Path(p).relative_to(root)) for p in self.result.changes)


def copy_installed_diffusers(destination: Path, pipelines: Collection[str] | None = None) -> Path:
    """`destination`, holding a copy of the installed package as `diffusers/`.

    With `pipelines`, only those subpackages of `pipelines/` are copied (the package still imports: the others
    load only when asked for), for tests whose runs would otherwise read the facts of every other pipeline.
    """
    source_pipelines = installed_diffusers() / "pipelines"

    def left_out(directory: str, names: list[str]) -> set[str]:
        if pipelines is None or Path(directory) != source_pipelines:
            return {"__pycache__"} & set(names)
        return {name for name in names if name not in pipelines and (source_pipelines / name).is_dir()}

    shutil.copytree(installed_diffusers(), destination / "diffusers", ignore=left_out)
    return destination


def build_diffusers_trees(directory: Path) -> DiffusersTrees:
    original = copy_installed_diffusers(directory / "original")
    (directory / "checkout").mkdir()
    checkout = write_checkout_config(directory / "checkout")
    rewritten = copy_installed_diffusers(checkout / "src")
    options = RunOptions(
        paths=(rewritten / "diffusers",),
        mode=Mode.WRITE,
        unsafe_fixes=True,
        cache_dir=directory / "cache",
        opt_in=VERIFIED_OPT_INS,
    )
    return DiffusersTrees(original, rewritten, options, run(options))


def run_python_in_tree(tree: Path, code: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """Run `code` as `python -c` in a process that imports diffusers from `tree` (never two diffusers in one process),
    forked with torch and transformers imported (`warm_python`)."""
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return run_python(code, tree, env, timeout)


# Runs each script in globals of its own, as `-c` would, and prints what each printed, as one JSON list.
_SCRIPTS_IN_TURN = """
import contextlib, io, json
printed = []
for script in scripts:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        exec(compile(script, "<string>", "exec"), {"__name__": "__main__"})
    printed.append(out.getvalue())
print(json.dumps(printed))
"""


def run_scripts_in_tree(tree: Path, scripts: list[str]) -> list[Any]:
    """`run_python_in_tree` of several scripts in turn, in one interpreter (torch and the tree imported once for all):
    the JSON value each script printed last."""
    process = run_python_in_tree(tree, f"scripts = {scripts!r}\n{_SCRIPTS_IN_TURN}")
    assert process.returncode == 0, process.stderr[-3000:]
    each_printed = json.loads(process.stdout.strip().splitlines()[-1])
    return [json.loads(printed.strip().splitlines()[-1]) for printed in each_printed]
