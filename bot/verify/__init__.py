"""Verification of fixes: emulated device, sync/copy census, CUDA profile census, and `verify()`.

`verify(src, ...)` rewrites a copy of a diffusers tree with the engine and runs every target
that reaches a rewrite in both trees, each tree in its own subprocess; see `bot.verify.api`.
Importing this package imports neither torch nor diffusers.
"""

from bot.verify.api import verify
from bot.verify.report import TargetResult, VerifyReport

__all__ = ["TargetResult", "VerifyReport", "verify"]
