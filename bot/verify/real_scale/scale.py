"""How big a real-scale run is, and how one is asked for by name. No torch here.

A run is named `Case` or `Case@key=value,...`: `blocks=60` builds that many blocks instead of
the cap (the released depth, for QwenImage's queue), `compile=default` (or another
`torch.compile` mode) measures the compiled denoiser after the eager run.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

BLOCKS = 4
"""Blocks built per stack by default: enough to queue real work, few enough to build in seconds."""

COMPILE_MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")


@dataclass(frozen=True)
class Scale:
    """The size of a run. The defaults are the released sizes; tests pass a reduced one."""

    blocks: int = BLOCKS
    pixels: int | None = None  # image side; None: the case's released resolution
    frames: int | None = None  # video frames; None: the case's documented count
    text_tokens: int | None = None  # None: the case's usual text length
    steps: int | None = None  # measured steps; None: the case's own
    dtype: str = "bfloat16"
    repeats: int = 3  # timed runs after the warm-up; the median is reported

    def to_dict(self) -> dict[str, object]:
        return dict(vars(self))

    def side(self, released: int) -> int:
        """The image side a case runs at: this scale's, else the case's released one."""
        return self.pixels or released

    def text(self, usual: int) -> int:
        """The text length a case runs at: this scale's, else the case's usual one."""
        return self.text_tokens or usual


@dataclass(frozen=True)
class CaseRun:
    """One named run: a case, its block cap and the compile modes measured after eager."""

    case: str
    blocks: int | None = None
    compile_modes: tuple[str, ...] = ()

    @classmethod
    def parse(cls, name: str) -> CaseRun:
        case, _, options = name.partition("@")
        run = cls(case)
        for option in filter(None, options.split(",")):
            key, _, value = option.partition("=")
            if key == "blocks" and value.isdigit() and int(value) > 0:
                run = replace(run, blocks=int(value))
            elif key == "compile" and value in COMPILE_MODES:
                run = replace(run, compile_modes=(*run.compile_modes, value))
            else:
                raise ValueError(
                    f"{name}: unknown option {option!r} (use blocks=N or compile={'|'.join(COMPILE_MODES)})"
                )
        return run

    def scale(self, base: Scale) -> Scale:
        return replace(base, blocks=self.blocks) if self.blocks else base
