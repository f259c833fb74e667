"""DIF006's fix: a tensor built on every call from a constant `self` attribute, cached per device.

    ext_factors = torch.tensor(self.long_factor, dtype=torch.float32, device=hidden_states.device)

becomes a call of a getter in DIF001's idiom (`codemods.edits.getters.plan`, diffusers #13406):

    @lru_cache_unless_export(maxsize=None)
    def _get_device_long_factor(self, device: torch.device) -> torch.Tensor:
        \"\"\"Return long_factor as a tensor on the given device.\"\"\"
        return torch.tensor(self.long_factor, dtype=torch.float32, device=device)

    ext_factors = self._get_device_long_factor(hidden_states.device)

one getter per attribute (the builds of two attributes often sit in two branches, each wanting
only its own), just before `forward`, written with DIF001's decorator, edits and width checks.
"""

from __future__ import annotations

import ast
import re

from codemods.analysis.models.hot_paths import is_cached
from codemods.analysis.models.init_constants import ConstantBuild, build_text, built_attribute, constant_build
from codemods.edits.getters.decorator import getter_definition
from codemods.edits.getters.names import getter_noun, line_after, returns_text
from codemods.edits.getters.plan import GetterPlan
from codemods.findings import Edit
from codemods.project.index import TreeInfo
from codemods.source import Ancestors, SourceFile


def cached_build(source: SourceFile, tree: TreeInfo, call: ast.Call, ancestors: Ancestors) -> GetterPlan | str | None:
    """The plan for a `torch.tensor(self.<attr>, ...)` built on every call, or why there is none; None for a
    build from anything but a `self` attribute (DIF006 reports those without a fix)."""
    if built_attribute(call) is None:
        return None
    build = constant_build(source, call, ancestors)
    return build if isinstance(build, str) else plan_build_getter(source, tree, build)


def plan_build_getter(source: SourceFile, tree: TreeInfo, build: ConstantBuild) -> GetterPlan | str:
    """The getter (unless the class has it already) and the call of it that replaces the build, or why not."""
    if not re.search(r"^import torch$", source.text, re.MULTILINE):
        return "the file does not `import torch`, which the getter's annotations use"
    getter = f"_get_device_{getter_noun([build.attribute])}"
    body = build_text(source, build.call, "device")
    if body is None:
        return f"the call at line {build.call.lineno} spans several lines; rewrite it by hand"
    call = f"self.{getter}({source.segment(build.device)})"
    too_long = line_after(source, build.call, call, tree.line_length)
    if too_long is not None:
        return too_long
    site = Edit(source.ref(build.call, "Call"), "call_getter", (("getter", getter), ("index", None)))
    description = f"cache `torch.tensor(self.{build.attribute}, ...)` per device in `{getter}`"
    methods = {n.name: n for n in build.cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    existing = methods.get(getter)
    if existing is not None:
        if is_cached(existing) and returns_text(existing, body):
            return GetterPlan(description, (site,), ())  # already there (written by hand): call it
        return f"the class already defines `{getter}`, returning something else"
    returns = ("torch.Tensor", f"Return {build.attribute} as a tensor on the given device.", body)
    definition = getter_definition(source, tree, build.cls, getter, returns, build.method.name)
    if isinstance(definition, str):
        return definition
    added, imports = definition
    return GetterPlan(description, (added, site), imports)
