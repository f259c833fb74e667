from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from codemods.analysis.models.hot_paths import hot_paths, is_scheduler
from codemods.analysis.placement.class_places import ClassPlaces, class_places
from codemods.analysis.placement.discarded_results import DiscardedConversion
from codemods.analysis.schedules.sigma_consumers import (
    CONSUMER_PATTERN,
    SigmaConsumer,
    consumers_verdict,
    sigma_consumers,
)
from codemods.analysis.schedules.sigma_setter import (
    Move,
    anchor,
    discarded_moves,
    left_on_device_message,
    may_be_on_device,
    sigmas_left_on_device,
    why_no_fix,
)
from codemods.findings import Cost, Edit, Finding, Fix, FixSafety, Frequency
from codemods.lazy import libcst as cst
from codemods.project.index import ProjectIndex, TreeInfo
from codemods.rules.base import Example, Rule
from codemods.source import SourceFile

if TYPE_CHECKING:
    import libcst

_MOVE = 'self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n'


class SchedulerSigmasOnDevice(Rule):
    """
    ## What it does
    Finds a scheduler whose `set_timesteps` leaves `self.sigmas` on the target device while its
    per-step code (`step()`, `step_*()`, `scale_model_input()` and what they call) reads a sigma on
    the host: compares it with Python floats (`if s_tmin <= sigma <= s_tmax:`), takes a builtin
    `min`/`max`, calls `.item()`/`float()`, builds a `torch.tensor([...])` from it or hands it to
    NumPy/SciPy (`integrate.quad`). The fix keeps the sigmas on the CPU as diffusers' other
    schedulers do, right after `set_timesteps` resets its step index:
    ```python
    self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication
    ```
    Also finds that line written without its assignment, `self.sigmas.to("cpu")` (diffusers 0.25
    carried it in 13 schedulers): `Tensor.to` is not in place, so the line does nothing. In
    `set_timesteps` it is the finding above, fixed by assigning the line; where the sigmas are on
    the CPU already (`__init__`, a `set_timesteps` that never moved them) assigning it changes
    nothing and is a safe fix. Other discarded tensor conversions are DIF009's; tensors rebuilt
    from Python values every step (UniPC's `torch.tensor(rks, device=device)`) are DIF006's.

    ## Why is this bad?
    Each host read of a device tensor waits for the GPU queue to drain. A scheduler's step runs
    20-50 times per image, so the sigmas are read back 20-50 times, for values the host computed in
    the first place. A single CPU sigma costs nothing next to device tensors: CUDA kernels take a
    0-dim CPU tensor as a scalar argument.

    ## Example
    ```python
    sigmas = torch.cat([sigmas, torch.zeros(1, device=sigmas.device)])
    self.sigmas = torch.cat([sigmas[:1], sigmas[1:-1].repeat_interleave(2), sigmas[-1:]])
    self._step_index = None
    self._begin_index = None
    ...
    gamma = min(s_churn / (len(self.sigmas) - 1), 2**0.5 - 1) if s_tmin <= sigma <= s_tmax else 0.0
    ```

    ## Use instead
    ```python
    self._step_index = None
    self._begin_index = None
    self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication
    ```

    ## Fix safety
    Safe or unsafe. Assigning a discarded `.to("cpu")` of sigmas already on the CPU is safe (it
    changes nothing but how the line reads). Keeping the sigmas on the CPU is unsafe, and offered
    only where every use of the sigmas works from the CPU: single sigmas in
    arithmetic, elementwise torch ops and host reads. It is not offered (the finding says why)
    where the vector or a slice of it meets device tensors (`self.sigmas[:, None, None]` against
    per-token timesteps), where a sigma is given dimensions (`sigma.view(1)`), where per-step code
    (`step()`) moves the sigmas to the device itself (with CPU sigmas, a copy every step), where
    `set_timesteps` returns early, or where a pipeline class in the tree annotated to hold this
    scheduler uses `scheduler.sigmas` in one of those ways (the finding says what it checked).
    A pipeline that hands a sigma to the scheduler's own methods (diffusers 0.25's latent upscale:
    `scale_model_input(sigma, t)`; instruct-pix2pix: `step((noise_pred - latents) / (-sigma), t, latents)[0]`)
    is judged by their code: the argument is followed there as one sigma, and the part of the result the
    pipeline reads (`.prev_sample`, `[0]`) must hold none, or the pipeline must take it as one.
    A move in code that runs once per generation (`add_noise`, `scale_noise`) is the trade the
    maintainers accepted: it becomes a copy per call, which pays where the step reads sigmas on
    the host and is refused where it does not (see Evidence). Untyped code reading
    `scheduler.sigmas` (helpers taking a `scheduler`, modular blocks) already runs with the
    schedulers that keep CPU sigmas, so it is counted, not followed. Values and dtypes are
    unchanged; the fix is unsafe because code outside the tree (a user's callback given
    `scheduler.sigmas[i]`) may still expect device sigmas.

    ## Evidence
    diffusers #6173 ("Keep sigmas on CPU") and #6708 ("Correct sigmas cpu settings") moved the
    sigmas of 13 schedulers to the CPU after `set_timesteps`; the comment is theirs.
    `benchmarks/sigma_trade.py` counts the trade on the emulated accelerator (8 steps, diffusers
    0.42.1 with the line put back in its 0.25 form): Euler and EDM Euler save 2.0 syncs per step
    and LMS 91.6 (SciPy reads each sigma) in every pipeline, while StableDiffusionInpaintPipeline's
    per-step `add_noise` adds 0.875 host-to-device copies per step (Euler: 2.88 -> 0.88 syncs,
    2.88 -> 3.75 copies); schedulers whose step reads no sigma on the host (Euler ancestral, Heun,
    KDPM2, DPM-Solver single-step, consistency models...) save nothing and pay the same copies in
    inpainting, so their line is reported without a fix.
    """

    code = "DIF002"
    name = "scheduler-sigmas-on-device"
    summary = "scheduler keeps its sigmas on the device but reads them on the host every step"
    fix_safeties = (FixSafety.SAFE, FixSafety.UNSAFE)
    trigger = re.compile(r"self\.sigmas\b")
    trigger_text = ("self.sigmas",)

    def check(self, source: SourceFile, tree: TreeInfo) -> Iterator[Finding]:
        lines = source.lines_matching(self.trigger)
        for cls in (n for n, _ in source.walk_lines(lines) if isinstance(n, ast.ClassDef) and is_scheduler(n)):
            hot = hot_paths(source)  # memoized; only files with a scheduler pay for it
            places = class_places(source, cls)
            discarded = discarded_moves(places)
            finding, used = self._sigmas_finding(source, cls, places, hot, discarded)
            if finding is not None:
                yield finding
            for method, move in discarded:
                if move is not used:
                    yield self._discarded_finding(source, places, method, move)

    def _sigmas_finding(
        self, source: SourceFile, cls: ast.ClassDef, places: ClassPlaces, hot, discarded: list[Move]
    ) -> tuple[Finding | None, DiscardedConversion | None]:
        """The sigmas `set_timesteps` leaves on the device, and the discarded move that meant to keep them on the CPU."""
        left = sigmas_left_on_device(cls, places, hot, discarded)
        if left is None:
            return None, None
        setter, assignment, bare, flow = left.setter, left.assignment, left.bare, left.flow
        if not flow.host_reads and bare is None:
            return None, None  # nothing reads them on the host: on the device they cost nothing per step
        needs = [u for u in flow.device_needs if not u.per_call_move]
        copies = [u for u in flow.device_needs if u.per_call_move]
        message = left_on_device_message(source, assignment, bare, flow.host_reads, copies, needs)
        blocker = why_no_fix(setter, needs)
        if not flow.host_reads and copies:
            # Nothing to win per step; `add_noise` & co. would copy CPU sigmas on every call (see the Evidence).
            blocker = (
                f"nothing per step reads the sigmas on the host, and with CPU sigmas line {copies[0].line} "
                f"(`{copies[0].text}`) would copy them on each call: delete the line, or keep them on the CPU by hand"
            )
        after = bare.statement if bare is not None else anchor(setter)
        fix = None
        if blocker is None and after is not None:
            edit = (
                Edit(source.ref(bare.statement, "Expr"), "assign_moved_sigmas")
                if bare is not None
                else Edit(source.statement_ref(after), "keep_sigmas_on_cpu", inserts=True)
            )
            fix = self.fix(
                'keep the sigmas on the CPU after `set_timesteps`: `self.sigmas = self.sigmas.to("cpu")`', edit
            )
        finding = self.finding(
            source, bare.statement if bare is not None else assignment, message, fix,
            requires=(("sigma_consumers", cls.name),) if fix else (),
            not_fixed_reason=blocker,
            # Reported where `set_timesteps` places the sigmas; paid where the step reads them.
            cost=Cost(Frequency.STEP, "the scheduler's per-step code reads the sigmas"),
        )  # fmt: skip
        return finding, bare

    def _discarded_finding(
        self, source: SourceFile, places: ClassPlaces, method: ast.FunctionDef, move: DiscardedConversion
    ) -> Finding:
        """A discarded move of the sigmas outside `set_timesteps`' last word on them (`__init__`, a branch)."""
        text = source.segment(move.call)
        message = f"`{text}` throws its result away: `Tensor.to` is not in place, so the line does nothing"
        if not may_be_on_device(places, method, move.receiver):
            # `.to("cpu")` of a CPU tensor returns that tensor: assigning it changes nothing but the reading.
            fix = Fix(
                FixSafety.SAFE,
                'assign the move, as diffusers #6708 did: `self.sigmas = self.sigmas.to("cpu")`',
                (Edit(source.ref(move.statement, "Expr"), "assign_moved_sigmas"),),
            )
            return self.finding(source, move.statement, message + " (the sigmas are on the CPU here already)", fix)
        return self.finding(
            source, move.statement, message + f" (in `{method.name}`)",
            not_fixed_reason="the sigmas may be on the device here and the move is not `set_timesteps`' last word on "
            "them; assigning it would change where later code finds them",
        )  # fmt: skip

    facts_trigger = CONSUMER_PATTERN

    def collect_facts(self, source: SourceFile) -> list[SigmaConsumer]:
        return sigma_consumers(source)

    def resolve(self, finding: Finding, index: ProjectIndex) -> Finding | None:
        if finding.fix is None or not finding.requires:
            return finding
        blocker, checked = consumers_verdict(finding.requires[0][1], finding.path, index, self.code)
        if blocker is not None:
            return replace(finding, not_fixed_reason=blocker, fix=None)
        return replace(finding, message=finding.message + checked)

    def edit_keep_sigmas_on_cpu(self, node: libcst.BaseStatement) -> libcst.FlattenSentinel:
        return cst.FlattenSentinel([node, cst.parse_statement(_MOVE)])

    def edit_assign_moved_sigmas(self, node: libcst.Expr) -> libcst.Assign:
        target = cst.AssignTarget(target=cst.parse_expression("self.sigmas"))
        return cst.Assign(targets=[target], value=node.value)

    valid = (
        # Already on the CPU after `set_timesteps`.
        (
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n"
        ),
        # On the device, but only used in device arithmetic: no host read, nothing to win.
        (
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n\n"
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output\n"
        ),
    )
    invalid = (
        Example(
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n\n"
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            "        self._step_index = None\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
        ),
        # diffusers 0.25's form: the move's result thrown away, in `__init__` (a no-op) and in `set_timesteps`.
        Example(
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def __init__(self):\n"
            "        self.sigmas = torch.linspace(1, 0, 11)\n"
            '        self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            '        self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
            "import torch\n\n\n"
            "class Scheduler(SchedulerMixin):\n"
            "    def __init__(self):\n"
            "        self.sigmas = torch.linspace(1, 0, 11)\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def set_timesteps(self, n, device=None):\n"
            "        self.sigmas = torch.linspace(1, 0, n + 1).to(device=device)\n"
            '        self.sigmas = self.sigmas.to("cpu")  # to avoid too much CPU/GPU communication\n\n'
            "    def step(self, model_output, timestep, sample):\n"
            "        sigma = self.sigmas[self.step_index]\n"
            "        return sample + sigma * model_output if sigma > 0.5 else sample\n",
        ),
    )
