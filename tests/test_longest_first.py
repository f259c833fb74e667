from pathlib import Path

from longest_first import LONGEST_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_the_schedule_starts_first_exists_once() -> None:
    # A renamed module would silently lose its early start and run alone at the end again.
    assert [module for module in LONGEST_FIRST if not (ROOT / module).is_file()] == []
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)
