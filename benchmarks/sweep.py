"""Every diffusers release on PyPI through `codemod run --unsafe-fixes`, with the engine's promises checked.

    python benchmarks/sweep.py [--first 0.10.0] [--last 0.42.1] [--only 0.16.1,0.25.0] [--jobs 2]
                               [--no-imports] [--rerun] [--docs docs/releases.md]

`make sweep` runs it under `nice`. Per release (a wheel from `tools/releases.py`, copied to a
scratch tree): the run ends with 0 errors and no crash; every changed file compiles; every
`# Copied from` pair that agreed before still agrees (check_copies' comparison, codemods.project.copies);
a second run changes nothing; where the release imports with this environment's torch (in a
subprocess), every changed module still imports. Results are kept per release in the work
directory (keyed by the tool's own source, so a changed rule reruns everything) and the table
in `docs/releases.md` and its plot are regenerated from them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from benchmarks.sweep_checks import broken_copies, changed_files, import_failures, uncompilable  # noqa: E402
from benchmarks.sweep_report import write_docs  # noqa: E402
from codemods.engine.cache import tool_digest  # noqa: E402
from codemods.rules import all_rules  # noqa: E402
from tools.releases import PACKAGE, ReleaseUnavailable, release_tree  # noqa: E402

CODEMOD = Path(sys.executable).parent / "codemod"
FIRST = "0.10.0"


@dataclass
class ReleaseResult:
    version: str
    tool: str  # the tool digest the result was made with
    files: int = 0
    findings: dict[str, int] = field(default_factory=dict)  # per rule
    fixed: dict[str, int] = field(default_factory=dict)
    skipped: int = 0  # findings in pipelines/deprecated/
    changed_files: int = 0
    errors: list[str] = field(default_factory=list)  # the engine's own error lines
    problems: list[str] = field(default_factory=list)  # a broken promise: crash, not compiling, copies, ...
    imports: str = ""  # "ok (N modules)", or why the check did not apply
    seconds: float = 0.0


def versions_on_pypi() -> list[str]:
    """Final releases of diffusers on PyPI, oldest first (pip's own index client)."""
    command = [sys.executable, "-m", "pip", "index", "versions", PACKAGE, "--disable-pip-version-check"]
    done = subprocess.run(command, capture_output=True, text=True)
    match = re.search(r"Available versions: (.*)", done.stdout)
    if done.returncode != 0 or match is None:
        sys.exit(f"sweep: cannot list {PACKAGE} releases on PyPI: {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    found = [v.strip() for v in match.group(1).split(",") if re.fullmatch(r"\d+(\.\d+)*", v.strip())]
    return sorted(found, key=version_key)


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def run_codemod(tree: Path, cache: Path, jobs: int, *extra: str) -> tuple[dict | None, str]:
    """`codemod run --unsafe-fixes --format json` on `tree`: the JSON document (None on a crash) and stderr."""
    command = [str(CODEMOD), "run", "--unsafe-fixes", "--format", "json", "--jobs", str(jobs), *extra, str(tree)]
    env = {**os.environ, "CODEMOD_CACHE_DIR": str(cache), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=tree.parent)
    if done.returncode not in (0, 1, 2) or "Traceback" in done.stderr:
        return None, done.stderr
    try:
        return json.loads(done.stdout), done.stderr
    except json.JSONDecodeError:
        return None, done.stderr


def sweep_release(version: str, work: Path, jobs: int, imports: bool) -> ReleaseResult:
    started = time.perf_counter()
    result = ReleaseResult(version, tool_digest())
    original = release_tree(version)
    # One path for every release: files a release shares with the previous one are served from the cache.
    tree = work / "tree" / PACKAGE
    shutil.rmtree(tree.parent, ignore_errors=True)
    shutil.copytree(original / PACKAGE, tree, ignore=shutil.ignore_patterns("__pycache__"))
    first, stderr = run_codemod(tree, work / "cache", jobs)
    if first is None:
        result.problems.append(f"crash: {stderr.strip()[-400:]}")
        return result
    summary = first["summary"]
    result.files = summary["files_scanned"]
    for finding in first["findings"]:
        result.findings[finding["code"]] = result.findings.get(finding["code"], 0) + 1
        if finding["fixed"]:
            result.fixed[finding["code"]] = result.fixed.get(finding["code"], 0) + 1
    result.skipped = sum(entry["findings"] for entry in summary.get("skipped", []))
    result.errors = [f"{e['path']}:{e['line'] or ''}: {e['message']}" for e in first["errors"]]
    changed = changed_files(original / PACKAGE, tree)
    result.changed_files = len(changed)
    result.problems += [f"{path}: does not compile: {why}" for path, why in uncompilable(tree, changed)]
    result.problems += [f"copies: {pair}" for pair in broken_copies(original / PACKAGE, tree, changed)]
    second, stderr = run_codemod(tree, work / "cache", jobs, "--diff")
    if second is None:
        result.problems.append(f"second run crashed: {stderr.strip()[-400:]}")
    elif second["summary"]["files_changed"] or second["errors"]:
        result.problems.append(f"second run: {second['summary']['files_changed']} file(s) would change again")
    if imports and changed:
        result.imports, failures = import_failures(original, tree.parent, changed)
        result.problems += [f"import {module}: {why}" for module, why in failures.items()]
    result.seconds = round(time.perf_counter() - started, 1)
    return result


def load_results(results: Path) -> dict[str, ReleaseResult]:
    loaded = {}
    for path in results.glob("*.json"):
        data = json.loads(path.read_text())
        loaded[data["version"]] = ReleaseResult(**data)
    return loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--first", default=FIRST, help="oldest release swept (default %(default)s)")
    parser.add_argument("--last", help="newest release swept (default: the newest on PyPI)")
    parser.add_argument("--only", help="comma-separated releases (instead of the range)")
    parser.add_argument("--jobs", type=int, default=2, help="worker processes per run (default %(default)s)")
    parser.add_argument("--no-imports", action="store_true", help="skip the import check (torch, ~10 s a release)")
    parser.add_argument("--rerun", action="store_true", help="rerun releases whose results are already kept")
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "diffusers-codemod" / "sweep")
    parser.add_argument("--docs", type=Path, default=PROJECT / "docs" / "releases.md")
    args = parser.parse_args()

    if args.only:
        versions = [v.strip() for v in args.only.split(",") if v.strip()]
    else:
        available = versions_on_pypi()
        last = args.last or available[-1]
        versions = [v for v in available if version_key(args.first) <= version_key(v) <= version_key(last)]
    results_dir = args.work / "results"
    results_dir.mkdir(parents=True, exist_ok=True)
    kept = load_results(results_dir)
    unavailable: list[str] = []  # listed on PyPI, no file to download
    for position, version in enumerate(versions, start=1):
        prefix = f"[{position}/{len(versions)}] {version}:"
        if not args.rerun and version in kept and kept[version].tool == tool_digest():
            print(f"{prefix} kept from an earlier sweep", file=sys.stderr)
            continue
        print(f"{prefix} running ...", file=sys.stderr, flush=True)
        try:
            result = sweep_release(version, args.work, args.jobs, imports=not args.no_imports)
        except ReleaseUnavailable as error:
            print(f"{prefix} skipped: {error}", file=sys.stderr)
            unavailable.append(version)
            continue
        (results_dir / f"{version}.json").write_text(json.dumps(asdict(result), indent=1) + "\n")
        kept[version] = result
        state = (
            "ok"
            if not result.errors and not result.problems
            else f"{len(result.errors)} error(s), {len(result.problems)} problem(s)"
        )
        print(
            f"{prefix} {result.files} files, {sum(result.findings.values())} findings, "
            f"{sum(result.fixed.values())} fixed in {result.changed_files} files; {state} ({result.seconds:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        for line in (result.errors + result.problems)[:10]:
            print(f"    {line}", file=sys.stderr)
    current = [kept[v] for v in sorted(kept, key=version_key) if kept[v].tool == tool_digest()]
    write_docs(current, [rule.code for rule in all_rules()], args.docs, unavailable)
    failing = [r.version for r in current if r.errors or r.problems]
    print(f"sweep: {len(current)} release(s) in {args.docs}; failing: {', '.join(failing) or 'none'}", file=sys.stderr)
    sys.exit(1 if failing else 0)


if __name__ == "__main__":
    main()
