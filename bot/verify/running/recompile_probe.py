"""How many compilations a compile test needs: run its body at `recompile_limit` 1, 2, ... and stop at the first pass.

Run as a script in the checkout's environment, from a checkout's root (`src/` and `tests/` there),
with one pytest node id: `python recompile_probe.py tests/...::TestXCompile::test_torch_compile_repeated_blocks 8`.
Stdlib and torch only (this project is not installed there). The body runs with Dynamo's eager
backend: guards, and so recompilations, are Dynamo's and do not depend on the backend, and eager
skips Inductor's code generation, which on a CPU takes minutes. The limit found is then checked
with the test itself, as the checkout runs it. Prints one JSON line: `limit` (None when no limit up
to the bound passes), `blocks` (the model's `_repeated_blocks`), `error` (why it could not run).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import json
import sys
from typing import Any


def probe(node_id: str, most: int) -> dict[str, Any]:
    import torch

    path, class_name, test_name = node_id.split("::")
    test_class = getattr(importlib.import_module(path.removesuffix(".py").replace("/", ".")), class_name)
    test = getattr(test_class, test_name)
    if "recompile_limit" not in inspect.signature(test).parameters:
        return {"limit": None, "error": f"{class_name}.{test_name} takes no recompile_limit"}
    instance = test_class()
    blocks = list(getattr(instance.model_class, "_repeated_blocks", None) or [])
    torch.compile = functools.partial(torch.compile, backend="eager")
    for limit in range(1, most + 1):
        torch.compiler.reset()
        if hasattr(instance, "setup_method"):
            instance.setup_method()
        try:
            getattr(instance, test_name)(recompile_limit=limit)
        except torch._dynamo.exc.FailOnRecompileLimitHit:
            continue
        except Exception as error:  # the body fails for another reason: no limit makes it pass
            return {"limit": None, "blocks": blocks, "error": f"{type(error).__name__}: {error}"}
        return {"limit": limit, "blocks": blocks}
    return {"limit": None, "blocks": blocks, "error": f"still recompiling at recompile_limit={most}"}


if __name__ == "__main__":
    print(json.dumps(probe(sys.argv[1], int(sys.argv[2]))))
