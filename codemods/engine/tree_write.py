"""A run's writes as one transaction: every rewritten file is written, or none is.

A half-applied run can split a `# Copied from` pair (diffusers' `make fix-copies` then fails) or
leave a cached getter without its caller's change. So the files are first staged beside their
targets, each staged copy read back and checked to decode to the fixed text (the text the fixer
compiled and scanned again); then the set is committed by renames, with SIGINT held off for the
milliseconds they take. A refusal or an interrupt before the commit removes the staged copies and
writes nothing; a rename that fails during the commit puts back the files already renamed.
"""

from __future__ import annotations

import os
import secrets
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from codemods.engine.interrupts import interrupts_deferred
from codemods.project.files import SourceDecodeError, SourceText, WriteRefused, decode_source

# Why a file that could be written was not: another file of the set could not be.
ALL_OR_NOTHING = "not written: a run writes all of its files or none, and {path} could not be written"


@dataclass(frozen=True)
class PlannedWrite:
    path: str
    text: str  # the fixed text
    source: SourceText  # the file as read before fixing


class TreeWrite:
    """Writes `planned` all or nothing; `written` says how far the commit got (all of it, or nothing)."""

    def __init__(self, planned: list[PlannedWrite], display: Callable[[str], str] = str) -> None:
        self.planned = planned
        self.display = display  # how a path is named in a reason
        self.staged: dict[str, str] = {}  # target -> its staged copy
        self.written: list[str] = []
        self.committing = False

    def run(self) -> dict[str, str]:
        """Write every planned file, or none: the reasons by path (empty when all were written)."""
        try:
            refused = self._stage()
            return self._refuse_all(refused) if refused else self._commit()
        finally:
            for staged in self.staged.values():
                Path(staged).unlink(missing_ok=True)
            self.staged.clear()

    def _stage(self) -> dict[str, str]:
        for write in self.planned:
            try:
                self._stage_one(write)
            except WriteRefused as refused:
                return {write.path: str(refused)}
        return {}

    def _stage_one(self, write: PlannedWrite) -> None:
        target = Path(write.path)
        data = write.source.encode(write.text)
        try:
            if target.read_bytes() != write.source.data:
                raise WriteRefused("changed on disk during the run; not written")
            mode = stat.S_IMODE(target.stat().st_mode)
            # Named and noted before it exists: an interrupt at any instant leaves nothing the clean-up misses.
            staged = str(target.parent / f".{target.name}.codemod-{secrets.token_hex(6)}")
            self.staged[write.path] = staged
            handle = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
            os.chmod(staged, mode)
            read_back = Path(staged).read_bytes()
        except OSError as error:
            raise WriteRefused(f"cannot write: {error.strerror}") from None
        try:
            intact = decode_source(read_back)[0] == write.text
        except SourceDecodeError:
            intact = False
        if not intact:
            raise WriteRefused("the staged copy does not read back as the fixed text; not written")

    def _commit(self) -> dict[str, str]:
        with interrupts_deferred():
            self.committing = True
            for write in self.planned:
                try:
                    os.replace(self.staged[write.path], write.path)
                except OSError as error:
                    self._roll_back()
                    return self._refuse_all({write.path: f"cannot write: {error.strerror}"})
                del self.staged[write.path]
                self.written.append(write.path)
        return {}

    def _roll_back(self) -> None:
        """Put back the files already renamed, each in one rename of its original bytes."""
        by_path = {write.path: write for write in self.planned}
        for path in reversed(self.written):
            handle, restored = tempfile.mkstemp(dir=Path(path).parent, prefix=f".{Path(path).name}.codemod-")
            with os.fdopen(handle, "wb") as stream:
                stream.write(by_path[path].source.data)
            os.chmod(restored, stat.S_IMODE(os.stat(path).st_mode))
            os.replace(restored, path)
        self.written.clear()

    def _refuse_all(self, refused: dict[str, str]) -> dict[str, str]:
        (culprit,) = refused
        why = ALL_OR_NOTHING.format(path=self.display(culprit))
        return {write.path: refused.get(write.path, why) for write in self.planned}


def interrupted_line(write: TreeWrite | None, phase: str) -> str:
    """What an interrupt leaves on disk, in one line: `write` is the run's write if it began, `phase` where it was."""
    if write is not None and write.written:
        count = len(write.written)
        return f"interrupted during the write; it had begun, so it was finished: all {count} rewritten file(s) written"
    if write is not None and write.committing:  # a rename failed and the renamed files were put back
        return "interrupted as a failed write was undone; nothing written, the tree is as it was"
    if write is not None:
        count = len(write.planned)
        return f"interrupted while staging {count} rewritten file(s); nothing written, the tree is as it was"
    return f"interrupted in the {phase} phase; nothing written, the tree is as it was"
