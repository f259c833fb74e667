"""DIF004: a model's reads of its own methods are opt-in, and one callee's reads in a function share one verdict."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from release_files import installed_copy

from codemods.engine.entry import Mode, RunOptions, run
from codemods.project.config import ConfigError
from codemods.project.index import installed_diffusers

AUTOENCODER = "models/autoencoders/autoencoder_kl.py"


def _run(path: Path, mode: Mode = Mode.CHECK):
    return run(RunOptions(context=installed_diffusers(), paths=(path,), mode=mode, select=("DIF004",), jobs=1))


def _opt_in(directory: Path, *names: str) -> None:
    quoted = ", ".join(f'"{name}"' for name in names)
    (directory / "pyproject.toml").write_text(f"[tool.codemod]\nopt-in = [{quoted}]\n")


def test_a_model_reading_its_own_methods_is_reported_without_a_fix(tmp_path: Path) -> None:
    path = installed_copy(AUTOENCODER, tmp_path)

    findings = _run(path).findings

    lines = path.read_text().splitlines()
    assert [lines[f.line - 1].strip() for f in findings] == [
        "decoded_slices = [self._decode(z_slice).sample for z_slice in z.split(1)]",
        "decoded = self._decode(z).sample",
        "dec = self.decode(z).sample",
    ]
    assert all(f.fix is None and 'opt-in = ["DIF004-self-calls"]' in f.not_fixed_reason for f in findings)


def test_opting_in_fixes_a_models_reads_of_its_own_methods(tmp_path: Path) -> None:
    path = installed_copy(AUTOENCODER, tmp_path)
    _opt_in(tmp_path, "DIF004-self-calls")

    result = _run(path, Mode.WRITE)

    assert [f.fixed for f in result.findings] == [True, True, True]
    text = path.read_text()
    assert "decoded = self._decode(z, return_dict=False)[0]" in text
    assert "dec = self.decode(z, return_dict=False)[0]" in text


def test_an_unknown_opt_in_is_a_configuration_error(tmp_path: Path) -> None:
    path = installed_copy(AUTOENCODER, tmp_path)
    _opt_in(tmp_path, "DIF004-models")

    with pytest.raises(ConfigError, match=r"^unknown opt-in: DIF004-models \(known: DIF003-turned-on-tests, DIF004-self-calls\)$"):
        _run(path)


def test_a_read_the_proof_cannot_cover_takes_the_functions_other_reads_of_that_callee_with_it(tmp_path: Path) -> None:
    # `self.model(x, True)` passes `return_dict` by position: no keyword can be added, so no proof;
    # the plain read of the same callee beside it is left as it is too.
    path = tmp_path / "pipeline.py"
    path.write_text(
        textwrap.dedent(
            """
            class Model:
                def forward(self, x, return_dict: bool = True):
                    if not return_dict:
                        return (x,)
                    return Output(sample=x)


            class Pipe:
                def __init__(self, model: Model):
                    self.register_modules(model=model)

                def __call__(self, x):
                    first = self.model(x).sample
                    second = self.model(x, True).sample
                    return first, second

                def once(self, x):
                    return self.model(x).sample
            """
        )
    )

    findings = _run(path).findings

    assert [(f.line, f.fix is not None) for f in findings] == [(19, True)]


_TWO_FORMS = """
class TupleModel:
    def forward(self, x, return_dict: bool = True):
        if not return_dict:
            return (x,)
        return Output(sample=x)


class BareModel:
    def forward(self, x, return_dict: bool = True):
        if not return_dict:
            return x
        return Output(sample=x)


class Pipe:
    def __init__(self, model: {annotation}):
        self.register_modules(model=model)

    def __call__(self, x):
        return (self.model(x, return_dict=True)).sample
"""


def test_a_callee_returning_the_value_itself_is_read_without_an_index(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.py"
    path.write_text(_TWO_FORMS.format(annotation="BareModel"))

    result = _run(path, Mode.WRITE)

    assert [(f.message, f.fixed) for f in result.findings] == [
        ("`.sample` read off `self.model(...)` builds an output dataclass; pass `return_dict=False`", True)
    ]
    assert path.read_text().splitlines()[-1] == "        return (self.model(x, return_dict=False))"


def test_a_callee_that_may_return_either_form_is_reported_without_a_fix(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.py"
    path.write_text(_TWO_FORMS.format(annotation="TupleModel | BareModel"))

    findings = _run(path).findings

    assert [(f.fix, f.not_fixed_reason) for f in findings] == [
        (None, "the classes the callee may be return a tuple or the value itself under `return_dict=False`")
    ]


_STEP_KWARGS = """
class Scheduler:
    def step(self, x, t, sample, eta=0.0, return_dict: bool = True):
        if not return_dict:
            return (x,)
        return Output(prev_sample=x)


class Pipe:
    def __init__(self, scheduler: Scheduler):
        self.register_modules(scheduler=scheduler)

    def __call__(self, x, t, latents, eta):
        extra_step_kwargs = {{"eta": eta}}
        {store}
        return self.scheduler.step(x, t, latents, **extra_step_kwargs).prev_sample
"""


def test_a_forwarded_dict_of_proved_keys_gets_return_dict_after_it(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.py"
    path.write_text(_STEP_KWARGS.format(store="pass"))

    result = _run(path, Mode.WRITE)

    assert [f.fixed for f in result.findings] == [True]
    assert path.read_text().splitlines()[-1] == (
        "        return self.scheduler.step(x, t, latents, **extra_step_kwargs, return_dict=False)[0]"
    )


def test_a_forwarded_dict_that_stores_return_dict_is_reported_without_a_fix(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.py"
    path.write_text(_STEP_KWARGS.format(store='extra_step_kwargs["return_dict"] = True'))

    findings = _run(path).findings

    assert [(f.fix, f.not_fixed_reason) for f in findings] == [
        (None, "the call forwards `**extra_step_kwargs`, which carries `return_dict`")
    ]
