"""What a run can reuse from earlier ones, keyed by the tool's own source and the trees' facts.

Per-file results are kept, never anything that depends on the run's mode, on fixing or on other
files: each file's `FileScan` (its facts, and each rule's findings kept apart, so a new
`--select`/`--ignore` reuses every rule it shares with earlier runs), the text a set of fixes
makes of a file, and what a checkout fact reads of a file (`file_memo`). Cross-file resolution
runs again on every run that misses the whole-result cache (`ResultStore`, keyed by every input
the check read: codemods/engine/result_cache.py).

Files in the cache directory (which carries a `.gitignore`, like ruff's):
- `index-*.pickle`, small, always read: each file's content digest by (size, mtime_ns), so an
  unchanged file is neither read nor hashed (git's index does the same), one for every run of the tool
  (`FileDigests`: a check's whole-result key and its scans' keys read the same digests);
- `scan-*.pickle`: each file's scan by its place in its tree + content digest (copies of a tree share them:
  codemods/engine/scan_keys.py), and the applied fixes, each entry pickled alone (a scan by the worker that made
  it, so saving only writes bytes);
- `result-*.pickle`, one per whole check result.
The directory is `.codemod_cache/` at the project root of the paths run on (see `cache_directory`).
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable
from functools import cache, cached_property
from pathlib import Path
from typing import Any, TypeVar

import codemods

try:  # hashlib's own blake2b (the same digests): importing hashlib loads OpenSSL, a twentieth of a warm check
    from _blake2 import blake2b
except ImportError:  # a Python built without its own blake2 (`--with-builtin-hashlib-hashes`)
    from hashlib import blake2b

T = TypeVar("T")

# Entries from other runs kept beside this run's, so switching between two trees stays warm.
_MAX_SCANS = 20_000
CACHE_DIRECTORY_NAME = ".codemod_cache"
_PROJECT_MARKERS = ("pyproject.toml", ".git")
_UNREADABLE = (OSError, EOFError, ValueError, pickle.UnpicklingError, AttributeError, ImportError, TypeError)


def digest(identity: str, data: bytes) -> str:
    """Identity of what is computed from `data` for the file that `identity` names (its path, or its place in its
    tree: codemods/engine/scan_keys.py)."""
    return blake2b(identity.encode() + b"\0" + data, digest_size=16).hexdigest()


def content_digest(data: bytes) -> str:
    """Identity of a file's bytes alone, wherever the file lies."""
    return blake2b(data, digest_size=16).hexdigest()


@cache
def tool_digest() -> str:
    """The tool's own source: a cache made by other code (a fixed rule, an upgrade) is never reused."""
    package = Path(codemods.__file__).resolve().parent  # all of it: a rule is as much the tool as the engine
    hasher = blake2b(codemods.__version__.encode(), digest_size=16)
    for path in sorted(package.rglob("*.py")):
        hasher.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return hasher.hexdigest()


def project_root(paths: Iterable[Path]) -> Path:
    """The nearest directory above the first path holding a pyproject.toml or a .git (the current one if none)."""
    for path in paths:
        directory = path.resolve() if path.is_dir() else path.resolve().parent
        for candidate in (directory, *directory.parents):
            if any((candidate / marker).exists() for marker in _PROJECT_MARKERS):
                return candidate
        break
    return Path.cwd()


def cache_directory(paths: Iterable[Path]) -> Path:
    """`$CODEMOD_CACHE_DIR`, else `.codemod_cache/` at the project root of `paths` (as ruff places its cache)."""
    override = os.environ.get("CODEMOD_CACHE_DIR")
    return Path(override) if override else project_root(paths) / CACHE_DIRECTORY_NAME


def file_state(path: str) -> tuple[int, int]:
    """(size, mtime_ns): what changes when a file does (the cache's index trusts it as git's does)."""
    status = os.stat(path)
    return status.st_size, status.st_mtime_ns


class FileDigests:
    """Each file's `content_digest` as a run first sees it, read and hashed only where its size or mtime changed since
    an earlier run (kept in `directory`, if any). One per run: every key the run makes of a file names the same bytes."""

    def __init__(self, directory: Path | None) -> None:
        self._path = directory / f"index-{_cache_name('digests')}.pickle" if directory else None
        # path -> (size, mtime_ns, content digest)
        self._stats: dict[str, tuple[int, int, str]] = _load(self._path, {}) if self._path else {}
        self._seen: dict[str, str] = {}
        self._dirty = False

    def of(self, path: str) -> str:
        """The `content_digest` of `path` (OSError where it cannot be read)."""
        seen = self._seen.get(path)
        if seen is not None:
            return seen
        state = file_state(path)  # before reading: a file changed after it is a new state, never this digest
        known = self._stats.get(path)
        if known is not None and known[:2] == state:
            self._seen[path] = known[2]
            return known[2]
        with open(path, "rb") as handle:
            return self.seen(path, (*state, content_digest(handle.read())))

    def seen(self, path: str, reading: tuple[int, int, str]) -> str:
        """The digest of `path` as the run first read it, `reading` (size, mtime_ns, digest) where that was this one
        (a worker's, of the bytes it scanned)."""
        if path not in self._seen:
            self._stats[path] = reading
            self._seen[path] = reading[2]
            self._dirty = True
        return self._seen[path]

    def state(self, path: str) -> tuple[int, int]:
        """(size, mtime_ns) of `path` when the run read its digest (`of` or `seen` first)."""
        return self._stats[path][:2]

    def save(self) -> None:
        if self._path is None or not self._dirty:
            return
        try:
            _prepare(self._path.parent)
            _dump(self._path, dict(list(self._stats.items())[-_MAX_SCANS:]))
        except OSError:
            pass  # as for scans: a read-only checkout only loses the next run's head start
        self._dirty = False


