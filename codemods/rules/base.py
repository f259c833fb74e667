"""What every rule is: a code, its documentation, a cheap trigger, a check, and the edits it knows how to make."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from codemods.findings import Cost, Edit, Finding, Fix, FixSafety, ImportRequest
from codemods.project.files import FileMemo
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.source import SourceFile
from codemods.triggers import AnyOf, Trigger

if TYPE_CHECKING:
    import libcst as cst

DOC_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "Evidence")


@dataclass(frozen=True)
class Example:
    """A small invalid snippet; `fixed` is the source after the fix, or None when the rule only reports."""

    source: str
    fixed: str | None = None


class Rule:
    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]
    # What this rule's fixes can be (in FixSafety order; () when it only reports). The one source of
    # `fix_label()`, which the rules table, the README, SARIF and `explain` show, and with which the
    # docstring's "Fix safety" section opens (a test holds them together).
    fix_safeties: ClassVar[tuple[FixSafety, ...]]
    # Lines matching this are the only places the rule looks at; a file with none is never parsed for it.
    trigger: ClassVar[re.Pattern[str] | Trigger | AnyOf]
    # Strings one of which every trigger match holds: the per-file gate tests these with `in` (fast,
    # in C) instead of searching with the trigger, whose alternations `re` cannot scan for quickly.
    trigger_text: ClassVar[tuple[str, ...]] = ()

    def may_match(self, text: str) -> bool:
        """Whether the trigger can match `text` (cheaply; `check` finds the lines)."""
        if self.trigger_text:
            return any(literal in text for literal in self.trigger_text)
        return self.trigger.search(text) is not None
    # Facts about a file that this rule's `resolve` needs to judge findings in *other* files (a
    # pipeline's use of its scheduler's sigmas, for a scheduler finding). Gathered while scanning,
    # in the worker and cached with the scan, only from files where this pattern occurs.
    facts_trigger: ClassVar[re.Pattern[str] | Trigger | None] = None
    # Fixes offered only where the target asks for them (`[tool.codemod] opt-in = ["<code>-<name>"]`);
    # elsewhere those findings are reported without a fix. The rule's "Fix safety" says why.
    opt_ins: ClassVar[tuple[str, ...]] = ()
    valid: ClassVar[tuple[str, ...]] = ()
    invalid: ClassVar[tuple[Example, ...]] = ()

    @classmethod
    def fix_label(cls) -> str:
        """"safe", "unsafe", "safe or unsafe", or "none"."""
        return " or ".join(safety.value for safety in cls.fix_safeties) or FixSafety.NONE.value

    def opted_in(self, tree: TreeInfo, name: str) -> bool:
        return f"{self.code}-{name}" in tree.opt_ins

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterable[Finding]:
        raise NotImplementedError

    def collect_facts(self, source: SourceFile) -> Any:
        """This file's facts for `resolve` (called where `facts_trigger` occurs); stored in `FileFacts.by_rule`."""
        return None

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        """Confirm what the check could not see from one file (finding.requires); None drops the finding."""
        return finding

    def read_ahead(self, finding: Finding, memo: FileMemo) -> bool:
        """Read into `memo` what `resolve` will read of files outside the trees for `finding`, found by a scan
        (the run calls this while its workers scan on: it resolves alone, after them); whether it read. Once it
        has, the run asks no more for this rule."""
        return False

    def apply(self, edit: Edit, node: cst.CSTNode) -> cst.CSTNode:
        return getattr(self, f"edit_{edit.op}")(node, **dict(edit.params))

    @classmethod
    def documentation(cls) -> str:
        return inspect.cleandoc(cls.__doc__ or "")

    def finding(
        self,
        source: SourceFile,
        node: Any,
        message: str,
        fix: Fix | None = None,
        requires: tuple[tuple[str, ...], ...] = (),
        not_fixed_reason: str | None = None,
        cost: Cost | None = None,
        **extra: Any,
    ) -> Finding:
        """`cost`: only where the cost is not paid at `node` as the call graph places it (the scan derives it)."""
        span = source.span(node)
        return Finding(
            code=self.code,
            path=source.path,
            line=span.line,
            column=span.column,
            end_line=span.end_line,
            end_column=span.end_column,
            message=message,
            fix=fix,
            requires=requires,
            not_fixed_reason=not_fixed_reason,
            cost=cost,
            extra=extra,
        )

    def fix(self, description: str, *edits: Edit, imports: tuple[ImportRequest, ...] = ()) -> Fix:
        # The least safe the rule offers: a fix claims more only where the rule says so (`Fix(...)` itself).
        return Fix(safety=self.fix_safeties[-1], description=description, edits=edits, imports=imports)
