"""What counts as verified, per rule, and the verdict of one target from its two sides.

Measured per unit (one forward, or one denoising/scheduler step), on both trees:
`h2d`, `d2h`, `sync` (the census; none on --device cpu) and `outputs` (diffusers output
dataclasses built). Then:

* `failed`: either side raised, or the outputs differ beyond what `parity_rule` allows:
  bit-for-bit for rules that only cache or move data (DIF001, DIF003, DIF004, DIF005) on every
  device; for rules that move arithmetic between the device and the host (DIF002's sigmas,
  DIF006's host values) bit-for-bit where both are the CPU (emu, cpu) and within a few ulp of the
  outputs' dtype on CUDA, where the host's arithmetic may round the last bit differently; within
  --tolerance (absolute) for any other rule. The report names the rule it applied and why.
* `regressed`: copies and syncs per unit, counted together, went up; or output objects went
  up; or a compile check that passed before fails after. One kind may go up while the total
  goes down (DIF002 moves sigmas to the CPU: one D2H per call replaces a sync per step): that is
  not a regression, and the report names the trade-off in the target's notes.
* `verified`: parity passed, nothing regressed, and every rule of the target shows its own
  evidence:
  - DIF001, DIF002, DIF005 and rules not named here (copies and syncs): some census count
    per unit went down. On --device cpu there is no census, so these are `unverified`
    (parity only), never verified.
  - DIF004 (`.sample` -> `return_dict=False)[0]`; no census change expected): output
    dataclasses built per unit went down; with --compile the rewritten target must also
    compile with fullgraph=True.
  - DIF003 (`_repeated_blocks`; changes nothing at run time): `compile_repeated_blocks`
    finds blocks after and none before; with --compile it must also compile them with
    fullgraph=True.
  A compile check torch cannot run here is reported `skipped` and neither proves nor blocks.
* `no-gain`: parity passed, nothing regressed, but some rule shows no evidence (named in notes).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.verify.running.outputs import Parity

CENSUS_KINDS = ("h2d", "d2h", "sync")
METRICS = (*CENSUS_KINDS, "outputs")
DATA_RULES = frozenset({"DIF001", "DIF003", "DIF004", "DIF005"})
"""Rules that cache or move data: the same arithmetic on the same device, so the same bits."""
HOST_ARITHMETIC_RULES = frozenset({"DIF002", "DIF006"})
"""Rules that move arithmetic between the device and the host (sigmas kept on the CPU, values built there)."""
OUTPUT_RULES = frozenset({"DIF004"})
STRUCTURE_RULES = frozenset({"DIF003"})
ULPS = 4
"""How far a host-arithmetic rule's outputs may move on CUDA: a few roundings of the outputs' dtype.
H200, DIF002 on FlowMatchHeunDiscreteScheduler: 2.38e-07 on outputs near 2 to 4 (1 ulp of float32 there)."""

VERDICTS = ("verified", "no-gain", "regressed", "failed", "unverified")


@dataclass(frozen=True)
class ParityRule:
    """How close the two trees' outputs must be: bit-identical, within `ulps`, or within `tolerance`."""

    tolerance: float = 0.0
    """Absolute; 0.0 with `ulps` 0: bit-identical."""
    ulps: int = 0
    """Within this many ulp of each output's dtype, relative to that output's largest magnitude."""
    reason: str = ""


def parity_rule(rules: list[str], device: str, tolerance: float) -> ParityRule:
    """What parity the rewrites of `rules` must keep on `device`, and why (`tolerance`: the user's, absolute)."""
    applied = set(rules)
    names = ", ".join(sorted(applied))
    if applied <= DATA_RULES:
        return ParityRule(reason=f"bit-identical required: the rewrites ({names}) only cache or move data")
    if applied <= DATA_RULES | HOST_ARITHMETIC_RULES:
        moved = ", ".join(sorted(applied & HOST_ARITHMETIC_RULES))
        if device != "cuda":
            return ParityRule(
                reason=f"bit-identical required: the rewrites ({moved}) move arithmetic to the host,"
                f" and on --device {device} host and device are both the CPU"
            )
        return ParityRule(
            ulps=ULPS,
            reason=f"within {ULPS} ulp of each output's dtype at its largest magnitude: the rewrites ({moved})"
            " move arithmetic from the GPU to the host CPU, which may round the last bit differently",
        )
    changing = ", ".join(sorted(applied - DATA_RULES - HOST_ARITHMETIC_RULES))
    return ParityRule(
        tolerance, reason=f"within {tolerance:g} (--tolerance): the rewrites ({changing}) change arithmetic"
    )


