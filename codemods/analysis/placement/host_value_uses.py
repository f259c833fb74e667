"""What the code does with a value it reads off the device: whether a remedy that keeps it there can fit.

`torch.where(mask, x, 0)` keeps a masked read on the device only when what follows reduces it (`x[mask].sum()`):
a reorder (`torch.cat([x[mask], x[~mask]])`) or a gather needs the selected elements themselves, whose number
is a size. "Keep it a tensor" fits a value used in arithmetic, not one used as a size, a shape or an index
(`frames, height, width = grid[0].tolist()`, then `x.view(frames, height, width)`): those must be Python numbers.
Where neither fits, the finding says what the read costs and why no local rewrite removes it (`host_read_message`).
"""

from __future__ import annotations

import ast

from codemods.analysis.models.hot_paths import STEP_LOOPS
from codemods.analysis.placement.host_reads import HostRead
from codemods.node_index import nodes_within
from codemods.source import SourceFile, dotted_name, shortened, walk

_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "norm", "any", "all", "prod", "std", "var", "count_nonzero"}
_SIZE_TAKERS = {
    "range", "arange", "linspace", "zeros", "ones", "empty", "full", "randn", "rand", "randint", "view", "reshape",
    "expand", "repeat", "split", "narrow", "unflatten", "new_zeros", "new_ones", "new_empty", "new_full",
    "interpolate", "pad", "chunk", "tensor_split", "unsqueeze", "squeeze", "flatten", "permute", "transpose",
}  # fmt: skip


# What each kind of read costs, and the known way around it.
_READ_COSTS = {
    "item": ("`{expr}` copies a device value to the host", "keep it a tensor, or read it {once}"),
    "tolist": ("`{expr}` copies a device tensor to the host", "keep it on the device, or read it {once}"),
    "numpy": ("`{expr}` copies a device tensor to the host", "keep it on the device, or convert it {once}"),
    "cpu": ("`{expr}` copies a device tensor to the host", "keep it on the device, or copy it {once}"),
    "int": ("`{expr}` reads a device tensor on the host", "keep it a tensor, or read a CPU copy made {once}"),
    "float": ("`{expr}` reads a device tensor on the host", "keep it a tensor, or read a CPU copy made {once}"),
    "bool": ("`{expr}` reads a device tensor on the host", "use `torch.where`, or decide {once}"),
    "compare": (
        "`{expr}` compares a device tensor in Python",
        "compare a CPU copy made {once}{example}, or use `torch.where`",
    ),
    "truth": ("`{expr}` tests a device tensor's truth in Python", "use `torch.where`, or decide {once}"),
    "minmax": (
        "`{expr}` compares a device tensor in Python (builtin min/max)",
        "use `torch.minimum`/`torch.maximum` or `clamp`",
    ),
    "nonzero": ("`{expr}` has a data-dependent size", "use `torch.where(mask, a, b)` or keep the mask"),
    "unique": ("`{expr}` has a data-dependent size", "compute it {once}"),
    "mask": ("`{expr}` selects a data-dependent number of elements", "use `torch.where(mask, x, 0)` or keep the mask"),
    "bound": (
        "`{expr}` slices at a device value, which Python reads",
        "a slice's bound is a size, a Python number, so no local rewrite removes the wait: one sync per slice, unless "
        "the lengths come from the host (or a kernel takes them as a tensor, as varlen attention takes `cu_seqlens`)",
    ),
}

# Tensor methods whose result's size, or values, only the data decides.
_COUNTS = {"bincount", "histc", "unique", "unique_consecutive", "nonzero", "count_nonzero"}
# Reads whose value may become a size (and then cannot "stay a tensor").
_SIZE_READS = {"item", "tolist", "int", "cpu", "numpy"}


