from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from installed_trees import DiffusersTrees

from bot.verify.census.emulated_device import install_emulated_device
from bot.verify.running.runner import worker_zygote
from bot.verify.running.zygote import Zygote


@pytest.fixture(scope="session")
def emu() -> torch.device:
    return install_emulated_device()


@pytest.fixture(scope="session")
def scan_cache(diffusers_trees: DiffusersTrees) -> Path:
    """One scan cache for every `verify()` of a copy of the installed diffusers, shared by all xdist workers.

    As the bot shares its cache between the groups it verifies: copies of a tree share their scans
    (codemods/engine/scan_keys.py). It is the cache of the whole-tree run that rewrote `diffusers_trees`,
    with the opt-ins a verification takes: that run, which the suite makes anyway, is the only one that
    analyses the whole tree. The cache writes its files whole (a rename), so workers adding to it at once
    lose entries, never read half of one.
    """
    return diffusers_trees.cache


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
