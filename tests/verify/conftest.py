import os

# torch reads this once, at import; the shared machines have two cores.
os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

from bot.verify.emulated_device import install_emulated_device  # noqa: E402


@pytest.fixture(scope="session")
def emu() -> torch.device:
    return install_emulated_device()
