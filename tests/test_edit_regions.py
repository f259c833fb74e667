"""Fixes applied in the regions of a file that hold them (codemods/engine/edit_regions.py) give the text that
applying them to the whole file gives.

Real diffusers modules and real rules' edits, where a region's parse could differ from the whole file's: a
function nested in a method or in an `if`, a file indented with tabs or ending its lines with CRLF, edits in
two regions, a statement with comment lines above it (which the whole file's parse gives it), a top-level
class, and imports added to the module's import block.
"""

from __future__ import annotations

import ast
import re

import pytest

from codemods.engine import apply
from codemods.engine.apply import apply_fixes
from codemods.engine.edit_regions import RegionPlan, plan_regions
from codemods.findings import Edit, Fix, FixSafety, ImportRequest, NodeRef
from codemods.project.index import installed_diffusers
from codemods.rules import select_rules
from codemods.source import SourceFile

MARIGOLD = "pipelines/marigold/pipeline_marigold_depth.py"  # functions nested in `ensemble_depth`
WAN = "models/transformers/transformer_wan.py"  # `apply_rotary_emb` defined in an `if` of a method
MOTIF = "pipelines/motif_video/pipeline_motif_video.py"  # `# 6. Denoising loop` above the loop's `with`
AURA = "models/transformers/auraflow_transformer_2d.py"  # a comment above `class AuraFlowFeedForward`


def _text(module: str) -> str:
    root = installed_diffusers()
    assert root is not None
    return (root / module).read_text("utf-8")


def _with_tabs(text: str) -> str:
    """Each line's leading groups of four spaces as tabs (strings' lines too: still the same program's shape)."""
    tabbed = re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text)
    ast.parse(tabbed)
    return tabbed


def _node(text: str, kind: type[ast.AST], code: str) -> tuple[SourceFile, ast.AST]:
    source = SourceFile("module.py", text)
    found = [n for n in ast.walk(source.tree) if isinstance(n, kind) and ast.unparse(n).startswith(code)]
    assert len(found) == 1, f"{code!r} found {len(found)} times"
    return source, found[0]


def _first_output(text: str, code: str) -> tuple[object, Fix]:
    """DIF004's rewrite of `call(...).attribute` to `call(..., return_dict=False)[0]`, one argument a line."""
    source, node = _node(text, ast.Attribute, code)
    line = source.lines[node.lineno - 1]
    layout = (("wrap", "explode"), ("indent", line[: len(line) - len(line.lstrip())]))
    edit = Edit(source.ref(node, "Attribute"), "first_output", layout)
    return _rule("DIF004"), Fix(FixSafety.SAFE, "pass `return_dict=False`", (edit,))


def _rule(code: str) -> object:
    return next(rule for rule in select_rules((code,)))


def _both_ways(text: str, fixes: list, monkeypatch: pytest.MonkeyPatch) -> tuple[str, RegionPlan]:
    """The text fixed region by region, checked against the text fixed over the whole file, and the plan."""
    targets = [edit.target for _, fix in fixes for edit in fix.edits]
    plan = plan_regions(text, targets, any(fix.imports for _, fix in fixes))
    assert plan is not None
    in_regions = apply_fixes(text, fixes)
    with monkeypatch.context() as whole_file:
        whole_file.setattr(apply, "plan_regions", lambda *_: None)
        assert in_regions == apply_fixes(text, fixes)
    assert in_regions != text
    return in_regions, plan


def _spans(plan: RegionPlan) -> list[tuple[int, int, int]]:
    """Each region's first line, last line and depth (the `class _:` lines above it)."""
    return [(r.first_line, r.last_line, r.header.count("class _:")) for r in plan.regions]


def _line_of(text: str, code: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if line.strip().startswith(code))


def test_an_edit_in_a_nested_function_is_applied_in_its_statement_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(MARIGOLD)

    fixed, plan = _both_ways(text, [_first_output(text, "(diff ** 2).mean().sqrt().item")], monkeypatch)

    # The `for` loop of `cost_fn`, in `ensemble_depth`, in the class: three headers, and the blank line after it.
    start, after = _line_of(text, "for i, j in torch.combinations("), _line_of(text, "if regularizer_strength > 0:")
    assert _spans(plan) == [(start, after - 1, 3)]
    assert "(diff**2).mean().sqrt(\n" in fixed


