"""pytest plugin loaded into a checkout's own test run: each test's outcome, written as soon as it is known.

Stdlib only, and imported by its own name from a folder that holds nothing else: it runs in
the checkout's environment, where this project is not installed. One JSON line per test
(`nodeid`, `outcome`, `message`) in `$CODEMOD_OWN_TESTS_OUT`, so a run stopped at its time
budget still tells what it finished; other lines record the tests collected and which diffusers
the tests imported.

Tests named in `$CODEMOD_OWN_TESTS_LIFT` (comma-separated test function names) lose their
"requires an accelerator" skips: diffusers marks its compile tests so, yet their bodies run on
the CPU too (Dynamo's guards and recompiles do not depend on the device), which is how a change
that turns such a test on is checked on a machine without one.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

_OUTCOMES: dict[str, dict[str, str]] = {}
_written: set[str] = set()
_diffusers_recorded = False


def _write(record: dict[str, Any]) -> None:
    with open(os.environ["CODEMOD_OWN_TESTS_OUT"], "a", encoding="utf-8") as out:
        out.write(json.dumps(record) + "\n")


def _message(report: Any) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # a skip: (path, line, reason)
        return str(longrepr[-1]).removeprefix("Skipped: ")
    crash = getattr(longrepr, "reprcrash", None)
    if crash is not None:
        return str(crash.message)
    lines = [line for line in str(longrepr or "").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _record_diffusers() -> None:
    global _diffusers_recorded
    module = sys.modules.get("diffusers")
    if module is not None and not _diffusers_recorded:
        _diffusers_recorded = True
        _write({"diffusers": getattr(module, "__file__", None)})


def _lifted() -> frozenset[str]:
    return frozenset(name for name in os.environ.get("CODEMOD_OWN_TESTS_LIFT", "").split(",") if name)


def _needs_accelerator(mark: Any) -> bool:
    return mark.name == "skipif" and "accelerator" in str(mark.kwargs.get("reason", "")).lower()


def _without_accelerator_skips(iter_markers: Any) -> Any:
    def iter_markers_kept(name: str | None = None) -> Any:
        return (mark for mark in iter_markers(name) if not _needs_accelerator(mark))

    return iter_markers_kept


def pytest_collection_modifyitems(items: list[Any]) -> None:
    lifted = _lifted()
    for item in items:
        if getattr(item, "originalname", item.name) in lifted:
            item.iter_markers = _without_accelerator_skips(item.iter_markers)


def pytest_collection_finish(session: Any) -> None:
    _write({"collected": [item.nodeid for item in session.items]})


def pytest_collectreport(report: Any) -> None:
    if report.failed:  # a module that cannot be imported: its tests never ran
        _record_diffusers()
        _write({"nodeid": report.nodeid, "outcome": "error", "message": _message(report)})


def pytest_runtest_logreport(report: Any) -> None:
    _record_diffusers()
    current = _OUTCOMES.setdefault(report.nodeid, {"outcome": "passed", "message": ""})
    if report.failed:
        outcome = "failed" if report.when == "call" else "error"
        if current["outcome"] == "passed":
            current.update(outcome=outcome, message=_message(report))
    elif report.skipped and current["outcome"] == "passed":
        current.update(outcome="skipped", message=_message(report))
    if report.when == "teardown" and report.nodeid not in _written:
        _written.add(report.nodeid)
        _write({"nodeid": report.nodeid, **current})
