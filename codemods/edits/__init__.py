"""Edits the fixes share: libcst rewrites more than one rule makes, and the gate every rewrite passes.

The cached per-device getter (`getters`: DIF001 and DIF006), class attributes (`class_attributes`: DIF003),
statement inserts, call layout as `ruff format` leaves it, stale docstrings and comments, and the
target's own formatter as a gate (`formatter`).

May import: codemods, codemods.project, codemods.analysis.models
"""
