"""`# Copied from` comments are read where diffusers writes them: after a blank line, above a decorator."""

from __future__ import annotations

import ast

from codemods.project.facts import extract_facts

SOURCE = """\
class DDIMPipeline:
    x = 1

    # Copied from diffusers.pipelines.pndm.pipeline_pndm.PNDMPipeline.__call__ with PNDM->DDIM
    @torch.no_grad()
    def __call__(self):
        pass

    # Copied from diffusers.pipelines.pndm.pipeline_pndm.PNDMPipeline.step
    def step(self):
        pass
"""


def test_copy_comment_after_a_blank_line_marks_the_definition_below_it() -> None:
    facts = extract_facts("p.py", "diffusers.pipelines.ddim.p", SOURCE, ast.parse(SOURCE))

    assert [(c.qualname, c.source, c.replacements, c.comment_line) for c in facts.copies] == [
        ("DDIMPipeline.__call__", "pipelines.pndm.pipeline_pndm.PNDMPipeline.__call__", "with PNDM->DDIM", 4),
        ("DDIMPipeline.step", "pipelines.pndm.pipeline_pndm.PNDMPipeline.step", "", 9),
    ]


def test_a_slash_in_the_cited_source_separates_modules_as_check_copies_reads_it() -> None:
    source = "# Copied from diffusers.pipelines.deprecated.t2v/pipeline_t2v.T2V.decode_latents\ndef decode_latents():\n    pass\n"
    facts = extract_facts("p.py", "diffusers.pipelines.a.p", source, ast.parse(source))

    assert [c.source for c in facts.copies] == ["pipelines.deprecated.t2v.pipeline_t2v.T2V.decode_latents"]
