"""Fixture cases: what each one takes from diffusers, our changes to it, and the change we expect.

A case `fixtures/<CODE>/<name>` is one of
- `<name>.toml`: a spec of the diffusers code the case takes (release, modules, what to take from
  each, where it lands) plus, optionally, `<name>.patch`: our own modification of the taken code;
- `<name>.py`: a snippet we wrote ourselves (a synthetic trap).
Either way `<name>.diff` is the expected change (a zero-context unified diff from the case's input
to the rule's output, empty for "no change") and `<name>.findings.txt` the expected findings; both are
written by `--regen-fixtures`, never by hand.

Spec keys (`release` may be given once at the top as the default for every file):

    release = "0.42.1"
    [[file]]
    path = "diffusers/models/transformers/transformer_x.py"  # where it lands in the case's tree
    module = "models/transformers/transformer_x.py"          # the module inside the released package
    take = ["imports", "XEmbedRope", "200-230"]              # omitted: the whole module
    comment = "What the case shows (written as `#` lines at the top of the file)."

Several `[[file]]` entries with one `path` are joined in order. Every directory of the tree gets an
empty `__init__.py` unless a file is taken there, so the engine resolves names across the files.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

from tools.fixture_cases.selection import SelectionError, selected_lines
from tools.fixture_cases.sources import module_text
from tools.fixture_cases.unified_diff import PatchError, apply_diff

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RULE_CODE = re.compile(r"^[A-Z]+[0-9]+$")  # fixtures/<CODE>/ holds a rule's cases
SPEC_KEYS = {"path", "module", "take", "comment", "release"}


class CaseError(Exception):
    """A case that cannot be materialised: a bad spec, a missing module, a patch that does not apply."""


@dataclass(frozen=True)
class FileSpec:
    path: str
    release: str
    module: str | None
    take: list[str] | None
    comment: str


@dataclass(frozen=True)
class Case:
    """One fixture case, named `<CODE>/<name>` (for example `DIF004/adapter_denoising_loop`)."""

    name: str
    source: Path  # the `.toml` spec or the `.py` snippet

    @property
    def rule(self) -> str:
        return self.name.split("/")[0]

    @property
    def taken_from_diffusers(self) -> bool:
        return self.source.suffix == ".toml"

    def sibling(self, suffix: str) -> Path:
        return self.source.with_suffix(suffix)

    @property
    def patch(self) -> Path:
        return self.sibling(".patch")

    @property
    def expected_diff(self) -> Path:
        return self.sibling(".diff")

    @property
    def expected_findings(self) -> Path:
        return self.sibling(".findings.txt")

    def file_specs(self) -> list[FileSpec]:
        try:
            data = tomllib.loads(self.source.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as error:
            raise CaseError(f"{self.source}: not valid TOML: {error}") from None
        entries = data.get("file")
        if not isinstance(entries, list) or not entries:
            raise CaseError(f"{self.source}: no [[file]] entries")
        return [self._file_spec(entry, data.get("release")) for entry in entries]

    def _file_spec(self, entry: dict, default_release: str | None) -> FileSpec:
        unknown = set(entry) - SPEC_KEYS
        if unknown or "path" not in entry:
            problem = f"unknown key(s) {sorted(unknown)}" if unknown else "a [[file]] without `path`"
            raise CaseError(f"{self.source}: {problem} (keys: {sorted(SPEC_KEYS)})")
        release, take = entry.get("release", default_release), entry.get("take")
        if entry.get("module") and not release:
            raise CaseError(f"{self.source}: {entry['path']}: no `release` to take {entry['module']} from")
        if take is not None and (not isinstance(take, list) or not all(isinstance(item, str) for item in take)):
            raise CaseError(f"{self.source}: {entry['path']}: `take` must be a list of strings")
        if take and not entry.get("module"):
            raise CaseError(f"{self.source}: {entry['path']}: `take` without a `module` to take from")
        return FileSpec(entry["path"], release, entry.get("module"), take, entry.get("comment", ""))

    def taken_files(self) -> dict[str, str]:
        """The diffusers code the spec takes, before our patch: path in the case tree -> text."""
        files: dict[str, str] = {}
        for spec in self.file_specs():
            files[spec.path] = files.get(spec.path, "") + self._taken_text(spec)
        return files

    def _taken_text(self, spec: FileSpec) -> str:
        if spec.module is None:
            return ""
        where = f"{self.source.name}: {spec.release} {spec.module}"
        try:
            text = module_text(spec.release, spec.module)
            lines = text.splitlines(keepends=True)
            return "".join(lines[i] for i in selected_lines(text, spec.take, where))
        except FileNotFoundError:
            raise CaseError(f"{where}: no such module in that release") from None
        except (SelectionError, SyntaxError) as error:
            raise CaseError(str(error)) from None

    def input_files(self) -> dict[str, str]:
        """The case's input tree (path -> text): what the rule runs on."""
        if not self.taken_from_diffusers:
            return {self.source.name: self.source.read_text(encoding="utf-8")}
        files = self.taken_files()
        if self.patch.is_file():
            try:
                files = apply_diff(files, self.patch.read_text(encoding="utf-8"), self.patch.name)
            except PatchError as error:
                raise CaseError(str(error)) from None
        comments: dict[str, str] = {}
        for spec in self.file_specs():
            comments[spec.path] = comments.get(spec.path, "") + comment_lines(spec.comment)
        return _with_packages({path: comments.get(path, "") + text for path, text in files.items()})

    def input_text(self) -> str:
        """The input of a single-file case."""
        return _only_file(self.name, self.input_files())

    def expected_text(self) -> str:
        """The expected output of a single-file case."""
        return _only_file(self.name, self.expected_files())

    def expected_files(self) -> dict[str, str]:
        """The input tree with the expected change applied: what the rule should leave."""
        try:
            return apply_diff(
                self.input_files(), self.expected_diff.read_text(encoding="utf-8"), self.expected_diff.name
            )
        except FileNotFoundError:
            raise CaseError(f"{self.name}: no {self.expected_diff.name} (write it with --regen-fixtures)") from None
        except PatchError as error:
            raise CaseError(str(error)) from None


