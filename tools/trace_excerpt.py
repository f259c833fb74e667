"""A small excerpt of a torch.profiler Chrome trace: what the CUDA census reads about its copies and syncs.

    python -m tools.trace_excerpt TRACE.json[.gz] OUT.json

Keeps the ``sync_census`` window, every CUDA runtime memcpy and synchronize call inside it with
its GPU memcpy, and the ``cpu_op``, ``python_function`` and ``user_annotation`` spans open on the
calling thread when the call was made (the op, its callers, the Python frames); drops the rest
(kernels, other ops and frames). The census of the excerpt is the census of the whole trace.
Used to make test data from the traces of a real GPU run (tests/verify/data/).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any

_RUNTIME_CALLS = ("cudaMemcpy", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
_ENCLOSING = ("cpu_op", "python_function", "user_annotation")


def excerpt(trace: dict[str, Any]) -> dict[str, Any]:
    complete = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
    window = next(e for e in complete if e.get("cat") == "user_annotation" and e["name"] == "sync_census")
    start, end = window["ts"], window["ts"] + window["dur"]
    calls = [
        e
        for e in complete
        if e.get("cat") == "cuda_runtime" and e["name"].startswith(_RUNTIME_CALLS) and start <= e["ts"] <= end
    ]
    correlations = {call["args"]["correlation"] for call in calls}
    kept = [window, *calls]
    kept += [e for e in complete if e.get("cat") == "gpu_memcpy" and e["args"]["correlation"] in correlations]
    for event in complete:
        if event.get("cat") in _ENCLOSING and event is not window:
            inside = [c for c in calls if (c["pid"], c["tid"]) == (event["pid"], event["tid"])]
            if any(event["ts"] <= c["ts"] <= event["ts"] + event["dur"] for c in inside):
                kept.append(event)
    return {"schemaVersion": trace.get("schemaVersion"), "traceEvents": sorted(kept, key=lambda e: e["ts"])}


def main(argv: list[str]) -> int:
    source, out = Path(argv[0]), Path(argv[1])
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt") as handle:
        trace = json.load(handle)
    out.write_text(json.dumps(excerpt(trace), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
