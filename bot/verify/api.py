"""`verify()`: rewrite a copy of a diffusers tree, run both copies' targets, judge every change.

This process never imports diffusers (each tree is imported by its own worker only); it
imports torch just to compare the two sides' saved outputs.
"""

from __future__ import annotations

import importlib
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

from bot.verify.changes import ChangeSet, Rewrite, rewrite_copy
from bot.verify.environment import checkout_of
from bot.verify.own_tests import DEFAULT_BUDGET_S, changed_files_tests
from bot.verify.plan import LoopShapes, TreeMap, exercised, targets_to_run
from bot.verify.protocol import WorkerRequest
from bot.verify.real_scale.run import real_scale_section
from bot.verify.repo_checks import checkout_checks
from bot.verify.report import TargetResult, VerifyReport
from bot.verify.runner import run_tree
from bot.verify.targets import TargetSpec, all_targets
from bot.verify.targets.from_tests import cannot_run, discover, tests_dir_of
from bot.verify.turned_on_tests import turned_on_tests
from bot.verify.verdict import OUTPUT_RULES, STRUCTURE_RULES, ParityRule, Side, judge, parity_rule

DEVICES = ("emu", "cuda", "cpu")
SCALES = ("test", "real")


def verify(
    src: Path,
    *,
    select: tuple[str, ...] | None = None,
    paths: tuple[Path, ...] | None = None,
    device: str = "emu",
    work_dir: Path | None = None,
    compile: bool = False,
    tolerance: float = 1e-4,
    progress: Callable[[str], None] | None = None,
    python: Path | None = None,
    own_tests: bool = True,
    tests_budget_s: float = DEFAULT_BUDGET_S,
    scale: str = "test",
    repo_checks: bool = True,
) -> VerifyReport:
    """Verify every change the engine makes to `src` (a diffusers package directory).

    `python` runs both trees (default: this interpreter); in a checkout with `tests/`,
    `own_tests` also runs the checkout's tests that cover the changed files on both trees, and
    `repo_checks` the checks its Makefile and CI run (`make quality`, repository consistency).
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    src = Path(src)
    if not (src / "__init__.py").is_file():
        raise ValueError(f"{src} is not a package directory (expected …/diffusers with an __init__.py)")
    say = progress or (lambda message: None)
    started = time.monotonic()
    keep = work_dir is not None
    root = Path(work_dir) if keep else Path(tempfile.mkdtemp(prefix="codemod-verify-"))
    root.mkdir(parents=True, exist_ok=True)
    phases: dict[str, float] = {}

    def lap(phase: str) -> None:
        phases[phase] = time.monotonic() - started - sum(phases.values())

    try:
        say(f"rewriting a copy of {src}")
        changes = rewrite_copy(src, root, select=select, paths=paths)
        lap("rewrite")
        say(f"{len(changes.rewrites)} rewrite(s) in {len(changes.changed_files)} file(s)")
        results, tests, real, turned_on, checks = [], None, None, None, None
        if changes.rewrites:
            results = _verify_changes(src, changes, root, device, compile, tolerance, say, python)
            lap("targets")
            if scale == "real":
                real = real_scale_section(changes, device, root / "real-scale", python, say)
                lap("real scale")
            if own_tests:
                tests = changed_files_tests(src, changes, root / "own-tests", python, tests_budget_s, say)
                turned_on = turned_on_tests(src, changes, root / "turned-on-tests", python, tests_budget_s, say)
                lap("own tests")
            checkout = checkout_of(src)
            if repo_checks and checkout is not None:
                trees = {"original": changes.original, "rewritten": changes.rewritten}
                checks = checkout_checks(checkout, trees, root / "repo-checks", python, say)
                lap("repo checks")
    finally:
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
    return VerifyReport(
        src=str(src),
        device=device,
        select=list(select) if select else None,
        versions=_versions(src),
        changed_files=changes.changed_files,
        targets=results,
        seconds=time.monotonic() - started,
        errors=[str(error) for error in changes.result.errors],
        tolerance=tolerance,
        compile=compile,
        own_tests=tests,
        interpreter=str(python or sys.executable),
        rewrites={r.where: list(r.rules) for r in changes.rewrites},
        phases=phases,
        real_scale=real,
        repo_checks=checks,
        turned_on_tests=turned_on,
    )


def _verify_changes(
    src: Path,
    changes: ChangeSet,
    root: Path,
    device: str,
    compile: bool,
    tolerance: float,
    say: Callable[[str], None],
    python: Path | None,
) -> list[TargetResult]:
    tree = TreeMap(changes.original)
    changed = set(changes.changed_files)
    built_in = all_targets()
    tests_dir = _copy_tests(src, root)
    from_checkout = discover(tests_dir, {spec.classes[0] for spec in built_in}) if tests_dir else []
    specs = targets_to_run([*built_in, *from_checkout], tree, changed)
    say(f"{len(specs)} target(s) reach the changed files")
    checks = _compile_checks(specs, tree, changes.rewrites) if compile else {}
    names = [spec.name for spec in specs]
    traced = sorted(str(changes.rewritten / path) for path in changed)
    tests = str(tests_dir) if tests_dir else None
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
            tests_dir=tests,
            measure_lock=lock,
        ),
        WorkerRequest(
            str(changes.rewritten),
            device,
            names,
            str(root / "runs" / "rewritten"),
            traced,
            checks,
            tests_dir=tests,
            measure_lock=lock,
        ),
    ]
    if not specs:
        return _unverified(changes.rewrites, {}, {})
    say(f"running {len(specs)} target(s) in the original and the rewritten tree ({device})")
    shutil.rmtree(root / "runs", ignore_errors=True)  # a kept work dir must not lend old results
    with ThreadPoolExecutor(max_workers=3) as pool:
        # The parity check imports torch (seconds); it loads while the workers run.
        pool.submit(importlib.import_module, "bot.verify.outputs")
        before, after = pool.map(lambda request: run_tree(request, python=python), requests)
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
        result = _target_result(spec, side_before, side_after, changes, device, tolerance, frozenset(undriven))
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


def _target_result(
    spec: TargetSpec,
    before: Side,
    after: Side,
    changes: ChangeSet,
    device: str,
    tolerance: float,
    withheld: frozenset[str] = frozenset(),
) -> TargetResult | None:
    """The result of one target, or None when it ran fine and went through none of the rewrites.

    `withheld`: rewrites it ran but cannot vouch for (DIF005 with loop-shaping arguments it never drove).
    """
    covered = [r for r in changes.rewrites if exercised(r, after.lines, after.functions) and r.where not in withheld]
    if not covered and before.ok and after.ok:
        return None
    if not covered:
        # It failed before reaching anything: charge it with the rewrites of its own classes.
        covered = [r for r in changes.rewrites if r.owner in spec.classes]
    if not covered and (after.ok or not before.ok):
        return None  # failing on both trees with nothing of ours reached: the target's problem, not a change's
    if spec.best_effort and not before.ok and not after.ok:
        return None  # a test-derived target this environment cannot run: its rewrites stay unverified
    covered += _imports_for(covered, changes.rewrites)
    rules = sorted({rule for rewrite in covered for rule in rewrite.rules})
    structured = {r.owner for r in covered if set(r.rules) & STRUCTURE_RULES}
    before, after = before.judged_on(structured), after.judged_on(structured)
    parity = None
    if before.ok and after.ok:
        parity = _parity(before, after, parity_rule(rules, device, tolerance))
    judgement = judge(rules, before, after, parity, device)
    return TargetResult(
        target=spec.name,
        rules=rules,
        rewrites=[r.where for r in covered],
        verdict=judgement.verdict,
        error=judgement.error,
        kind=spec.kind,
        exercises=spec.exercises,
        unit=after.unit or before.unit,
        units=after.units,
        before=before.per_unit(),
        after=after.per_unit(),
        sites={"before": before.sites, "after": after.sites},
        site_changes=_site_changes(before, after, changes),
        output_sites={"before": before.output_sites, "after": after.output_sites},
        durations_ms={"before": before.durations_ms, "after": after.durations_ms},
        big_syncs={"before": before.big_syncs, "after": after.big_syncs},
        repeated_blocks={"before": before.repeated_blocks, "after": after.repeated_blocks},
        compile={
            check: {"before": before.compile.get(check), "after": value} for check, value in after.compile.items()
        },
        parity=parity.to_dict() if parity else None,
        notes=list(judgement.notes),
        seconds=round((before.seconds or 0) + (after.seconds or 0), 2),
    )


def _copy_tests(src: Path, root: Path) -> Path | None:
    """A copy of the checkout's tests/ (imported by workers for `tests/...::Class` targets), if it has one."""
    tests = tests_dir_of(src.resolve())
    if tests is None:
        return None
    copy = root / "checkout-tests" / "tests"
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(tests, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return copy


def _site_changes(before: Side, after: Side, changes: ChangeSet) -> list[dict[str, Any]]:
    """Sites whose counts differ, matched across the rewrite by their original line."""
    ahead = {site: dict(counts) for site, counts in _all_sites(before).items()}
    behind: dict[str, dict[str, Any]] = {}
    for site, counts in _all_sites(after).items():
        original = changes.original_site(site)
        behind[original or f"{site} (new line)"] = {"site": site, "counts": counts}
    found = []
    for site in sorted(set(ahead) | set(behind)):
        counts_after = behind.get(site, {}).get("counts", {})
        if ahead.get(site, {}) != counts_after:
            found.append(
                {
                    "site": site,
                    "after_site": behind.get(site, {}).get("site"),
                    "before": ahead.get(site, {}),
                    "after": counts_after,
                }
            )
    return found


def _all_sites(side: Side) -> dict[str, dict[str, int]]:
    """Census sites and the lines that built output objects, as one `site -> {kind: count}` map."""
    sites = {s["site"]: dict(s["counts"]) for s in side.sites}
    for site, count in side.output_sites.items():
        sites.setdefault(site, {})["outputs"] = count
    return sites


def _imports_for(covered: list[Rewrite], rewrites: list[Rewrite]) -> list[Rewrite]:
    """Module-level rewrites (the import a fix adds) of the files whose other rewrites were covered.

    They run when the module is imported, never per call; they stand or fall with the code that uses them.
    """
    files = {(r.path, rule) for r in covered for rule in r.rules}
    return [
        r
        for r in rewrites
        if r.owner == "<module>" and r not in covered and any((r.path, rule) in files for rule in r.rules)
    ]


def _parity(before: Side, after: Side, rule: ParityRule) -> Any:
    import torch

    from bot.verify.outputs import compare

    def load(path: str | None) -> dict[str, torch.Tensor]:
        return torch.load(path, weights_only=True)

    return compare(load(before.outputs_file), load(after.outputs_file), rule.tolerance, rule.ulps, rule.reason)


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


def _versions(src: Path) -> dict[str, str]:
    text = (src / "__init__.py").read_text("utf-8", errors="replace")
    match = re.search(r"^__version__\s*=\s*[\"']([^\"']+)[\"']", text, re.MULTILINE)
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "not installed"
    return {"torch": torch_version, "diffusers": match.group(1) if match else "unknown"}
