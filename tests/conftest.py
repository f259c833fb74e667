import os

# On 2 shared cores, two torch threads give 100x latency spikes.
os.environ.setdefault("OMP_NUM_THREADS", "1")

from github_double import github_double_fixture  # noqa: E402,F401  (the `github_double` fixture)


def pytest_addoption(parser):
    parser.addoption(
        "--regen-fixtures",
        action="store_true",
        help="Rewrite fixtures' expected outputs from the current rules (review the diff before committing).",
    )
