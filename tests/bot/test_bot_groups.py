"""Fix groups, fingerprints and the etiquette decisions, on small inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
from diffusers_tree import tree_files

from bot.github.etiquette import Action, KnownPulls, decide
from bot.github.pulls import KnownPull, is_autoclosed, parse_fingerprint
from bot.groups import FixGroup, family, find_groups, fingerprint

BEFORE = "import torch\n\n\ndef f(unet, x):\n    return unet(x).sample\n"
AFTER = "import torch\n\n\ndef f(unet, x):\n    return unet(x, return_dict=False)[0]\n"
PATH = "src/diffusers/pipelines/flux/pipeline_flux.py"


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("pipelines/flux/pipeline_flux.py", "pipelines/flux"),
        ("pipelines/flux/pipeline_flux_img2img.py", "pipelines/flux"),
        ("pipelines/deprecated/pndm/pipeline_pndm.py", "pipelines/deprecated/pndm"),
        ("pipelines/pipeline_utils.py", "pipelines/pipeline_utils"),
        ("models/transformers/transformer_flux.py", "models/transformers/transformer_flux"),
        ("schedulers/scheduling_ddim.py", "schedulers/scheduling_ddim"),
        ("training_utils.py", "training_utils"),
    ],
)
def test_family_is_the_pipeline_folder_or_the_module(path: str, expected: str) -> None:
    assert family(path) == expected


def test_fingerprint_ignores_where_the_snippet_moved() -> None:
    moved = ("# a new header line\n" + BEFORE, "# a new header line\n" + AFTER)

    assert fingerprint("DIF004", {PATH: (BEFORE, AFTER)}) == fingerprint("DIF004", {PATH: moved})


def test_fingerprint_changes_with_the_rewrite_the_file_or_the_rule() -> None:
    original = fingerprint("DIF004", {PATH: (BEFORE, AFTER)})

    assert original.startswith("dif004-") and len(original) == len("dif004-") + 16
    assert fingerprint("DIF004", {PATH: (BEFORE, AFTER.replace("[0]", "[0] "))}) != original
    assert fingerprint("DIF004", {PATH.replace("flux", "sana"): (BEFORE, AFTER)}) != original
    assert fingerprint("DIF001", {PATH: (BEFORE, AFTER)}) != original


def test_group_names_its_branch_after_rule_and_family() -> None:
    group = FixGroup("DIF004", ("pipelines/t2i_adapter",), {PATH: (BEFORE, AFTER)}, ())

    assert (group.id, group.branch) == ("dif004-pipelines-t2i-adapter", "codemod/dif004/pipelines-t2i-adapter")


def _grouping(root: Path, **tree: str):
    for path, text in tree_files(**tree).items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    return find_groups(root, ("DIF004",))


def test_a_models_reads_of_its_own_methods_are_report_only_unless_the_checkout_opts_in(tmp_path: Path) -> None:
    autoencoder = "src/diffusers/models/autoencoders/autoencoder_kl.py"

    default = _grouping(tmp_path / "default", pyproject='[project]\nname = "diffusers"\n')
    opted_in = _grouping(tmp_path / "opted-in")

    assert not any(autoencoder in g.files for g in default.groups)
    assert [r.reason.split(":")[0] for r in default.report_only if r.path == autoencoder] == [
        "a model reading its own method's output"
    ] * 2
    assert any(autoencoder in g.files for g in opted_in.groups)


def test_fingerprint_comment_is_read_back_from_a_body() -> None:
    body = "text\n\n<!-- codemod-fingerprint: dif004-0123456789abcdef rule=DIF004 files=a.py -->\n"

    assert parse_fingerprint(body) == "dif004-0123456789abcdef"
    assert parse_fingerprint("no marker") is None


GROUP = FixGroup("DIF004", ("pipelines/flux",), {PATH: (BEFORE, AFTER)}, ())


def pull(
    number: int,
    state: str = "open",
    merged: bool = False,
    head: str | None = GROUP.branch,
    fp: str | None = GROUP.fingerprint,
    autoclosed: bool = False,
) -> KnownPull:
    return KnownPull(number, f"https://x/pull/{number}", state, merged, head, "codemod-bot", fp, autoclosed=autoclosed)


@pytest.mark.parametrize(
    ("pulls", "action", "reason"),
    [
        ([], Action.OPEN, ""),
        ([pull(7)], Action.UNCHANGED, "#7 already holds this fix"),
        ([pull(7, head="codemod/dif004/other")], Action.SKIP, "already proposed in #7 (branch codemod/dif004/other)"),
        ([pull(7, "closed", head=None)], Action.SKIP, "#7 was closed without merging; not reopened"),
        ([pull(7, "closed", merged=True)], Action.SKIP, "already merged in #7"),
        ([pull(7, fp="dif004-older")], Action.UPDATE, "#7 holds an older version of this fix"),
        (
            [pull(7, "closed", fp="dif004-older")],
            Action.SKIP,
            "#7 (DIF004 in pipelines/flux) was closed without merging; not recreated",
        ),
        ([pull(7, "closed", merged=True, fp="dif004-older")], Action.OPEN, ""),
        ([pull(7, "closed", autoclosed=True)], Action.OPEN, ""),
        ([pull(7, "closed", fp="dif004-older", autoclosed=True)], Action.OPEN, ""),
    ],
    ids=[
        "new",
        "open-same",
        "open-elsewhere",
        "closed-same",
        "merged-same",
        "open-older",
        "closed-older",
        "merged-older",
        "closed-by-the-bot-same",
        "closed-by-the-bot-older",
    ],
)
def test_decision_from_the_pull_requests_github_holds(pulls: list[KnownPull], action: Action, reason: str) -> None:
    decision = decide(GROUP, KnownPulls.merge(pulls))

    assert (decision.action, decision.reason) == (action, reason)


def test_exact_listing_wins_over_a_search_hit_for_the_same_pull() -> None:
    merged = KnownPulls.merge([pull(7, head=None)], [pull(7)])

    assert merged.by_number[7].head_ref == GROUP.branch


def test_a_pr_body_written_before_rewrites_were_counted_is_still_recognised_and_declined() -> None:
    body = f"...\n<!-- codemod-fingerprint: {GROUP.fingerprint} rule=DIF004 files={','.join(sorted(GROUP.files))} -->\n"

    closed = pull(7, "closed", fp=parse_fingerprint(body), autoclosed=is_autoclosed(body))

    assert decide(GROUP, KnownPulls.merge([closed])).reason == "#7 was closed without merging; not reopened"
