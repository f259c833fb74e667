"""A run's writes are one transaction (codemods/engine/tree_write.py): all files or none, an interrupt included."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

import codemods.engine.tree_write
from codemods.engine.tree_write import PlannedWrite, TreeWrite
from codemods.project.files import read_source


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    paths = [tmp_path / f"module_{n}.py" for n in range(5)]
    for n, path in enumerate(paths):
        path.write_text(f"value = {n}\n")
    return paths


def _planned(files: list[Path]) -> list[PlannedWrite]:
    return [PlannedWrite(str(path), f"value = {n} * 2\n", read_source(path)) for n, path in enumerate(files)]


def _texts(files: list[Path]) -> list[str]:
    return [path.read_text() for path in files]


def _leftovers(files: list[Path]) -> list[str]:
    return sorted(p.name for p in files[0].parent.iterdir() if p not in files)


def test_every_file_is_written_and_no_staged_copy_is_left(files: list[Path]) -> None:
    assert TreeWrite(_planned(files)).run() == {}
    assert _texts(files) == [f"value = {n} * 2\n" for n in range(5)]
    assert _leftovers(files) == []


def test_one_file_changed_on_disk_means_no_file_is_written(files: list[Path]) -> None:
    planned = _planned(files)
    files[3].write_text("value = 'edited meanwhile'\n")
    refused = TreeWrite(planned, display=lambda path: Path(path).name).run()
    assert refused[str(files[3])] == "changed on disk during the run; not written"
    assert refused[str(files[0])] == "not written: a run writes all of its files or none, and module_3.py could not be written"
    assert _texts(files) == [f"value = {n}\n" for n in (0, 1, 2)] + ["value = 'edited meanwhile'\n", "value = 4\n"]
    assert _leftovers(files) == []


def _replace_then_interrupt_at(monkeypatch: pytest.MonkeyPatch, files: list[Path], call: int) -> None:
    """The commit's `call`-th rename sends this process a real SIGINT, as Ctrl-C would at that instant.

    Sent to this thread (`raise_signal`): `kill()` lets the kernel hand it to any thread not blocking it (pytest-xdist
    has its own), whose handler then ran, on loaded cores, after the write had already ended."""
    replace, calls = os.replace, []

    def replace_then_signal(source: str, target: str) -> None:
        replace(source, target)
        if Path(target).parent == files[0].parent:  # `os` is patched for the whole process: count this test's only
            calls.append(target)
            if len(calls) == call:
                signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(codemods.engine.tree_write.os, "replace", replace_then_signal)


@pytest.mark.usefixtures("python_sigint")
def test_ctrl_c_during_the_commit_finishes_it_then_interrupts(files: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _replace_then_interrupt_at(monkeypatch, files, call=2)
    write = TreeWrite(_planned(files))
    with pytest.raises(KeyboardInterrupt):
        write.run()
    assert write.written == [str(path) for path in files]
    assert _texts(files) == [f"value = {n} * 2\n" for n in range(5)]
    assert _leftovers(files) == []


@pytest.mark.usefixtures("python_sigint")
def test_ctrl_c_while_staging_writes_nothing_and_removes_the_staged_copies(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    chmod, calls = os.chmod, []

    def chmod_then_signal(path: str, mode: int) -> None:  # staging sets each copy's mode: the third gets Ctrl-C
        chmod(path, mode)
        if Path(path).parent == files[0].parent:  # `os` is patched for the whole process: count this test's only
            calls.append(path)
            if len(calls) == 3:
                signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(codemods.engine.tree_write.os, "chmod", chmod_then_signal)
    write = TreeWrite(_planned(files))
    with pytest.raises(KeyboardInterrupt):
        write.run()
    assert (write.committing, write.written) == (False, [])
    assert _texts(files) == [f"value = {n}\n" for n in range(5)]
    assert _leftovers(files) == []


def test_a_rename_that_fails_in_the_commit_puts_back_the_files_already_renamed(
    files: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    replace, calls = os.replace, []

    def replace_until_the_fourth(source: str, target: str) -> None:
        calls.append(target)
        if len(calls) == 4:
            raise PermissionError(13, "Permission denied")
        replace(source, target)

    monkeypatch.setattr(codemods.engine.tree_write.os, "replace", replace_until_the_fourth)
    refused = TreeWrite(_planned(files)).run()
    assert refused[str(files[3])] == "cannot write: Permission denied"
    assert set(refused) == {str(path) for path in files}
    assert _texts(files) == [f"value = {n}\n" for n in range(5)]
    assert _leftovers(files) == []
