"""Fixture cases that hold only our code: specs of what to take from a diffusers release, our patches,
and our expected changes. Materialised at test time; `python -m tools.fixture_cases --help`."""

from tools.fixture_cases.cases import FIXTURES, Case, CaseError, all_cases, find_case, write_files
from tools.fixture_cases.unified_diff import PatchError, apply_diff, make_diff

__all__ = [
    "FIXTURES",
    "Case",
    "CaseError",
    "PatchError",
    "all_cases",
    "apply_diff",
    "find_case",
    "make_diff",
    "write_files",
]
