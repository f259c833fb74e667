"""A worker runs one tree's targets in its own interpreter; a target's failure costs only that target.

The tests of what a worker computes run their workers as a verify run does, forked by a zygote (one for the module:
torch imported once); the test of a worker that dies starts a fresh one, as a run without a zygote does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.verify.planning.changes import rewrite_copy
from bot.verify.running.protocol import WorkerRequest
from bot.verify.running.runner import HEAP_REUSE, run_tree, worker_environment, worker_zygote
from bot.verify.running.zygote import Zygote
from codemods.project.index import installed_diffusers


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    # Bytecode kept out of the trees, as a user may have it: only a kept copy gets bytecode (the compile test). The
    # zygote forks only for requests in the environment it started with, so the setting is there from its start.
    with pytest.MonkeyPatch.context() as environment:
        environment.setenv("PYTHONDONTWRITEBYTECODE", "1")
        with worker_zygote(None, tmp_path_factory.mktemp("zygote") / "zygote.txt") as running:
            yield running


def test_each_target_gets_its_own_result_and_a_failing_one_does_not_stop_the_rest(
    tmp_path: Path, zygote: Zygote
) -> None:
    request = WorkerRequest(str(installed_diffusers()), "emu", ["NoSuchTarget", "SanaWMRotaryPosEmbed"], str(tmp_path))
    missing, rope = run_tree(request, zygote=zygote)
    assert (missing["ok"], missing["error"].split(":")[0]) == (False, "KeyError")
    assert (rope["ok"], rope["unit"], rope["units"]) == (True, "forward", 1)
    assert rope["census"]["counts"] == {"h2d": 1, "d2h": 0, "sync": 0}
    assert Path(rope["outputs_file"]).is_file()


def test_workers_reuse_freed_memory_unless_the_user_set_the_allocator(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    environment = worker_environment(Path("/trees/original"))
    assert environment["MALLOC_MMAP_THRESHOLD_"] == HEAP_REUSE["MALLOC_MMAP_THRESHOLD_"]
    assert environment["MALLOC_TRIM_THRESHOLD_"] == "131072"
    assert environment["PYTHONPATH"].split(os.pathsep)[0] == "/trees/original"


def test_a_worker_that_dies_fails_its_target_with_what_it_printed(tmp_path: Path) -> None:
    package = tmp_path / "tree" / "diffusers"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('this tree is broken')\n")
    request = WorkerRequest(str(package), "emu", ["SanaWMRotaryPosEmbed"], str(tmp_path / "out"))
    (result,) = run_tree(request)
    assert result["ok"] is False
    assert result["error"].startswith("worker exited while running this target: ")
    assert "ImportError: this tree is broken" in result["error"]


def test_on_the_cpu_there_is_no_census_but_outputs_are_kept(tmp_path: Path, zygote: Zygote) -> None:
    request = WorkerRequest(str(installed_diffusers()), "cpu", ["SanaWMRotaryPosEmbed"], str(tmp_path))
    (rope,) = run_tree(request, zygote=zygote)
    assert (rope["ok"], rope["census"], rope["outputs_built"]["count"]) == (True, None, 0)
    assert Path(rope["outputs_file"]).is_file()


def test_compile_checks_see_what_dif004_and_dif003_change(tmp_path: Path, scan_cache: Path, zygote: Zygote) -> None:
    # The eager backend keeps this quick: graph breaks are dynamo's to find, whatever compiles the graph.
    files = ("pipelines/ddpm/pipeline_ddpm.py", "models/transformers/pixart_transformer_2d.py")
    src = installed_diffusers()
    paths = tuple(src / f for f in files)
    changes = rewrite_copy(src, tmp_path, select=("DIF003", "DIF004"), paths=paths, cache_dir=scan_cache)
    assert changes.changed_files == sorted(files)
    checks = {"DDPMPipeline": ["fullgraph"], "PixArtTransformer2DModel": ["repeated_blocks"]}
    sides = {}
    for tree in ("original", "rewritten"):
        package = str(getattr(changes, tree))
        keep = tree == "rewritten"
        request = WorkerRequest(
            package,
            "emu",
            list(checks),
            str(tmp_path / tree),
            checks=checks,
            compile_backend="eager",
            keep_bytecode=keep,
        )
        sides[tree] = run_tree(request, zygote=zygote)
        # The worker wrote the bytecode of the modules it imported into the kept copy, and only there.
        compiled = {path.name.split(".")[0] for path in Path(package).rglob("__pycache__/*.pyc")}
        assert ({"__init__", "pipeline_ddpm", "pixart_transformer_2d"} <= compiled) is keep, compiled
    (ddpm_before, pixart_before), (ddpm_after, pixart_after) = sides["original"], sides["rewritten"]
    # `self.unet(image, t).sample` makes the compiled UNet build its output dataclass: a graph break.
    assert ddpm_before["compile"]["fullgraph"] == {
        "status": "failed",
        "detail": "Unsupported: Unexpected type in sourceless builder",
    }
    assert (ddpm_after["compile"]["fullgraph"]["status"], ddpm_after["compile"]["fullgraph"]["max_abs_diff"]) == (
        "passed",
        0.0,
    )
    assert pixart_before["compile"]["repeated_blocks"]["detail"].startswith(
        "ValueError: `_repeated_blocks` attribute is empty."
    )
    assert pixart_after["compile"]["repeated_blocks"]["status"] == "passed"
