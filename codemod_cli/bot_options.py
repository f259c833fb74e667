"""The options `codemod bot`'s commands share, as typer reads them (`codemod verify` shares `Python` and
`TorchIndex`)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class Device(str, Enum):
    emu = "emu"
    cuda = "cuda"


Repo = Annotated[str, typer.Option("--repo", metavar="OWNER/NAME", help="The repository to open PRs on.")]
ApiUrl = Annotated[str, typer.Option("--api-url", metavar="URL", help="GitHub REST API root.")]
Workdir = Annotated[
    Path, typer.Option("--workdir", metavar="DIR", help="Clone, cache and reports (a cache: deletable).")
]
DeviceOption = Annotated[Device, typer.Option("--device", help="emu: emulated accelerator on CPU; cuda: a GPU.")]
JsonOut = Annotated[Path | None, typer.Option("--json", metavar="FILE", help="Also write the run summary as JSON.")]
Interval = Annotated[
    float,
    typer.Option(
        "--request-interval",
        min=0,
        metavar="SECONDS",
        help="Pause between GitHub requests (writes: 4x), as GitHub asks of integrations; 0 for a local API.",
    ),
]
# Shared with `codemod verify`.
Python = Annotated[
    Path | None,
    typer.Option("--python", metavar="PATH", help="Run the trees here (default: the checkout's own environment)."),
]
TorchIndex = Annotated[
    str | None, typer.Option(metavar="URL", help="Where the checkout's environment gets torch (CPU or CUDA index).")
]
Login = Annotated[
    str | None, typer.Option("--login", metavar="LOGIN", help="The bot's GitHub login (default: the token's user).")
]
NoDashboard = Annotated[bool, typer.Option("--no-dashboard", help="Neither read nor write the dashboard issue.")]
Census = Annotated[
    Path | None,
    typer.Option(
        "--census",
        metavar="FILE",
        exists=True,
        dir_okay=False,
        help="A `codemod verify --json` report of the whole library: the dashboard's top-ten table.",
    ),
]
CensusUrl = Annotated[
    str | None, typer.Option("--census-url", metavar="URL", help="Where the census HTML page is (an artifact URL).")
]