@dataclass(frozen=True)
class Side:
    """One tree's measurements of one target, as its worker reported them."""

    ok: bool
    error: str | None = None
    unit: str | None = None
    units: int = 1
    totals: dict[str, int] = field(default_factory=dict)  # per run; census kinds absent without a census
    sites: list[dict[str, Any]] = field(default_factory=list)
    output_sites: dict[str, int] = field(default_factory=dict)
    durations_ms: dict[str, float] | None = None
    big_syncs: list[dict[str, Any]] = field(default_factory=list)
    repeated_blocks: dict[str, Any] | None = None
    compile: dict[str, dict[str, Any]] = field(default_factory=dict)
    lines: dict[str, list[int]] = field(default_factory=dict)
    functions: dict[str, list[str]] = field(default_factory=dict)
    outputs_file: str | None = None
    seconds: float | None = None

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> Side:
        census = result.get("census")
        totals = dict(census["counts"]) if census else {}
        if "outputs_built" in result:
            totals["outputs"] = result["outputs_built"]["count"]
        return cls(
            ok=bool(result.get("ok")),
            error=result.get("error"),
            unit=result.get("unit"),
            units=max(1, int(result.get("units") or 1)),
            totals=totals,
            sites=census["sites"] if census else [],
            output_sites=result.get("outputs_built", {}).get("sites", {}),
            durations_ms=census.get("durations_ms") if census else None,
            big_syncs=census.get("big_syncs", []) if census else [],
            repeated_blocks=result.get("repeated_blocks"),
            compile=result.get("compile", {}),
            lines=result.get("lines", {}),
            functions=result.get("functions", {}),
            outputs_file=result.get("outputs_file"),
            seconds=result.get("seconds"),
        )

    def judged_on(self, classes: set[str]) -> Side:
        """This side with the blocks `compile_repeated_blocks` finds in the one class of `classes` it built, if any."""
        by_class = (self.repeated_blocks or {}).get("by_class", {})
        built = [name for name in sorted(classes) if name in by_class]
        return replace(self, repeated_blocks=by_class[built[0]]) if len(built) == 1 else self

    def per_unit(self) -> dict[str, float]:
        return {kind: round(count / self.units, 4) for kind, count in self.totals.items()}


@dataclass(frozen=True)
class Judgement:
    verdict: str
    error: str | None = None
    notes: tuple[str, ...] = ()


def judge(rules: list[str], before: Side, after: Side, parity: Parity | None, device: str) -> Judgement:
    if not after.ok and not before.ok:
        return Judgement("failed", f"fails on the original tree too (the target, not the rewrite): {after.error}")
    if not after.ok:
        return Judgement("failed", f"the rewritten tree fails: {after.error}")
    if not before.ok:
        return Judgement("failed", f"the original tree fails (the rewritten one runs): {before.error}")
    if parity is None or not parity.passed:
        detail = parity.detail if parity else "no outputs to compare"
        worst = f" (max abs diff {parity.max_abs_diff:.3g})" if parity and parity.max_abs_diff is not None else ""
        return Judgement("failed", f"outputs differ{worst}: {detail}")
    went_up = _went_up(before, after)
    if went_up:
        return Judgement("regressed", "; ".join(went_up))
    notes, lacking, parity_only = _trades(before, after), [], False
    for rule in sorted(set(rules)):
        evidence, note = _evidence(rule, before, after, device)
        if note:
            notes.append(note)
        if not evidence:
            lacking.append(rule)
            parity_only = parity_only or device == "cpu" and rule not in OUTPUT_RULES | STRUCTURE_RULES
    if not lacking:
        return Judgement("verified", None, tuple(notes))
    if parity_only and all(r not in OUTPUT_RULES | STRUCTURE_RULES for r in lacking):
        return Judgement("unverified", "no census on --device cpu: parity only (passed)", tuple(notes))
    return Judgement("no-gain", f"no evidence for {', '.join(lacking)}", tuple(notes))


