"""Rotary-embedding modules run on their own, where the model around them is too big to build small.

DIF001's pattern lives in these modules (a complex frequency table kept as a plain attribute,
copied to the device on every call); calling the module is the rewritten path itself.
"""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target


@target(
    "SanaWMRotaryPosEmbed",
    "module",
    ("SanaWMRotaryPosEmbed",),
    "forward for a 2x2x2 latent grid (the table copy in forward)",
)
def sana_wm_rope(device: Any) -> Any:
    from diffusers.models.transformers.transformer_sana_wm import SanaWMRotaryPosEmbed

    from bot.verify.targets.workload import model_workload

    rope = SanaWMRotaryPosEmbed(attention_head_dim=12, patch_size=(1, 2, 2), max_seq_len=16).to(device)
    return model_workload(None, rope, {"fhw": (2, 2, 2), "device": device})
