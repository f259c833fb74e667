"""Input that Python accepts is fixed and written back as it came: encoding, BOM, line endings, odd whitespace, links.

Every case starts from DIF004's own documented example (a pipeline reading `.sample` off a model
it annotates), so the fix and its expected text are the rule's, and only the framing varies.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codemods.engine.entry import Mode, RunOptions, run
from codemods.rules.output_attribute_access import OutputAttributeAccess

EXAMPLE = OutputAttributeAccess.invalid[0]
SOURCE, FIXED = EXAMPLE.source, EXAMPLE.fixed


def _fix(*paths: Path, mode: Mode = Mode.WRITE):
    return run(RunOptions(paths=paths, mode=mode, jobs=1))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_file_with_a_utf8_bom_is_fixed_and_keeps_its_bom(tmp_path: Path) -> None:
    target = _write(tmp_path / "bom.py", b"\xef\xbb\xbf" + SOURCE.encode())
    result = _fix(target)
    assert result.errors == []
    assert target.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()


def test_a_pep263_latin1_file_is_fixed_and_written_back_in_latin1(tmp_path: Path) -> None:
    header = "# -*- coding: latin-1 -*-\n# Pipeline by J\u00f6rg, caf\u00e9 edition\n"
    target = _write(tmp_path / "latin.py", (header + SOURCE).encode("latin-1"))
    result = _fix(target)
    assert result.errors == []
    assert target.read_bytes() == (header + FIXED).encode("latin-1")


def test_a_pep263_file_with_old_mac_line_endings_is_decoded_as_python_decodes_it(tmp_path: Path) -> None:
    header = "# -*- coding: latin-1 -*-\r# caf\u00e9 cr\u00e8me\r"
    target = _write(tmp_path / "mac.py", (header + SOURCE.replace("\n", "\r")).encode("latin-1"))
    compile(target.read_bytes(), str(target), "exec")  # Python accepts it
    result = _fix(target)
    assert result.errors == []
    assert target.read_bytes() == (header + FIXED.replace("\n", "\r")).encode("latin-1")


def test_crlf_line_endings_are_kept(tmp_path: Path) -> None:
    target = _write(tmp_path / "crlf.py", SOURCE.replace("\n", "\r\n").encode())
    _fix(target)
    assert target.read_bytes() == FIXED.replace("\n", "\r\n").encode()


def test_mixed_line_endings_are_kept_line_by_line(tmp_path: Path) -> None:
    lines = SOURCE.split("\n")
    mixed = "\r\n".join(lines[:4]) + "\n" + "\n".join(lines[4:])
    target = _write(tmp_path / "mixed.py", mixed.encode())
    _fix(target)
    fixed_lines = FIXED.split("\n")
    assert target.read_bytes() == ("\r\n".join(fixed_lines[:4]) + "\n" + "\n".join(fixed_lines[4:])).encode()


def test_a_form_feed_does_not_shift_the_lines_findings_are_reported_on(tmp_path: Path) -> None:
    # str.splitlines() counts a form feed as a line break; Python does not.
    framed = "\x0c\n" + SOURCE.replace("\n\n\nclass Pipe", "\n\n\x0c\nclass Pipe")
    target = _write(tmp_path / "form_feed.py", framed.encode())
    found = _fix(target, mode=Mode.CHECK).findings
    assert [f.line for f in found] == [framed.split("\n").index("        return self.unet(x).sample") + 1]
    _fix(target)
    assert target.read_text() == "\x0c\n" + FIXED.replace("\n\n\nclass Pipe", "\n\n\x0c\nclass Pipe")


def test_tab_indentation_is_kept(tmp_path: Path) -> None:
    tabbed = SOURCE.replace("        ", "\t\t").replace("    ", "\t")
    target = _write(tmp_path / "tabs.py", tabbed.encode())
    _fix(target)
    assert target.read_text() == FIXED.replace("        ", "\t\t").replace("    ", "\t")


def test_a_file_that_is_a_symlink_rewrites_its_target_once_and_stays_a_link(tmp_path: Path) -> None:
    target = _write(tmp_path / "pipeline.py", SOURCE.encode())
    link = tmp_path / "alias.py"
    link.symlink_to(target.name)
    result = _fix(tmp_path)
    assert (result.files_scanned, len(result.findings), len(result.changes)) == (1, 1, 1)
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_text() == FIXED


def test_a_directory_symlink_loop_is_walked_once(tmp_path: Path) -> None:
    (tmp_path / "package").mkdir()
    _write(tmp_path / "package" / "pipeline.py", SOURCE.encode())
    (tmp_path / "package" / "again").symlink_to("..", target_is_directory=True)
    assert _fix(tmp_path, mode=Mode.CHECK).files_scanned == 1


@pytest.mark.skipif(os.name != "posix", reason="file modes")
def test_a_read_only_file_is_one_error_and_left_as_it_was(tmp_path: Path) -> None:
    target = _write(tmp_path / "pipeline.py", SOURCE.encode())
    os.chmod(target, 0o444)
    result = _fix(target)
    assert [(Path(e.path).name, e.message) for e in result.errors] == [
        ("pipeline.py", "read-only file; not changed (make it writable to apply the fixes)")
    ]
    assert target.read_bytes() == SOURCE.encode()
    assert stat.S_IMODE(target.stat().st_mode) == 0o444
    assert [p.name for p in tmp_path.iterdir()] == ["pipeline.py"]  # no temporary file left behind


def test_the_copied_from_partner_of_a_read_only_file_is_not_changed_either(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    source = _write(package / "first.py", SOURCE.encode())
    copied = SOURCE.replace("class Pipe:", "# Copied from diffusers.first.Pipe\nclass Pipe:")
    copy = _write(package / "second.py", copied.encode())
    os.chmod(source, 0o444)
    result = _fix(package)
    assert [Path(e.path).name for e in result.errors] == ["first.py"]
    assert copy.read_bytes() == copied.encode()
    assert "first.py" in next(f for f in result.findings if f.path == str(copy)).not_fixed_reason


def test_a_file_in_an_undeclared_legacy_encoding_is_one_error(tmp_path: Path) -> None:
    target = _write(tmp_path / "legacy.py", "x = 'caf\u00e9'\n".encode("latin-1"))
    result = _fix(target)
    assert [e.message for e in result.errors] == ["not valid UTF-8 (byte 8: invalid continuation byte)"]
