"""DIF009: a tensor conversion whose result is thrown away, and the in-place look-alikes it must leave alone."""

from __future__ import annotations

import textwrap
from pathlib import Path

from release_files import installed_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers


def _check(*paths: Path):
    return run(RunOptions(context=installed_diffusers(), paths=paths, mode=Mode.CHECK, select=("DIF009",), jobs=1)).findings


def _snippet(tmp_path: Path, code: str) -> Path:
    path = tmp_path / "snippet.py"
    path.write_text(textwrap.dedent(code))
    return path


def test_the_kandinsky_prior_image_embedding_move_is_reported(tmp_path: Path) -> None:
    path = installed_copy("pipelines/kandinsky2_2/pipeline_kandinsky2_2_prior_emb2emb.py", tmp_path)

    [finding] = _check(path)

    assert path.read_text().splitlines()[finding.line - 1].strip() == "image_emb.to(device=device)"
    assert "`image_emb.to(device=device)` throws its result away" in finding.message


def test_module_moves_in_place_are_not_reported(tmp_path: Path) -> None:
    # `self.vae.to(dtype=torch.float32)` (upcasting the VAE) moves a module in place.
    path = installed_copy("pipelines/stable_diffusion_xl/pipeline_stable_diffusion_xl.py", tmp_path)
    assert _check(path) == []


def test_a_tokenizer_output_moved_in_place_is_not_reported(tmp_path: Path) -> None:
    path = _snippet(
        tmp_path,
        """
        import torch


        class Pipe:
            def __init__(self, tokenizer, text_encoder):
                self.register_modules(tokenizer=tokenizer, text_encoder=text_encoder)

            def encode(self, prompt, device):
                inputs = self.tokenizer(prompt, return_tensors="pt")
                inputs.to(device)  # BatchEncoding.to works in place
                return self.text_encoder(**inputs)
        """,
    )
    assert _check(path) == []


def test_a_scheduler_sigmas_move_is_left_to_dif002(tmp_path: Path) -> None:
    path = _snippet(
        tmp_path,
        """
        import torch


        class Scheduler(SchedulerMixin):
            def __init__(self):
                self.sigmas = torch.linspace(1, 0, 10)
                self.sigmas.to("cpu")
        """,
    )
    assert _check(path) == []


def test_a_tensor_built_by_torch_on_an_unknown_device_is_still_a_tensor(tmp_path: Path) -> None:
    path = _snippet(
        tmp_path,
        """
        import torch


        def attention(self, query, key):
            bias = torch.zeros(query.size(-2), key.size(-2), device=self.device)
            bias.to(query.dtype)
            return query @ key.transpose(-2, -1) + bias
        """,
    )
    [finding] = _check(path)
    assert finding.line == 7 and "`bias.to(query.dtype)`" in finding.message
