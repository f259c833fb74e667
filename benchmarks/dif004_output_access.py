"""DIF004, measured: what `return_dict=False)[0]` instead of `.sample` changes under Dynamo and in eager time.

The rule claims the output dataclass costs something: graph breaks or recompiles under
`torch.compile`, or time. This script measures both sides on tiny models of the installed
diffusers, before and after the engine's DIF004 rewrite:

- `before`: a copy of the installed package, plus `dif004_callers.py` (below: a pipeline's
  caller-side reads, `unet(...).sample` and `scheduler.step(...).prev_sample`);
- `after`: the same copy after `codemod run --select DIF004` with a model's reads of its own
  methods opted in (`[tool.codemod] opt-in = ["DIF004-self-calls"]`), so every site the rule can
  prove is rewritten.

Cases: a model reading its own methods (AutoencoderKL `decode` reads `self._decode(...).sample`,
`forward` also `self.decode(...).sample`), caller-side reads of a UNet2DConditionModel and of a denoising
step (UNet + DDIMScheduler.step), and the real DDIMPipeline (two reads per step). Per case and
tree: `torch._dynamo.explain` graphs and breaks, `fullgraph=True` success, frames compiled over
repeated calls (recompiles), and microseconds per call (median), eager and with the callee
compiled as diffusers' docs do it (`torch.compile(pipe.unet)`, `torch.compile(vae.decode)`;
backend "eager", so the time is Dynamo's, not a kernel compiler's). Every measurement runs in its
own subprocess (the two trees never share a process), rounds alternate between the trees, and
each process runs with one thread.

    .venv/bin/python benchmarks/dif004_output_access.py [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]
CASES = ("vae_decode", "vae_forward", "unet_call", "denoise_step", "ddim_pipeline")
TREES = ("before", "after")
PIPELINE_STEPS = 10

CALLERS = '''\
"""A pipeline's caller-side reads (the engine rewrites this file in the `after` tree)."""
from diffusers import DDIMScheduler, UNet2DConditionModel


def unet_call(unet: UNet2DConditionModel, latents, t, prompt_embeds):
    return unet(latents, t, encoder_hidden_states=prompt_embeds).sample


def denoise_step(unet: UNet2DConditionModel, scheduler: DDIMScheduler, latents, t, prompt_embeds):
    noise_pred = unet(latents, t, encoder_hidden_states=prompt_embeds).sample
    return scheduler.step(noise_pred, t, latents).prev_sample
