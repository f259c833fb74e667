"""Where the scan cache keeps a file's scan: by the file's place in its tree and its bytes, not by where the tree lies.

A scan is a function of a file's bytes, its path inside its package (which makes its module name), the
tree's settings (`TreeInfo.placeless`) and the rules; no rule reads the disk. Yet it names the file by
its absolute path (findings, facts, errors). Keyed by that path, every copy of a tree would parse and
analyse it all again: the bot verifies each fix group on fresh copies of the checkout
(bot/verify/planning/changes.py), half a minute each for diffusers' whole-tree analysis, for scans
its planning run already made on the clone. So the key leaves the tree's location out, and a scan
made at one place is handed out at another with its paths moved (`relocated`); never where the old
place shows anywhere else in it (a message, a name: nothing says it was made from the place), and never
for a file outside any package, which keeps its absolute path as its identity.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
import os
from functools import cache
from pathlib import Path
from typing import Any, TypeVar

from codemods.engine.cache import digest
from codemods.engine.scan import FileScan
from codemods.project.index import TreeInfo

T = TypeVar("T")

# Values that hold no path (`str` enums are strings, and checked as such).
_ATOMS = (int, float, complex, bytes, type(None), enum.Enum)


class ScanKeys:
    """The scan cache's keys for the files of a run's trees (`trees`: each package root, or None, and its settings)."""

    def __init__(self, trees: dict[Path | None, TreeInfo]) -> None:
        # Each package directory: where its files' places start (at the package's name: "diffusers/models/x.py").
        self._packages = {
            os.path.join(root, ""): (len(os.path.join(root.parent, "")), tree.placeless())
            for root, tree in trees.items()
            if root
        }
        self.cache_name = repr(sorted((tree.placeless() for tree in trees.values()), key=repr))

    def key(self, path: str, content: str) -> str:
        """The key of the scan of `path` whose bytes have the `content_digest` `content`."""
        located = self._place(path)
        identity = path if located is None else f"{located[1]!r}\0{located[0]}"
        return digest(identity, content.encode())

    def reused(self, cached: FileScan | None, path: str) -> FileScan | None:
        """`cached`, found under `path`'s key, as a scan of `path`; None (a miss) where it cannot say so truly."""
        if cached is None or cached.path == path:
            return cached
        located = self._place(path)
        if located is None or not cached.path.endswith(os.sep + located[0]):
            return None
        try:
            return relocated(cached, cached.path, path, cached.path.removesuffix(located[0]))
        except NotRelocatable:
            return None

    def _place(self, path: str) -> tuple[str, TreeInfo] | None:
        """`path` from its package's name on, and its tree's settings; None outside the run's trees."""
        for package, (top, tree) in self._packages.items():
            if path.startswith(package):
                return path[top:], tree
        return None


class NotRelocatable(Exception):
    """The value cannot be moved: the old place shows outside a `path` field, or in a value it cannot look into."""


def relocated(value: T, old: str, new: str, place: str) -> T:
    """`value` with every dataclass field `path` that equals `old` set to `new`, as new objects (`value`, maybe
    cached, is never changed; parts with nothing to move are shared).

    Raises `NotRelocatable` where any other string mentions `place` (the directory `old` lay in), or where a
    value is neither a plain container, an atom nor a dataclass whose state is its fields.
    """
    if isinstance(value, str):
        if place in value:
            raise NotRelocatable(value)
        return value
    if isinstance(value, _ATOMS):
        return value
    if type(value) in (tuple, list, set, frozenset):
        items = [relocated(item, old, new, place) for item in value]
        return value if all(a is b for a, b in zip(items, value)) else type(value)(items)
    if type(value) is dict:
        pairs = [(relocated(k, old, new, place), relocated(v, old, new, place)) for k, v in value.items()]
        unchanged = all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(pairs, value.items()))
        return value if unchanged else dict(pairs)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _relocated_fields(value, old, new, place)
    raise NotRelocatable(type(value).__qualname__)


def _relocated_fields(value: Any, old: str, new: str, place: str) -> Any:
    names = _field_names(type(value))
    if not all(name in names for name in getattr(value, "__dict__", ())):
        raise NotRelocatable(f"{type(value).__qualname__} keeps state outside its fields")
    changed = {}
    for name in names:
        field_value = getattr(value, name)
        moved = new if name == "path" and field_value == old else relocated(field_value, old, new, place)
        if moved is not field_value:
            changed[name] = moved
    if not changed:
        return value
    moved_value = copy.copy(value)
    for name, field_value in changed.items():
        object.__setattr__(moved_value, name, field_value)  # frozen dataclasses too: the copy is new, and ours
    return moved_value


@cache
def _field_names(kind: type) -> frozenset[str]:
    return frozenset(field.name for field in dataclasses.fields(kind))
