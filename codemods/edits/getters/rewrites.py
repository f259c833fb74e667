"""The libcst edits DIF001's plan is made of (`codemods.edits.getters.plan` plans them; the rule applies them).

A mixin of the rule, so that the engine finds each `edit_<op>` on the rule as for every other rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codemods.lazy import libcst as cst

if TYPE_CHECKING:
    import libcst


class DeviceGetterEdits:
    def edit_add_device_getter(self, node: libcst.ClassDef, text: str, before: str) -> libcst.ClassDef:
        body = list(node.body.body)
        position = next(i for i, s in enumerate(body) if isinstance(s, cst.FunctionDef) and s.name.value == before)
        following = body[position]
        if not following.leading_lines or following.leading_lines[0].comment is not None:
            body[position] = following.with_changes(
                leading_lines=[cst.EmptyLine(indent=False), *following.leading_lines]
            )
        getter = cst.parse_statement(text).with_changes(leading_lines=[cst.EmptyLine(indent=False)] if position else [])
        body.insert(position, getter)
        return node.with_changes(body=node.body.with_changes(body=body))

    def edit_call_getter(self, node: libcst.Call, getter: str, index: int | None) -> libcst.BaseExpression:
        # `device=` of `torch.tensor(data, device=d)` (DIF006), else the first argument of `.to(d)` (DIF001).
        keyword = (a.value for a in node.args if a.keyword is not None and a.keyword.value == "device")
        device = next(keyword, None) or next(a.value for a in node.args if a.keyword is None)
        call = cst.Call(func=cst.Attribute(value=cst.Name("self"), attr=cst.Name(getter)), args=[cst.Arg(value=device)])
        if index is None:
            return call.with_changes(lpar=node.lpar, rpar=node.rpar)
        element = cst.SubscriptElement(slice=cst.Index(value=cst.Integer(str(index))))
        return cst.Subscript(value=call, slice=[element], lpar=node.lpar, rpar=node.rpar)

    def edit_call_element_getter(self, node: libcst.Call, getter: str) -> libcst.Subscript:
        """`self.X[i].to(d)` -> `self.<getter>(d)[i]`: an element of the tuple a list's getter returns."""
        call = self.edit_call_getter(node, getter, None).with_changes(lpar=[], rpar=[])
        return cst.Subscript(value=call, slice=node.func.value.slice, lpar=node.lpar, rpar=node.rpar)

    def edit_use_local(self, node: libcst.Call, name: str) -> libcst.Name:
        return cst.Name(name, lpar=node.lpar, rpar=node.rpar)

    def edit_hoist_getter(
        self, node: libcst.SimpleStatementLine, text: str, comment: str, replace_comment: bool
    ) -> libcst.FlattenSentinel:
        leading = list(node.leading_lines)
        if replace_comment and leading and leading[-1].comment is not None:
            leading.pop()
        leading.append(cst.EmptyLine(comment=cst.Comment(comment)))
        unpack = cst.parse_statement(text).with_changes(leading_lines=leading)
        return cst.FlattenSentinel([unpack, node.with_changes(leading_lines=[])])

    def edit_replace_statement(self, node: libcst.SimpleStatementLine, text: str) -> libcst.SimpleStatementLine:
        return cst.parse_statement(text).with_changes(leading_lines=node.leading_lines)

    def edit_remove_statement(self, node: libcst.SimpleStatementLine) -> libcst.RemovalSentinel:
        return cst.RemovalSentinel.REMOVE

    def edit_replace_with_getter_call(
        self, node: libcst.BaseStatement, text: str, comment: str
    ) -> libcst.BaseStatement:
        leading = [*node.leading_lines, cst.EmptyLine(comment=cst.Comment(comment))]
        return cst.parse_statement(text).with_changes(leading_lines=leading)

    def edit_replace_text(
        self, node: libcst.SimpleString | libcst.Comment, old: str, new: str
    ) -> libcst.SimpleString | libcst.Comment:
        """A docstring or comment brought up to date (`codemods.edits.stale_text`)."""
        return node.with_changes(value=new) if node.value == old else node
