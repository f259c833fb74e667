"""The pipeline file the command-line tests run on: the input of DIF004's `adapter_denoising_loop` case."""

from __future__ import annotations

from pathlib import Path

import pytest

from tools.fixture_cases import find_case

CASE = find_case("DIF004/adapter_denoising_loop")
PIPELINE = CASE.input_text()


@pytest.fixture(name="pipeline")
def pipeline_fixture(tmp_path: Path) -> Path:
    path = tmp_path / "pipeline.py"
    path.write_text(PIPELINE)
    return path
