"""DIF001's fix for a list of tables kept on `self` (Lumina2's per-axis RoPE): one getter caching the moved list.

    freqs = self.freqs_cis[i].to(ids.device)

becomes, in the idiom of the tensor-attribute getter (`codemods.edits.getters.plan`, diffusers #13406):

    @lru_cache_unless_export(maxsize=None)
    def _get_device_freqs_cis(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        \"\"\"Return freqs_cis, each tensor on the given device.\"\"\"
        return tuple(freqs.to(device) for freqs in self.freqs_cis)

    freqs = self._get_device_freqs_cis(ids.device)[i]

planned only for a list `codemods.analysis.models.tensor_lists` proves unchanged after `__init__`; a tuple,
so that no caller can append to the cached copy.
"""

from __future__ import annotations

import ast
import re

from codemods.analysis.models.hot_paths import is_cached
from codemods.analysis.models.tensor_lists import TableList
from codemods.analysis.values.device_moves import changed_in_place
from codemods.edits.getters.decorator import getter_definition, tuple_spelling
from codemods.edits.getters.names import getter_noun, line_after, returns_text
from codemods.edits.getters.plan import GetterPlan
from codemods.findings import Edit
from codemods.node_index import method_calls_within
from codemods.project.index import TreeInfo
from codemods.source import SourceFile, self_attribute

_NOT_ELEMENT_NAMES = {"device", "self", "torch"}


def plan_list_getter(source: SourceFile, tree: TreeInfo, table: TableList) -> GetterPlan | str:
    """The getter (unless the class has it already) and the call of it at every device-only element move, or why not."""
    if table.changed is not None:
        return table.changed
    noun = getter_noun([table.attribute])
    if noun == "tensors" or any(f"_{a.strip('_')}".endswith(f"_{noun}") for a in _moved_attributes(table.cls)):
        return f"the getter `_get_device_{noun}` may be the one the class's tensor attributes get; cache it by hand"
    if not re.search(r"^import torch$", source.text, re.MULTILINE):
        return "the file does not `import torch`, which the getter's annotations use"
    sites = [s for s in table.sites if s.move.device_only]
    for method in dict.fromkeys(s.method for s in sites):
        mutated = changed_in_place(method, [s.call for s in sites if s.method is method])
        if mutated is not None:
            return (
                f"line {mutated.lineno} changes in place a tensor that may share storage with the moved copy; "
                "a cached copy would keep the change"
            )
    attribute = table.attribute
    getter = f"_get_device_{noun}"
    edits = []
    for site in sites:
        index = source.segment(site.call.func.value.slice)  # type: ignore[attr-defined]
        replacement = f"self.{getter}({source.segment(site.move.device)})[{index}]"
        too_long = line_after(source, site.call, replacement, tree.line_length)
        if too_long is not None:
            return too_long
        edits.append(Edit(source.ref(site.call, "Call"), "call_element_getter", (("getter", getter),)))
    words = attribute.strip("_").split("_")
    element = words[0] if len(words) > 1 and words[0] not in _NOT_ELEMENT_NAMES else "tensor"
    body = f"tuple({element}.to(device) for {element} in self.{attribute})"
    description = f"cache `{attribute}` per device in `{getter}` and use it at {len(sites)} site(s)"
    existing = next((n for n in table.cls.body if isinstance(n, ast.FunctionDef) and n.name == getter), None)
    if existing is not None:
        if is_cached(existing) and returns_text(existing, body):
            return GetterPlan(description, tuple(edits), ())  # already there (a second pass, or by hand): call it
        return f"the class already defines `{getter}`, returning something else"
    returns = (
        f"{tuple_spelling(source)}[torch.Tensor, ...]",
        f"Return {attribute}, each tensor on the given device.",
        body,
    )
    definition = getter_definition(source, tree, table.cls, getter, returns, sites[0].method.name)
    if isinstance(definition, str):
        return definition
    added, imports = definition
    return GetterPlan(description, (added, *edits), imports)


def _moved_attributes(cls: ast.ClassDef) -> set[str]:
    """`a` for each `self.a.to(...)` of the class: DIF001 may give them a getter named for them or their last
    words (`pos_freqs`, `neg_freqs` -> `_get_device_freqs`), which the list's getter must not take too."""
    return {self_attribute(c.func.value) for c in method_calls_within(cls, "to")} - {None}
