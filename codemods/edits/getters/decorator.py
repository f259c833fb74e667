"""The cached per-device getter that DIF001 and DIF006 add to a class, and its decorator spelled as the tree allows.

`getter_definition` writes the method (decorator, signature, one-line docstring, one `return`)
for every getter planner: `codemods.edits.getters.plan` (tensor attributes), `device_getter_lists`
(lists of them) and `device_getter_builds` (DIF006's `torch.tensor(self.x)` builds). The decorator is
diffusers' own `lru_cache_unless_export` (in `<package>.utils.torch_utils`, since 2026-03) where
the tree has it, imported the way the file's neighbours import it; the standard library's
`functools.lru_cache` in older trees, rather than importing a name that is not there.
"""

from __future__ import annotations

import ast
import re

from codemods.edits.getters.names import indent_of, too_wide
from codemods.findings import Edit, ImportRequest
from codemods.project.index import TreeInfo
from codemods.source import SourceFile

CACHED_HELPER = "lru_cache_unless_export"


def getter_definition(
    source: SourceFile,
    tree: TreeInfo,
    cls: ast.ClassDef,
    getter: str,
    returns: tuple[str, str, str],
    user: str,
) -> tuple[Edit, tuple[ImportRequest, ...]] | str:
    """The edit adding `getter` to `cls` and the imports its decorator needs, or why it cannot be added.

    `returns` is (annotation, docstring, returned expression); the getter goes just before `forward`,
    else before `user`, the method that calls it.
    """
    annotation, docstring, value = returns
    decorator, imports = cache_decorator(source, tree)
    lines = [
        f"@{decorator}",
        f"def {getter}(self, device: torch.device) -> {annotation}:",
        f'    """{docstring}"""',
        f"    return {value}",
    ]
    if too_wide(lines, indent_of(source, cls.body[0]), tree.line_length):
        return f"the getter would exceed {tree.line_length} characters; add it by hand"
    methods = {n.name for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    params = (("text", "\n".join(lines) + "\n"), ("before", "forward" if "forward" in methods else user))
    return Edit(source.ref(cls, "ClassDef"), "add_device_getter", params, inserts=True), imports


def cache_decorator(source: SourceFile, tree: TreeInfo) -> tuple[str, tuple[ImportRequest, ...]]:
    """The decorator's text (without `@`) and the imports it needs."""
    package = source.module if source.path.endswith("__init__.py") else source.package
    if CACHED_HELPER in tree.torch_utils_names and tree.root and package.split(".")[0] == tree.package:
        if imported_names(source.tree).get(CACHED_HELPER):
            return f"{CACHED_HELPER}(maxsize=None)", ()
        module = _torch_utils_spelling(source.tree, package, tree.package)
        return f"{CACHED_HELPER}(maxsize=None)", (ImportRequest(module, CACHED_HELPER),)
    # A tree without the helper (diffusers before 2026-03): the standard library's cache.
    if any(
        isinstance(n, ast.Import) and any(a.name == "functools" and not a.asname for a in n.names)
        for n in source.tree.body
    ):
        return "functools.lru_cache(maxsize=None)", ()
    if imported_names(source.tree).get("lru_cache") == "functools":
        return "lru_cache(maxsize=None)", ()
    return "functools.lru_cache(maxsize=None)", (ImportRequest("", "functools"),)


def tuple_spelling(source: SourceFile) -> str:
    """`tuple`, or `Tuple` where the file still annotates with `typing.Tuple`."""
    if "from __future__ import annotations" in source.text or re.search(r"\btuple\[", source.text):
        return "tuple"
    return "Tuple" if imported_names(source.tree).get("Tuple") == "typing" else "tuple"


def imported_names(tree: ast.Module) -> dict[str, str]:
    """Names bound by top-level `from X import name` (without an alias) -> X (with its dots)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if alias.asname is None:
                    found[alias.name] = "." * node.level + (node.module or "")
    return found


def _torch_utils_spelling(tree: ast.Module, package: str, root: str) -> str:
    """How this file names `<root>.utils.torch_utils`: as an existing import spells it, else relatively."""
    wanted = f"{root}.utils.torch_utils"
    parts = package.split(".")
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            resolved = ".".join([*base, *(node.module.split(".") if node.module else [])])
            if resolved == wanted:
                return "." * node.level + (node.module or "")
    return "." * len(parts) + "utils.torch_utils"
