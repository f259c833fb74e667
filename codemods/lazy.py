"""Modules imported on first use, so the detection path (and `--check`) never pays for them."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attribute: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attribute)


# libcst costs ~150 ms to import: only files that get a fix need it.
libcst = LazyModule("libcst")
