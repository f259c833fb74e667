"""The keys a `**name` dict can hold, proved from where the function (or its class's own method) builds it."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.values.unpacked_keys import unpacked_keys

_PIPELINE = """
class Pipe:
    def prepare_extra_step_kwargs(self, generator, eta):
        extra_step_kwargs = {{}}
        if accepts_eta:
            extra_step_kwargs["eta"] = eta
        if accepts_generator:
            extra_step_kwargs["generator"] = generator
        return extra_step_kwargs

    def __call__(self, generator, eta, options):
{body}
        return self.scheduler.step(x, t, latents, **extra_step_kwargs).prev_sample
"""


def _keys(body: str) -> frozenset[str] | None:
    module = ast.parse(_PIPELINE.format(body=textwrap.indent(textwrap.dedent(body), " " * 8)))
    owner = module.body[0]
    call = owner.body[1]
    return unpacked_keys("extra_step_kwargs", call, owner)


def test_a_dict_from_the_classs_own_prepare_method_holds_the_keys_it_stores() -> None:
    assert _keys("extra_step_kwargs = self.prepare_extra_step_kwargs(generator, eta)") == {"eta", "generator"}


def test_a_local_dict_display_and_its_constant_key_stores_are_the_keys() -> None:
    assert _keys('extra_step_kwargs = {"eta": eta}\nextra_step_kwargs["generator"] = generator') == {"eta", "generator"}


def test_a_stored_return_dict_key_is_one_of_the_keys() -> None:
    assert _keys('extra_step_kwargs = {}\nextra_step_kwargs["return_dict"] = True') == {"return_dict"}


def test_a_dict_handed_to_another_call_is_unproved() -> None:
    assert _keys("extra_step_kwargs = {}\nself.add_options(extra_step_kwargs)") is None


def test_a_key_computed_at_run_time_is_unproved() -> None:
    assert _keys("extra_step_kwargs = {}\nfor key in options:\n    extra_step_kwargs[key] = options[key]") is None


def test_a_dict_merged_from_another_mapping_is_unproved() -> None:
    assert _keys("extra_step_kwargs = {**options}") is None


def test_a_method_the_class_does_not_define_is_unproved() -> None:
    assert _keys("extra_step_kwargs = self.prepare_inherited_kwargs(generator, eta)") is None


def test_a_parameter_is_unproved() -> None:
    module = ast.parse(
        "def run(scheduler, extra_step_kwargs):\n    return scheduler.step(**extra_step_kwargs).prev_sample\n"
    )
    assert unpacked_keys("extra_step_kwargs", module.body[0], None) is None
