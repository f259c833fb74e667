"""DIF001: a tensor built once in `__init__` and copied to the device on every call gets a per-device getter.

Fixtures (fixtures/DIF001) pin the rewrites, QwenImage's PR #13406 among them. Here: what the
fixture harness cannot show (a run over part of a copy group, the edges of the planner), and the
rewrite of the installed diffusers: which classes, that they import, and that the models compute
bit-identical outputs.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from installed_trees import DiffusersTrees, run_python_in_tree

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.index import installed_diffusers
from tools.fixture_cases import find_case, write_files


def _run(*paths: Path, unsafe: bool = True):
    return run(RunOptions(context=installed_diffusers(), paths=paths, mode=Mode.WRITE, unsafe_fixes=unsafe, select=("DIF001",), jobs=1))


def _fix_snippet(tmp_path: Path, code: str, unsafe: bool = True):
    target = tmp_path / "snippet.py"
    target.write_text(textwrap.dedent(code))
    result = _run(target, unsafe=unsafe)
    return result, target.read_text()


def test_source_with_copies_outside_the_run_is_left_unfixed(tmp_path: Path) -> None:
    write_files(find_case("DIF001/copied_from_tree").input_files(), tmp_path / "tree")
    transformers = tmp_path / "tree" / "diffusers" / "models" / "transformers"
    source = transformers / "transformer_nucleusmoe_image.py"
    before = source.read_text()

    result = _run(source)

    [finding] = result.findings
    assert not finding.fixed
    # The files named as the tree names them, never by this machine's absolute paths.
    alpha, nucleus = "diffusers/models/transformers/transformer_alpha.py", "diffusers/models/transformers/transformer_nucleusmoe_image.py"
    assert finding.not_fixed_reason == (
        f"`AlphaEmbedRope` in {alpha} is `# Copied from` `NucleusMoEEmbedRope` in "
        f"{nucleus}; both must change together, and {alpha} is not part of this run"
    )
    assert source.read_text() == before


def test_unsafe_fix_is_applied_only_on_request(tmp_path: Path) -> None:
    code = find_case("DIF001/kandinsky5_time_embeddings").input_text()
    result, after = _fix_snippet(tmp_path, code, unsafe=False)
    assert after == code
    [finding] = result.findings
    assert finding.fix_safety.value == "unsafe" and not finding.fixed


ROPE_WITH_LOCAL_IN_USE = """
    import torch
    from torch import nn


    class Rope(nn.Module):
        def __init__(self):
            super().__init__()
            self.pos_freqs = torch.ones(8, 4)
            self.neg_freqs = torch.ones(8, 4)

        def forward(self, x, device):
            pos_freqs_device = None
            txt = self.pos_freqs.to(device)[:2]
            return x * txt + self.neg_freqs.to(device)[:2]
"""


def test_tuple_getter_is_indexed_where_the_local_name_is_taken(tmp_path: Path) -> None:
    result, after = _fix_snippet(tmp_path, ROPE_WITH_LOCAL_IN_USE)
    assert all(f.fixed for f in result.findings) and len(result.findings) == 2
    assert "        txt = self._get_device_freqs(device)[0][:2]\n" in after
    assert "        return x * txt + self._get_device_freqs(device)[1][:2]\n" in after
    assert "        return self.pos_freqs.to(device), self.neg_freqs.to(device)\n" in after


def test_a_move_written_over_several_lines_is_reported_not_fixed(tmp_path: Path) -> None:
    code = """
        import torch
        from torch import nn


        class Rope(nn.Module):
            def __init__(self):
                super().__init__()
                self.freqs = torch.ones(8, 4)

            def forward(self, x):
                return x * self.freqs.to(
                    x.device
                )
    """
    result, after = _fix_snippet(tmp_path, code)
    assert after == textwrap.dedent(code)
    assert result.findings[0].not_fixed_reason == "the move at line 12 spans several lines; rewrite it by hand"


def test_moves_in_init_stay_and_moves_in_cold_methods_use_the_getter(tmp_path: Path) -> None:
    code = """
        import torch
        from torch import nn


        class Rope(nn.Module):
            def __init__(self, device=None):
                super().__init__()
                self.freqs = torch.ones(8, 4)
                self.first = self.freqs.to(device)[0]

            def export_table(self, device):
                return self.freqs.to(device)

            def forward(self, x):
                return x * self.freqs.to(x.device)
    """
    result, after = _fix_snippet(tmp_path, code)
    assert [f.line for f in result.findings] == [16]  # only the hot move is a finding
    assert "        self.first = self.freqs.to(device)[0]\n" in after
    assert "        return self._get_device_freqs(device)\n" in after
    assert "        return x * self._get_device_freqs(x.device)\n" in after


# --- the installed diffusers, rewritten by every rule (the session's `diffusers_trees`) ---------------------------

FIXED_CLASSES = {
    ("models/transformers/transformer_kandinsky.py", "Kandinsky5TimeEmbeddings", "freqs"),
    ("models/transformers/transformer_lumina2.py", "Lumina2RotaryPosEmbed", "freqs_cis"),
    ("models/transformers/transformer_nucleusmoe_image.py", "NucleusMoEEmbedRope", "freqs"),
    ("models/transformers/transformer_sana_wm.py", "SanaWMRotaryPosEmbed", "freqs"),
}


def _fixed(trees: DiffusersTrees, code: str) -> list:
    return [f for f in trees.result.findings if f.code == code and f.fixed]


def test_diffusers_targets_are_the_known_rope_and_time_tables(diffusers_trees: DiffusersTrees) -> None:
    root = diffusers_trees.rewritten / "diffusers"
    fixed = {str(Path(f.path).relative_to(root)) for f in _fixed(diffusers_trees, "DIF001")}
    assert fixed == {path for path, _, _ in FIXED_CLASSES}
    for path, cls, noun in FIXED_CLASSES:
        text = (root / path).read_text()
        assert (
            f"    @lru_cache_unless_export(maxsize=None)\n    def _get_device_{noun}(self, device: torch.device)"
            in text
        )
        assert "from ...utils.torch_utils import lru_cache_unless_export" in text
        assert f"class {cls}(" in text


# Runs in the original tree (mode "save") and in the rewritten one (mode "compare"): same weights, same inputs.
PARITY = """
import json, sys
import torch
from diffusers.models.transformers.transformer_kandinsky import Kandinsky5TimeEmbeddings
from diffusers.models.transformers.transformer_lumina2 import Lumina2RotaryPosEmbed
from diffusers.models.transformers.transformer_nucleusmoe_image import NucleusMoEImageTransformer2DModel
from diffusers.models.transformers.transformer_sana_wm import SanaWMRotaryPosEmbed