'''

WORKER = r"""
import json, statistics, sys, time
import torch
import diffusers
import dif004_callers as callers
from torch._dynamo.testing import CompileCounter

assert diffusers.__file__.startswith({tree!r}), diffusers.__file__
torch.set_num_threads(1)
torch.manual_seed(0)
case, calls = {case!r}, {calls}


def tiny_unet():
    return diffusers.UNet2DConditionModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16, attention_head_dim=4, norm_num_groups=8,
    ).eval()


def tiny_vae():
    return diffusers.AutoencoderKL(
        block_out_channels=(8, 16), in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=8,
        down_block_types=("DownEncoderBlock2D",) * 2, up_block_types=("UpDecoderBlock2D",) * 2,
    ).eval()


# Each case: the call timed and traced, and the module a user compiles (its call then goes through Dynamo).
if case in ("vae_decode", "vae_forward"):
    vae = tiny_vae()
    z, image = torch.randn(1, 4, 8, 8), torch.randn(1, 3, 16, 16)
    if case == "vae_decode":
        call = lambda: vae.decode(z, return_dict=False)[0]
        compiled_call = lambda: compiled(z, return_dict=False)[0]
        target = vae.decode
    else:
        call = lambda: vae(image, return_dict=False)[0]
        compiled_call = lambda: compiled(image, return_dict=False)[0]
        target = vae
elif case in ("unet_call", "denoise_step"):
    unet, scheduler = tiny_unet(), diffusers.DDIMScheduler()
    scheduler.set_timesteps(10)
    latents, embeds, t = torch.randn(1, 4, 8, 8), torch.randn(1, 4, 16), scheduler.timesteps[3]
    if case == "unet_call":
        call = lambda: callers.unet_call(unet, latents, t, embeds)
        compiled_call = lambda: callers.unet_call(compiled, latents, t, embeds)
    else:
        call = lambda: callers.denoise_step(unet, scheduler, latents, t, embeds)
        compiled_call = lambda: callers.denoise_step(compiled, scheduler, latents, t, embeds)
    target = unet
else:
    unet = diffusers.UNet2DModel(
        block_out_channels=(8, 16), layers_per_block=1, sample_size=8, in_channels=3, out_channels=3,
        down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=8, attention_head_dim=4,
    ).eval()
    pipe = diffusers.DDIMPipeline(unet=unet, scheduler=diffusers.DDIMScheduler())
    pipe.set_progress_bar_config(disable=True)
    run = lambda: pipe(num_inference_steps={steps}, output_type="np", generator=torch.Generator().manual_seed(0))
    call = run
    compiled_call = run  # pipe.unet is swapped for its compiled form below
    target = unet


def times_us(fn, n):
    # This thread's CPU time, not the wall clock: on a shared machine other processes' slices would
    # otherwise land in the numbers (one thread: torch's work is all on this one).
    for _ in range(max(3, n // 10)):
        fn()
    times = []
    for _ in range(n):
        start = time.thread_time_ns()
        fn()
        times.append(time.thread_time_ns() - start)
    return [t / 1000 for t in times]


def median_us(fn, n):
    return statistics.median(times_us(fn, n))


def census(fn):
    # Python calls, and output dataclasses built, in one call: exact, where the times are noisy.
    counts = {{"python_calls": 0, "output_objects": 0}}

    def profile(frame, event, arg):
        if event == "call":
            counts["python_calls"] += 1
            counts["output_objects"] += frame.f_code is post_init

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return counts


post_init = diffusers.utils.outputs.BaseOutput.__post_init__.__code__
result = {{"case": case}}
with torch.no_grad():
    eager = times_us(call, calls)
    result["eager_us"], result["eager_min_us"] = statistics.median(eager), min(eager)
    result["eager"] = census(call)
    compiled = torch.compile(target, backend="eager")
    if case == "ddim_pipeline":
        pipe.unet = compiled
    compiled_times = times_us(compiled_call, calls)
    result["compiled_us"], result["compiled_min_us"] = statistics.median(compiled_times), min(compiled_times)
    result["compiled"] = census(compiled_call)
    if {graphs}:
        if case == "ddim_pipeline":
            pipe.unet = unet
        torch._dynamo.reset()
        explained = torch._dynamo.explain(call)()
        result["graphs"] = explained.graph_count
        result["graph_breaks"] = explained.graph_break_count
        result["break_reasons"] = sorted({{str(r.reason).splitlines()[0][:120] for r in explained.break_reasons}})
        torch._dynamo.reset()
        try:
            torch.compile(call, backend="eager", fullgraph=True)()
            result["fullgraph"] = "ok"
        except Exception as error:
            result["fullgraph"] = f"{{type(error).__name__}}: {{str(error).splitlines()[0][:120]}}"
        torch._dynamo.reset()
        counter = CompileCounter()
        counted = torch.compile(call, backend=counter)
        for _ in range(5):
            counted()
        result["frames_over_5_calls"] = counter.frame_count
    if case == "unet_call":
        # What one output object costs to build and read, against the tuple, alone.
        from diffusers.models.autoencoders.vae import DecoderOutput
        from diffusers.models.unets.unet_2d_condition import UNet2DConditionOutput
        from diffusers.schedulers.scheduling_ddim import DDIMSchedulerOutput
        x = torch.zeros(1)
        result["object_us"] = {{
            "DecoderOutput(sample=x).sample": median_us(lambda: DecoderOutput(sample=x).sample, 20000),
            "UNet2DConditionOutput(sample=x).sample": median_us(lambda: UNet2DConditionOutput(sample=x).sample, 20000),
            "DDIMSchedulerOutput(prev_sample=x, ...).prev_sample": median_us(
                lambda: DDIMSchedulerOutput(prev_sample=x, pred_original_sample=x).prev_sample, 20000
            ),
            "(x,)[0]": median_us(lambda: (x,)[0], 20000),
        }}
print("RESULT " + json.dumps(result))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="timing processes per case and tree (alternating)")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per process")
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--json", type=Path, help="also write the results here")
    options = parser.parse_args()
    installed = Path(importlib.util.find_spec("diffusers").origin).parent
    results: dict[str, dict[str, list[dict]]] = {}
    with tempfile.TemporaryDirectory(prefix="dif004-") as scratch:
        roots = {name: Path(scratch) / name for name in TREES}
        for root in roots.values():
            shutil.copytree(installed, root / "diffusers", ignore=shutil.ignore_patterns("__pycache__"))
            (root / "dif004_callers.py").write_text(CALLERS)
        rewritten = _rewrite(roots["after"])
        print(f"after tree: {rewritten}", flush=True)
        for case in options.cases.split(","):
            for round_ in range(options.rounds):
                for name in TREES if round_ % 2 == 0 else reversed(TREES):
                    measured = _measure(roots[name], case, options.calls, graphs=round_ == 0)
                    results.setdefault(case, {}).setdefault(name, []).append(measured)
            print(_line(case, results[case]), flush=True)
    if options.json:
        options.json.write_text(json.dumps({"rewritten": rewritten, "results": results}, indent=1))
    return 0


def _rewrite(root: Path) -> str:
    """Run the engine on the `after` tree, every provable site opted in; a summary of what it changed."""
    (root / "pyproject.toml").write_text('[tool.codemod]\nopt-in = ["DIF004-self-calls"]\n')
    command = [sys.executable, "-m", "codemod_cli", "run", "--select", "DIF004", "--no-cache", "--format", "json", "."]
    completed = subprocess.run(command, cwd=root, capture_output=True, text=True, env=_environment(root), check=False)
    if completed.returncode == 2:
        raise SystemExit(f"codemod failed on the after tree:\n{completed.stderr}")
    summary = json.loads(completed.stdout)["summary"]
    return f"{summary['fixed']} DIF004 sites rewritten in {summary['files_changed']} files"


def _measure(root: Path, case: str, calls: int, graphs: bool) -> dict:
    code = WORKER.format(tree=str(root), case=case, calls=calls, steps=PIPELINE_STEPS, graphs=graphs)
    completed = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        capture_output=True,
        text=True,
        env=_environment(root),
        timeout=1800,
        check=False,
    )
    line = next((x for x in completed.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"{case} in {root.name} failed:\n{completed.stderr[-3000:]}")
    return json.loads(line.removeprefix("RESULT "))


def _environment(root: Path) -> dict[str, str]:
    # The tree first on the path: its copy of diffusers shadows the installed one; our package after it.
    path = os.pathsep.join([str(root), str(REPOSITORY)])
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1", "TORCHDYNAMO_VERBOSE": "0"}


def _line(case: str, runs: dict[str, list[dict]]) -> str:
    parts = [case]
    for name in TREES:
        first = runs[name][0]
        eager = statistics.median(r["eager_us"] for r in runs[name])
        compiled = statistics.median(r["compiled_us"] for r in runs[name])
        graphs = (
            f"graphs {first.get('graphs')} breaks {first.get('graph_breaks')} frames {first.get('frames_over_5_calls')}"
        )
        parts.append(
            f"{name}: eager {eager:.0f} us, compiled {compiled:.0f} us, {graphs}, fullgraph {first.get('fullgraph')}"
        )
    return " | ".join(parts)


if __name__ == "__main__":
    sys.exit(main())
