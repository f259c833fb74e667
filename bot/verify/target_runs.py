"""Run the targets that reach the changed files on both trees, and one result per target or unvouched rewrite.

This process never imports diffusers (each tree is imported by its own worker only).
"""

from __future__ import annotations

import importlib
import shutil
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bot.verify.judging.target_result import target_result
from bot.verify.judging.verdict import OUTPUT_RULES, STRUCTURE_RULES, Side
from bot.verify.planning.changes import ChangeSet, Rewrite
from bot.verify.planning.plan import LoopShapes, TreeMap, targets_to_run
from bot.verify.reporting.report import TargetResult
from bot.verify.running.protocol import WorkerRequest
from bot.verify.running.runner import run_tree
from bot.verify.running.zygote import Zygote
from bot.verify.targets import TargetSpec, all_targets
from bot.verify.targets.from_tests import cannot_run, discover, replaced_by
from codemods.project.test_modules import CheckoutTestModules


def verify_changes(
    tests: CheckoutTestModules | None,
    changes: ChangeSet,
    root: Path,
    device: str,
    compile: bool,
    tolerance: float,
    say: Callable[[str], None],
    python: Path | None,
    zygote: Zygote | None,
) -> list[TargetResult]:
    """The results of the targets that reach the changed files (built-in, or configured by the checkout's `tests`),
    each run on both trees (a worker per tree, forked by the run's `zygote` where it serves them), then one
    `unverified` entry per class holding rewrites that no target vouched for, with the reason."""
    tree = TreeMap(changes.original)
    changed = set(changes.changed_files)
    built_in = all_targets()
    tests_copy: Path | None = None
    from_checkout: list[TargetSpec] = []
    if tests is not None:
        tests_copy = _copy_tests(tests.tests_dir, root)
        from_checkout = discover(tests, tests_copy, replaced_by(built_in))
    specs = targets_to_run([*built_in, *from_checkout], tree, changed)
    say(f"{len(specs)} target(s) reach the changed files")
    checks = _compile_checks(specs, tree, changes.rewrites) if compile else {}
    names = [spec.name for spec in specs]
    traced = sorted(str(changes.rewritten / path) for path in changed)
    tests_at = str(tests_copy) if tests_copy else None
    # Counts do not depend on timing, so the emulated and CPU runs share the cores. CUDA times
    # the host's waits: both workers start at once, but a lock lets one measure at a time.
    lock = str(root / "cuda-measure.lock") if device == "cuda" else None
    requests = [
        WorkerRequest(
            str(changes.original),
            device,
            names,
            str(root / "runs" / "original"),
            [],
            checks,
            tests_dir=tests_at,
            measure_lock=lock,
            keep_bytecode=True,
        ),
        WorkerRequest(
            str(changes.rewritten),
            device,
            names,
            str(root / "runs" / "rewritten"),
            traced,
            checks,
            tests_dir=tests_at,
            measure_lock=lock,
            keep_bytecode=True,
        ),
    ]
    if not specs:
        return _unverified(changes.rewrites, {}, {})
    say(f"running {len(specs)} target(s) in the original and the rewritten tree ({device})")
    shutil.rmtree(root / "runs", ignore_errors=True)  # a kept work dir must not lend old results
    with ThreadPoolExecutor(max_workers=3) as pool:
        # The parity check imports torch (seconds); it loads while the workers run.
        pool.submit(importlib.import_module, "bot.verify.running.outputs")
        before, after = pool.map(lambda request: run_tree(request, python=python, zygote=zygote), requests)
    results, credited, failed_owners, visited, held = [], set(), {}, {}, {}
    shapes = LoopShapes(changes.rewritten)
    for spec, first, second in zip(specs, before, after, strict=True):
        side_after = Side.from_result(second)
        for path, functions in side_after.functions.items():
            for owner in {name.split(".")[0] for name in functions}:
                visited.setdefault((path, owner), []).append(spec.name)
        side_before = Side.from_result(first)
        undriven = shapes.held_back(changes.rewrites, side_after.lines, side_after.functions)
        for where, places in undriven.items():
            held.setdefault(where, f"{spec.name} ran it without driving what decides whether the loop steps: {places}")
        result = target_result(spec, side_before, side_after, changes, device, tolerance, frozenset(undriven))
        if result is None:
            if spec.best_effort and not side_before.ok and not side_after.ok:
                why = cannot_run(spec, side_after.error or "")
                failed_owners[spec.classes[0]] = why  # the class it configures; others it builds may run elsewhere
            continue
        if result.verdict == "failed":
            failed_owners.update({owner: f"its target {spec.name} failed" for owner in spec.classes})
        credited.update(result.rewrites)
        results.append(result)
        say(f"{spec.name}: {result.verdict}")
    missed = [r for r in changes.rewrites if r.where not in credited]
    return results + _unverified(missed, failed_owners, visited, held)


def _copy_tests(tests: Path, root: Path) -> Path:
    """A copy of the checkout's `tests/` (imported by workers for `tests/...::Class` targets)."""
    copy = root / "checkout-tests" / "tests"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(tests, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def _unverified(
    rewrites: list[Rewrite],
    failed_owners: dict[str, str],
    visited: dict[tuple[str, str], list[str]],
    held: dict[str, str] | None = None,
) -> list[TargetResult]:
    """Rewrites no target ran (or vouched for), one entry per class (or function) that holds them, with the reason."""
    held = held or {}
    by_owner: dict[tuple[str, str, str], list[Rewrite]] = {}
    for rewrite in rewrites:
        by_owner.setdefault((rewrite.path, rewrite.owner, held.get(rewrite.where, "")), []).append(rewrite)
    results = []
    for (path, owner, held_why), group in sorted(by_owner.items()):
        if held_why:
            why = held_why
        elif owner in failed_owners:
            why = failed_owners[owner]
        elif (path, owner) in visited:
            names = ", ".join(sorted(set(visited[(path, owner)])))
            why = f"{names} ran {owner} but not these lines (a path its inputs do not take)"
        elif owner == "<module>":
            why = "a module-level change whose code no target ran"
        else:
            why = f"no target builds or reaches {owner}"
        rules = sorted({rule for rewrite in group for rule in rewrite.rules})
        results.append(TargetResult(owner, rules, [r.where for r in group], "unverified", why))
    return results


def _compile_checks(specs: list[TargetSpec], tree: TreeMap, rewrites: list[Rewrite]) -> dict[str, list[str]]:
    """Per target, the compile checks its reachable rewrites call for (DIF004: fullgraph; DIF003: blocks)."""
    checks = {}
    for spec in specs:
        files = tree.files_of(spec)
        rules = {rule for r in rewrites if r.path in files for rule in r.rules}
        wanted = (["fullgraph"] if rules & OUTPUT_RULES else []) + (
            ["repeated_blocks"] if rules & STRUCTURE_RULES else []
        )
        if wanted:
            checks[spec.name] = wanted
    return checks