mode, path = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
models = {
    "nucleus": NucleusMoEImageTransformer2DModel(
        patch_size=2, in_channels=8, num_layers=2, attention_head_dim=16, num_attention_heads=2,
        joint_attention_dim=16, axes_dims_rope=(4, 6, 6), num_experts=4, moe_intermediate_dim=16,
    ).eval(),
    "kandinsky": Kandinsky5TimeEmbeddings(model_dim=16, time_dim=8).eval(),
    "sana": SanaWMRotaryPosEmbed(attention_head_dim=24, patch_size=(1, 2, 2), max_seq_len=64).eval(),
    "lumina": Lumina2RotaryPosEmbed(theta=10000, axes_dim=[4, 6, 6], axes_lens=[16, 16, 16], patch_size=2).eval(),
}
saved = torch.load(path) if mode == "compare" else None
if saved is None:
    g = torch.Generator().manual_seed(1)
    inputs = {
        "hidden_states": torch.randn(1, 16, 8, generator=g),
        "encoder_hidden_states": torch.randn(1, 5, 16, generator=g),
        "time": torch.rand(3, generator=g) * 1000,
    }
else:
    inputs = saved["inputs"]
    for name, model in models.items():
        model.load_state_dict(saved["state"][name])


def call_all():
    nucleus = models["nucleus"](
        inputs["hidden_states"], img_shapes=[(1, 4, 4)], encoder_hidden_states=inputs["encoder_hidden_states"],
        encoder_hidden_states_mask=torch.ones(1, 5, dtype=torch.bool), timestep=torch.tensor([500.0]), return_dict=False,
    )[0]
    return {
        "nucleus": nucleus,
        "kandinsky": models["kandinsky"](inputs["time"]),
        "sana": models["sana"]((2, 3, 4), device=torch.device("cpu")),
        "lumina": torch.cat([t.flatten() for t in models["lumina"](
            torch.zeros(1, 4, 4, 4), torch.tensor([[1, 1, 1, 0, 0]])
        )[1:4]]),
    }


with torch.no_grad():
    outputs = [call_all(), call_all()]  # the second call reads the getters' cache
if mode == "save":
    state = {name: model.state_dict() for name, model in models.items()}
    torch.save({"inputs": inputs, "state": state, "outputs": outputs}, path)
else:
    cpu = torch.device("cpu")
    rope = models["nucleus"].pos_embed
    verdict = {
        f"{name}[{i}]": torch.equal(outputs[i][name], saved["outputs"][i][name])
        for i in range(2) for name in outputs[i]
    }
    lumina = models["lumina"]
    verdict["cached"] = rope._get_device_freqs(cpu)[0] is rope._get_device_freqs(cpu)[0]
    verdict["cached lists"] = lumina._get_device_freqs_cis(cpu) is lumina._get_device_freqs_cis(cpu)
    print(json.dumps(verdict))
"""


def test_rewritten_models_compute_bit_identical_outputs(diffusers_trees: DiffusersTrees, tmp_path: Path) -> None:
    saved = tmp_path / "original.pt"
    script = tmp_path / "parity.py"
    script.write_text(PARITY)
    original = run_python_in_tree(
        diffusers_trees.original,
        f"import runpy, sys; sys.argv = ['parity', 'save', {str(saved)!r}]; runpy.run_path({str(script)!r})",
    )
    assert original.returncode == 0, original.stderr[-3000:]
    rewritten = run_python_in_tree(
        diffusers_trees.rewritten,
        f"import runpy, sys; sys.argv = ['parity', 'compare', {str(saved)!r}]; runpy.run_path({str(script)!r})",
    )
    assert rewritten.returncode == 0, rewritten.stderr[-3000:]
    verdict = json.loads(rewritten.stdout.strip().splitlines()[-1])
    assert verdict == {
        **{f"{n}[{i}]": True for i in range(2) for n in ("nucleus", "kandinsky", "sana", "lumina")},
        "cached": True,
        "cached lists": True,
    }
