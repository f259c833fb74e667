"""fixtures/ holds only our code: no file there shares a run of lines with the diffusers source.

Fixture cases take diffusers' code at test time (tools/fixture_cases); what is committed is ours:
specs, small patches, expected changes, hand-written snippets. A copied excerpt would show up as a
run of consecutive non-trivial lines that also stand consecutively in a diffusers module. The
check compares every file under fixtures/ (each side of each hunk, for a diff) with the whole
installed diffusers and with the modules the cases take from other releases.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

from tools.fixture_cases import FIXTURES, all_cases
from tools.fixture_cases.sources import installed_release, module_text

RUN = 8  # consecutive non-trivial lines; a snippet of our own can share a few idiomatic lines, not eight
PUNCTUATION = set("()[]{},:;.'\"")


def _significant(numbered: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line number, stripped text) of the lines that say something: not blank, brackets or `else:`."""
    kept = []
    for number, line in numbered:
        text = line.strip()
        if len(text) >= 6 and not set(text) <= PUNCTUATION:
            kept.append((number, text))
    return kept


def _runs(significant: list[tuple[int, str]]) -> list[tuple[int, int]]:
    """(first line number, hash) of every window of RUN significant lines."""
    texts = [text for _, text in significant]
    return [(significant[i][0], hash(tuple(texts[i : i + RUN]))) for i in range(len(texts) - RUN + 1)]


def _sequences(path: Path, text: str) -> list[list[tuple[int, str]]]:
    """The line sequences a copy could hide in: the file, or each side of each hunk of a diff."""
    numbered = list(enumerate(text.splitlines(), 1))
    if path.suffix not in (".diff", ".patch"):
        return [numbered]
    sides: list[list[tuple[int, str]]] = []
    for number, line in numbered:
        if line.startswith(("@@", "--- ", "+++ ")):
            sides += [[], []]  # the hunk's old side, its new side
        elif sides and line[:1] in (" ", "-", "+"):
            for side in (sides[-2],) * (line[0] != "+") + (sides[-1],) * (line[0] != "-"):
                side.append((number, line[1:]))
    return sides


def copied_runs(path: Path, text: str, known: set[int]) -> list[int]:
    """First line numbers of runs in `text` found in `known` (window hashes of diffusers source)."""
    return [
        number for sequence in _sequences(path, text) for number, key in _runs(_significant(sequence)) if key in known
    ]


def _hashes(text: str) -> set[int]:
    return {key for _, key in _runs(_significant(list(enumerate(text.splitlines(), 1))))}


@functools.cache
def _diffusers_runs() -> frozenset[int]:
    installed = installed_release()
    assert installed, "diffusers is not installed (make install)"
    version, package = installed
    known: set[int] = set()
    for module in package.rglob("*.py"):
        known |= _hashes(module.read_text(encoding="utf-8", errors="replace"))
    for case in all_cases():
        for spec in case.file_specs() if case.taken_from_diffusers else ():
            if spec.module and spec.release != version:
                known |= _hashes(module_text(spec.release, spec.module))
    return frozenset(known)


def _committed_fixture_files() -> list[Path]:
    root = FIXTURES.parent
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "fixtures"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if listed.returncode != 0:  # not a git checkout (an unpacked archive): every file there
        return sorted(p for p in FIXTURES.rglob("*") if p.is_file())
    return sorted(root / line for line in listed.stdout.splitlines() if (root / line).is_file())


def test_no_fixture_file_shares_a_run_of_lines_with_diffusers() -> None:
    copies = {}
    for path in _committed_fixture_files():
        found = copied_runs(path, path.read_text(encoding="utf-8", errors="replace"), _diffusers_runs())
        if found:
            copies[str(path.relative_to(FIXTURES))] = found[0]
    assert not copies, f"{RUN}+ consecutive lines copied from diffusers (file: first line): {copies}"


def _excerpt(lines: int) -> str:
    """`lines` significant lines in a row from a real module."""
    module = module_text(installed_release()[0], "schedulers/scheduling_ddim.py").splitlines()
    significant = _significant(list(enumerate(module, 1)))
    first, last = significant[100][0], significant[100 + lines - 1][0]
    return "\n".join(module[first - 1 : last]) + "\n"


def test_the_check_finds_an_excerpt_pasted_into_a_snippet() -> None:
    snippet = "import torch\n\n\n" + _excerpt(RUN)
    assert copied_runs(Path("case.py"), snippet, _diffusers_runs()) == [4]


def test_the_check_finds_an_excerpt_added_by_a_patch() -> None:
    added = "".join(f"+{line}\n" for line in _excerpt(RUN).splitlines())
    patch = f"--- a/case.py\n+++ b/case.py\n@@ -0,0 +1,{len(added.splitlines())} @@\n{added}"
    assert copied_runs(Path("case.patch"), patch, _diffusers_runs()) == [4]


def test_a_shorter_excerpt_passes() -> None:
    assert copied_runs(Path("case.py"), _excerpt(RUN - 1), _diffusers_runs()) == []
