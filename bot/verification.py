"""Verifying a fix group with `bot.verify.verify`, and the record of it that travels between jobs.

The verifier is a parameter (the `Verifier` protocol) so the bot's own tests can hand in a
stand-in; production imports the real one lazily (it imports torch and diffusers).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from bot.groups import PACKAGE_DIR, FixGroup

if TYPE_CHECKING:
    from bot.verify.running.zygote import Zygote

VERIFIED = "verified"
_BEFORE = {"passed": "passes", "skipped": "is skipped (the change turns it on)"}
# When targets disagree, the group takes the worst verdict present.
_WORST_FIRST = ("regressed", "failed", "unverified", "no-gain")


class Verifier(Protocol):
    def __call__(
        self,
        src: Path,
        *,
        select: tuple[str, ...] | None = None,
        paths: tuple[Path, ...] | None = None,
        device: str = "emu",
        work_dir: Path | None = None,
        compile: bool = False,
        tolerance: float = 1e-4,
        progress: Callable[..., None] | None = None,
        scale: str = "test",
        cache_dir: Path | None = None,
    ) -> Any: ...


@contextmanager
def real_verifier(
    run_dir: Path,
    python: Path | None = None,
    torch_index: str | None = None,
    log: Callable[[str], None] | None = None,
) -> Iterator[Verifier]:
    """`bot.verify.verify`, running the trees in the checkout's own environment (or `python`), until the block ends.

    The environment is resolved on the first group and reused; when it cannot be built, every
    group fails at once with the same one-line reason instead of trying the build again.
    One zygote per interpreter (its log in `run_dir`) forks the workers and own tests of every group: torch is
    imported once for the run, not once per group. The block's end stops it, also on an error or an interrupt,
    killing any child still running. One copy of each tree (in `run_dir` too), made by the first group, is every
    group's original tree, and each rewritten tree hard links to it: a module its workers compiled is not compiled
    again.
    """
    from bot.verify import verify
    from bot.verify.checkout.environment import EnvironmentFailed, TorchSource, interpreter_for
    from bot.verify.running.runner import worker_zygote

    resolved: dict[Path, Path | None | EnvironmentFailed] = {}
    zygotes: dict[Path | None, Zygote] = {}
    originals: dict[Path, Path] = {}
    run_dir.mkdir(parents=True, exist_ok=True)
    with ExitStack() as running:

        def verify_in_environment(src: Path, **options: Any) -> Any:
            if src not in resolved:
                try:
                    resolved[src] = interpreter_for(src, python, TorchSource(index_url=torch_index), log)
                except EnvironmentFailed as error:
                    resolved[src] = error
            chosen = resolved[src]
            if isinstance(chosen, EnvironmentFailed):
                raise chosen
            if chosen not in zygotes:
                log_file = run_dir / f"zygote-{len(zygotes)}.txt"
                zygotes[chosen] = running.enter_context(worker_zygote(chosen, log_file))
            if src not in originals:
                originals[src] = run_dir / f"original-{len(originals)}"
                shutil.rmtree(originals[src], ignore_errors=True)  # an earlier run's, of another commit perhaps
            return verify(src, python=chosen, zygote=zygotes[chosen], original=originals[src], **options)

        yield verify_in_environment


@dataclass(frozen=True)
class Verification:
    group_id: str
    fingerprint: str
    device: str
    verdict: str  # "verified" lets the group go on; anything else is listed with `reason`
    reason: str
    markdown: str  # the verifier's table and parity numbers, for the PR body
    targets: list[dict[str, Any]] = field(default_factory=list)
    report: dict[str, Any] = field(default_factory=dict)
    test_edits: dict[str, str] = field(default_factory=dict)  # repository-relative test file -> text the fix needs

    @property
    def verified(self) -> bool:
        return self.verdict == VERIFIED

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> Verification:
        return cls(**json.loads(path.read_text()))


def group_verdict(verdicts: list[str]) -> str:
    """`verified` when every target kept parity (verified or no-gain) and at least one gained."""
    if not verdicts:
        return "unverified"
    if all(v in (VERIFIED, "no-gain") for v in verdicts) and VERIFIED in verdicts:
        return VERIFIED
    return next(v for v in (*_WORST_FIRST, *verdicts) if v in verdicts)


def verify_group(
    verifier: Verifier,
    repo_root: Path,
    group: FixGroup,
    *,
    device: str,
    work_dir: Path,
    compile: bool,
    reproduce: str,
    cache_dir: Path | None = None,
) -> Verification:
    src = (repo_root / PACKAGE_DIR).resolve()
    paths = tuple(sorted((repo_root / path).resolve() for path in group.files))
    base = {"group_id": group.id, "fingerprint": group.fingerprint, "device": device}
    try:
        # On a GPU runner the PR body also carries the real-scale table (milliseconds a reviewer can weigh).
        at_scale = {"scale": "real"} if device == "cuda" else {}
        report = verifier(
            src,
            select=(group.rule,),
            paths=paths,
            device=device,
            work_dir=work_dir,
            compile=compile,
            cache_dir=cache_dir,
            **at_scale,
        )
        markdown = report.to_markdown(reproduce)
        as_json = report.to_json()
    except Exception as crash:  # the verifier's failure is this group's verdict, not the run's end
        return Verification(
            **base, verdict="failed", reason=f"the verifier failed: {type(crash).__name__}: {crash}", markdown=""
        )
    targets = [
        {
            "target": t.target,
            "verdict": t.verdict,
            "rules": list(t.rules),
            "rewrites": list(t.rewrites),
            "error": t.error,
        }
        for t in report.targets
    ]
    verdict = group_verdict([t["verdict"] for t in targets])
    expected = {Path(path).relative_to(PACKAGE_DIR).as_posix() for path in group.files}
    rewritten = {_package_relative(path, src) for path in report.changed_files}
    broken = [b for tests in (report.own_tests, report.turned_on_tests) if tests is not None for b in tests.broken]
    checks_broken = report.repo_checks.broken if report.repo_checks else []
    if rewritten and rewritten != expected:
        verdict, reason = "failed", f"the verifier rewrote {sorted(rewritten)}, the plan {sorted(expected)}"
    elif broken:
        first = broken[0]
        verdict = "failed"
        reason = (
            f"diffusers' own test {first['test']} {_BEFORE[first.get('before', 'passed')]} before the change and fails "
            f"after: {_clip(first['message'])}"
        )
        reason += f" (+{len(broken) - 1} more)" if len(broken) > 1 else ""
    elif checks_broken:
        first = checks_broken[0]
        verdict = "failed"
        reason = f"the repository check `{first.name}` passes before the change and fails after: {_clip(first.output)}"
        reason += f" (+{len(checks_broken) - 1} more)" if len(checks_broken) > 1 else ""
    else:
        reason = _reason(verdict, targets)
    edits = report.turned_on_tests.test_edits if report.turned_on_tests else {}
    return Verification(
        **base, verdict=verdict, reason=reason, markdown=markdown, targets=targets, report=as_json, test_edits=edits
    )


def _package_relative(path: str, src: Path) -> str:
    candidate = Path(path)
    if candidate.is_absolute() and candidate.is_relative_to(src):
        return candidate.relative_to(src).as_posix()
    text = candidate.as_posix()
    return text.split(f"{PACKAGE_DIR}/", 1)[-1]


def _reason(verdict: str, targets: list[dict[str, Any]]) -> str:
    if verdict == VERIFIED:
        return f"{sum(t['verdict'] == VERIFIED for t in targets)} of {len(targets)} target(s) verified"
    if not targets:
        return "no target exercises the rewritten code"
    worst = [t for t in targets if t["verdict"] == verdict] or targets
    details = "; ".join(
        f"{t['target']}: {t['verdict']}" + (f" ({_clip(t['error'])})" if t["error"] else "") for t in worst[:3]
    )
    return f"{verdict}: {details}"


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
