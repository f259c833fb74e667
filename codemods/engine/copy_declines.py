"""Fixes a `# Copied from` group forbids before any is applied: decided once, where check and write both see it.

A fix inside copied code must land in the source and every copy, or nowhere (codemods/project/copies.py).
Whether the group *may* change at all is known before anything is applied: a member outside the
run, a member the run may not change (pipelines/deprecated/), or a copy whose source the tree does
not define. The engine's resolve phase asks `copy_decline` so that `--check`, JSON, SARIF and the
summary's fixable count say what a write will do; the fixer asks the same questions again as a
backstop, and adds the ones only the fixed texts answer (copies that already differ, or that a
fix would make differ).
"""

from __future__ import annotations

from collections.abc import Collection

from codemods.findings import Finding
from codemods.project.copies import CopyPair, copy_relations
from codemods.project.facts import CopyBlock
from codemods.project.frozen import DEPRECATED_REASON
from codemods.project.index import ProjectIndex


def fix_copy_relations(index: ProjectIndex, finding: Finding) -> tuple[set[CopyPair], set[CopyBlock]]:
    """The copy relations of the finding's lines and of every node its fix edits (the finding must have a fix)."""
    spans = [(finding.line, finding.end_line)] + [(e.target.line, e.target.end_line) for e in finding.fix.edits]
    pairs: set[CopyPair] = set()
    unfound: set[CopyBlock] = set()
    for line, end_line in spans:
        more_pairs, more_unfound = copy_relations(index, finding.path, line, end_line)
        pairs |= more_pairs
        unfound |= more_unfound
    return pairs, unfound


def unfound_reason(index: ProjectIndex, unfound: Collection[CopyBlock]) -> str:
    block = min(unfound, key=lambda b: (b.path, b.start_line))  # the reason must not depend on hash order
    return (
        f"`{block.qualname}` in {index.shown(block.path)} is `# Copied from` `diffusers.{block.source}`, which this tree "
        "does not define, so a change there cannot be shown to keep the copy"
    )


def pair_members(index: ProjectIndex, pair: CopyPair) -> str:
    """The pair in words, its files named as the tree names them (never the machine's absolute paths)."""
    return (
        f"`{pair.copy_qualname}` in {index.shown(pair.copy_path)} is `# Copied from` `{pair.source_qualname}` "
        f"in {index.shown(pair.source_path)}"
    )


def unchangeable_reason(
    index: ProjectIndex, pair: CopyPair, in_run: Collection[str], frozen: Collection[str]
) -> str | None:
    """Why the pair cannot change together in this run, whatever the fix: a member outside it, or one it may not change."""
    members = pair_members(index, pair)
    outside = [index.shown(p) for p in (pair.copy_path, pair.source_path) if p not in in_run]
    if outside:
        return f"{members}; both must change together, and {', '.join(outside)} is not part of this run"
    unchangeable = [index.shown(p) for p in (pair.copy_path, pair.source_path) if p in frozen]
    if unchangeable:
        return f"{members}; both must change together, and {', '.join(unchangeable)} may not change ({DEPRECATED_REASON})"
    return None


def copy_decline(index: ProjectIndex, finding: Finding, in_run: Collection[str], frozen: Collection[str]) -> str | None:
    """Why the finding's fix can never apply in this run because of its copy group (None: it may)."""
    pairs, unfound = fix_copy_relations(index, finding)
    if unfound:
        return unfound_reason(index, unfound)
    # Sorted, so the reason does not depend on hash order; the pairs the finding's own file is a member of
    # first, so the reason names the relation that binds it (a sibling copy's pair says nothing of this file).
    for pair in sorted(pairs, key=lambda p: (finding.path not in (p.copy_path, p.source_path), p)):
        if reason := unchangeable_reason(index, pair, in_run, frozen):
            return reason
    return None
