"""The real-scale evidence on one GPU, in one prepared run: each group's changes timed on both trees.

    python -m benchmarks.gpu_scale [--out DIR] [--budget SECONDS] [--device cuda] [--reduced]

`benchmarks/gpu_scale.sh` is the way to call it on a GPU machine. Groups run in priority order
(see GROUPS); each rewrites a copy of its tree (the installed diffusers, or the QwenImage file as
it was before diffusers #13406, from the fixture case DIF001/qwenimage_rope_pr13406), runs its
cases one by one on the original tree and then on the rewritten one (`bot.verify.real_scale`),
and the results so far are written after every side of every case: `gpu-scale.json` and
`gpu-evidence.md` in --out, so a run cut short keeps all it finished. A side that would not fit
its cap in what is left of --budget is not started, and listed as cut by time. `--device
cpu --reduced` runs the same code at a toy size, to try the machinery without a GPU (no figures).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT))

from bot.verify.planning.changes import rewrite_copy
from bot.verify.real_scale.run import not_measured, run_real_scale
from bot.verify.real_scale.scale import CaseRun, Scale
from bot.verify.real_scale.table import real_scale_lines
from codemods.project.index import installed_diffusers

QWEN = "models/transformers/transformer_qwenimage.py"
QWEN_CASE = "DIF001/qwenimage_rope_pr13406"
REDUCED = Scale(blocks=1, pixels=64, frames=1, text_tokens=8, steps=2, repeats=1)


@dataclass(frozen=True)
class Group:
    name: str
    title: str
    select: tuple[str, ...]
    paths: tuple[str, ...]  # package-relative files the engine may rewrite
    runs: tuple[tuple[str, float], ...]  # (case run, its cap in seconds for one tree), in priority order
    before_13406: bool = False  # the tree: QwenImage before #13406 instead of the installed package


# A cap is one case run, both trees: their workers start together (about 13 s on the H200: import
# and CUDA start-up, overlapped) and measure in turn (build, cold run, 3 timed runs, the profiled
# one). On the H200 (2026-12-04, with Python stacks still in the profile) one tree's measuring took:
# QwenImage at 4 layers 13-20 s, SD3 40 s, Sana 29 s; QwenImage at 60 layers and the Heun loop
# (55 forwards) ran past 120 s and 60 s, nearly all of it the profile's trace (see docs/gpu-evidence.md).
# Without the stacks that trace is about 25 times smaller; the caps leave room for the rest.
GROUPS = (
    Group(
        "qwenimage-before-13406",
        "DIF001 on QwenImage as it was before diffusers #13406: 2 steps with true CFG, 1024x1024, eager; "
        "the released 60 blocks",
        ("DIF001",),
        (QWEN,),
        # At 4 blocks it was measured on 2026-12-04 (docs/gpu-runs-2026-12-04.md); the budget goes to the rest.
        (("QwenImagePipeline@blocks=60", 120),),
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
            ("StableDiffusion3Pipeline", 90),
            ("SanaPipeline", 75),
            ("FlowMatchHeunDiscreteScheduler", 90),
            ("Kandinsky5Transformer3DModel", 90),
            ("NucleusMoEImageTransformer2DModel", 90),
        ),
    ),
    Group(
        "regional-compile",
        "DIF003 on SD3Transformer2DModel: cold compile and steady forwards, whole-model torch.compile (before) "
        "against compile_repeated_blocks (after)",
        ("DIF003",),
        ("models/transformers/transformer_sd3.py",),
        (("SD3Transformer2DModel[compile]", 150),),
    ),
    Group(
        "sync-rules-compiled",
        "DIF005 on the SD3 loop under torch.compile (default mode): compile deepens the queue each sync waits on",
        ("DIF005",),
        ("pipelines/stable_diffusion_3/pipeline_stable_diffusion_3.py",),
        (("StableDiffusion3Pipeline@compile=default", 150),),
    ),
)


# Kept in every version of the file the run writes, since that file replaces docs/gpu-evidence.md.
RUN_AGAIN = (
    "## Run it again",
    "",
    "Here, with PyPI: `make gpu-bundle CHECKOUT=path/to/diffusers-main` gathers what a bare GPU machine lacks",
    "into `.gpu-bundle/` (ignored by git; about 20 MiB); `make gpu-bundle-check` tries it in a venv of torch alone.",
    "On the GPU machine, from the checkout's root, with `.gpu-bundle/` carried along, one command, 400 s at most:",
    "",
    "```",
    "bash benchmarks/gpu_run.sh .gpu-bundle",
    "```",
    "",
    "It installs the bundle offline, runs `benchmarks/gpu_scale.sh` (the groups above, in priority order) and",
    "then `codemod verify --device cuda` on the main subset, and writes this file to `$OUT/gpu-evidence.md` and",
    "the reports to `$OUT/gpu-runs/DATE/`: copy both into docs/ as they are.",
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out", type=Path, default=PROJECT / "docs", help="where gpu-evidence.md and gpu-scale.json go"
    )
    parser.add_argument(
        "--budget", type=float, default=280.0, help="seconds for the whole run (default 280: 5 minutes with start-up)"
    )
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--reduced", action="store_true", help="toy size, to try the machinery (no figures)")
    parser.add_argument("--group", action="append", choices=[g.name for g in GROUPS], help="only these groups")
    parser.add_argument(
        "--run",
        action="append",
        metavar="CASE_RUN",
        help="only these case runs (e.g. QwenImagePipeline), in their groups",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    scale = REDUCED if args.reduced else Scale()
    args.out.mkdir(parents=True, exist_ok=True)
    src = installed_diffusers()
    record: dict[str, Any] = {"command": " ".join(["python -m benchmarks.gpu_scale", *argv]), "groups": []}
    work = Path(tempfile.mkdtemp(prefix="gpu-scale-"))
    deadline = started + args.budget
    try:
        for group in _selected(args.group, args.run):
            left = deadline - time.monotonic()
            if left < min(cap for _, cap in group.runs):
                print(f"gpu_scale: {group.name}: skipped, {left:.0f} s left of the budget", flush=True)
                record["groups"].append({"name": group.name, "title": group.title, "skipped": f"{left:.0f} s left"})
                _write(record, args.out, started)
                continue
            print(f"gpu_scale: {group.name}: {', '.join(run for run, _ in group.runs)}", flush=True)
            keep = partial(keep_group, record, group, time.monotonic(), args.out, started)
            keep(_run_group(group, src, work / group.name, args.device, scale, deadline, keep), running=False)
            print(f"gpu_scale: {group.name}: done in {record['groups'][-1]['seconds']:.0f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    _write(record, args.out, started)
    print(f"gpu_scale: {args.out / 'gpu-evidence.md'} ({record['seconds']:.0f} s)", flush=True)
    return 0


def _selected(groups: list[str] | None, runs: list[str] | None) -> list[Group]:
    """The groups to run, each keeping only the case runs asked for (a group left with none is dropped)."""
    chosen = [g for g in GROUPS if not groups or g.name in groups]
    if runs:
        chosen = [replace(g, runs=tuple((r, cap) for r, cap in g.runs if r in runs)) for g in chosen]
    return [g for g in chosen if g.runs]


def _run_group(
    group: Group,
    src: Path,
    work: Path,
    device: str,
    scale: Scale,
    deadline: float | None,
    progress: Callable[[dict[str, Any]], None],
) -> dict[str, Any]:
    tree = _before_13406(src, work / "input") if group.before_13406 else src
    changes = rewrite_copy(tree, work / "trees", select=group.select, paths=tuple(tree / p for p in group.paths))
    if not changes.rewrites:
        return not_measured(f"the engine rewrote nothing in {', '.join(group.paths)}")
    caps = dict(group.runs)
    # At the toy size a run's own block count or compile mode would undo the point of --reduced.
    if scale == REDUCED:
        caps = {CaseRun.parse(run).case: cap for run, cap in caps.items()}
    return run_real_scale(
        changes,
        list(caps),
        device,
        work / "runs",
        scale,
        say=lambda m: print(f"gpu_scale: {m}", flush=True),
        deadline=deadline,
        progress=progress,
        caps=caps,
    )


def _before_13406(src: Path, work: Path) -> Path:
    """A copy of the installed package whose QwenImage file is the fixture case's input (that PR's hunks reverted)."""
    from tools.fixture_cases.cases import find_case

    package = work / "diffusers"
    shutil.copytree(src, package, ignore=shutil.ignore_patterns("__pycache__"))
    files = find_case(QWEN_CASE).input_files()
    (package / QWEN).write_text(files[f"diffusers/{QWEN}"], encoding="utf-8")
    return package


def keep_group(
    record: dict[str, Any],
    group: Group,
    began: float,
    out: Path,
    started: float,
    section: dict[str, Any],
    running: bool = True,
) -> None:
    """Put the group's section so far into the record and write it: after every side of every case, so a run
    cut short (by --budget, or killed from outside) keeps all that finished."""
    entry = {"name": group.name, "title": group.title, "seconds": round(time.monotonic() - began, 1), **section}
    if running:
        entry["running"] = True
    groups = record["groups"]
    if groups and groups[-1]["name"] == group.name:
        groups[-1] = entry
    else:
        groups.append(entry)
    _write(record, out, started)


def _write(record: dict[str, Any], out: Path, started: float) -> None:
    record["seconds"] = round(time.monotonic() - started, 1)
    (out / "gpu-scale.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "gpu-evidence.md").write_text(evidence_markdown(record))


def evidence_markdown(record: dict[str, Any]) -> str:
    """docs/gpu-evidence.md: every group's real-scale section, and the groups that did not run."""
    lines = [
        "# Real-scale evidence on a GPU",
        "",
        (
            f"Written by `{record['command']}` (`benchmarks/gpu_scale.sh`) in {record.get('seconds', 0):.0f} s. "
            "Each group's tree is rewritten by the engine; each case runs on both trees in separate worker "
            "processes on the same device, measuring in turn; this file is written after every side of every case."
        ),
    ]
    for group in record["groups"]:
        lines += ["", f"## {group['name']}", "", group["title"] + "."]
        if "skipped" in group:
            lines += ["", f"Not run: skipped for time ({group['skipped']})."]
            continue
        lines += ["", *real_scale_lines(group)]
        if group.get("running"):
            lines.append(f"\n(Still running when this file was last written, {group['seconds']:.0f} s into the group.)")
        else:
            lines.append(f"\n({group['seconds']:.0f} s for this group.)")
    return "\n".join([*lines, "", *RUN_AGAIN]) + "\n"


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
