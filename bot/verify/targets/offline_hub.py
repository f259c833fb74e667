"""The Hub, offline: workers never wait on the network, and the tiny repositories tests load are built here.

diffusers' fast tests load a few tiny repositories from the Hub (`hf-internal-testing/tiny-random-t5`
and its like). Without a network, `from_pretrained` retries with back-off for minutes per file.
A worker calls `go_offline()` before it imports diffusers: the Hub is switched off
(`HF_HUB_OFFLINE=1` and friends), so a load either finds its repository in the local cache or fails
at once, and the cache is one we fill with stand-ins built from configurations written here:
tokenizers made with the `tokenizers` library and text encoders saved from seeded random weights,
with the shapes the tests' other components are built for (a T5 with `d_model=32`, a BERT with
`hidden_size=32`, ...). They stand in for the shapes, not the numbers: both trees load the same
files, and parity compares the trees with each other, never with the tests' expected slices.

A test that loads a repository `hub_stand_ins` does not stand in for *needs the Hub*: the verifier says so and counts it
apart. The cache is built once per set of library versions and stand-in recipes, under
`$CODEMOD_HUB_CACHE` (default `~/.cache/diffusers-codemod/offline-hub`). No torch import at module level.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

from bot.verify.targets.hub_stand_ins import STAND_INS, Writer

OFFLINE = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
}


def missing_stand_ins(hub_ids: tuple[str, ...]) -> list[str]:
    """The ids a test loads that have no stand-in."""
    return [repo_id for repo_id in hub_ids if repo_id not in STAND_INS]


def go_offline(stand_ins: bool = True) -> Path:
    """Switch the Hub off for this process and point its cache at the stand-ins (built if missing).

    `stand_ins=False` only switches the Hub off: a worker with built-in targets alone (they load
    nothing from the Hub) skips building them, which on a fresh machine costs seconds of
    transformers imports and model saves per worker (and a retry each start for a stand-in this
    interpreter cannot build).
    """
    cache = _cache_dir()
    # Before anything imports huggingface_hub, which reads them once.
    os.environ.update({**OFFLINE, "HF_HUB_CACHE": str(cache), "HUGGINGFACE_HUB_CACHE": str(cache)})
    for repo_id, write in STAND_INS.items() if stand_ins else ():
        try:
            _build(cache, repo_id, write)
        except Exception as error:  # noqa: BLE001 - a library this interpreter lacks: that repository is missing
            print(f"offline hub: no stand-in for {repo_id} here: {type(error).__name__}: {error}", file=sys.stderr)
    return cache


def _cache_dir() -> Path:
    """One directory per set of recipes (this package's source) and library versions that write the files."""
    digest = hashlib.sha256()
    for module in sorted(Path(__file__).parent.glob("*hub*.py")):
        digest.update(module.read_bytes())
    for library in ("transformers", "tokenizers", "torch", "huggingface_hub"):
        try:
            digest.update(f"{library}={metadata.version(library)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{library}=none".encode())
    base = os.environ.get("CODEMOD_HUB_CACHE") or Path.home() / ".cache" / "diffusers-codemod" / "offline-hub"
    return Path(base) / digest.hexdigest()[:16]


def _build(cache: Path, repo_id: str, write: Writer) -> None:
    """`models--org--name/{refs/main, snapshots/<commit>/...}` as huggingface_hub lays out its cache.

    Built aside and renamed into place: the two workers of a run may build the same repository at once.
    """
    final = cache / f"models--{repo_id.replace('/', '--')}"
    if final.is_dir():
        return
    commit = hashlib.sha1(repo_id.encode()).hexdigest()
    staging = cache / f".staging-{os.getpid()}" / final.name
    shutil.rmtree(staging, ignore_errors=True)
    write(staging / "snapshots" / commit)
    (staging / "refs").mkdir(parents=True)
    (staging / "refs" / "main").write_text(commit)
    try:
        staging.rename(final)
    except OSError:
        if not final.is_dir():
            raise
    finally:
        shutil.rmtree(staging.parent, ignore_errors=True)
