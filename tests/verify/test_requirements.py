"""Which of a checkout's requirements go into its environment, and which requirement a failed pip step names."""

from __future__ import annotations

import pytest

from bot.verify.checkout.requirements import RequirementFailed, failing_requirement, last_error, split_requirements

# As pip reports diffusers main's metadata (requires_dist), cut to a few of each kind.
REQUIRES_DIST = [
    "huggingface-hub<2.0,>=1.23.0",
    "httpx<1.0.0",
    'ruff==0.9.10; extra == "quality"',
    'requests-mock==1.10.0; extra == "test"',
    'torchvision; extra == "test"',
    'torch>=2.6; extra == "torch"',
    'accelerate>=0.31.0; extra == "torch"',
    'bitsandbytes>=0.43.3; extra == "bitsandbytes"',
    'requests-mock==1.10.0; extra == "dev"',
]


def test_runtime_requirements_and_the_torch_and_test_extras_are_kept_other_extras_dropped() -> None:
    wanted = split_requirements(REQUIRES_DIST)
    assert [str(r) for r in wanted.others] == [
        "huggingface-hub<2.0,>=1.23.0",
        "httpx<1.0.0",
        "requests-mock==1.10.0",
        "accelerate>=0.31.0",
        "pytest",
    ]


def test_torch_and_torch_build_bound_packages_are_set_apart() -> None:
    wanted = split_requirements(REQUIRES_DIST)
    assert ([str(r) for r in wanted.torch], [str(r) for r in wanted.bound]) == (["torch>=2.6"], ["torchvision"])


def test_pytest_is_added_only_when_the_checkout_does_not_list_it() -> None:
    wanted = split_requirements(["numpy", 'pytest>=8; extra == "test"'])
    assert [str(r) for r in wanted.others] == ["numpy", "pytest>=8"]


def test_a_torch_pin_the_checkout_refuses_names_the_requirement() -> None:
    wanted = split_requirements(['torch>=2.20; extra == "torch"'])
    with pytest.raises(RequirementFailed, match=r"^'torch>=2.20': the checkout needs it, the torch pin is 2.13.0$"):
        wanted.check_torch("2.13.0")


def test_a_missing_distribution_is_blamed_on_the_checkouts_requirement() -> None:
    output = (
        "ERROR: Could not find a version that satisfies the requirement requests-mock==9.9 (from versions: 1.10.0)\n"
        "ERROR: No matching distribution found for requests-mock==9.9\n"
    )
    requirements = split_requirements(["requests-mock==9.9", "numpy"]).others
    assert str(failing_requirement(output, requirements)) == "requests-mock==9.9"
    assert last_error(output) == "No matching distribution found for requests-mock==9.9"


def test_a_conflict_with_the_torch_constraint_is_blamed_on_the_other_side() -> None:
    output = (
        "ERROR: Cannot install torchsde because these package versions have conflicting dependencies.\n"
        "The conflict is caused by:\n"
        "    The user requested (constraint) torch==2.13.0\n"
        "    The user requested torchsde<0.1\n"
        "ERROR: ResolutionImpossible: for help visit https://pip.pypa.io\n"
    )
    requirements = split_requirements(["torchsde<0.1"]).others
    assert str(failing_requirement(output, requirements)) == "torchsde<0.1"


def test_a_failure_in_a_dependency_of_a_requirement_names_that_dependency() -> None:
    output = "ERROR: Failed building wheel for llvmlite\n"
    assert failing_requirement(output, split_requirements(["numba"]).others) == "llvmlite"
