"""The verification report: per target, what changed, what was measured, and the verdict.

`VerifyReport.to_json()` is the machine-readable record; `to_markdown(reproduce)` is the block
a PR body carries: a before -> after table per target (copies, syncs and output objects per
forward or step; on CUDA also the host time in syncs and the big syncs, as in diffusers #13406),
the parity numbers, what stayed unverified and why, and the command that reproduces it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from bot.verify.checkout.own_tests import OwnTests
from bot.verify.checkout.repo_checks import RepoChecks, failing_checks_lines, repo_checks_lines
from bot.verify.judging.verdict import CENSUS_KINDS, VERDICTS
from bot.verify.real_scale.table import real_scale_lines
from bot.verify.reporting.census_summary import number, parity_text
from bot.verify.reporting.failure_causes import grouped_failures

_ICONS = {"verified": "✅", "no-gain": "➖", "regressed": "❌", "failed": "❌", "unverified": "❔"}
_SITE_KINDS = {"outputs": "output object(s)"}

UNVERIFIED_SHOWN_OPEN = 10
"""More unverified classes than this fold into a <details> block, so the measured table leads."""

_LABELS = {"h2d": "H2D copies", "d2h": "D2H copies", "sync": "syncs", "outputs": "output objects"}


@dataclass
class TargetResult:
    target: str
    rules: list[str]
    rewrites: list[str]  # "models/x.py:123" in the rewritten tree
    verdict: str
    error: str | None = None
    kind: str = ""  # model, module, scheduler, pipeline; "" for a class with no target
    exercises: str = ""
    unit: str | None = None  # per what the counts are: "forward" or "step"
    units: int | None = None
    before: dict[str, float] = field(default_factory=dict)  # counts per unit
    after: dict[str, float] = field(default_factory=dict)
    sites: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # "before"/"after" -> census sites
    # Sites whose counts changed, named by their line in the original tree (after_site: in the rewritten one).
    site_changes: list[dict[str, Any]] = field(default_factory=list)
    output_sites: dict[str, dict[str, int]] = field(default_factory=dict)
    durations_ms: dict[str, dict[str, float] | None] = field(default_factory=dict)
    big_syncs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    repeated_blocks: dict[str, Any] = field(default_factory=dict)
    compile: dict[str, Any] = field(default_factory=dict)
    parity: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    seconds: float | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class VerifyReport:
    src: str
    device: str
    select: list[str] | None
    versions: dict[str, str]
    changed_files: list[str]  # relative to src
    targets: list[TargetResult]
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # engine errors (a file it could not handle)
    tolerance: float = 1e-4
    compile: bool = False
    own_tests: OwnTests | None = None  # the checkout's own tests of the changed files, on both trees
    interpreter: str = ""  # the Python that ran both trees (the checkout's environment, or --python)
    rewrites: dict[str, list[str]] = field(default_factory=dict)  # every change, "path:line" -> its rules
    phases: dict[str, float] = field(default_factory=dict)  # seconds: "rewrite", "targets" (with planning), "own tests"
    real_scale: dict[str, Any] | None = None  # `--scale real`: the cases run at real size, or why not measured
    repo_checks: RepoChecks | None = None  # the checkout's `make quality` / consistency checks, on both trees
    turned_on_tests: OwnTests | None = None  # the checkout's tests the change turns on (gated on what it adds)
    nothing_to_verify: str | None = None  # why the engine rewrote nothing (then nothing else ran)

    def exit_code(self) -> int:
        """0 only if nothing regressed or failed (unverified and no-gain changes do not fail a run)."""
        bad = any(t.verdict in ("regressed", "failed") for t in self.targets)
        broken = any(tests is not None and tests.broken for tests in (self.own_tests, self.turned_on_tests))
        broken = broken or (self.repo_checks is not None and bool(self.repo_checks.broken))
        return 1 if bad or broken or self.errors else 0

    def counts(self) -> dict[str, int]:
        return {verdict: sum(t.verdict == verdict for t in self.targets) for verdict in VERDICTS}

    def to_json(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "device": self.device,
            "select": self.select,
            "versions": self.versions,
            "interpreter": self.interpreter,
            "tolerance": self.tolerance,
            "compile": self.compile,
            "changed_files": self.changed_files,
            "summary": self.counts(),
            "exit_code": self.exit_code(),
            "seconds": round(self.seconds, 1),
            "phases": {phase: round(seconds, 1) for phase, seconds in self.phases.items()},
            "errors": self.errors,
            "own_tests": self.own_tests.to_json() if self.own_tests else None,
            "repo_checks": self.repo_checks.to_json() if self.repo_checks else None,
            "turned_on_tests": self.turned_on_tests.to_json() if self.turned_on_tests else None,
            "rewrites": self.rewrites,
            "targets": [{**t.to_json(), "device": self.device, "versions": self.versions} for t in self.targets],
            "real_scale": self.real_scale,
            "nothing_to_verify": self.nothing_to_verify,
        }

    def to_markdown(self, reproduce: str) -> str:
        measured = [t for t in self.targets if t.verdict != "unverified" or t.kind]
        unverified = [t for t in self.targets if t.verdict == "unverified" and not t.kind]
        lines = [
            f"#### Verification ({_device_words(self.device)}; torch {self.versions.get('torch', '?')}, "
            f"diffusers {self.versions.get('diffusers', '?')})",
            "",
            _summary_line(self.counts(), self.nothing_to_verify),
            "",
        ]
        if measured:
            lines += _measured_table(measured, self.device)
            lines += ["", *_parity_lines(measured)]
            sites = _sites_block(measured)
            if sites:
                lines += ["", *sites]
        if unverified:
            rows = ["| class | rules | rewrites | why |", "|---|---|---|---|"]
            rows += [
                f"| `{r.target}` | {', '.join(r.rules)} | {_rewrites(r.rewrites)} | {r.error or ''} |"
                for r in unverified
            ]
            title = f"Not verified: {len(unverified)} class(es) no target reached"
            if len(unverified) > UNVERIFIED_SHOWN_OPEN:
                lines += ["", f"<details><summary>{title}</summary>", "", *rows, "", "</details>"]
            else:
                lines += ["", f"{title}:", "", *rows]
        if self.errors:
            lines += ["", "Engine errors:", *(f"- {error}" for error in self.errors)]
        if self.own_tests is not None:
            lines += ["", *own_tests_lines(self.own_tests)]
        if self.real_scale is not None:
            lines += ["", *real_scale_lines(self.real_scale)]
        if self.turned_on_tests is not None:
            lines += ["", *own_tests_lines(self.turned_on_tests)]
        if self.repo_checks is not None:
            lines += ["", *repo_checks_lines(self.repo_checks)]
        lines += _not_the_changes_lines(self)
        lines += ["", "Reproduce:", "", "```", reproduce, "```", ""]
        return "\n".join(lines)


_BEFORE = {"passed": "passed", "skipped": "was skipped (the change turns it on)"}


def own_tests_lines(tests: OwnTests) -> list[str]:
    """The own-tests line, what broke (test id and assertion), what failed already, and the pytest command."""
    lines = [f"{'❌' if tests.broken else '✅' if tests.same else '➖'} {tests.line()}"]
    lines += [
        f"- `{b['test']}` {_BEFORE.get(b.get('before', 'passed'), 'passed')} before the change and fails after it: "
        f"{b['message']}"
        for b in tests.broken
    ]
    lines += [f"- `{c['test']}`: {c['before']} before, {c['after']} after" for c in tests.changed]
    lines += [f"- `{f['test']}` passes with the change's test edit: {f['fix']}" for f in tests.fixed]
    if tests.modules:
        lines += ["", "From the checkout's root, on each tree:", "", "```", tests.command, "```"]
    return lines


def _not_the_changes_lines(report: VerifyReport) -> list[str]:
    """What fails on the original tree already, once, at the end: the tests by cause (what the runner
    lacks apart from what may be the code's), then the repository checks that fail there too."""
    failing = [f for tests in (report.own_tests, report.turned_on_tests) if tests for f in tests.failing_before]
    still = [f for f in failing if f["after"] in ("failed", "error")]
    lines = [
        f"- `{f['test']}` fails on the original tree, {f['after']} with the change" for f in failing if f not in still
    ]
    for group in grouped_failures(still):
        whose = "the runner's, not the code's" if group.runner else "not the change's"
        shown = ", ".join(f"`{test}`" for test in group.tests[:3])
        more = f" (+{len(group.tests) - 3} more)" if len(group.tests) > 3 else ""
        lines.append(f"- {group.line()} ({whose}): {shown}{more}")
    if report.repo_checks is not None:
        lines += failing_checks_lines(report.repo_checks)
    return ["", "Failing on the original tree too, so not counted:", "", *lines] if lines else []


def _device_words(device: str) -> str:
    return {
        "emu": "emulated accelerator on CPU: counts are exact, times are not measured",
        "cuda": "CUDA, torch.profiler",
        "cpu": "CPU: parity and output objects only, no copy/sync census",
    }.get(device, device)


def _summary_line(counts: dict[str, int], nothing_to_verify: str | None) -> str:
    parts = [f"{_ICONS[v]} {n} {v}" for v, n in counts.items() if n]
    if parts:
        return " · ".join(parts)
    return f"Nothing to verify: {nothing_to_verify}." if nothing_to_verify else "Nothing to verify."


def _arrow(before: float | None, after: float | None) -> str:
    if before is None or after is None:
        return "–"
    text = f"{number(before)} → {number(after)}"
    return f"**{text}**" if after != before else text


def _measured_table(results: list[TargetResult], device: str) -> list[str]:
    header = ["target", "rules", "per", *(_LABELS[k] for k in (*CENSUS_KINDS, "outputs"))]
    if device == "cuda":
        header += ["sync wait (ms per call)", "big syncs (>50 ms) per call"]
    header += ["max abs diff", "verdict"]
    rows = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for result in results:
        per = result.unit or "–"
        if result.unit == "step" and result.units:
            per = f"step (of {result.units})"
        cells = [f"`{result.target}`", ", ".join(result.rules), per]
        cells += [_arrow(result.before.get(k), result.after.get(k)) for k in (*CENSUS_KINDS, "outputs")]
        if device == "cuda":
            cells += [_sync_ms(result), _big_syncs(result)]
        cells += [parity_text(result.parity), f"{_ICONS[result.verdict]} {result.verdict}"]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def _sync_ms(result: TargetResult) -> str:
    before, after = (result.durations_ms.get(side) or {} for side in ("before", "after"))
    if not before and not after:
        return "–"
    return f"{before.get('sync', 0):.1f} → {after.get('sync', 0):.1f}"


def _big_syncs(result: TargetResult) -> str:
    before, after = (result.big_syncs.get(side, []) for side in ("before", "after"))
    total_before = sum(e.get("duration_ms") or 0 for e in before)
    total_after = sum(e.get("duration_ms") or 0 for e in after)
    return f"{len(before)} → {len(after)}, {total_before:.1f} ms → {total_after:.1f} ms"


def _parity_lines(results: list[TargetResult]) -> list[str]:
    lines = ["Parity (same seed and inputs, fp32):"]
    for result in results:
        parity = result.parity
        if not parity or parity.get("max_abs_diff") is None:
            lines.append(f"- `{result.target}`: {result.error or 'not compared'}")
            continue
        required = parity.get("rule") or (
            "bit-identical required" if parity["tolerance"] == 0 else f"tolerance {parity['tolerance']:g}"
        )
        lines.append(
            f"- `{result.target}`: max abs diff {parity['max_abs_diff']:.3g}, mean {parity['mean_abs_diff']:.3g} "
            f"({required}; {'passed' if parity['passed'] else 'FAILED'})"
        )
        lines += [f"  - {note}" for note in result.notes]
        if result.error and result.verdict != "verified":
            lines.append(f"  - {result.verdict}: {result.error}")
    return lines


def _sites_block(results: list[TargetResult]) -> list[str]:
    body = []
    for result in results:
        if not result.site_changes:
            continue
        body.append(f"`{result.target}` (rewrites: {_rewrites(result.rewrites)})")
        for change in result.site_changes:
            where = f"`{change['site']}`"
            if change.get("after_site") and change["after_site"] != change["site"]:
                where += f" (now `{change['after_site']}`)"
            body.append(f"- {where}: {_kinds(change['before']) or 'none'} → {_kinds(change['after']) or 'none'}")
    if not body:
        return []
    return ["<details><summary>Copy and sync sites that changed (per call)</summary>", "", *body, "", "</details>"]


def _kinds(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {_SITE_KINDS.get(kind, kind)}" for kind, n in counts.items())


def _rewrites(rewrites: list[str]) -> str:
    shown = ", ".join(f"`{r}`" for r in rewrites[:4])
    return shown + (f" (+{len(rewrites) - 4} more)" if len(rewrites) > 4 else "")
