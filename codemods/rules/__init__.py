"""The rules: one module each, found here by import so that adding a rule touches one file.

May import: codemods, codemods.project, codemods.analysis.values, codemods.analysis.models, codemods.analysis.placement, codemods.analysis.schedules, codemods.edits, codemods.edits.getters
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from codemods.project.config import ConfigError
from codemods.rules.base import Rule


@cache
def all_rules() -> tuple[type[Rule], ...]:
    for module in pkgutil.iter_modules(__path__):
        if module.name != "base":
            importlib.import_module(f"{__name__}.{module.name}")
    found = {cls.code: cls for cls in _subclasses(Rule) if "code" in vars(cls)}
    return tuple(found[code] for code in sorted(found))


def _subclasses(cls: type) -> list[type]:
    return [s for direct in cls.__subclasses__() for s in (direct, *_subclasses(direct))]


def rule_class(code: str) -> type[Rule]:
    """The rule with this code (`DIF001`, any case) or name (`constant-device-copy`, as `codemod rules` lists it)."""
    for cls in all_rules():
        if code.upper() == cls.code or code.lower() == cls.name:
            return cls
    raise ConfigError(f"unknown rule code: {code} (known: {', '.join(c.code for c in all_rules())})")


def select_rules(select: tuple[str, ...] | None, ignore: tuple[str, ...] = ()) -> list[Rule]:
    """Rules whose code starts with a selected prefix and with no ignored one (`DIF` selects all)."""
    known = all_rules()
    for prefix in (*(select or ()), *ignore):
        if not any(cls.code.startswith(prefix.upper()) for cls in known):
            raise ConfigError(
                f"unknown rule code or prefix: {prefix} (known: {', '.join(c.code for c in known)})"
            )
    chosen = [
        cls()
        for cls in known
        if (select is None or any(cls.code.startswith(p.upper()) for p in select))
        and not any(cls.code.startswith(p.upper()) for p in ignore)
    ]
    return chosen


def check_opt_ins(names: tuple[str, ...]) -> None:
    """Every `[tool.codemod] opt-in` name is one a rule offers ("DIF004-self-calls")."""
    known = [f"{cls.code}-{name}" for cls in all_rules() for name in cls.opt_ins]
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"unknown opt-in: {', '.join(unknown)} (known: {', '.join(known) or 'none'})")
