"""DIF002's trade, counted: CPU sigmas remove the syncs of `step()` but cost `add_noise` a copy per call.

diffusers #6173/#6708 keep a scheduler's sigmas on the CPU after `set_timesteps`; `add_noise` then
moves them to the sample's device on every call. Most pipelines call `add_noise` once per
generation, but inpainting with a 4-channel UNet calls it on every step. This script counts both
sides on the verifier's emulated accelerator (`bot.verify`: exact counts of host-to-device copies,
device-to-host copies and host syncs, by source line), per denoising step:

- `device` tree: the installed diffusers with each scheduler's `self.sigmas = self.sigmas.to("cpu")`
  put back in its diffusers 0.25 form, `self.sigmas.to("cpu")` (result discarded: the sigmas stay
  on the device);
- `cpu` tree: the installed diffusers as released (the maintainers' fix); the `device` tree after
  `codemod run --select DIF002 --unsafe-fixes` says, per scheduler, whether the rule makes that same
  change (`fix_is_the_release`) or why it does not;
- workloads: `txt2img` (`set_timesteps` on the device, then `scale_model_input` + `step` per step)
  and `inpaint` (the same plus the per-step `add_noise` of StableDiffusionInpaintPipeline's
  4-channel branch), and the real `StableDiffusionInpaintPipeline` with tiny components.

    .venv/bin/python benchmarks/sigma_trade.py [--schedulers EulerDiscreteScheduler,...] [--json out.json]
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
COMMENT = "  # to avoid too much CPU/GPU communication"
BARE = 'self.sigmas.to("cpu")' + COMMENT
# The two spellings of the move in the installed release; each becomes the discarded form of 0.25.
ASSIGNED = re.compile(
    r'^( +)self\.sigmas = (self\.sigmas|sigmas)\.to\("cpu"\)' + re.escape(COMMENT) + "$", re.MULTILINE
)
STEPS = 8
WORKLOADS = ("txt2img", "inpaint", "inpaint-pipeline")

WORKER = r"""
import json, sys, torch
sys.path.insert(0, {repository!r})
import diffusers
from bot.verify.census.emulated import SyncCensus
from bot.verify.census.emulated_device import install_emulated_device

assert diffusers.__file__.startswith({tree!r}), diffusers.__file__
device = install_emulated_device()
host_tensor = torch.tensor


def tensor(data, *args, **kwargs):
    # The emulated device cannot build a tensor from a list of its own 0-dim tensors (the inpainting
    # pipeline's `torch.tensor([noise_timestep])`); CUDA reads each element back (a sync), as here.
    if isinstance(data, (list, tuple)) and any(isinstance(x, torch.Tensor) and x.device == device for x in data):
        data = [x.item() if isinstance(x, torch.Tensor) else x for x in data]
    return host_tensor(data, *args, **kwargs)


torch.tensor = tensor
scheduler = getattr(diffusers, {scheduler!r})()


def loop(add_noise):
    scheduler.set_timesteps({steps}, device=device)
    generator = torch.Generator().manual_seed(0)
    sample = torch.randn(1, 4, 8, 8, generator=generator).to(device)
    original, noise = sample.clone(), torch.randn(1, 4, 8, 8, generator=generator).to(device)
    timesteps = scheduler.timesteps
    for i, t in enumerate(timesteps):
        model_input = scheduler.scale_model_input(sample, t) if hasattr(scheduler, "scale_model_input") else sample
        sample = scheduler.step(model_input * 0.1 + 0.01, t, sample, return_dict=False)[0]
        if add_noise and i < len(timesteps) - 1:
            # StableDiffusionInpaintPipeline, 4-channel UNet: the known region re-noised to the next timestep.
            scheduler.add_noise(original, noise, timesteps[i + 1 : i + 2])
    return len(timesteps)


def pipeline_call():
    from diffusers import AutoencoderKL, StableDiffusionInpaintPipeline, UNet2DConditionModel
    from bot.verify.targets.text_encoders import tiny_clip

    torch.manual_seed(0)
    unet = UNet2DConditionModel(
        block_out_channels=(4, 8), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"), up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"),
        cross_attention_dim=32, norm_num_groups=2, attention_head_dim=2,
    )
    vae = AutoencoderKL(
        block_out_channels=[4, 8], in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=2,
        down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
    )
    text_encoder, tokenizer = tiny_clip(hidden_size=32)
    pipeline = StableDiffusionInpaintPipeline(
        unet=unet, vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, scheduler=scheduler,
        safety_checker=None, feature_extractor=None, requires_safety_checker=False,
    ).to(device)
    pipeline.set_progress_bar_config(disable=True)
    image = torch.rand(1, 3, 16, 16, generator=torch.Generator().manual_seed(1))
    mask = torch.zeros(1, 1, 16, 16)
    mask[..., 4:12, 4:12] = 1.0

    def run():
        with torch.no_grad():
            pipeline(
                prompt="a red cube", image=image, mask_image=mask, height=16, width=16, strength=1.0,
                num_inference_steps={steps}, guidance_scale=1.0, output_type="np", return_dict=False,
                generator=torch.Generator().manual_seed(0),
            )
        return len(scheduler.timesteps)

    return run


