"""The emulated device behaves like an accelerator and computes exactly like the CPU."""

from collections.abc import Callable

import pytest
import torch
from diffusers import EulerDiscreteScheduler, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel, UNet2DModel

from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.census.emulated_tensor import EmulatedTensor, observe_device_ops


def _ops_run_by(action: Callable[[], object]) -> list[str]:
    seen: list[str] = []
    with observe_device_ops(lambda op, args, kwargs, result: seen.append(op._schema.name)):
        action()
    return seen


def _to(device: torch.device | str, values: dict) -> dict:
    return {name: value.to(device) if isinstance(value, torch.Tensor) else value for name, value in values.items()}


def test_install_is_idempotent(emu: torch.device) -> None:
    assert install_emulated_device() == emu == torch.device("emu", 0)


def test_moving_a_cpu_tensor_keeps_its_values(emu: torch.device) -> None:
    moved = torch.tensor([1.5, -2.0, 3.25]).to(emu)
    assert (type(moved), moved.device) == (EmulatedTensor, emu)
    assert moved.cpu().tolist() == [1.5, -2.0, 3.25]


def test_factory_ops_build_directly_on_the_device(emu: torch.device) -> None:
    assert _ops_run_by(lambda: torch.zeros(3, device=emu)) == ["aten::empty", "aten::zero_"]
    assert torch.arange(4, device=emu).tolist() == [0, 1, 2, 3]


def test_host_copy_is_one_to_copy(emu: torch.device) -> None:
    assert _ops_run_by(lambda: torch.ones(3).to(emu)) == ["aten::_to_copy"]
    assert _ops_run_by(lambda: torch.tensor([1.0, 2.0], device=emu)) == ["aten::_to_copy", "aten::lift_fresh"]


def test_item_is_one_local_scalar_dense(emu: torch.device) -> None:
    total = torch.ones(3, device=emu).sum()
    assert _ops_run_by(total.item) == ["aten::_local_scalar_dense"]


def test_a_list_of_device_scalars_becomes_a_host_tensor_one_read_each(emu: torch.device) -> None:
    # AuraFlow's `torch.tensor([t / 1000])`: on CUDA, a sync per element.
    step = torch.tensor(500.0).to(emu)
    assert torch.tensor([step / 1000, step]).tolist() == [0.5, 500.0]
    assert _ops_run_by(lambda: torch.tensor([step])) == ["aten::_local_scalar_dense"]


def test_a_generator_for_the_device_draws_like_a_seeded_cpu_one(emu: torch.device) -> None:
    # torchsde asks for `torch.Generator(x.device)`; torch cannot make one for a Python backend.
    drawn = torch.randn(3, generator=torch.Generator(emu).manual_seed(3), device=emu)
    assert (drawn.device, drawn.cpu().tolist()) == (
        emu,
        torch.randn(3, generator=torch.Generator().manual_seed(3)).tolist(),
    )
    assert isinstance(torch.Generator(emu), torch._C.Generator)


def test_boolean_mask_read_is_one_index(emu: torch.device) -> None:
    values = torch.arange(6.0, device=emu)
    mask = values > 2
    assert _ops_run_by(lambda: values[mask]) == ["aten::index"]


def test_cpu_tensor_next_to_device_tensor_is_refused_like_cuda(emu: torch.device) -> None:
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device"):
        torch.ones(3, device=emu) + torch.ones(3)


def test_zero_dim_cpu_tensor_next_to_device_tensor_is_a_scalar(emu: torch.device) -> None:
    assert (torch.ones(3, device=emu) + torch.tensor(2.0)).tolist() == [3.0, 3.0, 3.0]


def test_out_and_in_place_ops_keep_shapes_true(emu: torch.device) -> None:
    grid = torch.arange(6.0, device=emu)  # arange fills an out= tensor it resizes
    grid.resize_(2, 3).t_()
    assert (grid.shape, grid.stride()) == (torch.Size([3, 2]), (1, 3))
    assert grid.contiguous().cpu().tolist() == [[0.0, 3.0], [1.0, 4.0], [2.0, 5.0]]


