"""The part of diffusers that accepts no changes: `pipelines/deprecated/`. Runs scan it and count its
findings, but never change it unless the target opts in (`[tool.codemod] include-deprecated`); analyses
keep what only its code shows apart (a model only deprecated pipelines step is no per-step model)."""

from __future__ import annotations

DEPRECATED_REASON = "diffusers accepts no changes to pipelines/deprecated/"


def is_deprecated_pipeline(module: str) -> bool:
    """`diffusers.pipelines.deprecated.*` (or the same place in a package of another name)."""
    return module.split(".")[1:3] == ["pipelines", "deprecated"]
