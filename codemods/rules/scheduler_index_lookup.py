from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from codemods.analysis.schedules.begin_index import begin_index_anchor, begin_index_set
from codemods.analysis.schedules.first_step import iterated_schedule, step_blocker
from codemods.analysis.schedules.scheduler_lookups import index_lookups, merged
from codemods.analysis.schedules.stepped_schedulers import (
    STEP_CALL,
    SteppedScheduler,
    scheduler_loops,
    tested_schedulers,
)
from codemods.edits.statement_inserts import inserted_before
from codemods.findings import Cost, Edit, Finding, Fix, FixSafety, Frequency
from codemods.lazy import libcst as cst
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile

if TYPE_CHECKING:
    import libcst

_COMMENT = (
    "# We set the index here to remove DtoH sync, helpful especially during compilation.",
    "# Check out more details here: https://github.com/huggingface/diffusers/pull/11696",
)
# Scheduler methods whose first call may look the index up; the loop's calls of them are followed.
_FIRST_CALLS = ("step", "scale_model_input")
_ANOTHER_LOOP = "the method has more than one denoising loop; where each one starts cannot be told apart"


class SchedulerIndexLookup(Rule):
    """
    ## What it does
    Finds a pipeline's denoising loop that steps a scheduler whose begin index is unset, where
    the scheduler finds its first step index with `index_for_timestep` unless a begin index is
    set. That is read from the scheduler's own source (its `step()` and `scale_model_input()`,
    and the methods they call, across files): a class that never reads `begin_index` there
    (Helios starts at 0 by itself, DDIM never looks anything up) gets nothing, and one that looks
    an index up on *every* step (FlowMapEuler) is left to DIF007, since the begin index would
    save one sync of many. The schedulers followed are the pipeline's typed components
    (`self.scheduler`, `self.prior_scheduler`) and locals bound to them or to deep copies of them
    before the loop (`audio_scheduler = copy.deepcopy(self.scheduler)`, as LTX2 and Kandinsky 6
    step their audio).

    Where the first step provably runs at the schedule's first timestep, the fix sets the begin
    index of each such scheduler just before the loop, with the comment diffusers uses:
    ```python
    # We set the index here to remove DtoH sync, helpful especially during compilation.
    # Check out more details here: https://github.com/huggingface/diffusers/pull/11696
    self.scheduler.set_begin_index(0)
    if audio_scheduler is not None:
        audio_scheduler.set_begin_index(0)
    ```
    guarded by `if hasattr(self.scheduler, "set_begin_index"):` (as PixArt and Sana do) when a
    class the annotation allows has no such method, or when the pipeline's own code tests the
    scheduler's type or attributes (`isinstance(self.scheduler, ...)`, `hasattr(self.scheduler,
    ...)`, as EasyAnimate does): it then expects classes its annotation does not name.
    Provably means: the loop iterates the scheduler's timesteps from the first
    (`retrieve_timesteps(self.scheduler, ...)` or `self.scheduler.timesteps`, at most cut short with
    `timesteps[:n]`); every iteration reaches `step()` (a `continue` before it, like LTX's
    `skip_steps_sigma_threshold`, makes the first step that runs a later one; the `interrupt` exit
    and conditions no iteration changes, like `if sample_audio:`, are fine); a copy has the loop's
    schedule (copied after it was set, or given the same arguments), and another scheduler is paired
    with it by the pipeline itself (its own schedule set with the same arguments and read at the
    iteration's index, `audio_timesteps[i]`, as LTX2's condition and LoRA pipelines do with
    `self.audio_scheduler`); and the loop calls no `add_noise`/`scale_noise`/`set_timesteps` (which
    read the begin index too). Loops that start later (img2img and inpainting with `strength`), or
    that share the method with another loop, are reported only; so is a scheduler of several that
    cannot be proven, while the others are fixed.

    ## Why is this bad?
    Without a begin index the first `step()` (or `scale_model_input()`) calls
    `(timesteps == t).nonzero()` and `.item()`: a device-to-host sync that drains the GPU queue
    and breaks `torch.compile(fullgraph=True)` graphs, once per generation.

    ## Example
    ```python
    timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)
    with self.progress_bar(total=num_inference_steps) as progress_bar:
        for i, t in enumerate(timesteps):
            latents = self.scheduler.step(noise_pred, t, latents, return_dict=False)[0]
    ```

    ## Use instead
    ```python
    timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)
    # We set the index here to remove DtoH sync, helpful especially during compilation.
    # Check out more details here: https://github.com/huggingface/diffusers/pull/11696
    self.scheduler.set_begin_index(0)
    with self.progress_bar(total=num_inference_steps) as progress_bar:
        ...
    ```

    ## Fix safety
    Unsafe. `index_for_timestep` returns the *second* position of a timestep that occurs twice
    (so that img2img does not skip a sigma); `set_begin_index(0)` starts at position 0. The two
    agree whenever the schedule's first timestep occurs once. That holds for the schedules
    diffusers' schedulers build in ordinary settings (checked on 0.42.1 for the Karras and
    flow-match schedulers that need neither scipy nor torchsde, at 1-5, 10, 20, 25, 30, 50, 100
    and 250 steps, every `timestep_spacing`), but not always: DPM-Solver++, DEIS,
    UniPC and SA-Solver with `timestep_spacing="leading"` and 1000 steps repeat their first
    timestep, as may a user's custom `timesteps=`/`sigmas=`; there the fix starts one step earlier
    than before (arguably what was meant). The scheduler class and its configuration are runtime
    choices, so the fix needs verification with the pipeline's real scheduler.

    ## Evidence
    diffusers #11696 ("Avoid DtoH sync from access of nonzero() item in scheduler") added the
    call to Flux; Wan, Chroma, QwenImage and PixArt have it since, and `LTX2Pipeline` sets it on
    its video scheduler and on the audio scheduler deep-copied from it, one call after the other.
    Schedulers gained `set_begin_index` in diffusers 0.27; before that, the first index was looked
    up whatever the pipeline did, so older trees get no fix.
    """

    code = "DIF005"
    name = "scheduler-index-lookup"
    summary = "first `scheduler.step()` looks up its index with `nonzero().item()`; call `set_begin_index(0)`"
    fix_safeties = (FixSafety.UNSAFE,)
    trigger = STEP_CALL

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        # Whether a scheduler class reads the begin index is a question for `resolve`, which can read its source.
        handled_by_class: dict[int, set[str] | None] = {}
        for found in scheduler_loops(source):
            if id(found.owner) not in handled_by_class:
                handled_by_class[id(found.owner)] = (
                    begin_index_set(found.owner) if "set_begin_index" in source.text else set()
                )
            handled = handled_by_class[id(found.owner)]
            schedulers = [s for s in found.schedulers if handled is not None and s.expression not in handled]
            if schedulers:
                yield self._finding(source, found.owner, found.method, found.loop, schedulers, found.elsewhere)

    def _finding(
        self,
        source: SourceFile,
        owner_class: ast.ClassDef,
        method,
        loop: ast.For,
        schedulers: list,
        others: frozenset[str],
    ) -> Finding:
        owner, blocker = iterated_schedule(method, loop)
        anchor = begin_index_anchor(method, loop)
        if blocker is None and anchor is None:
            blocker = "the loop is not a statement of the method's own block; set the begin index by hand"
        blockers = {
            s.expression: blocker
            or (_ANOTHER_LOOP if s.expression in others else None)
            or step_blocker(s, loop, owner, method)
            for s in schedulers
        }
        calls = tuple((s.expression, s.nullable, True) for s in schedulers if blockers[s.expression] is None)
        fix = None
        if calls and anchor is not None:
            edit = Edit(source.statement_ref(anchor), "set_begin_index", (("calls", calls),), inserts=True)
            fix = self.fix("set the begin index before the loop", edit)
        tested = tested_schedulers(owner_class)
        return self.finding(
            source,
            schedulers[0].steps[0],
            _message({s.expression: [] for s in schedulers}, blockers),
            fix,
            requires=tuple(_lookup_question(s) for s in schedulers),
            not_fixed_reason=next(iter(blockers.values())) if fix is None else None,
            # The lookup runs in the scheduler's first `step()`, not at every step of the loop it reports.
            cost=Cost(Frequency.GENERATION, "the scheduler looks its step index up on its first step"),
            blockers=blockers,
            tested=sorted(s.expression for s in schedulers if {s.expression, s.copied_from} & tested),
        )

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        lookups: dict[str, list[str]] = {}  # scheduler -> its classes that look the first index up
        # Schedulers whose every class has `set_begin_index`, unless the pipeline's own code tests the scheduler's
        # type or attributes: it then expects classes its annotation does not name.
        unguarded: set[str] = set()
        for _, expression, methods, *types in finding.requires:
            classes = sorted({c for name in types for c in index.expand_types(name)})
            looking = [c for c in classes if _reads_begin_index(index, c, methods.split(","))]
            if looking:
                lookups[expression] = looking
            if expression not in finding.extra["tested"] and all(index.methods(c, "set_begin_index") for c in classes):
                unguarded.add(expression)
        if not lookups:
            return None  # nothing looks an index up, or every lookup stays whatever the begin index (DIF007)
        blockers = {e: b for e, b in finding.extra["blockers"].items() if e in lookups}
        message = _message(lookups, blockers)
        calls = finding.fix and finding.fix.edits[0].param("calls")
        kept = tuple((e, nullable, e not in unguarded) for e, nullable, _ in calls or () if e in lookups)
        if not kept:
            return replace(finding, message=message, fix=None, not_fixed_reason=next(b for b in blockers.values() if b))
        (edit,) = finding.fix.edits  # type: ignore[union-attr]
        new_edit = Edit(edit.target, edit.op, (("calls", kept),), inserts=True)
        names = " and ".join(f"`{e}`" for e, _, _ in kept)
        fix = Fix(finding.fix.safety, f"set the begin index of {names} before the loop", (new_edit,))  # type: ignore[union-attr]
        return replace(finding, message=message, fix=fix, not_fixed_reason=None)

    def edit_set_begin_index(self, node: libcst.BaseStatement, calls: tuple) -> libcst.FlattenSentinel:
        earlier, node = inserted_before(node)
        statements = []
        for expression, nullable, guarded in calls:
            call = f"{expression}.set_begin_index(0)\n"
            if guarded:  # `hasattr(None, ...)` is False: the guard covers a copy that may be None too
                call = f'if hasattr({expression}, "set_begin_index"):\n    ' + call
            elif nullable:
                call = f"if {expression} is not None:\n    " + call
            statements.append(cst.parse_statement(call))
        comments = [cst.EmptyLine(comment=cst.Comment(text)) for text in _COMMENT]
        statements[0] = statements[0].with_changes(leading_lines=[*node.leading_lines, *comments])
        return cst.FlattenSentinel([*earlier, *statements, node.with_changes(leading_lines=[])])

    valid = (
        # The begin index is set (here by an img2img helper): nothing to look up.
        (
            "class Pipe(DiffusionPipeline):\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def get_timesteps(self, t_start):\n"
            "        self.scheduler.set_begin_index(t_start)\n\n"
            "    def __call__(self, timesteps, latents):\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n"
        ),
    )
    invalid = (
        Example(
            "from diffusers.schedulers import EulerDiscreteScheduler\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def __call__(self, num_inference_steps, device, latents):\n"
            "        timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)\n"
            "        # Denoising loop\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n",
            "from diffusers.schedulers import EulerDiscreteScheduler\n\n\n"
            "class Pipe:\n"
            "    def __init__(self, scheduler: EulerDiscreteScheduler):\n"
            "        self.register_modules(scheduler=scheduler)\n\n"
            "    def __call__(self, num_inference_steps, device, latents):\n"
            "        timesteps, num_inference_steps = retrieve_timesteps(self.scheduler, num_inference_steps, device)\n"
            "        # Denoising loop\n"
            "        # We set the index here to remove DtoH sync, helpful especially during compilation.\n"
            "        # Check out more details here: https://github.com/huggingface/diffusers/pull/11696\n"
            "        self.scheduler.set_begin_index(0)\n"
            "        for t in timesteps:\n"
            "            latents = self.scheduler.step(latents, t, latents)[0]\n",
        ),
    )


