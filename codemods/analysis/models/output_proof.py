"""How `method(..., return_dict=False)` hands back the field read off its output, for every class the callee may be.

Proved from the facts of the callee's own source (`codemods.project.facts.MethodFacts`): the method takes
`return_dict`, returns under `if not return_dict:` either a tuple whose first item is one expression
(diffusers' convention: read `[0]`) or that expression itself (Kandinsky 5's transformer returns
`x`: read nothing), and every output dataclass it returns otherwise stores that expression in the
field read (by keyword, or as the first positional field). A method that hands `return_dict` on to
another of its class (`return self.step_plms(..., return_dict=return_dict)`) is proved through it.
"""

from __future__ import annotations

from typing import Literal

from codemods.project.facts import MethodFacts, OutputReturn
from codemods.project.index import ProjectIndex

_MAX_DELEGATION = 4

# "tuple": `return_dict=False` returns `(value, ...)`; "bare": it returns `value` itself.
OutputForm = Literal["tuple", "bare"]


def output_form(class_name: str, method: str, field: str, positional: int, index: ProjectIndex) -> OutputForm | None:
    """The one form every definition of `class_name.method` returns the field's value in; None when unproved or mixed.

    `positional` is the number of positional arguments of the call (so `return_dict` is not one of them).
    """
    return _form(class_name, method, field, positional, index, 0)


def _form(
    class_name: str, method: str, field: str, positional: int, index: ProjectIndex, depth: int
) -> OutputForm | None:
    definitions = index.methods(class_name, method)
    if not definitions or depth > _MAX_DELEGATION:
        return None
    return _one({_form_one(class_name, m, field, positional, index, depth) for m in definitions})


def _form_one(
    class_name: str, method: MethodFacts, field: str, positional: int, index: ProjectIndex, depth: int
) -> OutputForm | None:
    if not method.takes_return_dict:
        return None
    if "return_dict" in method.positional and positional > method.positional.index("return_dict"):
        return None
    # Delegates receive `return_dict` by keyword, so the caller's positional count does not reach them.
    delegated = {_form(class_name, d, field, 0, index, depth + 1) for d in method.delegates}
    if None in delegated:
        return None
    if not method.tuple_firsts and not method.bare_returns and not method.output_returns:
        return _one(delegated)
    if method.tuple_firsts and method.bare_returns:
        return None
    own: OutputForm = "tuple" if method.tuple_firsts else "bare"
    firsts = set(method.tuple_firsts or method.bare_returns)
    if len(firsts) != 1 or not method.output_returns or delegated - {own}:
        return None
    (first,) = firsts
    return own if all(_stores_first(output, first, field, index) for output in method.output_returns) else None


def _one(forms: set[OutputForm | None]) -> OutputForm | None:
    return next(iter(forms)) if len(forms) == 1 else None


def _stores_first(output: OutputReturn, first: str, field: str, index: ProjectIndex) -> bool:
    """`Output(field=first)`, or `Output(first, ...)` where `field` is the dataclass's first field."""
    if dict(output.keywords).get(field) == first:
        return True
    classes = index.classes(output.output_class)
    return output.positional[:1] == (first,) and bool(classes) and all(c.fields[:1] == (field,) for c in classes)
