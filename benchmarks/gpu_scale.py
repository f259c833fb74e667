"""The real-scale evidence on one GPU, in one prepared run: each group's changes timed on both trees.

    python -m benchmarks.gpu_scale [--out DIR] [--budget SECONDS] [--device cuda] [--reduced]

`benchmarks/gpu_scale.sh` is the way to call it on a GPU machine. Groups run in priority order
(see GROUPS); each rewrites a copy of its tree (the installed diffusers, or the QwenImage file as
it was before diffusers #13406, from the fixture case DIF001/qwenimage_rope_pr13406), runs its
cases on the original tree and then on the rewritten one (`bot.verify.real_scale`), and the
results so far are written after every group: `gpu-scale.json` and `gpu-evidence.md` in --out.
A group that would not fit in what is left of --budget is skipped and listed as such. `--device
cpu --reduced` runs the same code at a toy size, to try the machinery without a GPU (no figures).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.verify.changes import rewrite_copy
from bot.verify.real_scale.run import run_real_scale
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.real_scale.table import real_scale_lines
from codemods.project import installed_diffusers

QWEN = "models/transformers/transformer_qwenimage.py"
QWEN_CASE = "DIF001/qwenimage_rope_pr13406"
REDUCED = Scale(blocks=1, pixels=64, frames=1, text_tokens=8, steps=2, repeats=1)


@dataclass(frozen=True)
class Group:
    name: str
    title: str
    select: tuple[str, ...]
    paths: tuple[str, ...]  # package-relative files the engine may rewrite
    runs: tuple[str, ...]  # case runs, in priority order
    expected_s: float  # the whole group on an H200 (both trees, worker start-up included), from the estimate below
    case_timeout_s: float  # one case in one tree
    before_13406: bool = False  # the tree: QwenImage before #13406 instead of the installed package


GROUPS = (
    Group(
        "qwenimage-before-13406",
        "DIF001 on QwenImage as it was before diffusers #13406: 2 steps with true CFG, 1024x1024, eager; "
        "4 blocks, then the released 60",
        ("DIF001",),
        (QWEN,),
        ("QwenImagePipeline", "QwenImagePipeline@blocks=60"),
        110,
        120,
        before_13406=True,
    ),
    Group(
        "sync-rules",
        "DIF005 on the SD3 and Sana loops, DIF002 on FlowMatchHeunDiscreteScheduler in an SD3-width loop, "
        "DIF001 on Kandinsky 5 and NucleusMoE; eager",
        ("DIF001", "DIF002", "DIF005"),
        (
            "pipelines/stable_diffusion_3/pipeline_stable_diffusion_3.py",
            "pipelines/sana/pipeline_sana.py",
            "schedulers/scheduling_flow_match_heun_discrete.py",
            "models/transformers/transformer_kandinsky.py",
            "models/transformers/transformer_nucleusmoe_image.py",
        ),
        (
            "StableDiffusion3Pipeline",
            "SanaPipeline",
            "FlowMatchHeunDiscreteScheduler",
            "Kandinsky5Transformer3DModel",
            "NucleusMoEImageTransformer2DModel",
        ),
        100,
        60,
    ),
    Group(
        "regional-compile",
        "DIF003 on SD3Transformer2DModel: cold compile and steady forwards, whole-model torch.compile (before) "
        "against compile_repeated_blocks (after)",
        ("DIF003",),
        ("models/transformers/transformer_sd3.py",),
        ("SD3Transformer2DModel[compile]",),
        90,
        150,
    ),
    Group(
        "sync-rules-compiled",
        "DIF005 on the SD3 loop under torch.compile (default mode): compile deepens the queue each sync waits on",
        ("DIF005",),
        ("pipelines/stable_diffusion_3/pipeline_stable_diffusion_3.py",),
        ("StableDiffusion3Pipeline@compile=default",),
        90,
        150,
    ),
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=PROJECT / "docs", help="where gpu-evidence.md and gpu-scale.json go"
    )
    parser.add_argument("--budget", type=float, default=300.0, help="seconds for the whole run (default 300)")
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--reduced", action="store_true", help="toy size, to try the machinery (no figures)")
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS], help="only these groups")
    parser.add_argument(
        "--run", action="append", metavar="CASE_RUN", help="only these case runs (e.g. QwenImagePipeline), in their groups"
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    scale = REDUCED if args.reduced else Scale()
    args.out.mkdir(parents=True, exist_ok=True)
    src = installed_diffusers()
    record: dict[str, Any] = {"command": " ".join(["python -m benchmarks.gpu_scale", *argv]), "groups": []}
    work = Path(tempfile.mkdtemp(prefix="gpu-scale-"))
    try:
        for group in _selected(args.group, args.run):
            left = args.budget - (time.monotonic() - started)
            if left < group.expected_s and not args.reduced:
                print(f"gpu_scale: {group.name}: skipped, {left:.0f} s left of the budget", flush=True)
                record["groups"].append({"name": group.name, "title": group.title, "skipped": f"{left:.0f} s left"})
                continue
            print(f"gpu_scale: {group.name}: {', '.join(group.runs)}", flush=True)
            began = time.monotonic()
            section = _run_group(group, src, work / group.name, args.device, scale)
            seconds = round(time.monotonic() - began, 1)
            record["groups"].append({"name": group.name, "title": group.title, "seconds": seconds, **section})
            print(f"gpu_scale: {group.name}: done in {seconds:.0f} s", flush=True)
            record["seconds"] = round(time.monotonic() - started, 1)
            _write(record, args.out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record["seconds"] = round(time.monotonic() - started, 1)
    _write(record, args.out)
    print(f"gpu_scale: {args.out / 'gpu-evidence.md'} ({record['seconds']:.0f} s)", flush=True)
    return 0


def _selected(groups: list[str] | None, runs: list[str] | None) -> list[Group]:
    """The groups to run, each keeping only the case runs asked for (a group left with none is dropped)."""
    chosen = [g for g in GROUPS if not groups or g.name in groups]
    if runs:
        chosen = [replace(g, runs=tuple(r for r in g.runs if r in runs)) for g in chosen]
    return [g for g in chosen if g.runs]


def _run_group(group: Group, src: Path, work: Path, device: str, scale: Scale) -> dict[str, Any]:
    tree = _before_13406(src, work / "input") if group.before_13406 else src
    changes = rewrite_copy(tree, work / "trees", select=group.select, paths=tuple(tree / p for p in group.paths))
    if not changes.rewrites:
        return {"measured": False, "why": f"the engine rewrote nothing in {', '.join(group.paths)}", "cases": []}
    # At the toy size a run's own block count or compile mode would undo the point of --reduced.
    runs = [CaseRun.parse(run).case for run in group.runs] if scale == REDUCED else list(group.runs)
    return run_real_scale(
        changes,
        runs,
        device,
        work / "runs",
        scale,
        say=lambda m: print(f"gpu_scale: {m}", flush=True),
        timeout_s=group.case_timeout_s,
    )


def _before_13406(src: Path, work: Path) -> Path:
    """A copy of the installed package whose QwenImage file is the fixture case's input (that PR's hunks reverted)."""
    from tools.fixture_cases.cases import find_case

    package = work / "diffusers"
    shutil.copytree(src, package, ignore=shutil.ignore_patterns("__pycache__"))
    files = find_case(QWEN_CASE).input_files()
    (package / QWEN).write_text(files[f"diffusers/{QWEN}"], encoding="utf-8")
    return package


def _write(record: dict[str, Any], out: Path) -> None:
    (out / "gpu-scale.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "gpu-evidence.md").write_text(evidence_markdown(record))


def evidence_markdown(record: dict[str, Any]) -> str:
    """docs/gpu-evidence.md: every group's real-scale section, and the groups that did not run."""
    lines = [
        "# Real-scale evidence on a GPU",
        "",
        (
            f"Written by `{record['command']}` (`benchmarks/gpu_scale.sh`) in {record.get('seconds', 0):.0f} s. "
            "Each group's tree is rewritten by the engine; both trees run in separate worker processes, one after "
            "the other, on the same device."
        ),
    ]
    for group in record["groups"]:
        lines += ["", f"## {group['name']}", "", group["title"] + "."]
        if "skipped" in group:
            lines += ["", f"Not run: skipped for time ({group['skipped']})."]
            continue
        lines += ["", *real_scale_lines(group)]
        lines.append(f"\n({group['seconds']:.0f} s for this group.)")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
