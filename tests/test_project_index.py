"""What the tree index answers across files, and what it reads to answer."""

from __future__ import annotations

from pathlib import Path

from codemods.project.index import ProjectIndex, parse_facts


def test_facts_holding_gives_scanned_files_facts_and_parses_only_other_files_holding_the_needle(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "holds.py").write_text("class Holds:\n    parts = register_modules(unet=unet)\n")
    (package / "lacks.py").write_text("class Lacks:\n    pass\n")
    scanned = package / "scanned.py"
    scanned.write_text("class Scanned:\n    pass\n")
    index = ProjectIndex([package], {str(scanned): parse_facts(str(scanned), "pkg.scanned", scanned.read_text())})
    found = index.facts_holding("register_modules(")
    assert [(Path(path).name, list(facts.classes)) for path, facts in found] == [
        ("holds.py", ["Holds"]),
        ("scanned.py", ["Scanned"]),  # its facts came with the scan: its text is not searched
    ]
