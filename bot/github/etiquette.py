"""What the bot may do for a group, given the pull requests GitHub already holds.

- Never a second PR for a fingerprint: one open anywhere is left as it is.
- Never reopen or recreate what a maintainer closed without merging: a closed PR with the
  group's fingerprint, or on the group's branch (the same rule in the same family), blocks it.
  A PR the bot closed itself as no longer needed blocks nothing: if the fix comes back, so does a PR.
- A fix already merged is skipped (a fix already upstream produces no group at all).
- An open PR on the group's branch with another fingerprint is updated (its fix changed).
The cap on open PRs and the "only the bot's commits" rule for branches are applied by the
publisher, which has the counts and the git history.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.github.pulls import KnownPull
from bot.groups import FixGroup


class Action(str, enum.Enum):
    OPEN = "open"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    REBUILD = "rebuild"  # the same fix, its branch behind the base: rebuilt on it (the publisher decides)
    SKIP = "skip"


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str = ""
    pull: KnownPull | None = None


@dataclass
class KnownPulls:
    """All the bot's PRs the lookups found, merged by number (exact listings win over search hits)."""

    by_number: dict[int, KnownPull]

    @classmethod
    def merge(cls, *sources: list[KnownPull]) -> KnownPulls:
        by_number: dict[int, KnownPull] = {}
        for source in sources:
            for pull in source:
                known = by_number.get(pull.number)
                if known is None or (known.head_ref is None and pull.head_ref is not None):
                    by_number[pull.number] = pull
        return cls(by_number)

    def with_fingerprint(self, fingerprint: str) -> list[KnownPull]:
        return sorted((p for p in self.by_number.values() if p.fingerprint == fingerprint), key=lambda p: p.number)

    def on_branch(self, branch: str) -> list[KnownPull]:
        return sorted((p for p in self.by_number.values() if p.head_ref == branch), key=lambda p: p.number)

    def open_count(self) -> int:
        return sum(p.state == "open" for p in self.by_number.values())


def decide(group: FixGroup, pulls: KnownPulls) -> Decision:
    same = pulls.with_fingerprint(group.fingerprint)
    if merged := [p for p in same if p.merged]:
        return Decision(Action.SKIP, f"already merged in #{merged[0].number}", merged[0])
    if opened := [p for p in same if p.state == "open"]:
        pull = opened[0]
        if pull.head_ref == group.branch:
            return Decision(Action.UNCHANGED, f"#{pull.number} already holds this fix", pull)
        return Decision(Action.SKIP, f"already proposed in #{pull.number} (branch {pull.head_ref})", pull)
    if closed := [p for p in same if p.declined]:
        return Decision(Action.SKIP, f"#{closed[0].number} was closed without merging; not reopened", closed[0])
    on_branch = pulls.on_branch(group.branch)
    if opened := [p for p in on_branch if p.state == "open"]:
        return Decision(Action.UPDATE, f"#{opened[0].number} holds an older version of this fix", opened[0])
    if closed := [p for p in on_branch if p.declined]:
        pull = closed[-1]
        return Decision(
            Action.SKIP,
            f"#{pull.number} ({group.rule} in {group.family}) was closed without merging; not recreated",
            pull,
        )
    return Decision(Action.OPEN)