def _went_up(before: Side, after: Side) -> list[str]:
    """What got worse: the host round trips per unit (copies and syncs together), output objects, a compile."""
    up = []
    ahead, behind = before.per_unit(), after.per_unit()
    census = [kind for kind in CENSUS_KINDS if kind in ahead and kind in behind]
    total_before, total_after = (round(sum(side[k] for k in census), 4) for side in (ahead, behind))
    if total_after > total_before:
        kinds = ", ".join(f"{k} {ahead[k]:g} -> {behind[k]:g}" for k in census if behind[k] != ahead[k])
        up.append(f"copies and syncs per {after.unit} {total_before:g} -> {total_after:g} ({kinds})")
    if behind.get("outputs", 0) > ahead.get("outputs", 0):
        up.append(f"output objects per {after.unit} {ahead['outputs']:g} -> {behind['outputs']:g}")
    for check, result in after.compile.items():
        if before.compile.get(check, {}).get("status") == "passed" and result.get("status") == "failed":
            up.append(f"{check} compile passed before, fails after: {result.get('detail')}")
    return up


def _trades(before: Side, after: Side) -> list[str]:
    """Kinds that went up while the total went down (moving sigmas to the CPU costs one D2H per call)."""
    ahead, behind = before.per_unit(), after.per_unit()
    return [
        f"trade-off: {kind} per {after.unit} {ahead[kind]:g} -> {behind[kind]:g}"
        " while copies and syncs together went down"
        for kind in CENSUS_KINDS
        if kind in ahead and kind in behind and behind[kind] > ahead[kind]
    ]


def _evidence(rule: str, before: Side, after: Side, device: str) -> tuple[bool, str | None]:
    """Whether the measurements show what `rule` promises, and a note on how (or why not)."""
    ahead, behind = before.per_unit(), after.per_unit()
    if rule in STRUCTURE_RULES:
        found_before = (before.repeated_blocks or {}).get("found", 0)
        found_after = (after.repeated_blocks or {}).get("found", 0)
        if not (found_after > 0 and found_before == 0):
            return False, f"{rule}: compile_repeated_blocks finds {found_before} -> {found_after} blocks"
        return _compile_evidence(rule, before, after, "repeated_blocks", f"{rule}: blocks found 0 -> {found_after}")
    if rule in OUTPUT_RULES:
        if not behind.get("outputs", 0) < ahead.get("outputs", 0):
            return False, f"{rule}: output objects per {after.unit} unchanged"
        return _compile_evidence(rule, before, after, "fullgraph", None)
    if device == "cpu":
        return False, None
    down = [kind for kind in CENSUS_KINDS if behind.get(kind, 0) < ahead.get(kind, 0)]
    return bool(down), None if down else f"{rule}: no copy or sync per {after.unit} went away"


def _compile_evidence(rule: str, before: Side, after: Side, check: str, note: str | None) -> tuple[bool, str | None]:
    result = after.compile.get(check)
    if result is None:
        return True, note
    status = result.get("status")
    if status == "passed":
        return True, f"{rule}: {check} compile passed ({result.get('detail')})"
    if status == "skipped":
        return True, f"{rule}: {check} compile skipped: {result.get('detail')}"
    if before.compile.get(check, {}).get("status") == "failed":
        return False, f"{rule}: {check} compile fails before and after the rewrite: {result.get('detail')}"
    return False, f"{rule}: {check} compile fails: {result.get('detail')}"
