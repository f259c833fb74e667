"""benchmarks/verify_timings.py: where a verify run spent its time, from its report and its work dir."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.verify_timings import timings


def test_the_run_each_workers_start_and_each_targets_phases_are_printed(tmp_path: Path) -> None:
    request = tmp_path / "runs" / "original" / "request-000"
    request.mkdir(parents=True)
    (request / "worker-timings.json").write_text(json.dumps({"startup": 3.5, "offline hub": 0.01, "device": 4.5}))
    phases = {"build": 5.8, "warm-up (line coverage)": 0.1, "census run": 0.05, "save": 0.0}
    (request / "000.json").write_text(json.dumps({"target": "QwenImage", "seconds": 5.95, "phases": phases}))
    report = {"seconds": 25.3, "phases": {"rewrite": 2.4, "targets": 22.9, "own tests": 0.0}}
    assert timings(report, tmp_path).splitlines() == [
        "  total 25.3 s: rewrite 2.40 s, targets 22.90 s, own tests 0.00 s",
        "  original worker start: startup 3.50 s, offline hub 0.01 s, device 4.50 s",
        "  original QwenImage: 5.95 s: build 5.80 s, warm-up (line coverage) 0.10 s, census run 0.05 s, save 0.00 s",
    ]
