"""A small diffusers-like repository for the bot's end-to-end tests, cut from real fixtures.

Four DIF004 fix groups: a model module, two pipeline families, and a pipeline family whose
`__call__` is `# Copied from` into another family (so the two are one group).
"""

from __future__ import annotations

from pathlib import Path

from tools.fixture_cases import find_case

PACKAGE = "src/diffusers"

# fixture case -> where its code was cut from, inside the package
_PLACES = {
    "DIF004/autoencoder_self_decode": "models/autoencoders/autoencoder_kl.py",
    "DIF004/kandinsky_movq_subscript": "pipelines/kandinsky/pipeline_kandinsky.py",
    "DIF004/adapter_denoising_loop": "pipelines/t2i_adapter/pipeline_stable_diffusion_adapter.py",
    # Where PNDM lived before diffusers deprecated it: the bot proposes nothing in pipelines/deprecated/.
    "DIF004/pndm_delegating_step": "pipelines/pndm/pipeline_pndm.py",
}
COPY = "pipelines/ddim/pipeline_ddim.py"
COPY_SOURCE = "diffusers.pipelines.pndm.pipeline_pndm.PNDMPipeline.__call__"

# The groups the bot should find, by branch, with their files (repository-relative).
EXPECTED_GROUPS = {
    "codemod/dif004/models-autoencoders-autoencoder-kl": [f"{PACKAGE}/models/autoencoders/autoencoder_kl.py"],
    "codemod/dif004/pipelines-pndm": [
        f"{PACKAGE}/{COPY}",
        f"{PACKAGE}/pipelines/pndm/pipeline_pndm.py",
    ],
    "codemod/dif004/pipelines-kandinsky": [f"{PACKAGE}/pipelines/kandinsky/pipeline_kandinsky.py"],
    "codemod/dif004/pipelines-t2i-adapter": [f"{PACKAGE}/pipelines/t2i_adapter/pipeline_stable_diffusion_adapter.py"],
}


