"""What a class keeps on `self`: registered state versus plain tensors set once in `__init__`."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.models.attributes import class_attributes, module_lineage


def _module(code: str) -> ast.Module:
    return ast.parse(textwrap.dedent(code))


def _attributes(code: str, name: str | None = None):
    tree = _module(code)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and (name is None or n.name == name))
    return class_attributes(cls, functions)


ROPE = """
import torch
from torch import nn


def get_freqs(dim):
    freqs = torch.exp(-torch.arange(dim) / dim)
    return freqs


class Rope(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(dim), persistent=False)
        self.scale = nn.Parameter(torch.ones(dim))
        self.proj = nn.Linear(dim, dim)
        self.norm = RMSNorm(dim)
        self.pos_freqs = torch.polar(torch.ones(8, dim), torch.zeros(8, dim))
        self.helper_freqs = get_freqs(dim)
        self.method_freqs = self._table(dim)
        self.axes_dim = [dim]
        self.mask = None

    def _table(self, dim):
        return torch.arange(dim)
"""


def test_buffers_parameters_and_submodules_are_registered() -> None:
    attributes = _attributes(ROPE)
    assert attributes.registered == {"inv_freq", "scale", "proj", "norm"}
    assert set(attributes.buffers) == {"inv_freq"}


def test_plain_tensors_set_once_in_init_are_found_through_helpers() -> None:
    attributes = _attributes(ROPE)
    assert set(attributes.init_tensors) == {"pos_freqs", "helper_freqs", "method_freqs"}
    assert not attributes.changed_after_init and not attributes.dynamic_registration


def test_changes_after_init_are_recorded_with_their_line() -> None:
    attributes = _attributes(
        """
        class Rope(nn.Module):
            def __init__(self):
                self.a = torch.ones(4)
                self.b = torch.ones(4)
                self.c = torch.ones(4)
                self.d = torch.ones(4)

            def reset(self):
                self.a = torch.zeros(4)
                self.b.mul_(2)
                self.c[0] = 1
                self.d.data = torch.zeros(4)
        """
    )
    assert attributes.changed_after_init == {"a", "b", "c", "d"}
    assert attributes.first_change == {"a": 10, "b": 11, "c": 12, "d": 13}
    assert not attributes.lazily_moved


def test_moving_an_attribute_onto_itself_is_a_lazy_move() -> None:
    attributes = _attributes(
        """
        class Block(nn.Module):
            def __init__(self, mask):
                self.mask = torch.ones(4)

            def forward(self, x):
                self.mask = self.mask.to(dtype=x.dtype, device=x.device) if self.mask is not None else None
                return x
        """
    )
    assert attributes.lazily_moved == {"mask"}


def test_a_computed_buffer_name_may_register_anything() -> None:
    attributes = _attributes(
        """
        class Rope(nn.Module):
            def __init__(self, names):
                for name in names:
                    self.register_buffer(f"freqs_{name}", torch.ones(4))
        """
    )
    assert attributes.dynamic_registration


def test_lineage_follows_same_file_bases_to_nn_module() -> None:
    tree = _module(
        """
        class Base(nn.Module):
            pass

        class Rope(Base, SomeMixin):
            pass

        class Model(ModelMixin, ConfigMixin):
            pass

        class Elsewhere(ImportedRope):
            pass

        class Plain:
            pass
        """
    )
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    assert [c.name for c in module_lineage(classes["Rope"], classes)] == ["Rope", "Base"]
    assert [c.name for c in module_lineage(classes["Model"], classes)] == ["Model"]
    assert module_lineage(classes["Elsewhere"], classes) is None
    assert module_lineage(classes["Plain"], classes) is None
