"""`make pin [COMMIT=REF]`: point every pin of the tool at one commit of this repository (default: HEAD).

    python -m tools.pin [REF]     rewrite the pins to REF's full SHA
    python -m tools.pin --list    print each pin: file, line, ref

A pin is a place that names the git ref users install the tool at: pip's `...diffusers-codemod@REF`,
a rule's documentation link `.../blob/REF/...`, the README's pre-commit `rev:`, the bot workflow's
default `CODEMOD_REF`, and `PINNED_COMMIT` (the PR bodies' fallback). Commit the rewrite: the pinned
commit is then the parent of the commit that carries it (no file can hold its own commit's SHA).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from codemods.output.rule_docs import TOOL_URL

ROOT = Path(__file__).resolve().parent.parent
# A full commit SHA, or a release tag as earlier pins named it (so `make pin` replaces those too).
_REF = r"(?P<ref>[0-9a-f]{40}|v\d+\.\d+\.\d+)"
PIN_PATTERNS = {
    "README.md": [rf"{re.escape(TOOL_URL)}@{_REF}", rf"^\s+rev: {_REF}$"],
    "docs/bot.md": [rf"{re.escape(TOOL_URL)}@{_REF}", rf"{re.escape(TOOL_URL)}/blob/{_REF}/"],
    "docs/examples/codemod-code-scanning.yml": [rf"{re.escape(TOOL_URL)}@{_REF}"],
    ".github/workflows/bot.yml": [rf"vars\.CODEMOD_REF \|\| '{_REF}'"],
    "codemods/tool_version.py": [rf'^PINNED_COMMIT = "{_REF}"$'],
}


@dataclass(frozen=True)
class Pin:
    path: str
    line: int
    ref: str


def pins(root: Path = ROOT) -> list[Pin]:
    """Every pin in the files that carry them, in file order."""
    found = []
    for path, patterns in PIN_PATTERNS.items():
        text = (root / path).read_text()
        for pattern in patterns:
            for match in re.finditer(pattern, text, re.MULTILINE):
                found.append(Pin(path, text.count("\n", 0, match.start("ref")) + 1, match["ref"]))
    return sorted(found, key=lambda pin: (pin.path, pin.line))


def write_pins(root: Path, commit: str) -> int:
    """Rewrite every pin under `root` to `commit`; the number of pins written."""
    written = 0
    for path, patterns in PIN_PATTERNS.items():
        text = (root / path).read_text()
        for pattern in patterns:
            text, count = re.subn(pattern, lambda m: _replace_ref(m, commit), text, flags=re.MULTILINE)
            written += count
        (root / path).write_text(text)
    return written


def _replace_ref(match: re.Match[str], commit: str) -> str:
    start, end = match.start("ref") - match.start(), match.end("ref") - match.start()
    return match[0][:start] + commit + match[0][end:]


def resolve(ref: str, root: Path = ROOT) -> str:
    """REF's full commit SHA in the repository at `root`; ValueError when it names no commit there."""
    done = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], cwd=root, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise ValueError(f"{ref!r} names no commit in {root}")
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.pin", description=__doc__.split("\n\n")[0])
    parser.add_argument("ref", nargs="?", default="HEAD", help="the commit to pin (default: HEAD)")
    parser.add_argument("--list", action="store_true", help="print the pins, change nothing")
    args = parser.parse_args(argv)
    if args.list:
        for pin in pins():
            print(f"{pin.path}:{pin.line}: {pin.ref}")
        return 0
    try:
        commit = resolve(args.ref)
    except ValueError as error:
        print(f"pin: {error}", file=sys.stderr)
        return 2
    print(f"pinned {write_pins(ROOT, commit)} places to {commit}; commit them (`git commit -am 'Pin {commit[:10]}'`)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
