"""The checkout's tests a change turns on: tests gated on a class attribute the change adds. No torch.

diffusers gates tests on model attributes: the compile mixin's `test_torch_compile_repeated_blocks`
skips unless `model_class._repeated_blocks` is set, so a change that adds `_repeated_blocks`
(DIF003) makes that test run for every test class of that model that takes the mixin, a test
the change's own covering tests never ran before. Here:
1. the class-level names each changed class gains (`_repeated_blocks`), from the two trees' text;
2. the checkout's tests gated on such a name (`codemods.project.gated_tests`, which the engine also asks before
   it offers such a fix): the test classes configured for the changed class that hold a test function
   reading it.
The result is pytest node ids, and the test names whose "needs an accelerator" skip is lifted.
They run on both trees like the covering tests (`own_tests`). One that the change makes fail
with `FailOnRecompileLimitHit` gets the override a maintainer would write (`recompile_limit`),
confirmed by running the test again; the edit travels with the change.
"""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.verify.checkout.own_tests import DEFAULT_BUDGET_S, ENVIRONMENT, OwnTests, checkout_of, run_own_tests
from bot.verify.running.recompile_limit import LIMIT_HIT, probe_limit, with_recompile_limit
from bot.verify.running.runner import inherited_environment
from bot.verify.running.zygote import Zygote
from codemods.project.gated_tests import CheckoutGates
from codemods.project.test_modules import CheckoutTestModules, parse_module

if TYPE_CHECKING:
    from bot.verify.planning.changes import ChangeSet

TITLE = "the tests the change turns on (run on the CPU, accelerator skips lifted)"


@dataclass(frozen=True)
class TurnedOn:
    node_ids: list[str]  # "tests/models/transformers/test_x.py::TestXCompile::test_torch_compile_repeated_blocks"
    names: list[str]  # the test functions, each once: what the own-tests plugin lifts accelerator skips for
    attributes: dict[str, list[str]]  # changed class -> the names it gained that gate them


def gained_attributes(before: str, after: str) -> dict[str, list[str]]:
    """Class -> class-level names assigned in `after` and not in `before` (top-level classes)."""
    old, new = _class_names(before), _class_names(after)
    return {cls: sorted(names - old.get(cls, set())) for cls, names in new.items() if names - old.get(cls, set())}


def turned_on(tests: CheckoutTestModules, changed: dict[str, dict[str, list[str]]]) -> TurnedOn:
    """The `tests` turned on by `changed` (package-relative file -> class -> names gained)."""
    gates = CheckoutGates(tests)
    node_ids: list[str] = []
    attributes: dict[str, list[str]] = {}
    for classes in changed.values():
        for model, names in classes.items():
            found = gates.turned_on(model, set(names))
            if found:
                attributes[model] = names
                node_ids += found
    names = sorted({node.rsplit("::", 1)[1] for node in node_ids})
    return TurnedOn(list(dict.fromkeys(node_ids)), names, attributes)


def turned_on_tests(
    tests: CheckoutTestModules | None,
    changes: ChangeSet,
    work_dir: Path,
    python: Path | None = None,
    budget_s: float = DEFAULT_BUDGET_S,
    say: Callable[[str], None] = lambda message: None,
    zygote: Zygote | None = None,
) -> OwnTests | None:
    """The checkout's `tests` that `changes` turns on, run on both trees (forked by `zygote` where it serves them)
    with their accelerator skips lifted, recompile limits carried where needed; None when it turns none on (or
    there is no `tests/`)."""
    if tests is None:
        return None
    turned_on = turned_on_by(tests, changes.rewritten, changes.result.changes)
    if not turned_on.node_ids:
        return None
    say(f"running the {len(turned_on.node_ids)} test(s) the change turns on: {', '.join(turned_on.node_ids)}")
    trees = {"original": changes.original, "rewritten": changes.rewritten}
    python = Path(python or sys.executable)
    checkout = tests.tests_dir.parent
    result = run_own_tests(python, checkout, trees, turned_on.node_ids, work_dir, budget_s, turned_on.names, zygote)
    result.title = TITLE
    if any(LIMIT_HIT in broken["message"] for broken in result.broken):
        carry_recompile_limits(python, checkout, trees, result, work_dir / "recompile-limit", budget_s, say, zygote)
    say(result.line())
    return result