def _only_file(name: str, files: dict[str, str]) -> str:
    texts = [text for text in files.values() if text]
    if len(texts) != 1:
        raise CaseError(f"{name} is a tree of {len(texts)} files, not one file")
    return texts[0]


def comment_lines(comment: str) -> str:
    """Our description of the case, as `#` lines at the top of the file (outside the patched text)."""
    return "".join(f"# {line}".rstrip() + "\n" for line in comment.strip("\n").splitlines())


def _with_packages(files: dict[str, str]) -> dict[str, str]:
    packages = {
        str(Path(*Path(path).parts[:depth]) / "__init__.py")
        for path in files
        for depth in range(1, len(Path(path).parts))
    }
    return {**{package: "" for package in packages}, **files}


def find_case(name: str) -> Case:
    """The case `<CODE>/<name>` (a suffix such as `.toml` is ignored)."""
    stem = FIXTURES / Path(name).with_suffix("")
    for suffix in (".toml", ".py"):
        if stem.with_suffix(suffix).is_file():
            return Case(str(Path(name).with_suffix("")), stem.with_suffix(suffix))
    raise CaseError(f"no fixture case {name!r} (looked for {stem}.toml and {stem}.py)")


def all_cases(rule: str | None = None) -> list[Case]:
    """Every case under fixtures/<CODE>/ (or only those of `rule`), sorted by name."""
    found = []
    rules = sorted(p for p in FIXTURES.iterdir() if p.is_dir() and RULE_CODE.match(p.name))
    for directory in (d for d in rules if rule is None or d.name == rule):
        for path in sorted(directory.iterdir()):
            if path.suffix in (".toml", ".py"):
                found.append(Case(f"{directory.name}/{path.stem}", path))
    return found


def write_files(files: dict[str, str], root: Path) -> Path:
    """Write a case's tree under `root` (created); returns `root`."""
    for path, text in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return root
