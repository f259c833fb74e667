import pytest
import torch

from bot.verify.census.emulated_device import install_emulated_device


@pytest.fixture(scope="session")
def emu() -> torch.device:
    return install_emulated_device()
