"""DIF001 on tables moved and stored back on the module, and on prose that describes the old per-call move.

Real files at test time: Wan 2.1's RoPE in diffusers 0.33.1 (`self.freqs = self.freqs.to(...)`, removed by
hand in 0.34), QwenImage's in 0.36.0 (guarded stores that `_compute_video_freqs` relies on), and SANA-WM's
class docstring in the installed package.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from release_files import installed_copy, release_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers


def _fix(path: Path):
    return run(RunOptions(context=installed_diffusers(), paths=(path,), mode=Mode.WRITE, unsafe_fixes=True, select=("DIF001",), jobs=1))


def test_wan_rope_store_becomes_the_cached_getter(tmp_path: Path) -> None:
    path = release_copy("0.33.1", "models/transformers/transformer_wan.py", tmp_path)

    [finding] = _fix(path).findings

    text = path.read_text()
    assert finding.fixed and "stores it back on the module" in finding.message
    assert "self.freqs = self.freqs.to(" not in text
    assert (
        "        # Use cached device-transferred freqs instead of storing them back on the module\n"
        "        freqs_device = self._get_device_freqs(hidden_states.device)\n"
        "        freqs = freqs_device.split_with_sizes(\n"
    ) in text
    assert "        return self.freqs.to(device)\n" in text


def test_qwenimage_stores_another_method_relies_on_are_kept(tmp_path: Path) -> None:
    path = release_copy("0.36.0", "models/transformers/transformer_qwenimage.py", tmp_path)
    before = path.read_text()

    findings = _fix(path).findings

    assert len(findings) == 2 and not any(f.fixed for f in findings)
    assert findings[0].not_fixed_reason == (
        "line 244 (`_compute_video_freqs`) reads `self.pos_freqs` as the store left it, on the device; it would "
        "read the host copy"
    )
    assert path.read_text() == before


def test_sana_wm_docstring_is_updated_with_the_getter(tmp_path: Path) -> None:
    path = installed_copy("models/transformers/transformer_sana_wm.py", tmp_path)
    assert "it is moved to the activations' device on each call." in path.read_text()

    [finding] = _fix(path).findings

    text = path.read_text()
    assert finding.fixed
    assert "it is moved to the activations' device once, then cached per device by `_get_device_freqs`." in text
    assert "on each call" not in text


def test_a_claim_wrapped_over_two_lines_refuses_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "rope.py"
    path.write_text(
        textwrap.dedent(
            '''
            import torch
            from torch import nn


            class Rope(nn.Module):
                """A complex table, kept out of the buffers; it is copied to the
                device on every call."""

                def __init__(self):
                    super().__init__()
                    self.freqs = torch.polar(torch.ones(8, 4), torch.zeros(8, 4))

                def forward(self, x):
                    return x * self.freqs.to(x.device)
            '''
        )
    )
    before = path.read_text()

    [finding] = _fix(path).findings

    assert not finding.fixed and finding.not_fixed_reason == (
        "line 7 states the old behaviour over several lines; update it with the code, by hand"
    )
    assert path.read_text() == before


def test_a_comment_in_the_rewritten_method_is_updated(tmp_path: Path) -> None:
    path = tmp_path / "rope.py"
    path.write_text(
        textwrap.dedent(
            """
            import torch
            from torch import nn


            class Rope(nn.Module):
                def __init__(self):
                    super().__init__()
                    self.freqs = torch.polar(torch.ones(8, 4), torch.zeros(8, 4))

                def forward(self, x):
                    # the table is moved to the input's device on every forward
                    return x * self.freqs.to(x.device)
            """
        )
    )

    [finding] = _fix(path).findings

    assert finding.fixed
    assert (
        "        # the table is moved to the input's device once, then cached per device by `_get_device_freqs`\n"
        in (path.read_text())
    )
