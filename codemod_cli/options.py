"""The options more than one command declares, each declared once here as typer reads them (`codemod
bot`'s commands share most; `codemod verify` and `codemod run` share `Select`, `Compile`, `Python`,
`TorchIndex`, `NoCache`). typer takes no default inside `Annotated`: the shared defaults are named here too."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated

import typer


class Device(str, Enum):
    emu = "emu"
    cuda = "cuda"


API_URL = "https://api.github.com"
WORKDIR = Path(".codemod-bot")
MAX_OPEN_PRS = 5
REQUEST_INTERVAL = 0.25

Repo = Annotated[str, typer.Option("--repo", metavar="OWNER/NAME", help="The repository to open PRs on.")]
ApiUrl = Annotated[str, typer.Option("--api-url", metavar="URL", help="GitHub REST API root.")]
CloneUrl = Annotated[
    str | None, typer.Option("--clone-url", metavar="URL", help="Clone from here (default: the API's clone URL).")
]
Base = Annotated[
    str | None, typer.Option("--base", metavar="BRANCH", help="Base branch (default: the default branch).")
]
DryRun = Annotated[bool, typer.Option("--dry-run", help="No push, no GitHub writes: print the plan, write PR bodies.")]
MaxOpenPrs = Annotated[int, typer.Option("--max-open-prs", min=0, metavar="N", help="At most N open bot PRs.")]
Select = Annotated[
    list[str] | None,
    typer.Option("--select", metavar="CODES", help="Rule codes or prefixes (comma-separated or repeated)."),
]
Only = Annotated[
    list[str] | None, typer.Option("--only", metavar="PATH", help="Only these paths inside src/diffusers.")
]
PlanFile = Annotated[Path, typer.Option("--plan", metavar="FILE", exists=True, dir_okay=False)]
Workdir = Annotated[
    Path, typer.Option("--workdir", metavar="DIR", help="Clone, cache and reports (a cache: deletable).")
]
DeviceOption = Annotated[Device, typer.Option("--device", help="emu: emulated accelerator on CPU; cuda: a GPU.")]
Compile = Annotated[
    bool, typer.Option("--compile", help="Also try torch.compile(fullgraph=True) checks (slow on CPU).")
]
BodiesDir = Annotated[Path | None, typer.Option("--bodies-dir", metavar="DIR", help="Write each PR body here.")]
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
Python = Annotated[
    Path | None,
    typer.Option("--python", metavar="PATH", help="Run the trees here (default: the checkout's own environment)."),
]
TorchIndex = Annotated[
    str | None,
    typer.Option(
        "--torch-index", metavar="URL", help="Where the checkout's environment gets torch (CPU or CUDA index)."
    ),
]
Login = Annotated[
    str | None, typer.Option("--login", metavar="LOGIN", help="The bot's GitHub login (default: the token's user).")
]
NoCache = Annotated[bool, typer.Option("--no-cache", help="Neither read nor write the scan cache.")]
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
