"""Verification of fixes: `verify()` rewrites a copy of a diffusers tree with the engine and runs every
target that reaches a rewrite in both trees, each tree in its own subprocess (`api`, `target_runs`).

By role: `planning` (what changed, which targets reach it), `targets` (tiny real diffusers classes and
inputs), `running` (the worker interpreters), `census` (copies and syncs, emulated or CUDA), `judging`
(the verdict), `reporting` (JSON, Markdown, HTML), `checkout` (its environment, own tests and checks) and
`real_scale` (released widths on CUDA). Importing this package imports neither torch nor diffusers, nor
the engine: a worker runs `bot.verify.running.worker` in the checkout's environment, which has none of
this project's dependencies.

May import: codemods.project, bot.verify.checkout, bot.verify.judging, bot.verify.planning, bot.verify.real_scale, bot.verify.reporting, bot.verify.running, bot.verify.targets
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.verify.api import verify
    from bot.verify.reporting.report import TargetResult, VerifyReport

__all__ = ["TargetResult", "VerifyReport", "verify"]


def __getattr__(name: str) -> Any:
    if name == "verify":
        from bot.verify.api import verify

        return verify
    if name in ("TargetResult", "VerifyReport"):
        from bot.verify.reporting import report
        return getattr(report, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
