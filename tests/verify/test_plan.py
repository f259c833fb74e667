"""Targets run when a file they reach changed, and get credit only for rewrites they executed."""

from __future__ import annotations

from pathlib import Path

from bot.verify.planning.changes import Rewrite
from bot.verify.planning.plan import LoopShapes, TreeMap, exercised, targets_to_run
from bot.verify.targets import TargetSpec, all_targets, get_target


def _tree(root: Path) -> Path:
    package = root / "diffusers"
    (package / "models" / "transformers").mkdir(parents=True)
    (package / "utils").mkdir()
    for init in (package, package / "models", package / "models" / "transformers", package / "utils"):
        (init / "__init__.py").write_text("")
    (package / "models" / "embeddings.py").write_text("class Rope:\n    pass\n")
    (package / "utils" / "torch_utils.py").write_text("def helper():\n    pass\n")
    (package / "utils" / "dummy_pt_objects.py").write_text("class Model:\n    pass\n")
    (package / "models" / "transformers" / "model.py").write_text(
        "from ..embeddings import Rope\nfrom ...utils import torch_utils\n\n\nclass Model:\n    pass\n"
    )
    return package


def _spec(*classes: str) -> TargetSpec:
    return TargetSpec("T", "model", classes, "one forward", lambda device: None)


def test_a_target_reaches_its_classes_files_and_what_they_import(tmp_path: Path) -> None:
    tree = TreeMap(_tree(tmp_path))
    assert tree.files_of(_spec("Model")) == {
        "models/transformers/model.py",
        "models/embeddings.py",
        "utils/__init__.py",
        "utils/torch_utils.py",
    }


def test_only_targets_that_reach_a_changed_file_run(tmp_path: Path) -> None:
    tree = TreeMap(_tree(tmp_path))
    model, other = _spec("Model"), _spec("Elsewhere")
    assert targets_to_run([model, other], tree, {"models/embeddings.py"}) == [model]


def test_a_target_runs_for_each_file_it_reaches_however_its_import_names_it(tmp_path: Path) -> None:
    transformers = tmp_path / "diffusers" / "models" / "transformers"
    transformers.mkdir(parents=True)
    for name in ("__init__.py", "models/__init__.py", "models/transformers/__init__.py", "models/other.py"):
        (tmp_path / "diffusers" / name).write_text("")
    (transformers.parent / "transformers.py").write_text("")  # beside the directory: `from . import x` may name it
    (transformers / "attention.py").write_text("")
    (transformers / "block.py").write_text("from . import attention\n\n\nclass Block:\n    pass\n")
    tree, block = TreeMap(tmp_path / "diffusers"), _spec("Block")
    # Its own file; the module it imports, by name; the package and the module its `from . import` may mean, unnamed.
    reached = ("models/transformers/block.py", "models/transformers/attention.py", "models/transformers/__init__.py")
    for changed in (*reached, "models/transformers.py"):
        assert targets_to_run([block], tree, {changed}) == [block], changed
    for changed in ("models/other.py", "models/__init__.py"):
        assert targets_to_run([block], tree, {changed}) == [], changed


def _rewrite(lines: set[int], class_level: bool = False) -> Rewrite:
    return Rewrite("m.py", min(lines), max(lines), ("DIF001",), "Rope", "Rope.forward", frozenset(lines), class_level)


def test_a_rewrite_is_exercised_when_one_of_its_lines_ran() -> None:
    assert exercised(_rewrite({10, 11}), {"m.py": [3, 11]}, {})
    assert not exercised(_rewrite({10, 11}), {"m.py": [3, 12]}, {"m.py": ["Rope.forward"]})


def test_a_class_attribute_is_exercised_when_a_method_of_its_class_ran() -> None:
    assert exercised(_rewrite({5}, class_level=True), {}, {"m.py": ["Rope.forward"]})
    assert not exercised(_rewrite({5}, class_level=True), {}, {"m.py": ["Other.forward"]})


def test_registry_names_are_unique_and_every_spec_names_its_classes() -> None:
    specs = all_targets()
    assert len({spec.name for spec in specs}) == len(specs)
    assert all(spec.classes and spec.exercises for spec in specs)
    assert get_target("NucleusMoEImageTransformer2DModel").kind == "model"


def test_the_registry_imports_neither_torch_nor_diffusers() -> None:
    import subprocess
    import sys

    code = (
        "import sys, bot.verify, bot.verify.targets as t; t.all_targets(); "
        "print('torch' in sys.modules, 'diffusers' in sys.modules)"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert completed.stdout.split() == ["False", "False"]


SKIPPING_PIPELINE = """class Pipe:
    def __call__(self, skip_threshold=None):
        self.scheduler.set_begin_index(0)
        for i, t in enumerate(self.scheduler.timesteps):
            if skip_threshold is not None and t > skip_threshold:
                continue
            latents = self.scheduler.step(n, t, latents)[0]
        return latents
"""


def _loop_shapes(tmp_path: Path) -> tuple[LoopShapes, Rewrite]:
    (tmp_path / "pipe.py").write_text(SKIPPING_PIPELINE)
    insertion = Rewrite("pipe.py", 3, 3, ("DIF005",), "Pipe", "Pipe.__call__", frozenset({3}), False)
    return LoopShapes(tmp_path), insertion


def test_a_dif005_run_that_never_took_the_skip_is_held_back_with_the_argument(tmp_path: Path) -> None:
    shapes, insertion = _loop_shapes(tmp_path)
    ran = {"pipe.py": [3, 4, 5, 7, 8]}
    assert shapes.held_back([insertion], ran, {}) == {"pipe.py:3": "skip_threshold (line 6)"}


def test_a_dif005_run_that_took_the_skip_is_credited(tmp_path: Path) -> None:
    shapes, insertion = _loop_shapes(tmp_path)
    assert shapes.held_back([insertion], {"pipe.py": [3, 4, 5, 6, 7, 8]}, {}) == {}


def test_other_rules_and_unexercised_rewrites_are_never_held_back(tmp_path: Path) -> None:
    shapes, insertion = _loop_shapes(tmp_path)
    other_rule = Rewrite("pipe.py", 3, 3, ("DIF004",), "Pipe", "Pipe.__call__", frozenset({3}), False)
    assert shapes.held_back([other_rule], {"pipe.py": [3, 4]}, {}) == {}
    assert shapes.held_back([insertion], {"pipe.py": [4]}, {}) == {}
