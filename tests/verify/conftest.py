from pathlib import Path

import pytest
import torch
from shared_session import run_directory

from bot.verify.census.emulated_device import install_emulated_device


@pytest.fixture(scope="session")
def emu() -> torch.device:
    return install_emulated_device()


@pytest.fixture(scope="session")
def scan_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One scan cache for every `verify()` of a copy of the installed diffusers, shared by all xdist workers.

    As the bot shares its cache between the groups it verifies: copies of a tree share their scans
    (codemods/engine/scan_keys.py), so only the first verification analyses the whole tree; the cache
    writes its files whole (a rename), so workers filling it at once lose entries, never read half of one.
    """
    return run_directory(tmp_path_factory) / "verify-scan-cache"
