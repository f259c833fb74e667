"""DIF003 in a checkout whose tests are gated on `_repeated_blocks`: the fix waits for a run that runs them.

The checkout is the installed diffusers' source as `src/diffusers` and a small `tests/` of ours in the
shape of diffusers main's: the compile mixin's `test_torch_compile_repeated_blocks` skips unless the
model sets `_repeated_blocks`, and SD3's test module takes the mixin (on main, adding the attribute to
SD3 turns on two tests that fail at `recompile_limit=1`). PixArt's tests do not take it.
"""

from __future__ import annotations

import gc
import re
import shutil
from pathlib import Path

import pytest
from cli_runner import codemod
from installed_trees import copy_installed_diffusers

from codemods.engine.entry import Mode, RunOptions, RunResult, run
from codemods.project.files import FileMemo, uncached
from codemods.project.gated_tests import CheckoutGates, read_gates_ahead
from codemods.project.index import installed_diffusers
from codemods.project.test_modules import TEST_MODULE, CheckoutTestModules, module_words
from codemods.rules.missing_repeated_blocks import MissingRepeatedBlocks

COMPILE_MIXIN = """\
import pytest


class TorchCompileTesterMixin:
    def test_torch_compile_recompilation(self):
        pass

    def test_torch_compile_repeated_blocks(self, recompile_limit=1):
        if not self.model_class._repeated_blocks:
            pytest.skip("Skipping test as the model class doesn't have `_repeated_blocks` set.")
"""

SD3_TESTS = """\
from diffusers import SD3Transformer2DModel

from ..testing_utils import TorchCompileTesterMixin


class SD3TransformerTesterConfig:
    @property
    def model_class(self):
        return SD3Transformer2DModel


class TestSD3Transformer(SD3TransformerTesterConfig):
    def test_output(self):
        pass


class TestSD3TransformerCompile(SD3TransformerTesterConfig, TorchCompileTesterMixin):
    pass
"""

PIXART_TESTS = """\
from diffusers import PixArtTransformer2DModel


class PixArtTransformer2DModelTests:
    model_class = PixArtTransformer2DModel

    def test_output(self):
        pass
"""

SD3 = "models/transformers/transformer_sd3.py"
PIXART = "models/transformers/pixart_transformer_2d.py"
TURNED_ON = "tests/models/transformers/test_models_transformer_sd3.py::TestSD3TransformerCompile::test_torch_compile_repeated_blocks"


CHECKOUT_TESTS = {
    "tests/__init__.py": "",
    "tests/models/__init__.py": "",
    "tests/models/testing_utils/__init__.py": "from .compile import TorchCompileTesterMixin\n",
    "tests/models/testing_utils/compile.py": COMPILE_MIXIN,
    "tests/models/transformers/__init__.py": "",
    "tests/models/transformers/test_models_transformer_sd3.py": SD3_TESTS,
    "tests/models/transformers/test_models_transformer_pixart.py": PIXART_TESTS,
}


def _write_tests(root: Path) -> None:
    for relative, text in CHECKOUT_TESTS.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text)


def _checkout(root: Path) -> Path:
    copy_installed_diffusers(root / "src")
    _write_tests(root)
    return root


def _run(checkout: Path, opt_in: tuple[str, ...] = (), cache: Path | None = None):
    package = checkout / "src" / "diffusers"
    options = RunOptions(paths=(package / SD3, package / PIXART), mode=Mode.WRITE, select=("DIF003",), opt_in=opt_in, cache_dir=cache)
    return run(options)


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, RunResult]:
    """A run without opt-ins on a fresh checkout: the checkout, SD3's model file before the run, the result.

    Its cache is where `codemod` in the checkout keeps one (tests/cli_runner.py): a check there afterwards reads
    back the facts of the pipelines that run SD3 per step, which a cold DIF003 run reads from 500 files."""
    checkout = _checkout(tmp_path_factory.mktemp("plain-run"))
    before = (checkout / "src" / "diffusers" / SD3).read_text()
    return checkout, before, _run(checkout, cache=checkout / ".cache")


def test_a_model_whose_checkout_tests_the_fix_turns_on_is_reported_without_a_fix(
    plain_run: tuple[Path, str, RunResult],
) -> None:
    checkout, before, result = plain_run
    sd3 = next(f for f in result.findings if f.path.endswith(SD3))
    assert (sd3.fixed, sd3.fix) == (False, None)
    assert f"it turns on tests that never ran for this model ({TURNED_ON})" in sd3.not_fixed_reason
    assert "--opt-in DIF003-turned-on-tests" in sd3.not_fixed_reason
    assert (checkout / "src" / "diffusers" / SD3).read_text() == before


