from __future__ import annotations

import ast
from collections.abc import Iterator

from codemods.analysis.models.attributes import lineage_attributes
from codemods.analysis.models.hot_paths import hot_paths
from codemods.analysis.models.tensor_lists import listed_attribute, table_lists
from codemods.analysis.values.constant_tensors import constant_tensor
from codemods.analysis.values.device_moves import Site, device_move
from codemods.analysis.values.enclosing import method_owner, module_functions
from codemods.edits.getters.lists import plan_list_getter
from codemods.edits.getters.plan import GetterPlan, plan_getter, why_not_cached
from codemods.edits.getters.rewrites import DeviceGetterEdits
from codemods.edits.getters.stores import is_store
from codemods.edits.getters.stores import stored_only as stored_only_attributes
from codemods.findings import Finding, FixSafety
from codemods.project.index import TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, self_attribute, shortened
from codemods.triggers import AnyOf


class ConstantDeviceCopy(DeviceGetterEdits, Rule):
    """
    ## What it does
    Finds `self.X.to(device)` (or `.to(device=...)`, `.to(x.device)`) in code that runs on every
    call (a module's `forward` and the methods it calls), where `self.X` is a plain tensor attribute
    set once in `__init__`: not a registered buffer, parameter or submodule, and never reassigned or
    changed in place afterwards. Such attributes are typically complex RoPE tables kept out of
    `register_buffer` because `model.to(dtype)` would drop their imaginary part. Also finds such a
    table moved and stored back on the module (`self.freqs = self.freqs.to(device)`, alone or under
    `if self.pos_freqs.device != device:`), and reports `torch.tensor(<constant or config
    list>).to(device)` built in hot code, and `self.X[i].to(device)` of a list of tensors built once
    in `__init__` and never changed (Lumina2's per-axis RoPE tables; `analysis/models/tensor_lists.py`).

    ## Why is this bad?
    Nothing ever moves a plain attribute, so it stays on the CPU and every call copies it
    host-to-device again. On CUDA, `.to(device)` of a CPU tensor (pageable memory, not
    `non_blocking`) is a `cudaMemcpyAsync` from pageable memory, which the driver stages through a
    pinned buffer, and PyTorch follows it with a `cudaStreamSynchronize`: the host waits until the
    GPU has run everything queued before the copy, and the copy. (`benchmarks/gpu_verify.sh`'s
    profile of QwenImage before #13406 on one H200 shows that pair for the 262,144-byte `pos_freqs`:
    `Memcpy HtoD (Pageable -> Device)`, then `cudaStreamSynchronize`.) The wait lasts as long as the
    queued work: diffusers #13406's A100 profile of QwenImage at 1024x1024 listed three waits over
    50 ms, 228.7 ms in all; on one H200 at 4 of QwenImage's 60 layers the same copies made the host
    wait 0.1 ms per step. The verifier counts such a copy as one host-to-device copy, not as a sync:
    the emulated device counts each host-to-device `aten::_to_copy` (it has no stream to wait on),
    and the CUDA census counts the `Memcpy HtoD` and folds the copy's own `cudaStreamSynchronize`
    into it. Its "syncs" column counts the other waits (`.item()`, `nonzero`, a tensor in an `if`),
    so a fixed copy shows as one H2D copy fewer, with syncs unchanged.

    Storing the moved table back avoids the copy but makes module state follow the last call:
    `torch.compile` guards on the stored tensor and recompiles when it is replaced, and offloading
    hooks, which move registered state only, leave the table on the accelerator.

    ## Example
    ```python
    def forward(self, video_fhw, device):
        txt_freqs = self.pos_freqs.to(device)[max_vid_index : max_vid_index + max_txt_seq_len_int, ...]
    ```

    ## Use instead
    One cached getter per class, placed just before `forward`, returning every such attribute
    (a tuple when there are several); every `.to(device)` of them in the class calls it:
    ```python
    @lru_cache_unless_export(maxsize=None)
    def _get_device_freqs(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        \"\"\"Return pos_freqs and neg_freqs on the given device.\"\"\"
        return self.pos_freqs.to(device), self.neg_freqs.to(device)

    def forward(self, video_fhw, device):
        # Use cached device-transferred freqs to avoid CPU→GPU sync every forward call
        pos_freqs_device, _ = self._get_device_freqs(device)
        txt_freqs = pos_freqs_device[max_vid_index : max_vid_index + max_txt_seq_len_int, ...]
    ```
    A list of tables (Lumina2's `self.freqs_cis[i].to(ids.device)`) gets one getter returning the
    moved list as a tuple, indexed where an element was moved (`codemods/edits/getters/lists.py`):
    ```python
    @lru_cache_unless_export(maxsize=None)
    def _get_device_freqs_cis(self, device: torch.device) -> tuple[torch.Tensor, ...]:
        \"\"\"Return freqs_cis, each tensor on the given device.\"\"\"
        return tuple(freqs.to(device) for freqs in self.freqs_cis)
    ```
    and `freqs = self._get_device_freqs_cis(ids.device)[i]`.
    `lru_cache_unless_export` is imported from the tree's `utils.torch_utils` as the file's
    neighbours import it; in a tree without it (diffusers before 2026-03) the getter uses
    `functools.lru_cache(maxsize=None)`.

    ## Fix safety
    Unsafe: the getter returns exactly what `.to(device)` returned, but the same tensor on every
    call, so code that changed the result in place, or that replaced the attribute from outside the
    class, would now see the change persist. The fix is offered only when the attribute is assigned
    once in `__init__`, the class and its bases in the file register no attribute of that name (and
    none by a computed name), the move changes nothing but the device, and no local holding a view of
    the result is changed in place. Registered state is never reported: moving buffers and parameters
    in `forward` is required under group offloading and `device_map`. Moves that also change the
    dtype and `torch.tensor(...)` constants are reported without a fix. A list of tables is cached
    only when it provably never changes: assigned once in `__init__` from a list display,
    comprehension or a helper that fills a fresh list by `append`, handed to nothing in `__init__`,
    read elsewhere in the class only by `self.X[i].to(device)` and `len(...)`, and reached by nothing
    else in the file (`obj.X`, `setattr`, a subclass); otherwise the finding names what changes it.
    A store is dropped only where nothing relied on it: it is one top-level statement (or one `if` holding only stores), every
    later read of the table is in the same method, after it, with the device expression unchanged,
    and other methods only move the table with `.to(device)`; otherwise the finding names the read
    (QwenImage before 0.37: `_compute_video_freqs` reads `self.pos_freqs` as the store left it).
    Docstrings and comments of the class and the rewritten methods that say the table "is moved to
    the device on each call" are updated with the code; one the rule cannot rewrite on its line
    refuses the fix.

    ## Evidence
    diffusers PR #13406 ("Cache RoPE freqs on device to avoid repeated CPU-GPU copy in QwenImage")
    added `_get_device_freqs` to `QwenEmbedRope` and `QwenEmbedLayer3DRope`; its A100 profile showed
    a host-to-device copy of `pos_freqs`, and the wait after it, on every forward (three waits over
    50 ms, 228.7 ms in all).
    diffusers #10959 and #12061 removed stores of moved tables from `forward` (Wan's
    `self.freqs = self.freqs.to(...)` until 0.33, QwenImage's guarded stores until 0.36).
    """

    code = "DIF001"
    name = "constant-device-copy"
    summary = "a tensor (or a list of them) built once in `__init__` is copied to the device on every call; cache it per device"
    fix_safeties = (FixSafety.UNSAFE,)
    # Possessive (`++`, `*+`): a `[`, `.` or `]` follows, so giving back what they took never makes a match.
    trigger = AnyOf(r"self\.\w++(?:\[[^\]]*+\])?\.to\(", r"torch\.(?:tensor|Tensor|as_tensor)\(")
    trigger_text = (".to(", "torch.tensor(", "torch.Tensor(", "torch.as_tensor(")

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        hot = hot_paths(source)
        sites: dict[ast.ClassDef, list[Site]] = {}
        elements: dict[ast.ClassDef, list[Site]] = {}
        for node, ancestors in source.walk_lines(source.lines_matching(self.trigger), kinds=ast.Call):
            move = device_move(node) if isinstance(node, ast.Call) else None
            if move is None:
                continue
            attribute = self_attribute(node.func.value)
            owner = method_owner(ancestors)
            listed = listed_attribute(node.func.value)
            if listed is not None and owner is not None:
                site = Site(node, listed, move, ancestors, owner[1], hot.is_hot(ancestors, node))
                elements.setdefault(owner[0], []).append(site)
            elif attribute is not None and owner is not None:
                cls, method = owner
                sites.setdefault(cls, []).append(
                    Site(node, attribute, move, ancestors, method, hot.is_hot(ancestors, node))
                )
            elif attribute is None and constant_tensor(node.func.value) and hot.is_hot(ancestors, node):
                yield self.finding(
                    source,
                    node,
                    f"`{shortened(source.segment(node))}` builds a constant tensor on the host and copies it to the device on "
                    "every call; build it once (in `__init__`, cached per device)",
                    not_fixed_reason="a constant built per call has no single home to cache it in; move it by hand",
                )
        classes = {n.name: n for n in source.classes}
        for cls, class_sites in sites.items():
            yield from self._check_class(source, tree, cls, class_sites, classes)
        for cls, class_sites in elements.items():
            yield from self._check_list(source, tree, cls, class_sites, classes)

    def _check_list(
        self, source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, sites: list[Site], classes: dict[str, ast.ClassDef]
    ) -> Iterator[Finding]:
        """`self.freqs_cis[i].to(device)` of a list of tables (Lumina2's RoPE): one getter caching the moved list."""
        functions = source.memo("module_functions", lambda: module_functions(source.tree))
        for table in table_lists(source, cls, sites, classes, functions):
            hot = [s for s in table.sites if s.hot]
            plan = plan_list_getter(source, tree, table) if any(s.move.device_only for s in hot) else None
            kind = "built once in `__init__`" if table.changed is None else "kept on the module (not a buffer)"
            for site in hot:
                message = (
                    f"`{shortened(source.segment(site.call))}` in `{site.method.name}` copies an element of "
                    f"`self.{site.attribute}`, a list of tensors {kind}, to the device on every call; cache it per device"
                )
                reason = table.changed or why_not_cached(site.attribute, site.move, None)
                if reason is None and not isinstance(plan, GetterPlan):
                    reason = plan
                fix = None if reason is not None else self.fix(plan.description, *plan.edits, imports=plan.imports)
                yield self.finding(source, site.call, message, fix, not_fixed_reason=reason)

    def _check_class(
        self, source: SourceFile, tree: TreeInfo, cls: ast.ClassDef, sites: list[Site], classes: dict[str, ast.ClassDef]
    ) -> Iterator[Finding]:
        attributes = lineage_attributes(source, cls, classes)
        if attributes is None:  # not provably an nn.Module, or a base elsewhere may register these names
            return
        own = attributes[0]
        registered = frozenset().union(*(a.registered for a in attributes))
        sites = [
            s
            for s in sites
            if s.attribute in own.init_tensors and s.attribute not in registered and s.method.name != "__init__"
        ]
        stored_only = stored_only_attributes(cls, own.lazily_moved)
        # Moved and stored back, with a dtype or through a ternary: the attribute is not a constant table.
        sites = [s for s in sites if s.attribute not in own.lazily_moved or s.attribute in stored_only]
        if not any(s.hot for s in sites):
            return
        unchanged = own.changed_after_init - stored_only
        movable = [s for s in sites if s.move.device_only and s.attribute not in unchanged]
        plan = plan_getter(source, tree, cls, movable, own.init_tensors) if any(s.hot for s in movable) else None
        for site in (s for s in sites if s.hot):
            changed_at = None if site.attribute in stored_only else own.first_change.get(site.attribute)
            yield self._finding(source, site, changed_at, plan)

    def _finding(
        self, source: SourceFile, site: Site, changed_at: int | None, plan: GetterPlan | str | None
    ) -> Finding:
        kind = "a plain tensor attribute (not a buffer)" if changed_at else "a tensor built once in `__init__`"
        message = (
            f"`{shortened(source.segment(site.call))}` in `{site.method.name}` copies `self.{site.attribute}`, {kind}, "
            "to the device on every call; cache it per device"
        )
        if is_store(site):
            message = (
                f"`self.{site.attribute} = {shortened(source.segment(site.call))}` in `{site.method.name}` moves "
                f"`self.{site.attribute}`, {kind}, and stores it back on the module: torch.compile guards on the "
                "stored tensor and recompiles when it changes, and offloading hooks never move it back; cache it "
                "per device instead"
            )
        reason = why_not_cached(site.attribute, site.move, changed_at)
        if reason is None and not isinstance(plan, GetterPlan):
            reason = plan
        fix = None
        if reason is None:
            fix = self.fix(plan.description, *plan.edits, imports=plan.imports)
        return self.finding(source, site.call, message, fix, not_fixed_reason=reason)

    valid = (
        # A registered buffer: `model.to()` and offloading hooks move it; moving it in forward is required.
        (
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            '    def __init__(self):\n        super().__init__()\n        self.register_buffer("scale", torch.ones(4))\n\n'
            "    def forward(self, x):\n        return x * self.scale.to(x.device)\n"
        ),
        # Moved and stored back with its dtype changed: not a constant table any more.
        (
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.table = torch.ones(4)\n\n"
            "    def forward(self, x):\n        self.table = self.table.to(x.device, x.dtype)\n        return x * self.table\n"
        ),
        # A dtype cast, not a device move.
        (
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.table = torch.ones(4)\n\n"
            "    def forward(self, x):\n        return x * self.table.to(x.dtype)\n"
        ),
    )
    invalid = (
        # Moved and stored back: the store goes, the getter's result takes its place.
        Example(
            "import torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.table = torch.ones(4)\n\n"
            "    def forward(self, x):\n        self.table = self.table.to(x.device)\n        return x * self.table\n",
            "import functools\n\nimport torch\nfrom torch import nn\n\n\nclass M(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.table = torch.ones(4)\n\n"
            "    @functools.lru_cache(maxsize=None)\n"
            "    def _get_device_table(self, device: torch.device) -> torch.Tensor:\n"
            '        """Return table on the given device."""\n'
            "        return self.table.to(device)\n\n"
            "    def forward(self, x):\n"
            "        # Use cached device-transferred table instead of storing them back on the module\n"
            "        table_device = self._get_device_table(x.device)\n"
            "        return x * table_device\n",
        ),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Rope(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.freqs = torch.polar(torch.ones(8, 4), torch.zeros(8, 4))\n\n"
            "    def forward(self, x):\n        return x * self.freqs.to(x.device)\n",
            "import functools\n\nimport torch\nfrom torch import nn\n\n\nclass Rope(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.freqs = torch.polar(torch.ones(8, 4), torch.zeros(8, 4))\n\n"
            "    @functools.lru_cache(maxsize=None)\n"
            "    def _get_device_freqs(self, device: torch.device) -> torch.Tensor:\n"
            '        """Return freqs on the given device."""\n'
            "        return self.freqs.to(device)\n\n"
            "    def forward(self, x):\n        return x * self._get_device_freqs(x.device)\n",
        ),
        # An element of a list of tables: the getter caches the moved list as a tuple.
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Rope(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.freqs = [torch.ones(4), torch.ones(2)]\n\n"
            "    def forward(self, x, i):\n        return x * self.freqs[i].to(x.device)\n",
            "import functools\n\nimport torch\nfrom torch import nn\n\n\nclass Rope(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n        self.freqs = [torch.ones(4), torch.ones(2)]\n\n"
            "    @functools.lru_cache(maxsize=None)\n"
            "    def _get_device_freqs(self, device: torch.device) -> tuple[torch.Tensor, ...]:\n"
            '        """Return freqs, each tensor on the given device."""\n'
            "        return tuple(tensor.to(device) for tensor in self.freqs)\n\n"
            "    def forward(self, x, i):\n        return x * self._get_device_freqs(x.device)[i]\n",
        ),
        Example(
            "import torch\nfrom torch import nn\n\n\nclass Latents(nn.Module):\n"
            "    def forward(self, x):\n        return x - torch.tensor([0.5, 0.25]).to(x.device)\n",
        ),
    )
