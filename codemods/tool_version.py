"""Which tool this is: its version and the commit it was built from, and the git ref that names it.

A ref that pins the tool must exist in its repository. A release tag is one only where a release
process pushed it, so the pins name commits: `codemod --version` says which commit runs, and
`make pin` (tools/pin.py) writes a commit into the docs, the workflow and `PINNED_COMMIT` below.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from codemods import __version__

DISTRIBUTION = "diffusers-codemod"
# The commit the docs and the workflow pin, rewritten by `make pin`: a commit of the tool's repository
# (an ancestor of the commit that carries it; a file cannot hold its own commit's SHA).
PINNED_COMMIT = "4148ba379dd28c1c2799cd829414b82f9854e53a"
# The directory above the `codemods` package: a checkout's root when the tool runs from one.
SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str | None:
    import subprocess  # here, not above: every `codemod run` imports this module (through report.py)

    try:
        done = subprocess.run(["git", "-C", str(SOURCE_ROOT), *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):  # no git on this machine
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def checkout_commit() -> str | None:
    """HEAD of the checkout the package is imported from; None unless its root is a git work tree's top.

    The top-level check matters: an installed copy under a project's `.venv` is inside that project's
    work tree, whose HEAD says nothing about the installed code.
    """
    top = _git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != SOURCE_ROOT:
        return None
    return _git("rev-parse", "--verify", "HEAD^{commit}")


def installed_commit() -> str | None:
    """The commit pip installed from a git URL: pip records it in the distribution's direct_url.json (PEP 610)."""
    import json
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        recorded = distribution(DISTRIBUTION).read_text("direct_url.json")
    except PackageNotFoundError:
        return None
    if not recorded:
        return None
    return json.loads(recorded).get("vcs_info", {}).get("commit_id")


@cache
def tool_commit() -> str | None:
    """The commit this tool was built from: a checkout's HEAD, else what pip recorded, else None (a wheel, an sdist)."""
    return checkout_commit() or installed_commit()


def tool_ref() -> str:
    """The ref an install line names for this tool: the commit that runs, else the pinned one."""
    return tool_commit() or PINNED_COMMIT


def version_line() -> str:
    """What `codemod --version` prints: the version and the commit, and whether a checkout has local changes."""
    commit = tool_commit()
    if commit is None:
        return f"codemod {__version__} (commit unknown: neither a git checkout nor installed from a git URL)"
    modified = checkout_commit() is not None and _git("status", "--porcelain", "--untracked-files=no") not in ("", None)
    return f"codemod {__version__} (commit {commit}{', with uncommitted changes' if modified else ''})"
