"""The test override a compile test turned on by `_repeated_blocks` needs, measured and written as maintainers do.

`test_torch_compile_repeated_blocks` runs with `fullgraph=True` and `recompile_limit=1`: every
instance of a repeated block must share one compiled graph. Where a model builds its blocks in
more than one configuration (SD3's last block with `context_pre_only=True`; SD3.5's dual-attention
blocks), the shared forward compiles once per configuration and the test fails with
`FailOnRecompileLimitHit`. diffusers' answer is an override in the model's test class
(UNet2DCondition 2, Z-Image 3, WanVACE 2):

    def test_torch_compile_repeated_blocks(self):
        # <why>
        super().test_torch_compile_repeated_blocks(recompile_limit=2)

The limit is measured (`recompile_probe`: the test's body at limits 1, 2, ...), never guessed; the
override is added only to a class that does not define the test already, so writing it twice
changes nothing.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import textwrap
from dataclasses import dataclass
from pathlib import Path

from bot.verify.running import recompile_probe

LIMIT_HIT = "FailOnRecompileLimitHit"
MOST = 8
PROBE_TIMEOUT_S = 600.0
LINE_LENGTH = 119  # diffusers' ruff line length


@dataclass(frozen=True)
class Probed:
    node_id: str
    limit: int | None
    blocks: list[str]
    error: str | None = None


def probe_limit(python: Path, side_dir: Path, node_id: str, environment: dict[str, str]) -> Probed:
    """The smallest `recompile_limit` the test's body passes with, run from the checkout at `side_dir`."""
    script = side_dir / "recompile_probe.py"
    shutil.copyfile(recompile_probe.__file__, script)
    try:
        done = subprocess.run(
            [str(python), str(script), node_id, str(MOST)],
            check=False,
            cwd=side_dir,
            env=environment,
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return Probed(node_id, None, [], f"the probe did not finish within {PROBE_TIMEOUT_S:.0f} s")
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Probed(node_id, None, [], f"the probe failed: {tail}")
    found = json.loads(lines[-1])
    return Probed(node_id, found.get("limit"), found.get("blocks", []), found.get("error"))


def with_recompile_limit(text: str, class_name: str, test_name: str, limit: int, blocks: list[str]) -> str:
    """`text` with `class_name` overriding `test_name` to run at `limit`; as it was when the class defines it."""
    tree = ast.parse(text)
    test_class = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    if any(isinstance(n, ast.FunctionDef) and n.name == test_name for n in test_class.body):
        return text
    indent = " " * (test_class.col_offset + 4)
    names = " and ".join(blocks) or "repeated block"
    why = f"The {names} instances differ in configuration, so the shared block forward compiles {limit} times."
    comment = textwrap.wrap(why, LINE_LENGTH - len(indent) - 6)
    method = [
        f"{indent}def {test_name}(self):\n",
        *(f"{indent}    # {line}\n" for line in comment),
        f"{indent}    super().{test_name}(recompile_limit={limit})\n",
    ]
    lines = text.splitlines(keepends=True)
    statements = [s for s in test_class.body if not _is_docstring(s)]
    if len(statements) == 1 and isinstance(statements[0], ast.Pass):
        at = statements[0].lineno - 1
        lines[at : at + 1] = method
    else:
        at = test_class.end_lineno or len(lines)
        lines[at:at] = ["\n", *method]
    return "".join(lines)


def _is_docstring(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
