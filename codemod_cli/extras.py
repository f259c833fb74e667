"""What `codemod verify` and `codemod bot` need beyond the static engine, and the one line that says so.

`make demo` and the pre-commit hook install the engine alone; the verifier and the bot come with the
extras of pyproject.toml. A command that needs an extra checks for its modules before importing
anything of it, so a missing one is an error a user can act on (exit 2), not a traceback.
"""

from __future__ import annotations

from importlib.util import find_spec

from codemods.errors import UsageError

# Each extra of pyproject.toml: its distributions and the module each provides (tests/test_extras.py
# checks the names against pyproject.toml).
EXTRA_MODULES: dict[str, dict[str, str]] = {
    "verify": {
        "torch": "torch",
        "diffusers": "diffusers",
        "transformers": "transformers",
        "accelerate": "accelerate",
        "packaging": "packaging",
    },
    "bot": {"PyGithub": "github"},
}


def missing_distributions(*extras: str) -> list[str]:
    """The distributions of these extras whose module this interpreter cannot find (nothing is imported)."""
    return [
        distribution
        for extra in extras
        for distribution, module in EXTRA_MODULES[extra].items()
        if find_spec(module) is None
    ]


def require_extras(command: str, *extras: str) -> None:
    """Raise the one-line UsageError that names what `command` lacks and how to install it."""
    missing = missing_distributions(*extras)
    if not missing:
        return
    from codemods.output.rule_docs import pip_requirement  # the error path only: it loads the rule registry

    raise UsageError(
        f"`codemod {command}` needs {', '.join(missing)}, not installed here: run `make install` in the tool's "
        f"checkout, or `pip install '{pip_requirement(','.join(extras))}'` after torch's CPU build (README, Quick start)"
    )
