"""One target's result: which rewrites it went through, their counts and sites on both trees, parity, verdict.

It imports torch only to compare the two sides' saved outputs, once both sides ran.
"""

from __future__ import annotations

from typing import Any

from bot.verify.judging.verdict import STRUCTURE_RULES, ParityRule, Side, judge, parity_rule
from bot.verify.planning.changes import ChangeSet, Rewrite
from bot.verify.planning.plan import exercised
from bot.verify.reporting.report import TargetResult
from bot.verify.targets import TargetSpec


def target_result(
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

    from bot.verify.running.outputs import compare

    def load(path: str | None) -> dict[str, torch.Tensor]:
        return torch.load(path, weights_only=True)

    return compare(load(before.outputs_file), load(after.outputs_file), rule.tolerance, rule.ulps, rule.reason)
