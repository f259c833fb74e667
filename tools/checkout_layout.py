"""A copy of diffusers laid out as a checkout: `src/diffusers` with the formatter pin and ruff settings beside it.

Written by us from diffusers' settings (its `setup.py` pins `ruff==0.9.10`; its `pyproject.toml`
configures ruff): enough for the engine to find the line length and the formatter gate, the
way it would in a real checkout. Used by `make demo` and the tests.

    python -m tools.checkout_layout DIR    # write DIR/pyproject.toml and DIR/setup.py
"""

from __future__ import annotations

import sys
from pathlib import Path

RUFF_PIN = "ruff==0.9.10"
RUFF_SETTINGS = """\
[tool.ruff]
line-length = 119

[tool.ruff.lint]
ignore = ["C901", "E501", "E721", "E741", "F402", "F823"]
select = ["C", "E", "F", "I", "W"]

[tool.ruff.lint.per-file-ignores]
"__init__.py" = ["E402", "F401", "F403", "F811"]
"src/diffusers/utils/dummy_*.py" = ["F401"]

[tool.ruff.lint.isort]
lines-after-imports = 2
known-first-party = ["diffusers"]

[tool.ruff.format]
quote-style = "double"
indent-style = "space"
skip-magic-trailing-comma = false
line-ending = "auto"
"""


def write_checkout_config(root: Path) -> Path:
    """`root/pyproject.toml` and `root/setup.py` as a diffusers checkout has them (formatter pin, ruff settings)."""
    (root / "pyproject.toml").write_text(RUFF_SETTINGS)
    (root / "setup.py").write_text(f'_deps = [\n    "{RUFF_PIN}",\n]\n')
    return root


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m tools.checkout_layout DIR")
    write_checkout_config(Path(sys.argv[1]))
