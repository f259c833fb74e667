"""What rules report: findings, their fixes, and the edits a fix is made of.

Everything here is plain, picklable, immutable data: detection runs in worker processes and its
findings are cached, so whatever happens to a finding later (a rule's cross-file `resolve`, the
fixer marking it fixed) makes a new value with `dataclasses.replace`, never changes the cached one.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class FixSafety(str, enum.Enum):
    """How much a fix can be trusted without running the code."""

    SAFE = "safe"  # provably equivalent: applied by default
    UNSAFE = "unsafe"  # plausible, needs verification: applied only with --unsafe-fixes
    NONE = "none"  # report only

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, order=True)
class NodeRef:
    """A libcst node, by its class name and its extent (1-based lines, 0-based character columns)."""

    kind: str
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """One change to one node: the rule that made it turns `op` and `params` into new libcst nodes."""

    target: NodeRef
    op: str
    params: tuple[tuple[str, Any], ...] = ()
    # Edits that only insert into a node's body (a method into a class) compose with others on
    # the same node; edits that replace a node exclude every other edit inside it.
    inserts: bool = False

    def param(self, name: str) -> Any:
        return dict(self.params)[name]


@dataclass(frozen=True)
class ImportRequest:
    """`from <module> import <name>`, where `module` is written as the file's neighbours would (may be relative).

    An empty `module` asks for `import <name>` (a standard-library module, such as `functools`).
    """

    module: str
    name: str


@dataclass(frozen=True)
class Fix:
    safety: FixSafety
    description: str
    edits: tuple[Edit, ...]
    imports: tuple[ImportRequest, ...] = ()


class Frequency(str, enum.Enum):
    """How often a finding's cost is paid (codemods/analysis/models/frequency.py derives it from the call graph)."""

    STEP = "every denoising step"
    LAST_STEP = "at the last denoising step only"
    MODEL_FORWARD = "every forward of a model run once per denoising step"
    ATTENTION = "every attention call"
    GENERATION = "once per generation"
    CALL = "once per call"
    BUILD = "once, when the object is built or the cached value first computed"
    UNREACHED_FORWARD = "every forward of a model that no pipeline of the tree runs per denoising step"
    NO_EFFECT = "with no measured effect"

    def __str__(self) -> str:
        return self.value


# Paid per denoising step: what the reports show by default.
HOT = frozenset({Frequency.STEP, Frequency.MODEL_FORWARD, Frequency.ATTENTION})


@dataclass(frozen=True)
class Cost:
    """How often a finding's cost is paid; `where` says what decides it (a class, a method, a pipeline)."""

    frequency: Frequency
    where: str = ""
    owners: tuple[str, ...] = ()  # the classes whose `forward` reaches the site (resolved against the tree)

    @property
    def hot(self) -> bool:
        return self.frequency in HOT

    def text(self) -> str:
        return f"{self.frequency.value} ({self.where})" if self.where else self.frequency.value


class Placement(str, enum.Enum):
    """Where a finding's tensor lives, from where the code makes or moves it (a type annotation alone says nothing)."""

    DEVICE = "device"
    UNKNOWN = "unknown"  # the origin cannot be traced: not listed by default

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Finding:
    code: str
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fix: Fix | None = None
    fixed: bool = False
    # Why a fix the rule offered was not applied (a copy group that cannot change together, a conflict...).
    not_fixed_reason: str | None = None
    # Facts a rule asks the whole-tree pass to confirm before the fix stands (see Rule.resolve).
    requires: tuple[tuple[str, ...], ...] = ()
    # How often its cost is paid (None: not computed, e.g. a finding made outside a scan).
    cost: Cost | None = field(default=None, compare=False)
    # Where its tensor lives (None: the rule's cost does not depend on it).
    placement: Placement | None = field(default=None, compare=False)
    # The rule and the flagged statement's shape: the same code in N places shares one key.
    pattern: str = field(default="", compare=False)
    # Left out of comparison and hashing (a dict); read-only like the rest.
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def hot(self) -> bool:
        """Paid per denoising step (or not known otherwise)."""
        return self.cost is None or self.cost.hot

    @property
    def shown_by_default(self) -> bool:
        """What the reports list without `--include-cold`: paid per step, on a tensor whose place is traced, or a
        safe fix a write applies (a check that fails must say why; it is labelled with its cost)."""
        return (self.hot and self.placement is not Placement.UNKNOWN) or self.safe_fix_pending

    @property
    def safe_fix_pending(self) -> bool:
        """A safe fix not yet applied that nothing declined: what a default write applies."""
        return not self.fixed and self.fix_safety is FixSafety.SAFE and not self.not_fixed_reason

    @property
    def fix_safety(self) -> FixSafety:
        return self.fix.safety if self.fix else FixSafety.NONE

    def sort_key(self) -> tuple[str, int, int, str, int, int, str]:
        """A total order: output is the same whatever order the findings were computed or cached in."""
        return (self.path, self.line, self.column, self.code, self.end_line, self.end_column, self.message)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "path": self.path,
            "line": self.line,
            "column": self.column + 1,
            "end_line": self.end_line,
            "end_column": self.end_column + 1,
            "message": self.message,
            "fix_safety": self.fix_safety.value,
            "fix": self.fix.description if self.fix else None,
            "fixed": self.fixed,
            "not_fixed_reason": self.not_fixed_reason,
            "frequency": self.cost.frequency.name.lower() if self.cost else None,
            "hot": self.hot,
            "placement": self.placement.value if self.placement else None,
            "shown_by_default": self.shown_by_default,
            "pattern": self.pattern,
        }


@dataclass(frozen=True)
class FileError:
    """A file the run could not handle; it is left untouched."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{where}: {self.message}"