class ScanCache:
    def __init__(self, directory: Path | None, key: str, digests: FileDigests) -> None:
        self._directory = directory
        self._scans_path = directory / f"scan-{_cache_name(key)}.pickle" if directory else None
        self.digests = digests
        self._dirty = False
        self._values: dict[str, Any] = {}  # entries this run put or read, as objects
        self._memo_keys: set[str] = set()  # `file_memo` entries this run asked for: kept like its scans

    @property
    def outlives_run(self) -> bool:
        """Whether what the run puts here is kept for later runs (and what earlier ones kept is here)."""
        return self._directory is not None

    @cached_property
    def _stored(self) -> dict[str, bytes]:
        """Each entry pickled alone, as kept: a worker pickles the scan it makes, and saving only writes the bytes."""
        return _load(self._scans_path, {}) if self._scans_path is not None else {}

    @property
    def empty(self) -> bool:
        """Whether there is nothing to look up (a first run): its scans' keys can wait for the files' digests."""
        return not self._stored

    def get(self, key: str) -> Any | None:
        if key not in self._values:
            try:
                self._values[key] = pickle.loads(self._stored[key])
            except (KeyError, *_UNREADABLE):
                return None  # a missing or stale entry is a miss
        return self._values[key]

    def put(self, key: str, value: Any, pickled: bytes | None = None) -> None:
        """`value` kept under `key`; `pickled`, where given, is `value` as `pickle_entry` made it."""
        self._values[key] = value
        if self.outlives_run:  # the run's own cache is never saved: nothing to pickle
            self._stored[key] = pickled if pickled is not None else pickle_entry(value)
            self._dirty = True

    def memo_key(self, path: str, kind: str) -> str:
        """Where `file_memo` keeps `kind` of the file as it is now (kept by `save` with this run's scans)."""
        key = f"{kind}:{self.digests.of(path)}"
        self._memo_keys.add(key)
        return key

    def file_memo(self, path: str, kind: str, compute: Callable[[str], T]) -> T | None:
        """`compute` of the file's text, kept by its content digest (a `codemods.project.files.FileMemo`)."""
        from codemods.project.files import memo_text  # here: a warm check looks up its result without reading files

        try:
            key = self.memo_key(path, kind)
            if key not in self._values and key not in self._stored:
                with open(path, "rb") as handle:
                    self.put(key, compute(memo_text(handle.read())))
        except OSError:
            return None
        return self.get(key)

    def save(self, keep: set[str]) -> None:
        if self._scans_path is None or not self._dirty:
            return
        keep = keep | self._memo_keys
        scans = {k: v for k, v in self._stored.items() if k in keep}
        for k, v in self._stored.items():
            if len(scans) >= _MAX_SCANS:
                break
            scans.setdefault(k, v)
        try:
            _prepare(self._scans_path.parent)
            _dump(self._scans_path, scans)
        except OSError:
            pass  # a read-only checkout still gets its findings, only slower next time
        self._dirty = False


class ResultStore:
    """Whole results, one file each (`result-<key>.pickle`: a lookup reads only its own), the newest few kept."""

    def __init__(self, directory: Path, keep: int) -> None:
        self._directory = directory
        self._keep = keep

    @property
    def empty(self) -> bool:
        try:
            return not any(name.startswith("result-") for name in os.listdir(self._directory))
        except OSError:
            return True  # no directory yet

    def get(self, key: str) -> Any | None:
        return _load(self._directory / f"result-{key}.pickle", None)

    def put(self, key: str, value: Any) -> None:
        try:
            self._directory.mkdir(parents=True, exist_ok=True)
            _dump(self._directory / f"result-{key}.pickle", value)
            kept = sorted(self._directory.glob("result-*.pickle"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
            for stale in kept[self._keep :]:
                stale.unlink()
        except OSError:
            pass  # as for scans: a read-only checkout only loses the next run's head start


def pickle_entry(value: Any) -> bytes:
    """`value` as the scan cache keeps it."""
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def _cache_name(key: str) -> str:
    """The name of the files kept for `key`: a cache made by other code is never read."""
    return blake2b(f"{tool_digest()}|{key}".encode(), digest_size=12).hexdigest()


def _prepare(directory: Path) -> None:
    """The cache directory, made if missing, with a `.gitignore` that keeps all of it out of git."""
    directory.mkdir(parents=True, exist_ok=True)
    gitignore = directory / ".gitignore"
    if not gitignore.exists():
        gitignore.write_text("# Created by diffusers-codemod.\n*\n")


def _load(path: Path, empty: Any) -> Any:
    try:
        with path.open("rb") as handle:
            return pickle.load(handle)
    except _UNREADABLE:
        return empty  # a missing or stale cache is an empty one


def _dump(path: Path, value: Any) -> None:
    import tempfile  # here, not at the top: a warm check writes nothing

    with tempfile.NamedTemporaryFile("wb", dir=path.parent, delete=False) as handle:
        pickle.dump(value, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(handle.name, path)
