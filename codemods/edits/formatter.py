"""The target's own formatter as a gate on every rewritten file: `make style` must not move our lines.

diffusers pins its formatter (`"ruff==0.9.10"` in setup.py), configures it in pyproject.toml,
and `make style` runs `ruff check --fix` then `ruff format`. Before fixes are proven, every
rewritten text goes through exactly that: the pinned ruff (installed once into a cached tool
environment, see `codemods.project.tool_env`) with the target's own configuration. Where it would
change one of our hunks:
- everything it changes there lies inside the hunk: the hunk takes the formatter's layout
  ("re-laid"; then `make style` leaves it alone);
- it would also change lines around the hunk: the fixes in that hunk are refused with a reason.
Nothing of the target's own code is touched: formatter changes away from our hunks are ignored.

A target that pins no ruff, or formats with something else, is not checked (a release wheel
has neither setup.py nor pyproject.toml). A pinned ruff that cannot be installed (offline) is
said once in the summary, and the fixes stand as the layout code made them.
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codemods.findings import Finding
from codemods.lines import split_lines
from codemods.project.tool_env import ToolUnavailable, installed_tool

_RUFF_PIN = re.compile(r"""["']ruff==([0-9][0-9A-Za-z.]*)["']""")
_PRE_COMMIT_RUFF = re.compile(r"astral-sh/ruff-pre-commit['\"]?\s*\n\s*rev:\s*['\"]?v?([0-9][0-9A-Za-z.]*)")
_RUFF_FORMATS = re.compile(r"^\[tool\.ruff\.format\]|ruff format", re.MULTILINE)


@dataclass(frozen=True)
class FormatterPin:
    version: str
    pinned_in: str  # the file that says which version ("setup.py")
    config: Path  # the target's pyproject.toml

    @property
    def name(self) -> str:
        return f"ruff {self.version}"


def find_pin(pyproject: Path | None) -> FormatterPin | None:
    """The ruff the target formats with, from its setup.py, pyproject.toml or pre-commit config."""
    if pyproject is None:
        return None
    root = pyproject.parent
    texts = {name: _read(root / name) for name in ("setup.py", "pyproject.toml", ".pre-commit-config.yaml", "Makefile")}
    if not _RUFF_FORMATS.search(texts["pyproject.toml"] + texts["Makefile"] + texts[".pre-commit-config.yaml"]):
        return None  # ruff may lint here, but something else (black) formats
    for name, pattern in (("setup.py", _RUFF_PIN), ("pyproject.toml", _RUFF_PIN), (".pre-commit-config.yaml", _PRE_COMMIT_RUFF)):
        match = pattern.search(texts[name])
        if match:
            return FormatterPin(match.group(1), name, pyproject)
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8")
    except (OSError, UnicodeDecodeError):
        return ""


@dataclass(frozen=True)
class RefusedHunk:
    """Lines `first..last` of the original file (1-based; `last < first` for a pure insertion before `first`)."""

    first: int
    last: int
    reason: str


@dataclass
class FileVerdict:
    text: str  # the rewritten text, with our hunks re-laid where the formatter asked
    relaid: int = 0
    refused: list[RefusedHunk] = field(default_factory=list)


@dataclass
class GateReport:
    """What the summary says about the gate: one line, once."""

    tool: str
    pinned_in: str
    available: bool = True
    reason: str = ""  # why it did not run
    relaid: int = 0
    refused: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"tool": self.tool, "pinned_in": self.pinned_in, "checked": self.available, "reason": self.reason,
                "hunks_relaid": self.relaid, "hunks_refused": self.refused}  # fmt: skip

    def line(self) -> str:
        if not self.available:
            return f"formatter check: not run ({self.reason}); rewritten lines were laid out without it"
        return f"formatter check ({self.tool}, pinned in {self.pinned_in}): {self.relaid} hunk(s) re-laid, {self.refused} refused"


