"""A plan: the fix groups the engine found on one commit of the target, as a file jobs can pass on.

`codemod bot plan` writes it on a CPU runner; `verify-group` (GPU) and `publish` read it, so the
GPU job verifies exactly the texts the publish job commits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.groups import FixGroup, ReportOnly

PLAN_VERSION = 1


class PlanError(Exception):
    """A plan file that cannot be used: another version, edited, or without the asked-for group."""


@dataclass
class Plan:
    repo: str
    clone_url: str
    base: str
    base_sha: str
    groups: list[FixGroup]
    engine_errors: list[str] = field(default_factory=list)
    to_verify: list[str] = field(default_factory=list)  # group ids worth verifying now (cap and etiquette allowing)
    report_only: list[ReportOnly] = field(default_factory=list)  # findings without a fix, for the dashboard
    # What the engine was run on: a PR outside them is not judged by this plan (empty: none is).
    rules: list[str] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)  # repository-relative paths

    def group(self, group_id: str) -> FixGroup:
        for group in self.groups:
            if group.id == group_id:
                return group
        raise PlanError(f"no group {group_id!r} in the plan (groups: {', '.join(g.id for g in self.groups) or 'none'})")

    def to_json(self) -> dict[str, Any]:
        return {
            "version": PLAN_VERSION,
            "repo": self.repo,
            "clone_url": self.clone_url,
            "base": self.base,
            "base_sha": self.base_sha,
            "to_verify": self.to_verify,
            "engine_errors": self.engine_errors,
            "groups": [group.to_json() for group in self.groups],
            "report_only": [finding.to_json() for finding in self.report_only],
            "rules": self.rules,
            "scope": self.scope,
        }

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> Plan:
        data = json.loads(path.read_text())
        if data.get("version") != PLAN_VERSION:
            raise PlanError(f"{path}: plan version {data.get('version')!r}, this bot reads {PLAN_VERSION}")
        try:
            groups = [FixGroup.from_json(group) for group in data["groups"]]
        except ValueError as error:
            raise PlanError(f"{path}: {error}") from None
        return cls(
            repo=data["repo"],
            clone_url=data["clone_url"],
            base=data["base"],
            base_sha=data["base_sha"],
            groups=groups,
            engine_errors=list(data["engine_errors"]),
            to_verify=list(data["to_verify"]),
            report_only=[ReportOnly(**finding) for finding in data.get("report_only", [])],
            rules=list(data.get("rules", [])),
            scope=list(data.get("scope", [])),
        )