def no_local_remedy(kind: str, chain: list[ast.AST]) -> str | None:
    """Why no local rewrite removes the read at the end of `chain` (a `HostRead` of `kind`); None if one may."""
    function = next((n for n in reversed(chain) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)), None)
    if kind == "mask" and not reduced(chain):
        return (
            "the code needs the selected elements themselves (a reorder or a gather: their number is a size), so "
            "`torch.where` does not fit and no local rewrite removes the wait: one sync per read"
        )
    if kind == "nonzero" and function is not None and packs_masked_rows(function, chain):
        return (
            "the indices pack the rows the mask keeps (their number is the packed length a varlen kernel takes), so "
            "`torch.where` does not fit "
            "and no local rewrite removes the wait: one sync per call"
        )
    size = used_as_size(function, chain) if function is not None and kind in _SIZE_READS else None
    if size is not None:
        counted = next((f"`{c}`" for c in _data_counts(chain[-1])), None)
        way_out = (
            f"; the sizes are counts of the device's data ({counted}), which no caller knows in advance"
            if counted
            else ", unless the caller passes the size from the host"
        )
        return (
            f"the value is used as a size (`{size}`), which must be a Python number, so it cannot stay a tensor and "
            f"no local rewrite removes the wait: one sync per read{way_out}"
        )
    return None


def _data_counts(read: ast.AST) -> list[str]:
    """The calls under `read` that count the values of a tensor (`bincount`, `histc`): sizes only the data decides."""
    return [
        node.func.attr
        for node in walk(read)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _COUNTS
    ]


def packs_masked_rows(function: ast.AST, chain: list[ast.AST]) -> bool:
    """Whether the read at the end of `chain` takes the positions a mask keeps (`attn_mask.flatten().nonzero()`) and
    binds names that then index a tensor (`key.reshape(-1, ...)[indices_k]`): the varlen kernels' packing."""
    statement = next((n for n in reversed(chain) if isinstance(n, ast.Assign)), None)
    read = chain[-1]
    operand = read.func.value if isinstance(read, ast.Call) and isinstance(read.func, ast.Attribute) else None
    if statement is None or operand is None or "mask" not in ast.unparse(operand).lower():
        return False
    names = {name for t in statement.targets for name in _bound_names(t)}
    return any(
        isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Name) and node.slice.id in names
        for node in walk(function)
    )


def _stored_per_step(scope: ast.AST, chain: list[ast.AST]) -> bool:
    """`buffer[i] = x.cpu()` in a denoising loop: the read fills a host buffer, one slot a step."""
    statement = next((n for n in reversed(chain) if isinstance(n, ast.Assign)), None)
    return (
        isinstance(scope, STEP_LOOPS)
        and statement is not None
        and statement.value is chain[-1]
        and all(isinstance(t, ast.Subscript) for t in statement.targets)
    )


def path_to(root: ast.AST, target: ast.AST) -> list[ast.AST]:
    """The nodes from `root` down to `target`, both included ([] when `target` is not under `root`)."""
    if root is target:
        return [root]
    for child in ast.iter_child_nodes(root):
        below = path_to(child, target)
        if below:
            return [root, *below]
    return []


def reduced(chain: list[ast.AST]) -> bool:
    """Whether the last node of `chain` (its ancestors first) is reduced right away: `x[m].sum()`, `torch.sum(x[m])`."""
    read, parent = chain[-1], chain[-2] if len(chain) > 1 else None
    if isinstance(parent, ast.Attribute) and parent.attr in _REDUCTIONS:
        return True
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is read:
        return (dotted_name(parent.func) or "").rsplit(".", 1)[-1] in _REDUCTIONS
    return False


