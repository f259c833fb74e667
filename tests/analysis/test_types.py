"""What class a model-holding expression has: the callee types DIF004's proof starts from."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.values.element_types import element_types
from codemods.analysis.values.types import LocalTypes, class_attribute_types
from codemods.source import SourceFile


def _class(code: str) -> ast.ClassDef:
    return next(n for n in ast.parse(textwrap.dedent(code)).body if isinstance(n, ast.ClassDef))


def _types_at(code: str, name: str, line: int) -> tuple[str, ...] | None:
    """The classes `name` holds where it is called on `line` (the code's first function, or `forward`)."""
    source = SourceFile("types_case.py", textwrap.dedent(code))
    tree = source.tree
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef)), None)
    scope = cls.body if cls else tree.body
    function = next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name in ("forward", "main"))
    use = next(n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and n.lineno == line)
    attributes, elements = (class_attribute_types(source, cls), element_types(cls)) if cls else ({}, {})
    return LocalTypes(function, attributes, elements).of(name, use)


def test_a_module_list_appended_in_branches_holds_each_branch_class() -> None:
    cls = _class(
        """
        class Block(nn.Module):
            def __init__(self, dual):
                attentions = []
                if dual:
                    attentions.append(DualTransformer2DModel())
                else:
                    attentions.append(Transformer2DModel())
                self.attentions = nn.ModuleList(attentions)
                self.downsamplers = None
        """
    )
    assert element_types(cls) == {"attentions": ("DualTransformer2DModel", "Transformer2DModel"), "downsamplers": ()}


def test_a_module_list_filled_otherwise_than_by_append_is_unknown() -> None:
    cls = _class(
        """
        class Block(nn.Module):
            def __init__(self, extra):
                blocks = [Transformer2DModel()]
                blocks.extend(extra)
                self.blocks = nn.ModuleList(blocks)
                self.built = nn.ModuleList([make_block(i) for i in range(2)])
                self.grown = nn.ModuleList([Transformer2DModel()])

            def add_block(self, block):
                self.grown.append(block)
        """
    )
    assert element_types(cls) == {"blocks": None, "built": None, "grown": None}


def test_a_loop_variable_over_a_module_list_holds_its_elements() -> None:
    code = """
    class Block(nn.Module):
        def __init__(self):
            self.resnets = nn.ModuleList([ResnetBlock2D()])
            self.attentions = nn.ModuleList([Transformer2DModel()])

        def forward(self, h):
            for resnet, attn in zip(self.resnets, self.attentions[1:]):
                h = attn(resnet(h)).sample
            return h
    """
    assert _types_at(code, "attn", 9) == ("Transformer2DModel",)
    assert _types_at(code, "resnet", 9) == ("ResnetBlock2D",)


def test_a_local_alias_holds_what_every_reaching_assignment_gives() -> None:
    code = """
    class Pipe:
        def __init__(self, first: UNet2DModel, last: UNet2DModel, wrapped):
            self.register_modules(first=first, last=last)
            self.wrapped = wrapped

        def forward(self, last_step, parallel):
            unet = self.last if last_step else self.first
            unet(x)
            net = self.wrapped if parallel else self.first
            net(x)
    """
    assert _types_at(code, "unet", 9) == ("UNet2DModel",)
    assert _types_at(code, "net", 11) is None


def test_accelerate_hands_each_prepared_model_back_in_place() -> None:
    code = """
    def main(optimizer):
        unet = UNet2DConditionModel.from_pretrained("x")
        vae = AutoencoderKL.from_pretrained("x")
        unet, optimizer, vae = accelerator.prepare(unet, optimizer, vae)
        accelerator.unwrap_model(vae)(x)
        unet(x)
        optimizer(x)
    """
    assert _types_at(code, "vae", 6) == ("AutoencoderKL",)
    assert _types_at(code, "unet", 7) == ("UNet2DConditionModel",)
    assert _types_at(code, "optimizer", 8) is None
