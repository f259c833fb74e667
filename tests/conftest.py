import os
import signal

import pytest

# On 2 shared cores, two torch threads give 100x latency spikes.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from github_double import github_double_fixture  # noqa: E402,F401  (the `github_double` fixture)
from installed_trees import DiffusersTrees, build_diffusers_trees  # noqa: E402
from longest_first import longest_first  # noqa: E402
from main_like import main_like_fixture  # noqa: E402,F401  (the `main_like` fixture)
from shared_session import build_once  # noqa: E402


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    longest_first(items)


def pytest_addoption(parser):
    parser.addoption(
        "--regen-fixtures",
        action="store_true",
        help="Rewrite fixtures' expected outputs from the current rules (review the diff before committing).",
    )


@pytest.fixture(scope="session")
def diffusers_trees(tmp_path_factory: pytest.TempPathFactory) -> DiffusersTrees:
    """Built once per test run, shared by all xdist workers: tests read these trees and never change them."""
    return build_once(tmp_path_factory, "diffusers-trees", build_diffusers_trees)


@pytest.fixture(autouse=True)
def _sigint_handler_kept():
    """Every test leaves SIGINT's handler as it found it. One left changed (a run that ignores Ctrl-C afterwards, in
    the bot's process) failed a later test of the same worker instead, far from its cause."""
    before = signal.getsignal(signal.SIGINT)
    yield
    after = signal.getsignal(signal.SIGINT)
    if after is not before:
        signal.signal(signal.SIGINT, before)
        pytest.fail(f"the test left SIGINT's handler changed: {after!r}, was {before!r}")


@pytest.fixture
def python_sigint():
    """SIGINT as a fresh Python process takes it (KeyboardInterrupt, not blocked in this thread), for tests that send
    one to their own process or to a child, which inherits it: a full run's earlier modules (torch's among them) may
    leave this worker otherwise."""
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    blocked = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    yield
    signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
    signal.signal(signal.SIGINT, handler)
