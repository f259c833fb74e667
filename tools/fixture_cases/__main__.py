"""Review and write fixture cases.

    python -m tools.fixture_cases list [CODE]                 # every case, and where its code comes from
    python -m tools.fixture_cases show CODE/name              # the case's input, expected change and findings
    python -m tools.fixture_cases write CODE/name DIR         # its input tree under DIR (--expected: the output)
    python -m tools.fixture_cases record CODE/name DIR        # re-derive `take` and the patch from an edited DIR

Making a case: write `fixtures/CODE/name.toml` naming the module (`take` omitted takes it whole),
`write` it to a scratch directory, trim and change the files there, `record` it, then run
`pytest tests/test_fixtures.py -k name --regen-fixtures` and review `name.diff` / `name.findings.txt`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tools.fixture_cases.cases import Case, CaseError, all_cases, find_case, write_files
from tools.fixture_cases.record import rerecord
from tools.releases import ReleaseUnavailable


def _list(rule: str | None) -> None:
    for case in all_cases(rule):
        if case.taken_from_diffusers:
            sources = sorted({f"{spec.release} {spec.module}" for spec in case.file_specs() if spec.module})
            print(f"{case.name}: {', '.join(sources)}{' + patch' if case.patch.is_file() else ''}")
        else:
            print(f"{case.name}: our own snippet")


def _show(case: Case) -> None:
    for path, text in case.input_files().items():
        if text:
            print(f"=== {path} (input)\n{text}", end="" if text.endswith("\n") else "\n")
    change = case.expected_diff.read_text() if case.expected_diff.is_file() else "none recorded\n"
    print("=== expected change\n" + (change or "no change\n"), end="")
    findings = case.expected_findings.read_text() if case.expected_findings.is_file() else "none recorded\n"
    print("=== expected findings\n" + (findings if findings.strip() else "none\n"), end="")


def _record(case: Case, directory: Path) -> None:
    edited = {str(p.relative_to(directory)): p.read_text(encoding="utf-8") for p in sorted(directory.rglob("*.py"))}
    spec, patch = rerecord(case, edited)
    case.source.write_text(spec, encoding="utf-8")
    if patch:
        case.patch.write_text(patch, encoding="utf-8")
    else:
        case.patch.unlink(missing_ok=True)
    print(f"wrote {case.source}" + (f" and {case.patch}" if patch else " (no patch needed)"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.fixture_cases", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every case and its source").add_argument("rule", nargs="?")
    commands.add_parser("show", help="print a case's input and expected result").add_argument("case")
    write = commands.add_parser("write", help="write a case's input tree (or, with --expected, its output)")
    write.add_argument("case")
    write.add_argument("directory", type=Path)
    write.add_argument("--expected", action="store_true")
    record = commands.add_parser("record", help="re-derive a spec's `take` and patch from an edited tree")
    record.add_argument("case")
    record.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "list":
            _list(args.rule)
        elif args.command == "show":
            _show(find_case(args.case))
        elif args.command == "write":
            case = find_case(args.case)
            files = case.expected_files() if args.expected else case.input_files()
            print(write_files(files, args.directory))
        else:
            _record(find_case(args.case), args.directory)
    except (CaseError, ReleaseUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
