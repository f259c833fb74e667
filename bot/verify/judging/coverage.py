"""How much of a verification run says something: verdicts per change, by rule and by reason.

A *change* is one rewrite (a contiguous block of changed lines, the report's `rewrites`). Several
targets may run it (a VAE's decode runs in every pipeline that holds the VAE): it is `failed` or
`regressed` if any of them says so, else `verified` if one showed its rule's evidence, else
`no-gain`; `unverified` (with the reason the report gives) when no target vouched for it. A
change with two rules counts under each. Unverified reasons fall into a few kinds, so that runs
can be compared (the report's own text names the target and the lines). No torch import here.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bot.verify.judging.verdict import VERDICTS

# (kind, a text every reason of that kind holds), first match wins; the texts come from bot.verify.target_runs.
REASON_KINDS = (
    ("needs the Hub", "needs the Hub"),
    ("loop-shaping arguments not driven", "without driving what decides whether the loop steps"),
    ("target cannot run in this environment", "cannot run here"),
    ("its target failed", " failed"),
    ("inputs take another path", "but not these lines"),
    ("module-level change no target ran", "a module-level change"),
    ("no census on --device cpu", "no census on --device cpu"),
    ("no target builds the class", "no target builds or reaches"),
)
OTHER = "other"


def reason_kind(reason: str | None) -> str:
    for kind, text in REASON_KINDS:
        if text in (reason or ""):
            return kind
    return OTHER


@dataclass
class Coverage:
    changes: Counter[str] = field(default_factory=Counter)  # verdict -> changes
    by_rule: dict[str, Counter[str]] = field(default_factory=dict)  # rule -> verdict -> changes
    reasons: Counter[str] = field(default_factory=Counter)  # reason kind -> unverified changes
    entries: Counter[str] = field(default_factory=Counter)  # verdict -> report entries (targets and classes)

    @property
    def total(self) -> int:
        return sum(self.changes.values())

    @property
    def with_verdict(self) -> float:
        """The share of changes that got a verdict other than `unverified`."""
        return 1 - self.changes["unverified"] / self.total if self.total else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "changes": dict(self.changes),
            "with_verdict": round(self.with_verdict, 4),
            "by_rule": {rule: dict(counts) for rule, counts in sorted(self.by_rule.items())},
            "unverified_by_reason": dict(self.reasons.most_common()),
            "entries": dict(self.entries),
        }

    def to_markdown(self) -> str:
        header = ["rule", *VERDICTS, "with a verdict"]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for rule, counts in [*sorted(self.by_rule.items()), ("all", self.changes)]:
            total = sum(counts.values())
            share = f"{1 - counts['unverified'] / total:.0%}" if total else "-"
            name = f"**{rule}**" if rule == "all" else rule
            lines.append("| " + " | ".join([name, *(str(counts[v]) for v in VERDICTS), share]) + " |")
        lines += ["", "| unverified, why | changes |", "|---|---:|"]
        lines += [f"| {kind} | {count} |" for kind, count in self.reasons.most_common()]
        return "\n".join(lines)


def coverage_of(report: dict[str, Any], rules: dict[str, list[str]] | None = None) -> Coverage:
    """The coverage of a `VerifyReport.to_json()` report.

    `rules` (change -> rules) stands in for the report's own `rewrites` where an older report has none.
    """
    rules = report.get("rewrites") or rules or {}
    verdicts: dict[str, str] = {}
    reasons: dict[str, str | None] = {}
    coverage = Coverage()
    for entry in report["targets"]:
        coverage.entries[entry["verdict"]] += 1
        for where in entry["rewrites"]:
            rules.setdefault(where, entry["rules"])
            if where not in verdicts or _RANK[entry["verdict"]] < _RANK[verdicts[where]]:
                verdicts[where], reasons[where] = entry["verdict"], entry.get("error")
    for where, verdict in verdicts.items():
        coverage.changes[verdict] += 1
        for rule in rules[where]:
            coverage.by_rule.setdefault(rule, Counter())[verdict] += 1
        if verdict == "unverified":
            coverage.reasons[reason_kind(reasons[where])] += 1
    return coverage


# Which verdict a change takes when several targets ran it: harm first, then evidence.
_RANK = {verdict: rank for rank, verdict in enumerate(("failed", "regressed", "verified", "no-gain", "unverified"))}