class FormatterGate:
    def __init__(self, pin: FormatterPin) -> None:
        self.pin = pin
        self.report = GateReport(pin.name, pin.pinned_in)
        self._ruff: Path | None = None
        self._verdicts: dict[tuple[str, str], FileVerdict] = {}  # (path, fixed text): each judged once a run
        self._last: dict[str, FileVerdict] = {}  # the verdicts on the last texts offered (what gets written)
        self._refused: set[tuple[str, int, int]] = set()

    def relay(self, changes: dict[str, tuple[str, str]]) -> dict[str, list[RefusedHunk]]:
        """Re-lay our hunks in `changes` (`path -> (before, after)`, updated in place); the refused hunks by path.

        Nothing changes, and nothing is refused, when the formatter is unavailable.
        """
        pending = {path: change for path, change in changes.items() if (path, change[1]) not in self._verdicts}
        styled = self._style({path: after for path, (_, after) in pending.items()})
        for path, (before, after) in pending.items():
            if path in styled:
                self._verdicts[path, after] = judge(before, after, styled[path], self.pin.name)
        self._last, refused = {}, {}
        for path, (before, after) in list(changes.items()):
            verdict = self._verdicts.get((path, after))
            if verdict is None:
                continue
            self._last[path] = verdict
            if verdict.refused:
                refused[path] = verdict.refused
                self._refused.update((path, hunk.first, hunk.last) for hunk in verdict.refused)
            changes[path] = (before, verdict.text)
        return refused

    def final_report(self) -> GateReport:
        """Hunks re-laid in what is written; hunks refused in any round."""
        self.report.relaid = sum(v.relaid for v in self._last.values() if not v.refused)
        self.report.refused = len(self._refused)
        return self.report

    def _style(self, texts: dict[str, str]) -> dict[str, str]:
        """`make style` on copies of `texts` placed as in the target (its per-path configuration applies)."""
        if not texts or not self.report.available:
            return {}
        try:
            ruff = self._ruff = self._ruff or installed_tool("ruff", self.pin.version)
        except ToolUnavailable as error:
            self.report.available, self.report.reason = False, str(error)
            return {}
        root = self.pin.config.parent
        with tempfile.TemporaryDirectory(prefix="codemod-style-") as scratch:
            shutil.copy(self.pin.config, Path(scratch) / "pyproject.toml")
            placed = {}
            for number, (path, text) in enumerate(sorted(texts.items())):
                inside = Path(path).is_relative_to(root)
                relative = Path(path).relative_to(root) if inside else Path("_outside", str(number), Path(path).name)
                placed[path] = Path(scratch) / relative
                placed[path].parent.mkdir(parents=True, exist_ok=True)
                placed[path].write_bytes(text.encode("utf-8"))
            files = [str(p) for p in placed.values()]
            config = ["--config", str(Path(scratch) / "pyproject.toml"), "--no-cache", "--force-exclude", "--quiet"]
            for command in (["check", "--fix", "--exit-zero", *config], ["format", *config]):
                done = subprocess.run([str(ruff), *command, *files], cwd=scratch, capture_output=True, text=True)
                if done.returncode not in (0, 1):
                    self.report.available = False
                    self.report.reason = f"`ruff {command[0]}` failed: {(done.stderr.strip().splitlines() or ['?'])[-1]}"
                    return {}
            return {path: placed_path.read_bytes().decode("utf-8") for path, placed_path in placed.items()}


def judge(before: str, after: str, styled: str, tool: str) -> FileVerdict:
    """Our hunks (before -> after) against the formatter's changes (after -> styled)."""
    before_lines, after_lines, styled_lines = split_lines(before), split_lines(after), split_lines(styled)
    ours = _changes(before_lines, after_lines)
    theirs = _changes(after_lines, styled_lines)
    ending = _first_ending(after)
    kept = split_lines(after, keepends=True)
    verdict = FileVerdict(after)
    replacements: list[tuple[int, int, list[str]]] = []
    for b1, b2, a1, a2 in ours:
        touching = [t for t in theirs if _touches(t[0], t[1], a1, a2)]
        if not touching:
            continue
        if all(a1 <= t1 and t2 <= a2 for t1, t2, _, _ in touching):
            replacements += [(t1, t2, [line + ending for line in styled_lines[s1:s2]]) for t1, t2, s1, s2 in touching]
            verdict.relaid += 1
        else:
            first, last = min(t[0] for t in touching), max(t[1] for t in touching)
            verdict.refused.append(
                RefusedHunk(b1 + 1, b2, f"`make style` ({tool}) would also re-wrap lines {first + 1}-{max(last, first + 1)} "
                                        "around this change; fix by hand, then `make style`")
            )  # fmt: skip
    for t1, t2, lines in sorted(replacements, reverse=True):
        kept[t1:t2] = lines
    verdict.text = "".join(kept) if replacements else after
    return verdict


def findings_in(hunk: RefusedHunk, findings: list[Finding]) -> list[Finding]:
    """The findings whose edits made `hunk` (an import added at the top is the doing of those asking for one)."""
    first, last = (hunk.first, hunk.last) if hunk.last >= hunk.first else (hunk.last, hunk.first)
    editing = [f for f in findings if any(e.target.line <= last and first <= e.target.end_line for e in f.fix.edits)]
    if editing:
        return editing
    return [f for f in findings if f.fix.imports] or findings


def _changes(old: list[str], new: list[str]) -> list[tuple[int, int, int, int]]:
    """Changed line ranges `(old_start, old_end, new_start, new_end)`, 0-based, ends excluded."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def _touches(t1: int, t2: int, a1: int, a2: int) -> bool:
    """Whether the formatter's change `t1..t2` meets our hunk `a1..a2` (an empty range is a point between lines)."""
    if t1 < a2 and a1 < t2:
        return True
    return (t1 == t2 and a1 <= t1 <= a2) or (a1 == a2 and t1 <= a1 <= t2)


def _first_ending(text: str) -> str:
    match = re.search(r"\r\n|\r|\n", text)
    return match.group(0) if match else "\n"
