from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from codemods.analysis.models.hot_paths import is_scheduler
from codemods.analysis.placement.class_places import places_at
from codemods.analysis.placement.discarded_results import discarded_conversion, provably_tensor
from codemods.findings import Finding
from codemods.project.index import TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile, dotted_name, enclosing, shortened
from codemods.triggers import Trigger


class DiscardedTensorConversion(Rule):
    """
    ## What it does
    Finds a tensor conversion written as a statement of its own, its result thrown away:
    `mask.to(device)`, `emb.cpu()`, `x.float()`, `t.to(dtype=torch.long)`. Only values the code
    shows to be tensors count (a model's output, a torch op's result, a parameter annotated as a
    tensor); the same methods of an `nn.Module` or a pipeline (`self.vae.to(dtype)`,
    `pipe.to("cuda")`) work in place and are never reported. A scheduler's
    `self.sigmas.to("cpu")` is DIF002's, which knows its fix.

    ## Why is this bad?
    `Tensor.to`, `.cpu()`, `.float()`... return a new tensor and leave the original as it was:
    the line does nothing but, at times, a copy that is thrown away (a device-to-host copy for a
    tensor on the GPU). The value stays where it was, on a device or in a dtype the author meant
    to leave, so the cost the line was written to avoid is paid anyway.

    ## Example
    ```python
    image_emb = self.image_encoder(image)["image_embeds"]
    image_emb.to(device=device)
    return image_emb
    ```

    ## Use instead
    ```python
    image_emb = self.image_encoder(image)["image_embeds"]
    image_emb = image_emb.to(device=device)  # or delete the line, if the move is not needed
    return image_emb
    ```

    ## Fix safety
    No fix: assigning the result changes where (or in what dtype) every later line finds the
    value, which may be right or not; deleting the line is right only if the move was never
    needed. Either is for the author to decide.

    ## Evidence
    diffusers #6708 ("Correct sigmas cpu settings") assigned the discarded
    `self.sigmas.to("cpu")` of 13 schedulers; the same shape remains elsewhere (a Kandinsky 2.2
    prior's `image_emb.to(device=device)`, LongCat's `generated_ids.to(device)`).
    """

    code = "DIF009"
    name = "discarded-tensor-conversion"
    summary = "a tensor's `.to()`/`.cpu()`/`.float()` result is thrown away: the line does nothing"
    fix_safeties = ()
    trigger = Trigger(
        r"^[ \t]*[\w.\[\]\"']+\.(?:to|cpu|cuda|float|double|half|bfloat16|int|long|bool)\(",
        *(
            f".{method}("
            for method in ("to", "cpu", "cuda", "float", "double", "half", "bfloat16", "int", "long", "bool")
        ),
        flags=re.MULTILINE,
        line_start=True,
    )
    trigger_text = trigger.literals

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        for node, ancestors in source.walk_lines(source.lines_matching(self.trigger), kinds=ast.Expr):
            conversion = discarded_conversion(node)
            if conversion is None:
                continue
            cls = enclosing(ancestors, ast.ClassDef)
            if cls is not None and is_scheduler(cls) and dotted_name(conversion.receiver) == "self.sigmas":
                continue  # DIF002's
            places = places_at(source, ancestors)
            if places is None or not provably_tensor(conversion.receiver, places):
                continue  # a module's `.to()` works in place; a value not shown to be a tensor may be one
            receiver = shortened(source.segment(conversion.receiver))
            yield self.finding(
                source, node,
                f"`{shortened(source.segment(conversion.call))}` throws its result away: `Tensor.{conversion.method}` "
                f"returns a new tensor and leaves `{receiver}` as it was, so the line does nothing; assign it "
                f"(`{receiver} = ...`) or delete it",
            )  # fmt: skip

    valid = (
        # A module's `.to()` works in place.
        (
            "import torch\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, vae: torch.nn.Module):\n"
            "        self.register_modules(vae=vae)\n\n"
            "    def upcast(self):\n"
            "        self.vae.to(dtype=torch.float32)\n"
        ),
        # Assigned: the conversion does what it says.
        ("import torch\n\n\ndef prepare(mask: torch.Tensor, device):\n    mask = mask.to(device)\n    return mask\n"),
    )
    invalid = (
        Example("import torch\n\n\ndef prepare(mask: torch.Tensor, device):\n    mask.to(device)\n    return mask\n"),
    )
