"""CUDA census sites name the statement that copied or waited, not the line its function starts on.

``data/qwenimage_h200_copies.trace.json`` is an excerpt (``python -m tools.trace_excerpt``) of
``../shared/gpu-runs/2026-12-04-h200/traces/qwenimage-before-13406-original-000.trace.json.gz``: a
real torch 2.11 trace of QwenImageTransformer2DModel (diffusers 0.42.1 before #13406) on an H200,
made before sites were marked. Its two host-to-device copies are
``torch.as_tensor(...)`` at ``transformer_qwenimage.py:169`` and ``.to(device)`` at ``:287`` (the
lines the emulated census gives); the trace's Python frames carry only the ``def`` lines 144 and 236.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile

from bot.verify.census.cuda import census_from_chrome_trace
from bot.verify.census.result import SiteCounts
from bot.verify.census.statement_sites import SITE_MARK, StatementSites

EXCERPT = json.loads((Path(__file__).parent / "data" / "qwenimage_h200_copies.trace.json").read_text())
ROOTS = ["/site-packages/diffusers"]
QWEN = "models/transformers/transformer_qwenimage.py"


def _marked(trace: dict[str, Any], lines: dict[str, int]) -> dict[str, Any]:
    """The trace with a site mark around each `aten::to` that `lines` names by its enclosing frame, as
    `StatementSites` records it: a `user_annotation` on the op's thread that opens just before the op."""
    events = list(trace["traceEvents"])
    frames = [e for e in events if e["cat"] == "python_function"]
    for op in [e for e in events if e["cat"] == "cpu_op" and e["name"] == "aten::to"]:
        frame = min(
            (f for f in frames if f["name"] in lines and f["ts"] <= op["ts"] <= f["ts"] + f["dur"]),
            key=lambda f: f["dur"],
        )
        mark = {**op, "cat": "user_annotation", "name": f"{SITE_MARK}{QWEN}:{lines[frame['name']]}"}
        events.append({**mark, "ts": op["ts"] - 1.0, "dur": op["dur"] + 2.0, "args": {}})
    return {**trace, "traceEvents": events}


def test_a_trace_without_marks_can_only_name_the_def_lines() -> None:
    census = census_from_chrome_trace(EXCERPT, ROOTS)
    assert census.counts == {"h2d": 2, "d2h": 0, "sync": 0}
    assert census.sites == [SiteCounts(f"{QWEN}:144", {"h2d": 1}), SiteCounts(f"{QWEN}:236", {"h2d": 1})]


def test_site_marks_name_the_statement_of_each_copy() -> None:
    frames = {
        f"diffusers/{QWEN}(144): compute_text_seq_len_from_mask": 169,
        f"diffusers/{QWEN}(236): forward": 287,
    }
    census = census_from_chrome_trace(_marked(EXCERPT, frames), ROOTS)
    assert census.counts == {"h2d": 2, "d2h": 0, "sync": 0}
    assert census.sites == [SiteCounts(f"{QWEN}:169", {"h2d": 1}), SiteCounts(f"{QWEN}:287", {"h2d": 1})]


SOURCE = """\
import torch


def pick(x):
    total = x.sum()
    if total > 0:
        return x[x > 0]
    return x
"""


def test_statement_sites_mark_each_torch_call_with_the_line_that_made_it(tmp_path: Path) -> None:
    root = tmp_path / "pkg"
    root.mkdir()
    (root / "picker.py").write_text(SOURCE)
    spec = importlib.util.spec_from_file_location("picker", root / "picker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with profile(activities=[ProfilerActivity.CPU]) as prof, StatementSites([root]):
        module.pick(torch.ones(3))
    trace_file = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace_file))
    events = [e for e in json.loads(trace_file.read_text())["traceEvents"] if e.get("ph") == "X"]
    marks = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith(SITE_MARK)]

    def site_of(op_name: str) -> str:
        op = next(e for e in events if e.get("cat") == "cpu_op" and e["name"] == op_name)
        around = [m for m in marks if m["ts"] <= op["ts"] <= m["ts"] + m["dur"]]
        return max(around, key=lambda m: m["ts"])["name"].removeprefix(SITE_MARK)

    assert site_of("aten::sum") == "picker.py:5"
    assert site_of("aten::_local_scalar_dense") == "picker.py:6"  # `if total > 0:` reads a value
    assert site_of("aten::index") == "picker.py:7"

