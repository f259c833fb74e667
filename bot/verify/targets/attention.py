"""Attention-backend helpers, called on their own: the backends need flash-attn or sage kernels,
which a CPU or emulated run lacks, but the helpers they call every forward are plain torch."""

from __future__ import annotations

from typing import Any

from bot.verify.targets import target


@target(
    "prepare_for_flash_attn_or_sage_varlen_with_mask",
    "function",
    ("_prepare_for_flash_attn_or_sage_varlen_with_mask",),
    "the varlen backends' per-forward lengths for a batch of two, 8 queries and a padded 8-key mask",
)
def varlen_lengths_with_mask(device: Any) -> Any:
    import torch
    from diffusers.models.attention_dispatch import _prepare_for_flash_attn_or_sage_varlen_with_mask

    from bot.verify.targets.workload import model_workload

    attn_mask = torch.tensor([[True] * 8, [True] * 5 + [False] * 3]).to(device)
    arguments = {"batch_size": 2, "seq_len_q": 8, "attn_mask": attn_mask, "device": device}
    return model_workload(None, _prepare_for_flash_attn_or_sage_varlen_with_mask, arguments)