def test_a_function_defined_in_an_if_is_applied_in_that_if(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(WAN)

    _, plan = _both_ways(text, [_first_output(text, "hidden_states.unflatten(-1, (-1, 2)).unbind")], monkeypatch)

    [(first, _, depth)] = _spans(plan)
    assert (text.splitlines()[first - 1].strip(), depth) == ("if rotary_emb is not None:", 2)


@pytest.mark.parametrize("layout", ["tabs", "crlf"])
def test_tabs_and_crlf_give_the_regions_the_files_indent_and_newline(
    layout: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _with_tabs(_text(MARIGOLD)) if layout == "tabs" else _text(MARIGOLD).replace("\n", "\r\n")

    fixed, plan = _both_ways(text, [_first_output(text, "(diff ** 2).mean().sqrt().item")], monkeypatch)

    assert (plan.indent, plan.newline) == (("\t", "\n") if layout == "tabs" else ("    ", "\r\n"))
    assert plan.regions[0].header == "".join(f"{plan.indent * depth}class _:{plan.newline}" for depth in range(3))
    assert "return_dict=False" in fixed


def test_edits_in_two_functions_are_applied_in_two_regions(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(MARIGOLD)
    first = _first_output(text, "(diff ** 2).mean().sqrt().item")
    second = _first_output(text, "torch.median(depth_aligned, dim=0, keepdim=True).values")

    fixed, plan = _both_ways(text, [second, first], monkeypatch)

    # The statements holding them in `ensemble` and in `cost_fn`, functions nested in one method.
    assert [first_line for first_line, _, _ in _spans(plan)] == [
        _line_of(text, 'if reduction == "mean":'),
        _line_of(text, "for i, j in torch.combinations("),
    ]
    assert fixed.count("return_dict=False") == text.count("return_dict=False") + 2


def test_a_statement_keeps_the_comments_above_it(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(MOTIF)
    source, loop = _node(text, ast.With, "with self.progress_bar(total=num_inference_steps)")
    edit = Edit(source.statement_ref(loop), "set_begin_index", (("calls", (("self.scheduler", False, True),)),), True)

    fixed, plan = _both_ways(
        text, [(_rule("DIF005"), Fix(FixSafety.SAFE, "set the begin index", (edit,)))], monkeypatch
    )

    # The region starts at the blank line above `# 6. Denoising loop`, which the inserted call takes over.
    assert plan.regions[0].first_line == _line_of(text, "# 6. Denoising loop") - 1
    assert fixed.index("# 6. Denoising loop") < fixed.index("self.scheduler.set_begin_index(0)")


def test_a_top_level_class_is_parsed_below_a_statement_that_keeps_its_comments(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _text(AURA)
    source, cls = _node(text, ast.ClassDef, "class AuraFlowFeedForward(")
    params = (("text", '_repeated_blocks = ["X"]\n'), ("after", None), ("before", "__init__"), ("blank_before", False))
    edit = Edit(source.ref(cls, "ClassDef"), "add_class_attribute", params, inserts=True)

    _, plan = _both_ways(text, [(_rule("DIF003"), Fix(FixSafety.SAFE, "add it", (edit,)))], monkeypatch)

    assert plan.regions[0].header == "pass\n"
    assert plan.regions[0].first_line < _line_of(text, "# Our feedforward only has GELU but Aura uses SiLU.")


def test_imports_are_added_in_the_region_of_the_import_block(monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text(MARIGOLD)
    rule, fix = _first_output(text, "(diff ** 2).mean().sqrt().item")
    imports = (ImportRequest("", "functools"), ImportRequest("...utils", "deprecate"))

    fixed, plan = _both_ways(text, [(rule, Fix(fix.safety, fix.description, fix.edits, imports))], monkeypatch)

    last_import = _line_of(text, "from .marigold_image_processing import MarigoldImageProcessor")
    assert [(r.first_line, r.imports) for r in plan.regions] == [
        (1, True),
        (_line_of(text, "for i, j in torch.combinations("), False),
    ]
    assert last_import <= plan.regions[0].last_line < _line_of(text, "if is_torch_xla_available():")
    assert "import functools\n" in fixed
    assert re.search(r"from \.\.\.utils import \([^)]*\bdeprecate\b", fixed)


@pytest.mark.parametrize(
    ("case", "text", "target"),
    [
        ("old Mac line ends", "x = 1\rdef f():\r    return g().y\r", NodeRef("Attribute", 3, 11, 3, 16)),
        ("a form feed", "def f():\n    # page\x0c break\n    return g().y\n", NodeRef("Attribute", 3, 11, 3, 16)),
        ("two statements on a line", "a = 1; b = g().y\n", NodeRef("Attribute", 1, 11, 1, 16)),
        (
            "an indent that headers of the file's indent cannot make",
            "def g():\n    pass\nclass A:\n  def f(self):\n    return g().y\n",
            NodeRef("Attribute", 5, 11, 5, 16),
        ),
        ("a node across statements", "x = 1\ny = 2\n", NodeRef("Module", 1, 0, 3, 0)),
    ],
)
def test_a_file_no_region_can_stand_for_is_parsed_whole(case: str, text: str, target: NodeRef) -> None:
    assert plan_regions(text, [target], imports=False) is None, case


def test_a_libcst_without_the_provider_hooks_gets_the_same_positions_from_the_wrapper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = _text(MARIGOLD)
    fixes = [_first_output(text, "(diff ** 2).mean().sqrt().item")]
    with_hooks = apply_fixes(text, fixes)
    asked = []

    class HooksMissing(apply.PositionProvider):
        def _gen_impl(self, module):  # the first call is ours, the hook missing; the wrapper's then gets it
            asked.append(module)
            if len(asked) == 1:
                raise AttributeError("_gen_impl")
            return super()._gen_impl(module)

    monkeypatch.setattr(apply, "PositionProvider", HooksMissing)

    assert apply_fixes(text, fixes) == with_hooks != text
    assert len(asked) == 2
