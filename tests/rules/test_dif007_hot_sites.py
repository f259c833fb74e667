"""DIF007 on per-step host reads found only by following values across calls: HiDream's MoE routing counts,
LEdits++'s per-step guidance and attention-mask copies, and the varlen attention backends' unpadding.

The real files come from the installed diffusers (0.42.1), whose code at these sites equals main's at 58eb52c080
(HiDream's `MoEGate.forward` there has no return annotation; the placement does not read it).
"""

from __future__ import annotations

from pathlib import Path

from release_files import installed_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.findings import Finding, Frequency, Placement
from codemods.project.index import installed_diffusers

HIDREAM = "models/transformers/transformer_hidream_image.py"
LEDITS_XL = "pipelines/ledits_pp/pipeline_leditspp_stable_diffusion_xl.py"
ATTENTION = "models/attention_dispatch.py"


def _findings(module: str, tmp_path: Path) -> dict[str, Finding]:
    """Each DIF007 finding of an installed module, keyed by its stripped source line (`line: text`)."""
    path = installed_copy(module, tmp_path)
    lines = path.read_text().splitlines()
    result = run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.CHECK, select=("DIF007",), jobs=1))
    assert not result.errors
    return {f"{f.line}: {lines[f.line - 1].strip()}": f for f in result.findings}


def test_hidream_moe_routing_counts_are_read_every_forward_from_the_gates_device_indices(tmp_path: Path) -> None:
    # `topk_idx, topk_weight, aux_loss = self.gate(x)` (MoEGate's `torch.topk` of its parameter's scores), handed
    # to `self.moe_infer(x, flat_topk_idx, ...)`: the only DIF007 finding in the file.
    found = _findings(HIDREAM, tmp_path)
    assert list(found) == ["389: tokens_per_expert = flat_expert_indices.bincount().cpu().numpy().cumsum(0)"]
    finding = next(iter(found.values()))
    assert (finding.cost.frequency, finding.placement) == (Frequency.MODEL_FORWARD, Placement.DEVICE)
    assert finding.message.endswith(
        "the value is used as a size (`start_idx:end_idx`), which must be a Python number, so it cannot stay a tensor "
        "and no local rewrite removes the wait: one sync per read; the sizes are counts of the device's data "
        "(`bincount`), which no caller knows in advance"
    )
    assert finding.fix is None


def test_ledits_guidance_kept_per_step_is_copied_to_the_host_every_step(tmp_path: Path) -> None:
    finding = _findings(LEDITS_XL, tmp_path)["1302: self.sem_guidance[i] = noise_guidance_edit.detach().cpu()"]
    assert (finding.cost.frequency, finding.placement, finding.fix) == (Frequency.STEP, Placement.DEVICE, None)
    assert finding.message == (
        "`noise_guidance_edit.detach().cpu()` copies a device tensor to the host: the host waits for the device every "
        "denoising step; fill a buffer kept on the device and copy it to the host once after the loop"
    )


def test_ledits_attention_mask_kept_per_step_is_copied_to_the_host_every_step(tmp_path: Path) -> None:
    # `attn_mask` is thresholded from `self.smoothing(attn_map)`, a `LeditsGaussianSmoothing` of the file built with
    # the pipeline's device: its `F.conv2d` runs with the weight its `__init__` moved there, whatever the attention
    # store's maps are (no code of the file shows where those live).
    finding = _findings(LEDITS_XL, tmp_path)["1218: self.activation_mask[i, c] = attn_mask.detach().cpu()"]
    assert (finding.cost.frequency, finding.placement, finding.fix) == (Frequency.STEP, Placement.DEVICE, None)
    assert finding.message == (
        "`attn_mask.detach().cpu()` copies a device tensor to the host: the host waits for the device every "
        "denoising step; fill a buffer kept on the device and copy it to the host once after the loop"
    )


def test_varlen_hub_backends_report_the_nonzero_that_packs_the_masked_keys(tmp_path: Path) -> None:
    found = _findings(ATTENTION, tmp_path)
    nonzero = {line: f for line, f in found.items() if "nonzero" in line}
    # 1457 and 1800 are context-parallel forward ops, handed on as values (`functools.partial(...)`): no call shows
    # them run, and they run only under context parallelism.
    assert sorted(nonzero) == [
        "3170: indices_k = attn_mask.flatten().nonzero(as_tuple=False).flatten()",
        "3423: indices_k = attn_mask.flatten().nonzero(as_tuple=False).flatten()",
    ]
    finding = nonzero["3170: indices_k = attn_mask.flatten().nonzero(as_tuple=False).flatten()"]
    assert (finding.cost.frequency, finding.placement, finding.fix) == (Frequency.ATTENTION, Placement.UNKNOWN, None)
    assert (
        "the indices pack the rows the mask keeps (their number is the packed length a varlen kernel takes), so "
        "`torch.where` does not fit and no local rewrite removes the wait: one sync per call"
    ) in finding.message


def test_varlen_backends_report_each_slice_at_a_device_length(tmp_path: Path) -> None:
    # `(_, seqlens_k), ... = _prepare_for_flash_attn_or_sage_varlen(...)`, then `valid_len = seqlens_k[b]`.
    sliced = [line for line in _findings(ATTENTION, tmp_path) if "[b, :valid_len]" in line]
    assert sliced == [
        "3253: key_valid.append(key[b, :valid_len])",
        "3254: value_valid.append(value[b, :valid_len])",
        "3543: key_valid.append(key[b, :valid_len])",
        "3544: value_valid.append(value[b, :valid_len])",
        "4219: key_valid.append(key[b, :valid_len])",
        "4220: value_valid.append(value[b, :valid_len])",
    ]


def test_a_slice_at_a_device_length_says_no_local_rewrite_removes_it(tmp_path: Path) -> None:
    finding = _findings(ATTENTION, tmp_path)["3253: key_valid.append(key[b, :valid_len])"]
    assert (finding.cost.frequency, finding.fix) == (Frequency.ATTENTION, None)
    assert finding.message.startswith(
        "`key[b, :valid_len]` slices at a device value, which Python reads (`valid_len` is on the device): the host "
        "waits for the device every attention call (`_flash_varlen_attention`); a slice's bound is a size, a Python "
        "number, so no local rewrite removes the wait: one sync per slice"
    )
