"""`[tool.codemod]` in the target's pyproject.toml, merged with the command line (which wins)."""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# diffusers' `[tool.ruff] line-length`; used when the target's pyproject does not say.
DEFAULT_LINE_LENGTH = 119
_KEYS = {"select", "ignore", "exclude", "include-deprecated", "opt-in"}


class ConfigError(Exception):
    """A configuration the user must correct; the message says where and what."""


@dataclass(frozen=True)
class Config:
    select: tuple[str, ...] | None = None
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    line_length: int = DEFAULT_LINE_LENGTH
    pyproject: Path | None = None
    # `pipelines/deprecated/` is scanned but never changed unless the target opts in (see `split_frozen` in codemods/engine/entry.py).
    include_deprecated: bool = False
    # Fixes a rule offers only on request ("DIF004-self-calls"; each rule's `opt_ins`, checked by `codemods.rules`).
    opt_in: tuple[str, ...] = ()


def find_pyproject(paths: Iterable[Path]) -> Path | None:
    """The nearest pyproject.toml above the first path (as ruff finds its configuration)."""
    for path in paths:
        directory = path.resolve() if path.is_dir() else path.resolve().parent
        for candidate in (directory, *directory.parents):
            if (candidate / "pyproject.toml").is_file():
                return candidate / "pyproject.toml"
        return None
    return None


def load_config(pyproject: Path | None) -> Config:
    if pyproject is None:
        return Config()
    try:
        data = tomllib.loads(pyproject.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
        raise ConfigError(f"{pyproject}: cannot read configuration: {error}") from None
    tool = data.get("tool", {})
    table = tool.get("codemod", {})
    unknown = set(table) - _KEYS
    if unknown:
        raise ConfigError(
            f"{pyproject}: unknown key(s) in [tool.codemod]: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(_KEYS))})"
        )
    line_length = tool.get("ruff", {}).get("line-length") or tool.get("black", {}).get("line-length")
    return Config(
        select=_strings(table, "select", pyproject) if "select" in table else None,
        ignore=_strings(table, "ignore", pyproject),
        exclude=_strings(table, "exclude", pyproject),
        line_length=int(line_length) if isinstance(line_length, int) else DEFAULT_LINE_LENGTH,
        pyproject=pyproject,
        include_deprecated=_boolean(table, "include-deprecated", pyproject),
        opt_in=_strings(table, "opt-in", pyproject),
    )


def _strings(table: dict, key: str, pyproject: Path) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ConfigError(f"{pyproject}: [tool.codemod] {key} must be a list of strings")
    return tuple(value)


def _boolean(table: dict, key: str, pyproject: Path) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{pyproject}: [tool.codemod] {key} must be true or false")
    return value