def test_a_model_whose_tests_are_not_gated_on_the_attribute_is_still_fixed(
    plain_run: tuple[Path, str, RunResult],
) -> None:
    _, _, result = plain_run
    assert [Path(path).name for path in result.changes] == ["pixart_transformer_2d.py"]


@pytest.fixture(scope="module")
def opted_in_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run that opts in on a fresh checkout: the checkout. Its cache, where `codemod` in it keeps one, has the scans
    a check that opts in reads back (the opt-ins are part of every scan's key)."""
    checkout = _checkout(tmp_path_factory.mktemp("opted-in-run"))
    _run(checkout, opt_in=("DIF003-turned-on-tests",), cache=checkout / ".cache")
    return checkout


def test_a_run_that_opts_in_fixes_the_model_whose_tests_it_turns_on(opted_in_run: Path) -> None:
    sd3 = (opted_in_run / "src" / "diffusers" / SD3).read_text()
    assert '    _repeated_blocks = ["JointTransformerBlock"]\n' in sd3


def test_the_command_line_opts_in_and_names_an_unknown_opt_in_in_one_line(
    plain_run: tuple[Path, str, RunResult], opted_in_run: Path
) -> None:
    checkout, _, _ = plain_run  # checked, never written: SD3 as it was, PixArt as the plain run fixed it
    sd3 = f"src/diffusers/{SD3}"
    plain = codemod("run", "--check", "--select", "DIF003", sd3, cwd=checkout)
    assert plain.stderr.startswith("1 finding(s); 1 file(s) scanned."), plain.stderr
    assert "it turns on tests that never ran for this model" in plain.stdout
    # With the cache of the run that opted in on a copy of the same checkout, as a user's second run would have it.
    opt_in = ("--opt-in", "DIF003-turned-on-tests")
    opted = codemod("run", "--check", "--select", "DIF003", *opt_in, sd3, cwd=checkout, cache=opted_in_run / ".cache")
    assert "1 finding(s); 1 fixable" in opted.stderr, opted.stderr
    unknown = codemod("run", "--check", "--opt-in", "DIF003-tests", sd3, cwd=checkout)
    assert unknown.returncode == 2
    assert unknown.stderr.strip().splitlines() == [
        "codemod: error: unknown opt-in: DIF003-tests (known: DIF003-turned-on-tests, DIF004-self-calls)"
    ]


def test_a_class_deriving_from_the_mixin_in_another_module_holds_its_gated_test(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    (tests / "models").mkdir(parents=True)
    (tests / "models" / "compile.py").write_text(COMPILE_MIXIN)
    (tests / "models" / "limits.py").write_text(
        "from .compile import TorchCompileTesterMixin\n\n\nclass LenientCompileMixin(TorchCompileTesterMixin):\n"
        "    pass\n"
    )
    (tests / "models" / "test_tiny.py").write_text(
        "from diffusers import TinyModel\n\nfrom .limits import LenientCompileMixin\n\n\n"
        "class TestTinyCompile(LenientCompileMixin):\n    model_class = TinyModel\n"
    )
    assert CheckoutGates(CheckoutTestModules(tests)).turned_on("TinyModel", {"_repeated_blocks"}) == [
        "tests/models/test_tiny.py::TestTinyCompile::test_torch_compile_repeated_blocks"
    ]


def test_a_run_scanning_in_workers_reads_the_tests_once_while_they_scan_and_a_serial_run_never(
    plain_run: tuple[Path, str, RunResult], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read while the workers scan, as soon as a scan shows a new list (which resolving asks of the tests), and
    asked no more once read; a run scanning in its own process reads them when resolving, if asked to."""
    checkout, _, _ = plain_run
    read: list[bool] = []
    read_ahead = MissingRepeatedBlocks.read_ahead
    monkeypatch.setattr(
        MissingRepeatedBlocks, "read_ahead", lambda rule, *args: read.append(read_ahead(rule, *args)) or read[-1]
    )
    controlnets = checkout / "src" / "diffusers" / "models" / "controlnets"

    def check(jobs: int) -> list[tuple]:
        cache = tmp_path / f"cache-{jobs}"
        shutil.copytree(checkout / ".cache", cache)  # the pipelines' facts DIF003 resolves with; no controlnet's scan
        result = run(RunOptions(paths=(controlnets,), mode=Mode.CHECK, select=("DIF003",), jobs=jobs, cache_dir=cache))
        return [(f.path, f.message, f.not_fixed_reason, f.fix) for f in result.findings]

    serial = check(1)
    assert read == []
    assert check(2) == serial
    assert read.count(True) == 1 and read[-1]  # asked of each finding until one read, then no more


def _memo_into(kept: dict[tuple[str, str], object]) -> FileMemo:
    def memo(path: str, kind: str, compute):
        if (path, kind) not in kept:
            kept[path, kind] = uncached(path, kind, compute)
        return kept[path, kind]

    return memo


def test_reading_ahead_reads_all_that_the_gates_ask_of_for_any_model(tmp_path: Path) -> None:
    _write_tests(tmp_path)
    model = tmp_path / "src" / "diffusers" / SD3
    for relative in ("__init__.py", "models/__init__.py", "models/transformers/__init__.py", SD3):
        (tmp_path / "src" / "diffusers" / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "src" / "diffusers" / relative).write_text("")
    kept: dict[tuple[str, str], object] = {}
    assert read_gates_ahead(str(model), "_repeated_blocks", _memo_into(kept))
    # The gates then only look up what was read ahead (a KeyError: what it had not read).
    gates = CheckoutGates(CheckoutTestModules(tmp_path / "tests", lambda path, kind, _: kept[path, kind]))
    assert gates.turned_on("SD3Transformer2DModel", {"_repeated_blocks"}) == [TURNED_ON]
    assert gates.turned_on("PixArtTransformer2DModel", {"_repeated_blocks"}) == []
    shutil.rmtree(tmp_path / "tests")
    assert not read_gates_ahead(str(model), "_repeated_blocks", _memo_into({}))  # no tests/: nothing to read


def test_reading_the_test_modules_leaves_no_reference_cycles(tmp_path: Path) -> None:
    # A run keeps its cycle collector off (codemods/engine/entry.py): a cycle kept each module's whole tree alive.
    _write_tests(tmp_path)
    CheckoutGates(CheckoutTestModules(tmp_path / "tests")).turned_on("SD3Transformer2DModel", {"_repeated_blocks"})
    gc.collect()  # what is built once per process (imports, compiled patterns) is built above
    gc.disable()
    try:
        gates = CheckoutGates(CheckoutTestModules(tmp_path / "tests"))
        assert gates.turned_on("SD3Transformer2DModel", {"_repeated_blocks"}) == [TURNED_ON]
        del gates
        assert gc.collect() == 0
    finally:
        gc.enable()


def _recording_gates(root: Path) -> tuple[CheckoutGates, list[str]]:
    """Gates over `root`'s tests/, and the checkout-relative paths of the modules they parse, as they parse them."""
    read: list[str] = []

    def recording(path: str, kind: str, compute):
        if kind == TEST_MODULE:
            read.append(Path(path).relative_to(root).as_posix())
        return uncached(path, kind, compute)

    return CheckoutGates(CheckoutTestModules(root / "tests", recording)), read


def test_the_gates_read_only_the_test_modules_that_name_what_they_ask_of(tmp_path: Path) -> None:
    _write_tests(tmp_path)
    gates, read = _recording_gates(tmp_path)
    assert gates.turned_on("SD3Transformer2DModel", {"_repeated_blocks"}) == [TURNED_ON]
    assert sorted(read) == [  # the mixin naming the attribute, a module naming the mixin, SD3's tests
        "tests/models/testing_utils/__init__.py",
        "tests/models/testing_utils/compile.py",
        "tests/models/transformers/test_models_transformer_sd3.py",
    ]


def test_a_module_naming_the_model_but_no_holder_of_a_gated_test_is_not_read(tmp_path: Path) -> None:
    _write_tests(tmp_path)
    gates, read = _recording_gates(tmp_path)
    assert gates.turned_on("PixArtTransformer2DModel", {"_repeated_blocks"}) == []
    assert "tests/models/transformers/test_models_transformer_pixart.py" not in read


def test_a_modules_words_are_what_a_word_regex_finds() -> None:
    """An ASCII text's words are split in C (every other character a space): `\\w+`'s, as in any text (every ASCII
    character, a quarter of diffusers)."""
    texts = [path.read_text(encoding="utf-8") for path in sorted(installed_diffusers().rglob("*.py"))[::4]]
    texts += ["".join(map(chr, range(128))) + " a_1 b2", "caf\u00e9 na\u00efve_x \u00b2 \u0661\u0662"]
    for text in texts:
        assert module_words(text) == frozenset(re.findall(r"\w+", text))
