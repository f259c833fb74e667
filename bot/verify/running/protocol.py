"""What the parent and a worker exchange: the request, and where each target's results go. No torch here."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class WorkerRequest:
    package: str  # the tree's package directory (…/diffusers)
    device: str  # "emu", "cuda" or "cpu"
    targets: list[str]
    out_dir: str
    trace_files: list[str] = field(default_factory=list)  # absolute paths whose executed lines are recorded
    checks: dict[str, list[str]] = field(default_factory=dict)  # target -> compile checks to run
    compile_backend: str = "inductor"
    seed: int = 0
    tests_dir: str | None = None  # a copy of the checkout's tests/, for `tests/...::Class` targets
    # A file both trees' workers lock while one measures a target: on CUDA they start (import torch,
    # diffusers) side by side, but never time a target while the other runs one.
    measure_lock: str | None = None
    scale: dict[str, Any] | None = None  # a real-scale run (`real_scale.Scale` fields): targets are case runs
    # The tree is the verifier's own copy: the worker writes the bytecode of what it imports into it, so the
    # processes that import the tree after it (the checkout's own tests, through a link to it) skip compiling.
    keep_bytecode: bool = False

    @classmethod
    def load(cls, path: Path) -> WorkerRequest:
        return cls(**json.loads(path.read_text()))


LAUNCHED_AT = "CODEMOD_WORKER_LAUNCHED_AT"
"""The environment variable in which the parent hands a worker the wall-clock time it started it."""


def timings_path(out_dir: Path) -> Path:
    """The worker's own phases before its first target (startup, offline Hub, device), in seconds."""
    return out_dir / "worker-timings.json"


def result_path(out_dir: Path, index: int) -> Path:
    return out_dir / f"{index:03d}.json"


def outputs_path(out_dir: Path, index: int) -> Path:
    return out_dir / f"{index:03d}.pt"
