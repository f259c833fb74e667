"""What a run reads before it scans anything: its configuration, its files, and (a check's) the result an
earlier run computed from the same inputs.

A warm check ends here, so this module and what it imports hold no scan, rule or analysis: the command
line asks for a known result first and imports the engine (`entry`) only when there is something to
compute (tests/test_cache.py lists the modules a warm check imports).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from codemods.engine.cache import FileDigests
from codemods.engine.discovery import discover
from codemods.engine.result_cache import ResultCache
from codemods.engine.run_result import RunOptions, RunResult
from codemods.project.config import Config, find_pyproject, load_config


@dataclass(frozen=True)
class RunInputs:
    config: Config
    files: list[Path]
    results: ResultCache | None  # None: a run that keeps no whole result (not a check, or no cache)
    digests: FileDigests  # the run's one reading of each file's digest, for the result's key and the scans'

    @classmethod
    def of(cls, options: RunOptions) -> RunInputs:
        config = load_config(find_pyproject(options.paths))
        base = config.pyproject.parent if config.pyproject else Path.cwd()
        files = discover(options.paths, config.exclude, base)
        digests = FileDigests(options.cache_dir)
        return cls(config, files, ResultCache.of(options, config, files, digests), digests)

    def known_result(self) -> RunResult | None:
        """The result of an earlier check on the same inputs, if one was kept."""
        return self.results.get() if self.results is not None else None

    def keep(self, result: RunResult) -> None:
        """What later runs reuse of this one: its result (a check's) and the digests of the files it read."""
        if self.results is not None:
            self.results.put(result)
        self.digests.save()
