from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from shared_session import run_directory

from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.running.runner import worker_zygote
from bot.verify.running.zygote import Zygote


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


@pytest.fixture(scope="session")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    """One zygote for the tests that fork workers or the checkout's own tests through one (as a verify run has one),
    up (torch imported) before the first of them runs."""
    # Importing torch._dynamo sets TORCHINDUCTOR_CACHE_DIR (to its default) in this process for good, and any test may
    # import it: set before the zygote starts, it is in the zygote's environment as in every later request's (one that
    # differs is served by a fresh process instead).
    import torch._dynamo  # noqa: F401

    log = tmp_path_factory.mktemp("zygote") / "zygote.txt"
    with worker_zygote(None, log) as running:
        assert running.ready(), log.read_text()
        yield running