# The callees the pipelines' fixes are proven against, trimmed from diffusers 0.42.1 to their output
# contract (a package resolves names only inside its own tree).
_CALLEES = {
    "utils/__init__.py": "from .outputs import BaseOutput\n",
    "utils/outputs.py": "class BaseOutput(dict):\n    pass\n",
    "models/modeling_utils.py": "import torch\n\n\nclass ModelMixin(torch.nn.Module):\n    pass\n",
    "models/unets/unet_2d.py": """\
from dataclasses import dataclass

import torch

from ...utils import BaseOutput
from ..modeling_utils import ModelMixin


@dataclass
class UNet2DOutput(BaseOutput):
    sample: torch.Tensor


class UNet2DModel(ModelMixin):
    def forward(self, sample: torch.Tensor, timestep, class_labels=None, return_dict: bool = True):
        sample = self.conv_out(self.mid_block(self.conv_in(sample), timestep))
        if not return_dict:
            return (sample,)
        return UNet2DOutput(sample=sample)
""",
    "models/unets/unet_2d_condition.py": """\
from dataclasses import dataclass

import torch

from ...utils import BaseOutput
from ..modeling_utils import ModelMixin


@dataclass
class UNet2DConditionOutput(BaseOutput):
    sample: torch.Tensor = None


class UNet2DConditionModel(ModelMixin):
    def forward(
        self,
        sample: torch.Tensor,
        timestep,
        encoder_hidden_states: torch.Tensor,
        down_intrablock_additional_residuals=None,
        return_dict: bool = True,
    ):
        sample = self.conv_out(self.mid_block(self.conv_in(sample), timestep, encoder_hidden_states))
        if not return_dict:
            return (sample,)
        return UNet2DConditionOutput(sample=sample)
""",
    "models/autoencoders/vae.py": """\
from dataclasses import dataclass

import torch

from ...utils import BaseOutput


@dataclass
class DecoderOutput(BaseOutput):
    sample: torch.Tensor
    commit_loss: torch.FloatTensor | None = None
""",
    "models/autoencoders/vq_model.py": """\
import torch

from ..modeling_utils import ModelMixin
from .vae import DecoderOutput


class VQModel(ModelMixin):
    def decode(self, h: torch.Tensor, force_not_quantize: bool = False, return_dict: bool = True, shape=None):
        quant, commit_loss, _ = self.quantize(h) if not force_not_quantize else (h, torch.zeros(h.shape[0]), None)
        dec = self.decoder(self.post_quant_conv(quant))
        if not return_dict:
            return dec, commit_loss
        return DecoderOutput(sample=dec, commit_loss=commit_loss)
""",
    "schedulers/scheduling_utils.py": """\
from dataclasses import dataclass

import torch

from ..utils import BaseOutput


@dataclass
class SchedulerOutput(BaseOutput):
    prev_sample: torch.Tensor
""",
    "schedulers/scheduling_pndm.py": """\
import torch

from .scheduling_utils import SchedulerOutput


class PNDMScheduler:
    def step(self, model_output: torch.Tensor, timestep: int, sample: torch.Tensor, return_dict: bool = True):
        if self.counter < len(self.prk_timesteps) and not self.config.skip_prk_steps:
            return self.step_prk(model_output=model_output, timestep=timestep, sample=sample, return_dict=return_dict)
        else:
            return self.step_plms(model_output=model_output, timestep=timestep, sample=sample, return_dict=return_dict)

    def step_prk(self, model_output: torch.Tensor, timestep: int, sample: torch.Tensor, return_dict: bool = True):
        prev_sample = self._get_prev_sample(sample, timestep, timestep - 1, model_output)
        if not return_dict:
            return (prev_sample,)
        return SchedulerOutput(prev_sample=prev_sample)

    def step_plms(self, model_output: torch.Tensor, timestep: int, sample: torch.Tensor, return_dict: bool = True):
        prev_sample = self._get_prev_sample(sample, timestep, timestep - 1, model_output)
        if not return_dict:
            return (prev_sample,)
        return SchedulerOutput(prev_sample=prev_sample)
""",
    "schedulers/scheduling_ddim.py": """\
from dataclasses import dataclass

import torch

from ..utils import BaseOutput


@dataclass
class DDIMSchedulerOutput(BaseOutput):
    prev_sample: torch.Tensor
    pred_original_sample: torch.Tensor | None = None


class DDIMScheduler:
    def step(self, model_output: torch.Tensor, timestep: int, sample: torch.Tensor, eta: float = 0.0, return_dict: bool = True):
        pred_original_sample = sample - model_output
        prev_sample = pred_original_sample + eta * model_output
        if not return_dict:
            return (prev_sample, pred_original_sample)
        return DDIMSchedulerOutput(prev_sample=prev_sample, pred_original_sample=pred_original_sample)
""",
}


def _copied_pipeline(source: str) -> str:
    """The PNDM pipeline's `__call__` copied into a DDIM pipeline, as diffusers' copies read."""
    text = source.replace("from ....", "from ...").replace("PNDMPipeline", "DDIMPipeline")
    text = text.replace("PNDMScheduler", "DDIMScheduler")
    marker = "    @torch.no_grad()\n    def __call__"
    comment = f"    # Copied from {COPY_SOURCE} with PNDM->DDIM\n"
    return text.replace(marker, comment + marker)


# The autoencoder's fix reads its own `_decode`: DIF004 proposes that only where a checkout opts in.
PYPROJECT = '[project]\nname = "diffusers"\n\n[tool.codemod]\nopt-in = ["DIF004-self-calls"]\n'


def tree_files(pyproject: str = PYPROJECT) -> dict[str, str]:
    """Repository-relative path -> text, for every file of the tree."""
    files = {"README.md": "# a diffusers-like repository\n", "pyproject.toml": pyproject}
    package = dict(_CALLEES)
    for case, place in _PLACES.items():
        package[place] = find_case(case).input_text()
    package[COPY] = _copied_pipeline(package["pipelines/pndm/pipeline_pndm.py"])
    for place in list(package):
        parts = Path(place).parts
        for depth in range(len(parts)):
            package.setdefault("/".join((*parts[:depth], "__init__.py")), "")
    return files | {f"{PACKAGE}/{path}": text for path, text in sorted(package.items())}