def turned_on_by(tests: CheckoutTestModules, package: Path, changes: dict[str, tuple[str, str]]) -> TurnedOn:
    """The `tests` turned on by the engine's `changes` (path -> (before, after)) to the files of `package`."""
    gained = {}
    for path, (before, after) in changes.items():
        attributes = gained_attributes(before, after)
        if attributes and Path(path).resolve().is_relative_to(package.resolve()):
            gained[Path(path).resolve().relative_to(package.resolve()).as_posix()] = attributes
    return turned_on(tests, gained)


def turned_on_in_checkout(checkout: Path, changes: dict[str, tuple[str, str]]) -> list[str]:
    """Node ids of the checkout's tests that the engine's `changes` to the packages of its `src/` turn on."""
    packages = [p for p in (checkout / "src").iterdir() if (p / "__init__.py").is_file()]
    if not (checkout / "tests").is_dir():
        return []
    tests = CheckoutTestModules(checkout / "tests")
    return [node_id for package in packages for node_id in turned_on_by(tests, package, changes).node_ids]


def carry_recompile_limits(
    python: Path,
    checkout: Path,
    trees: dict[str, Path],
    result: OwnTests,
    work_dir: Path,
    budget_s: float,
    say: Callable[[str], None],
    zygote: Zygote | None = None,
) -> None:
    """Measure the limit each test broken by `FailOnRecompileLimitHit` needs, write the override into a copy
    of the checkout's tests, run the tests again there; those that pass move from `broken` to `fixed`."""
    hit = [broken["test"] for broken in result.broken if LIMIT_HIT in broken["message"]]
    shutil.rmtree(work_dir, ignore_errors=True)
    edited = checkout_of(trees["rewritten"], checkout, work_dir / "checkout")
    environment = {**inherited_environment(), **ENVIRONMENT}
    environment["PYTHONPATH"] = os.pathsep.join([str(edited / "src"), str(edited)])
    fixes = {}
    for node_id in hit:
        probed = probe_limit(python, edited, node_id, environment)
        say(f"{node_id}: passes at recompile_limit={probed.limit}" if probed.limit else f"{node_id}: {probed.error}")
        if probed.limit is None:
            continue
        module, test_class, test_name = node_id.split("::")
        path = edited / module
        path.write_text(
            with_recompile_limit(path.read_text("utf-8"), test_class, test_name, probed.limit, probed.blocks)
        )
        fixes[node_id] = f"recompile_limit={probed.limit} in {test_class}"
    if not fixes:
        return
    lift = sorted({node_id.rsplit("::", 1)[1] for node_id in fixes})
    again = run_own_tests(python, edited, trees, list(fixes), work_dir / "again", budget_s, lift, zygote)
    still = {broken["test"] for broken in again.broken} | ({*fixes} if again.error else set())
    passing = {node_id for node_id in fixes if node_id not in still}
    modules = {node_id.split("::")[0] for node_id in passing}
    if not modules or any(node_id.split("::")[0] in modules and node_id not in passing for node_id in fixes):
        return  # a test file is carried only with every fix in it confirmed
    result.broken = [broken for broken in result.broken if broken["test"] not in passing]
    result.fixed = [{"test": node_id, "fix": fixes[node_id]} for node_id in sorted(passing)]
    result.test_edits = {module: (edited / module).read_text("utf-8") for module in sorted(modules)}


def _class_names(text: str) -> dict[str, set[str]]:
    tree = parse_module(text)
    names: dict[str, set[str]] = {}
    for cls in (n for n in getattr(tree, "body", []) if isinstance(n, ast.ClassDef)):
        names[cls.name] = {
            target.id
            for statement in cls.body
            for target in (
                statement.targets if isinstance(statement, ast.Assign) else [getattr(statement, "target", None)]
            )
            if isinstance(statement, (ast.Assign, ast.AnnAssign)) and isinstance(target, ast.Name)
        }
    return names