def _lookup_question(scheduler: SteppedScheduler) -> tuple[str, ...]:
    methods = [m for m in scheduler.methods if m in _FIRST_CALLS]
    return ("index_lookup", scheduler.expression, ",".join(methods), *scheduler.types)


def _reads_begin_index(index: ProjectIndex, class_name: str, methods: list[str]) -> bool:
    """`class_name` looks its first index up in these methods unless a begin index is set, and nowhere else."""
    found = [lookups for m in methods if (lookups := index_lookups(index, class_name, m)) is not None]
    return bool(found) and merged(found).reads_begin_index


def _message(lookups: dict[str, list[str]], blockers: dict[str, str | None]) -> str:
    names = list(lookups)
    several = len(names) > 1
    classes = sorted({c for found in lookups.values() for c in found})
    message = (
        f"the first {' and '.join(f'`{e}.step()`' for e in names)} look{'' if several else 's'} up "
        f"{'their' if several else 'its'} step index with `index_for_timestep` (`nonzero().item()`: a device-to-host "
        f"sync) because no begin index is set; call {' and '.join(f'`{e}.set_begin_index(0)`' for e in names)} "
        "before the loop"
    )
    if classes:
        message += f" ({_names(classes)} look{'s' if len(classes) == 1 else ''} it up)"
    if any(blocker is None for blocker in blockers.values()):
        message += "".join(f"; the fix leaves `{e}` alone: {b}" for e, b in blockers.items() if b)
    return message


def _names(classes: list[str]) -> str:
    return ", ".join(classes) if len(classes) <= 3 else f"{', '.join(classes[:3])} and {len(classes) - 3} more"
