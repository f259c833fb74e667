"""Whether `method(..., return_dict=False)[0]` is, for every class the callee may be, the field read off its output.

Proved from the facts of the callee's own source (`codemods.facts.MethodFacts`): the method takes
`return_dict`, returns a tuple under `if not return_dict:` whose first item is one expression,
and every output dataclass it returns otherwise stores that expression in the field read (by
keyword, or as the first positional field). A method that hands `return_dict` on to another of
its class (`return self.step_plms(..., return_dict=return_dict)`) is proved through it.
"""

from __future__ import annotations

from codemods.facts import MethodFacts, OutputReturn
from codemods.project import ProjectIndex

_MAX_DELEGATION = 4


def returns_field_first(class_name: str, method: str, field: str, positional: int, index: ProjectIndex) -> bool:
    """`positional` is the number of positional arguments of the call (so `return_dict` is not one of them)."""
    return _proves(class_name, method, field, positional, index, 0)


def _proves(class_name: str, method: str, field: str, positional: int, index: ProjectIndex, depth: int) -> bool:
    definitions = index.methods(class_name, method)
    if not definitions or depth > _MAX_DELEGATION:
        return False
    return all(_proves_one(class_name, m, field, positional, index, depth) for m in definitions)


def _proves_one(
    class_name: str, method: MethodFacts, field: str, positional: int, index: ProjectIndex, depth: int
) -> bool:
    if not method.takes_return_dict:
        return False
    if "return_dict" in method.positional and positional > method.positional.index("return_dict"):
        return False
    # Delegates receive `return_dict` by keyword, so the caller's positional count does not reach them.
    if not all(_proves(class_name, d, field, 0, index, depth + 1) for d in method.delegates):
        return False
    if not method.tuple_firsts and not method.output_returns:
        return bool(method.delegates)
    firsts = set(method.tuple_firsts)
    if len(firsts) != 1 or not method.output_returns:
        return False
    (first,) = firsts
    return all(_stores_first(output, first, field, index) for output in method.output_returns)


def _stores_first(output: OutputReturn, first: str, field: str, index: ProjectIndex) -> bool:
    """`Output(field=first)`, or `Output(first, ...)` where `field` is the dataclass's first field."""
    if dict(output.keywords).get(field) == first:
        return True
    classes = index.classes(output.output_class)
    return output.positional[:1] == (first,) and bool(classes) and all(c.fields[:1] == (field,) for c in classes)