def measure(run):
    run()  # warm-up: lazy state settles
    with SyncCensus(site_roots=[{package!r}]) as census:
        steps = run()
    result = census.result()
    sites = {{s.site: s.counts for s in result.sites if "schedulers/" in s.site}}
    return {{"steps": steps, "counts": result.counts, "scheduler_sites": sites}}


runs = {{"txt2img": lambda: loop(False), "inpaint": lambda: loop(True)}}
results = {{}}
for name in {workloads!r}:
    try:
        results[name] = measure(runs[name] if name in runs else pipeline_call())
    except Exception as error:  # a scheduler the pipeline cannot drive: say so, measure the rest
        results[name] = {{"error": f"{{type(error).__name__}}: {{error}}"[:160]}}
print(json.dumps(results))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--schedulers", help="comma-separated scheduler classes (default: every one with the line)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    installed = Path(importlib.util.find_spec("diffusers").origin).parent
    with tempfile.TemporaryDirectory(prefix="sigma-trade-") as scratch:
        device_tree, cpu_tree, fixed_tree = (Path(scratch) / name for name in ("device", "cpu", "fixed"))
        shutil.copytree(installed, cpu_tree / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
        reverted = _revert(installed, device_tree, options.schedulers)
        shutil.copytree(device_tree, fixed_tree)
        verdicts = _fix(fixed_tree)
        results = []
        for module, scheduler in reverted:
            verdict = verdicts.get(module)
            if verdict is None:
                continue  # `set_timesteps` keeps its sigmas on the CPU without the line: nothing to trade
            fixed_file = (fixed_tree / "diffusers" / "schedulers" / module).read_text()
            row = {
                "scheduler": scheduler,
                "dif002": verdict,
                "fix_is_the_release": fixed_file == (cpu_tree / "diffusers" / "schedulers" / module).read_text(),
            }
            for name, tree in (("device", device_tree), ("cpu", cpu_tree)):
                for workload, measured in _measure(tree, scheduler).items():
                    row[f"{workload}/{name}"] = measured
            results.append(row)
            print(_line(row), flush=True)
    if options.json:
        options.json.write_text(json.dumps(results, indent=1))
    return 0


def _revert(installed: Path, tree: Path, wanted: str | None) -> list[tuple[str, str]]:
    """Copy the installed package with the sigmas' move discarded again; (module file, scheduler class) changed."""
    shutil.copytree(installed, tree / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
    names = set(wanted.split(",")) if wanted else None
    changed = []
    for path in sorted((tree / "diffusers" / "schedulers").glob("scheduling_*.py")):
        text = path.read_text()
        scheduler = _scheduler_class(text)
        if not ASSIGNED.search(text) or scheduler is None or (names is not None and scheduler not in names):
            continue
        path.write_text(ASSIGNED.sub(_discarded, text))
        changed.append((path.name, scheduler))
    return changed


def _discarded(match: re.Match[str]) -> str:
    indent, moved = match.group(1), match.group(2)
    kept = "" if moved == "self.sigmas" else f"{indent}self.sigmas = {moved}\n"
    return f"{kept}{indent}{BARE}"


def _scheduler_class(text: str) -> str | None:
    """The module's `SchedulerMixin` subclass."""
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).endswith("SchedulerMixin") for b in node.bases):
            return node.name
    return None


def _fix(tree: Path) -> dict[str, str]:
    """Run the rule on the tree: for each scheduler file whose `set_timesteps` it reports, "fixed" or why not."""
    command = [sys.executable, "-m", "codemod_cli", "run", "--select", "DIF002", "--unsafe-fixes", "--no-cache",
               "--format", "json", str(tree / "diffusers")]  # fmt: skip
    done = subprocess.run(command, check=False, capture_output=True, text=True, cwd=REPOSITORY)
    report = json.loads(done.stdout)
    return {
        Path(f["path"]).name: "fixed" if f["fixed"] else f"not fixed: {f['not_fixed_reason']}"
        for f in report["findings"]
        if "leaves `self.sigmas` on the device" in f["message"]
    }


def _measure(tree: Path, scheduler: str) -> dict:
    """Every workload with `scheduler`, in one interpreter importing diffusers from `tree`."""
    code = WORKER.format(
        repository=str(REPOSITORY), tree=str(tree), package=str(tree / "diffusers"),
        scheduler=scheduler, steps=STEPS, workloads=WORKLOADS,
    )  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, timeout=900
    )
    if done.returncode != 0:
        error = {"error": (done.stderr.strip().splitlines() or ["failed"])[-1][:160]}
        return {workload: error for workload in WORKLOADS}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _per_step(measured: dict) -> str:
    if "error" in measured:
        return "error"
    steps = measured["steps"]
    return "/".join(f"{measured['counts'][k] / steps:.2f}" for k in ("h2d", "d2h", "sync"))


def _line(row: dict) -> str:
    cells = [f"{w}: {_per_step(row[f'{w}/device'])} -> {_per_step(row[f'{w}/cpu'])}" for w in WORKLOADS]
    return (
        f"{row['scheduler']} h2d/d2h/sync per step, device -> CPU sigmas  "
        + "  ".join(cells)
        + f"  [{row['dif002'][:90]}]"
    )


if __name__ == "__main__":
    sys.exit(main())