def test_numpy_needs_the_host_like_cuda(emu: torch.device) -> None:
    with pytest.raises(TypeError, match="Use Tensor.cpu()"):
        torch.ones(2, device=emu).numpy()


def test_complex_rotary_ops_run(emu: torch.device) -> None:
    angles = torch.tensor([0.0, 1.0, 2.0])
    on_device = torch.view_as_real(torch.polar(torch.ones(3, device=emu), angles.to(emu)))
    assert torch.equal(on_device.cpu(), torch.view_as_real(torch.polar(torch.ones(3), angles)))


def test_random_draws_use_the_cpu_generator(emu: torch.device) -> None:
    drawn = torch.randn(4, generator=torch.Generator().manual_seed(7), device=emu)
    assert torch.equal(drawn.cpu(), torch.randn(4, generator=torch.Generator().manual_seed(7)))


def test_attention_with_grad_still_records_autograd(emu: torch.device) -> None:
    query = torch.randn(1, 2, 5, 8).to(emu).requires_grad_()
    torch.nn.functional.scaled_dot_product_attention(query, query, query).sum().backward()
    assert query.grad.device == emu


def test_qwen_image_transformer_forward_matches_cpu_bit_for_bit(emu: torch.device) -> None:
    torch.manual_seed(0)
    model = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=16,
        out_channels=4,
        num_layers=2,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=16,
        guidance_embeds=False,
        axes_dims_rope=(8, 4, 4),
    ).eval()
    noise = torch.Generator().manual_seed(1)
    inputs = {
        "hidden_states": torch.randn(1, 16, 16, generator=noise),
        "encoder_hidden_states": torch.randn(1, 7, 16, generator=noise),
        "encoder_hidden_states_mask": torch.ones(1, 7),
        "timestep": torch.tensor([1.0]),
        "img_shapes": [(1, 4, 4)],
    }
    with torch.no_grad():
        on_cpu = model(**inputs, return_dict=False)[0]
        on_device = model.to(emu)(**_to(emu, inputs), return_dict=False)[0]
    assert on_device.device == emu
    assert torch.equal(on_device.cpu(), on_cpu)


def test_unet2d_forward_matches_cpu_bit_for_bit(emu: torch.device) -> None:
    torch.manual_seed(0)
    model = UNet2DModel(
        sample_size=8,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
        attention_head_dim=4,
    ).eval()
    sample = torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        on_cpu = model(sample, 10).sample
        on_device = model.to(emu)(sample.to(emu), torch.tensor([10], device=emu)).sample
    assert torch.equal(on_device.cpu(), on_cpu)


def _flow_match_five_steps(device: torch.device | str) -> torch.Tensor:
    scheduler = FlowMatchEulerDiscreteScheduler()
    scheduler.set_timesteps(5, device=device)
    latents = torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(0)).to(device)
    for timestep in scheduler.timesteps:
        latents = scheduler.step(latents * 0.1 + 0.01, timestep, latents, return_dict=False)[0]
    return latents


def test_flow_match_euler_five_steps_match_cpu_bit_for_bit(emu: torch.device) -> None:
    assert torch.equal(_flow_match_five_steps(emu).cpu(), _flow_match_five_steps("cpu"))


def _euler_five_steps(device: torch.device | str) -> torch.Tensor:
    scheduler = EulerDiscreteScheduler()
    scheduler.set_timesteps(5, device=device)
    latents = torch.randn(1, 4, 8, 8, generator=torch.Generator().manual_seed(0)).to(device)
    for timestep in scheduler.timesteps:
        model_input = scheduler.scale_model_input(latents, timestep)
        latents = scheduler.step(model_input * 0.1, timestep, latents, return_dict=False)[0]
    return latents


def test_euler_discrete_five_steps_match_cpu_bit_for_bit(emu: torch.device) -> None:
    assert torch.equal(_euler_five_steps(emu).cpu(), _euler_five_steps("cpu"))
