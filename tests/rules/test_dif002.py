"""DIF002 on installed diffusers 0.42.1: each scheduler it rewrote steps exactly as before, with CPU sigmas.

Every scheduler the whole-tree run fixed (`diffusers_trees`) runs 20 steps on tiny CPU tensors in the
original and the rewritten tree, each in its own interpreter; the outputs must be bit-identical (fp32,
`torch.equal` on the saved tensors). The schedule is then set on the emulated accelerator of
`bot.verify` (a real non-CPU device computed on the CPU): after the rewrite the sigmas stay on the
CPU there, and the 20 steps make fewer host syncs than before. A CPU run alone cannot show that,
since `device="cpu"` puts the sigmas on the CPU in both trees.
"""

from __future__ import annotations

import ast
import json
import textwrap
from pathlib import Path

import torch
from installed_trees import DiffusersTrees, run_python_in_tree

REPOSITORY = Path(__file__).resolve().parents[2]

STEPS = """
import inspect, json, sys
import torch
sys.path.insert(0, {repository!r})
import diffusers
from importlib import import_module

module = import_module({module!r})
scheduler = getattr(module, {name!r})()
assert diffusers.__file__.startswith({tree!r}), diffusers.__file__


def schedule(device):
    n = 10
    while True:
        scheduler.set_timesteps(num_inference_steps=n, device=device)
        if len(scheduler.timesteps) >= 20:
            return
        n += 1


def run(device):
    generator = torch.Generator().manual_seed(0)
    sample = torch.randn(1, 4, 8, 8, generator=generator).to(device)
    outputs = []
    for t in scheduler.timesteps[:20]:
        model_output = 0.1 * sample + t / 1000
        sample = scheduler.step(model_output, t, sample, return_dict=False)[0]
        outputs.append(sample.cpu())
    return outputs


schedule("cpu")
cpu_device = str(scheduler.sigmas.device)
torch.save(run("cpu"), {saved!r})

from bot.verify.census.emulated import SyncCensus
from bot.verify.census.emulated_device import install_emulated_device

emu = install_emulated_device()
schedule(emu)
emu_device = str(scheduler.sigmas.device)
with SyncCensus() as census:
    run(emu)
print(json.dumps({{"cpu": cpu_device, "emu": emu_device, "syncs": census.result().counts["sync"]}}))
"""


def _rewritten_schedulers(trees: DiffusersTrees) -> list[tuple[str, str]]:
    """(module, class) of each scheduler whose sigmas DIF002 moved to the CPU."""
    root = trees.rewritten / "diffusers"
    found = []
    for finding in trees.result.findings:
        if finding.code != "DIF002" or not finding.fixed:
            continue
        path = Path(finding.path)
        tree = ast.parse(path.read_text())
        cls = next(
            n for n in ast.walk(tree)
            if isinstance(n, ast.ClassDef) and n.lineno <= finding.line <= (n.end_lineno or n.lineno)
        )  # fmt: skip
        module = "diffusers." + str(path.relative_to(root).with_suffix("")).replace("/", ".")
        found.append((module, cls.name))
    return found


def _run_steps(tree: Path, module: str, name: str, saved: Path) -> dict:
    code = STEPS.format(repository=str(REPOSITORY), module=module, name=name, tree=str(tree), saved=str(saved))
    completed = run_python_in_tree(tree, textwrap.dedent(code))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.strip().splitlines()[-1])


def test_the_whole_tree_run_rewrote_the_flow_match_heun_scheduler(diffusers_trees: DiffusersTrees) -> None:
    assert ("diffusers.schedulers.scheduling_flow_match_heun_discrete", "FlowMatchHeunDiscreteScheduler") in (
        _rewritten_schedulers(diffusers_trees)
    )


def test_rewritten_schedulers_step_bit_identically_with_cpu_sigmas(
    diffusers_trees: DiffusersTrees, tmp_path: Path
) -> None:
    for module, name in _rewritten_schedulers(diffusers_trees):
        before = _run_steps(diffusers_trees.original, module, name, tmp_path / f"{name}.before.pt")
        after = _run_steps(diffusers_trees.rewritten, module, name, tmp_path / f"{name}.after.pt")

        # Tensors only, compared here: this process imports torch, never a diffusers.
        sigmas = [torch.load(tmp_path / f"{name}.{side}.pt") for side in ("before", "after")]
        assert len(sigmas[0]) == len(sigmas[1]) == 20, name
        assert all(a.dtype == torch.float32 and torch.equal(a, b) for a, b in zip(*sigmas)), name

        assert after["cpu"] == "cpu"
        assert before["emu"].startswith("emu") and after["emu"] == "cpu", (name, before, after)
        assert after["syncs"] < before["syncs"], (name, before, after)
