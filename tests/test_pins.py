"""Every pin of the tool names a commit this repository has: `make pin` writes them, `--version` says which runs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from codemods.output.rule_docs import TOOL_URL
from codemods.tool_version import PINNED_COMMIT
from tools.pin import PIN_PATTERNS, pins, resolve, write_pins

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = ("README.md", "docs/bot.md", "docs/code-scanning.md", "docs/examples/codemod-code-scanning.yml",
             ".github/workflows/bot.yml")  # fmt: skip


def git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)


def test_every_pin_is_the_pinned_commit() -> None:
    found = pins()

    assert {pin.path for pin in found} == set(PIN_PATTERNS)
    assert [pin for pin in found if pin.ref != PINNED_COMMIT] == []


def test_the_pinned_commit_is_in_this_repository_and_an_ancestor_of_head() -> None:
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.fail("a shallow clone lacks the pinned commit: clone with the full history (fetch-depth: 0)")

    assert resolve(PINNED_COMMIT) == PINNED_COMMIT
    assert git("merge-base", "--is-ancestor", PINNED_COMMIT, "HEAD").returncode == 0


def test_no_document_names_the_tool_at_a_ref_that_is_not_a_pin() -> None:
    # Any ref after the tool's URL, a `rev:` or a CODEMOD_REF default that the pin patterns would miss.
    named = re.compile(rf"{re.escape(TOOL_URL)}(?:@|/blob/)([\w.-]+)|^\s+rev: (\S+)$|CODEMOD_REF \|\| '([^']*)'", re.M)

    refs = {
        (path, next(group for group in match.groups() if group))
        for path in DOCUMENTS
        for match in named.finditer((ROOT / path).read_text())
    }

    assert refs and {ref for _, ref in refs} == {PINNED_COMMIT}


def test_make_pin_rewrites_every_pin_to_the_commit(tmp_path: Path) -> None:
    for path in PIN_PATTERNS:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / path, tmp_path / path)
    commit = "0123456789abcdef0123456789abcdef01234567"

    written = write_pins(tmp_path, commit)

    assert written == len(pins()) >= len(PIN_PATTERNS)
    assert {pin.ref for pin in pins(tmp_path)} == {commit}


def test_a_ref_that_names_no_commit_is_refused() -> None:
    with pytest.raises(ValueError, match="names no commit"):
        resolve("v0.0.0-never-tagged")
