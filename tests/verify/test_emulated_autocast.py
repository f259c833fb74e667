"""Autocast regions on the emulated device run, as models open them on CUDA."""

import torch


def test_a_float32_autocast_region_runs_and_computes_like_the_cpu(emu: torch.device) -> None:
    # Mochi's RoPE: `with torch.autocast(freqs.device.type, torch.float32): ...`
    values = torch.randn(4, 4, generator=torch.Generator().manual_seed(0))
    with torch.autocast(emu.type, torch.float32):
        product = values.to(emu) @ values.to(emu)
    assert product.dtype == torch.float32
    assert torch.equal(product.cpu(), values @ values)
