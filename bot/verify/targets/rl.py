"""The value-guided planning pipeline of `diffusers.experimental.rl`, on a stand-in environment.

`ValueGuidedRLPipeline` takes an OpenAI-gym environment only for its offline dataset (means and
standard deviations to normalise with) and the sizes of its observation and action spaces; a
Hopper-shaped stand-in (11 observations, 3 actions) with a small random dataset is all it needs.
The UNet and the value function are diffusers' own UNet1D test configurations at 14 channels
(11 + 3). The pipeline never calls `set_timesteps`: it walks every training timestep of its DDPM
scheduler, so the scheduler is made with 4.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from bot.verify.targets import target

OBSERVATIONS, ACTIONS = 11, 3
TRAINING_STEPS = 4


class HopperLike:
    """What the pipeline reads of a gym environment: its offline dataset and the sizes of its spaces.

    A class of its own, not a namespace: pipelines record each component's module and class name.
    """

    def __init__(self) -> None:
        import numpy

        random = numpy.random.default_rng(0)
        self.dataset = {
            "observations": random.standard_normal((64, OBSERVATIONS)).astype("float32"),
            "actions": random.standard_normal((64, ACTIONS)).astype("float32"),
        }
        self.observation_space = SimpleNamespace(shape=(OBSERVATIONS,))
        self.action_space = SimpleNamespace(shape=(ACTIONS,))

    def get_dataset(self) -> dict[str, Any]:
        return self.dataset


def _unet_1d(**config: Any) -> Any:
    from diffusers import UNet1DModel

    return UNet1DModel(
        in_channels=OBSERVATIONS + ACTIONS,
        out_channels=OBSERVATIONS + ACTIONS,
        use_timestep_embedding=True,
        freq_shift=1.0,
        flip_sin_to_cos=False,
        time_embedding_type="positional",
        **config,
    )


@target(
    "ValueGuidedRLPipeline",
    "pipeline",
    ("ValueGuidedRLPipeline", "UNet1DModel", "DDPMScheduler"),
    f"{TRAINING_STEPS} steps of value-guided planning, 2 trajectories of 16 states",
)
def value_guided_rl(device: Any) -> Any:
    import torch
    from diffusers import DDPMScheduler
    from diffusers.experimental import ValueGuidedRLPipeline

    from bot.verify.targets.workload import Workload

    unet = _unet_1d(
        block_out_channels=(8, 8, 16, 16),
        down_block_types=("DownResnetBlock1D",) * 4,
        up_block_types=("UpResnetBlock1D",) * 3,
        mid_block_type="MidResTemporalBlock1D",
        out_block_type="OutConv1DBlock",
        act_fn="swish",
    )
    value_function = _unet_1d(
        block_out_channels=(32, 64, 128, 256),
        down_block_types=("DownResnetBlock1D",) * 4,
        up_block_types=(),
        mid_block_type="ValueFunctionMidBlock1D",
        out_block_type="ValueFunction",
        layers_per_block=1,
        downsample_each_block=True,
        act_fn="mish",
    )
    environment = HopperLike()
    pipeline = ValueGuidedRLPipeline(
        value_function=value_function,
        unet=unet,
        scheduler=DDPMScheduler(num_train_timesteps=TRAINING_STEPS),
        env=environment,
    ).to(device)
    observation = environment.get_dataset()["observations"][0]

    def run() -> Any:
        # Its noise comes from the global generator: the worker seeds it before every run.
        with torch.no_grad():
            return pipeline(observation, batch_size=2, planning_horizon=16, n_guide_steps=1, scale=0.1)

    return Workload(run=run, unit="step", units=TRAINING_STEPS, model=unet)
