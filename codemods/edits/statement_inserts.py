"""Edits that insert statements before one statement compose: each gets what earlier ones made.

Two rules may insert before the same statement (DIF005's `set_begin_index(0)` and DIF007's
precomputed schedule, both before a denoising loop's `with`). The applier hands the second edit the
first one's `FlattenSentinel`: the statement it inserts before is then that sentinel's last node.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codemods.lazy import libcst as cst

if TYPE_CHECKING:
    import libcst


def inserted_before(
    node: libcst.BaseStatement | libcst.FlattenSentinel,
) -> tuple[list[libcst.BaseStatement], libcst.BaseStatement]:
    """What earlier edits inserted before the statement (kept above the new lines), and the statement."""
    if isinstance(node, cst.FlattenSentinel):
        *earlier, statement = node
        return earlier, statement
    return [], node
