"""Session fixtures shared by pytest-xdist workers: built once per run, read back by the other workers."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from shared_session import build_once


@dataclass
class WorkerTemp:
    """What `build_once` asks of pytest's TempPathFactory: a worker's base temporary directory."""

    base: Path

    def getbasetemp(self) -> Path:
        self.base.mkdir(parents=True, exist_ok=True)
        return self.base


def test_two_workers_of_one_run_build_once_and_get_the_same_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    builds: list[Path] = []

    def build(directory: Path) -> dict[str, Path]:
        builds.append(directory)
        (directory / "tree").mkdir()
        return {"tree": directory / "tree"}

    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    first = build_once(WorkerTemp(tmp_path / "pytest-7" / "popen-gw0"), "trees", build)
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    second = build_once(WorkerTemp(tmp_path / "pytest-7" / "popen-gw1"), "trees", build)

    assert builds == [tmp_path / "pytest-7" / "shared-trees"]
    assert first == second == {"tree": tmp_path / "pytest-7" / "shared-trees" / "tree"}


def test_without_xdist_the_build_lands_in_the_sessions_own_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)

    built = build_once(WorkerTemp(tmp_path / "pytest-8"), "trees", lambda directory: directory)

    assert built == tmp_path / "pytest-8" / "shared-trees"


def test_a_build_that_failed_is_built_again_from_an_empty_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    workers = WorkerTemp(tmp_path / "pytest-9" / "popen-gw0")

    def broken(directory: Path) -> None:
        (directory / "half-built").write_text("")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        build_once(workers, "trees", broken)
    rebuilt = build_once(workers, "trees", lambda directory: sorted(p.name for p in directory.iterdir()))

    assert rebuilt == []