def used_as_size(function: ast.AST, chain: list[ast.AST]) -> str | None:
    """The size, shape or index the value read at the end of `chain` becomes, directly or through the names
    its statement binds (and names computed from those); None if it is used only as a number."""
    read = chain[-1]
    for position, node in enumerate(chain[:-1]):
        if _size_position(node, chain[position + 1]):
            return ast.unparse(node)[:60]
    statement = next((n for n in reversed(chain) if isinstance(n, ast.Assign)), None)
    if statement is None or not any(n is read for n in walk(statement.value)):
        return None
    derived = {name for t in statement.targets for name in _bound_names(t)}
    if not derived:
        return None  # the read is stored into no name (`self.n = x.item()`, `out[i] = ...`): none can become a size
    assignments = [
        (_names_in(n.value), {name for t in n.targets for name in _bound_names(t)})
        for n in nodes_within(function, ast.Assign)
        if n is not statement
    ]
    grew = True
    while grew:  # names computed from the read values (`hw = height * width`) are sizes too
        grew = False
        for read_names, targets in assignments:
            if not read_names.isdisjoint(derived):
                grew |= not targets <= derived
                derived |= targets
    # The sizes that take a derived name, from the index; the walk (whose order says which one is named) only
    # where there are several.
    sizes = [
        node
        for node in nodes_within(function, ast.Call | ast.Slice)
        if _takes_sizes(node)
        and any(
            c is not getattr(node, "func", None) and not _names_in(c).isdisjoint(derived)
            for c in ast.iter_child_nodes(node)
        )
    ]
    if len(sizes) > 1:
        ids = {id(node) for node in sizes}
        sizes = [next(node for node in walk(function) if id(node) in ids)]
    return ast.unparse(sizes[0])[:60] if sizes else None


def _names_in(node: ast.AST) -> set[str]:
    return {name.id for name in nodes_within(node, ast.Name)}


def _bound_names(target: ast.expr) -> list[str]:
    """The names an assignment target binds: `a`, `a, (b, *c)`; not those inside `x[i] =` or `self.y =`."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    if isinstance(target, ast.Tuple | ast.List):
        return [name for element in target.elts for name in _bound_names(element)]
    return []


def _size_position(node: ast.AST, child: ast.AST) -> bool:
    """Whether `child` is where `node` takes a size or an index: an argument of `view`/`zeros`/`range`..., or a
    slice's bound (a tensor index is no size: `sigmas[i]` gathers on the device)."""
    return _takes_sizes(node) and child is not getattr(node, "func", None)


def _takes_sizes(node: ast.AST) -> bool:
    """Whether `node` takes sizes or indices (`_size_position`'s children of it): a call of `view`/`zeros`/`range`...,
    or a slice."""
    if isinstance(node, ast.Call):
        return (dotted_name(node.func) or getattr(node.func, "attr", "")).rsplit(".", 1)[-1] in _SIZE_TAKERS
    return isinstance(node, ast.Slice)


def host_read_message(source: SourceFile, read: HostRead, scope: ast.AST, chain: list[ast.AST]) -> str:
    """What `read` costs in the hot `scope` (a denoising loop or a function), and the remedy that fits its use."""
    what, remedy = _READ_COSTS[read.kind]
    if read.kind == "cpu" and _stored_per_step(scope, chain):
        remedy = "fill a buffer kept on the device and copy it to the host once after the loop"
    remedy = no_local_remedy(read.kind, chain) or remedy
    expression = shortened(source.segment(read.node) if read.kind != "truth" else source.segment(read.operand))
    operand = shortened(source.segment(read.operand))
    if isinstance(scope, STEP_LOOPS):
        when, once = "every denoising step", "once before the loop"
    else:
        when = f"every call of `{scope.name}`"  # type: ignore[attr-defined]
        once = "once, outside the per-call code"
    subject = what.format(expr=expression)
    if read.kind in ("compare", "minmax", "mask", "truth", "bound") and operand != expression:
        subject += f" (`{operand}` is on the device)"
    schedule_value = operand == "t" or "timestep" in operand or "sigma" in operand
    example = " (e.g. of the timesteps)" if schedule_value else ""
    return f"{subject}: the host waits for the device {when}; {remedy.format(once=once, example=example)}"
