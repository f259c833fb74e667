"""Pipeline loops that are no denoising loop but run a denoiser on every pass.

GLM-Image fills its KV cache before denoising: `for condition_image, ... in zip(...)` calls
`self.transformer(...)` once per condition image, with `target_size=torch.tensor([condition_image.shape[-2:]],
device=device)` built from host values and copied to the device on every pass. Such a loop is cold for
`hot_paths` (it steps no scheduler and walks no timesteps); DIF006 reports host data built in its own body
(not in a loop nested in it) when the body calls a component that the pipeline's denoising loop calls too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from codemods.analysis.models.denoisers import PIPELINE_TEXT, called_per_step, component_named
from codemods.analysis.models.hot_paths import STEP_LOOPS, hot_paths
from codemods.analysis.values.types import registered_components
from codemods.source import SourceFile, dotted_name
from codemods.triggers import Trigger

_FROM_DATA = {"tensor", "as_tensor"}
_CANDIDATE = Trigger(r"torch\.(?:tensor|as_tensor)\(\s*[\[(]", "torch.tensor(", "torch.as_tensor(")
_SCOPES = (*STEP_LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class HostDataPerPass:
    """`torch.tensor(<host values>, device=...)` in the body of a loop that calls `component` each pass."""

    call: ast.Call
    loop: ast.For | ast.AsyncFor | ast.While
    component: str
    changing: str | None  # a name the call reads that the loop rebinds (its target or an assignment in it)


def host_data_per_denoiser_pass(source: SourceFile) -> Iterator[HostDataPerPass]:
    """From the candidate lines up (most pipelines have none): the loops around each call, then their classes."""
    if PIPELINE_TEXT not in source.text:
        return
    candidates = [
        (node, ancestors)
        for node, ancestors in source.walk_lines(source.lines_matching(_CANDIDATE), kinds=ast.Call)
        if _host_data_on_device(node)
    ]
    if not candidates:
        return
    hot = hot_paths(source)
    denoisers: dict[int, tuple[set[str], set[str]]] = {}
    for node, ancestors in candidates:
        cls = next((a for a in ancestors if isinstance(a, ast.ClassDef)), None)
        loops = [a for a in ancestors if isinstance(a, STEP_LOOPS)]
        if cls is None or not loops or any(id(loop) in hot.loops for loop in loops):
            continue  # a denoising loop's own sites (and its cold branches) are DIF006's main path
        if hot.hot_scope(ancestors, node) is not None or any(_type_test(a) for a in ancestors):
            continue
        if id(cls) not in denoisers:
            components = set(registered_components(cls))
            denoisers[id(cls)] = components, set(called_per_step(source, hot, cls, components) if components else ())
        components, per_step = denoisers[id(cls)]
        loop = loops[-1]  # the innermost: the call runs once per its pass
        nodes = list(_own_nodes(loop.body))
        if not any(n is node for n in nodes):
            continue
        called = [c for n in nodes if isinstance(n, ast.Call) for c in component_named(n.func, components) or ()]
        runs = [c for c in called if c in per_step]
        if runs:
            rebound = _rebound(loop, nodes)
            read = next((n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in rebound), None)
            yield HostDataPerPass(node, loop, runs[0], read)  # type: ignore[arg-type]


def _type_test(node: ast.AST) -> bool:
    """`if not torch.is_tensor(t):` and the like: a fallback for other inputs, not every pass."""
    if not isinstance(node, ast.If):
        return False
    names = {(dotted_name(n.func) or "").rsplit(".", 1)[-1] for n in ast.walk(node.test) if isinstance(n, ast.Call)}
    return bool(names & {"is_tensor", "isinstance"})


def _own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """The loop body's nodes, not those of loops or functions nested in it (they have their own frequency)."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _rebound(loop: ast.AST, nodes: list[ast.AST]) -> set[str]:
    targets = [loop.target] if isinstance(loop, ast.For | ast.AsyncFor) else []
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names | {n.id for n in nodes if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}


def _host_data_on_device(node: ast.AST) -> bool:
    """`torch.tensor([<values>], device=...)` with values given and a device that is not the CPU."""
    if not isinstance(node, ast.Call) or not node.args:
        return False
    if not (isinstance(node.args[0], ast.List | ast.Tuple) and node.args[0].elts):
        return False  # Python values, not a tensor already
    name = dotted_name(node.func) or ""
    if not name.startswith("torch.") or name.rsplit(".", 1)[-1] not in _FROM_DATA:
        return False
    device = next((k.value for k in node.keywords if k.arg == "device"), None)
    return device is not None and not (isinstance(device, ast.Constant) and device.value == "cpu")
