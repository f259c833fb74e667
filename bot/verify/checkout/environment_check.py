"""Whether a checkout's environment can be built, and whether what was built works.

Two checks, each a one-line reason or None: before building, that torch's index answers (an
unreachable `--torch-index` otherwise costs minutes of pip retries, or a silent fall-back to
another index whose builds do not match); after building, that every package the targets need
imports in the new interpreter (a torchvision built for another torch installs fine and fails
only on import). No torch here.
"""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

from bot.verify.checkout.requirements import last_error

INDEX_TIMEOUT_S = 30.0

# Run in the new environment: for each distribution named in argv[1], import its top-level modules
# (found from the installed metadata, so `Pillow` imports `PIL`); prints {name: why it failed}.
_IMPORT_PROBE = """\
import importlib, json, re, sys
from importlib import metadata

def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()

modules = {}
for module, distributions in metadata.packages_distributions().items():
    for distribution in distributions:
        modules.setdefault(canonical(distribution), []).append(module)
failed = {}
for name in json.loads(sys.argv[1]):
    found = sorted(m for m in modules.get(canonical(name), []) if not m.startswith("_"))
    if not found:
        failed[name] = "not installed"
    for module in found:
        try:
            importlib.import_module(module)
        except Exception as error:
            failed[name] = f"import {module}: {type(error).__name__}: {error}".splitlines()[0]
            break
print(json.dumps(failed))
"""


def unreachable_index(index_url: str, timeout_s: float = INDEX_TIMEOUT_S) -> str | None:
    """Why torch's page on the index `index_url` (PEP 503: `<index>/torch/`) cannot be read, or None."""
    page = f"{index_url.rstrip('/')}/torch/"
    try:
        with urllib.request.urlopen(page, timeout=timeout_s) as response:
            response.read(1)
    except urllib.error.HTTPError as error:
        return f"{page} answered HTTP {error.code} {error.reason}"
    except (urllib.error.URLError, OSError, ValueError) as error:
        return f"{page}: {getattr(error, 'reason', error)}"
    return None


def failed_imports(python: Path, distributions: list[str]) -> dict[str, str]:
    """`distribution -> why` for each of `distributions` whose modules do not import with `python`."""
    done = subprocess.run(
        [str(python), "-c", _IMPORT_PROBE, json.dumps(distributions)], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        return {"(the import check)": last_error(done.stdout + done.stderr)}
    return json.loads(done.stdout.strip().splitlines()[-1])
