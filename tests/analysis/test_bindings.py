"""Which assignments of a name reach a use: the flow-sensitivity placement and sigma flow rely on."""

from __future__ import annotations

import ast
import textwrap

from codemods.analysis.values.bindings import FunctionBindings


def _reaching(code: str, name: str, line: int) -> list[int]:
    """Lines of the bindings of `name` that reach its use on `line` (0 for a parameter)."""
    function = ast.parse(textwrap.dedent(code)).body[0]
    use = next(n for n in ast.walk(function) if isinstance(n, ast.Name) and n.id == name and n.lineno == line
               and isinstance(n.ctx, ast.Load))  # fmt: skip
    bindings = FunctionBindings(function).reaching(name, use)
    return sorted(0 if b.kind == "parameter" else b.owner.lineno for b in bindings)


def test_a_later_assignment_replaces_an_earlier_one() -> None:
    code = """
    def f(timesteps):
        timesteps = retrieve(timesteps)
        use(timesteps)
    """
    assert _reaching(code, "timesteps", 4) == [3]


def test_an_assignment_in_a_branch_adds_to_the_one_before_it() -> None:
    code = """
    def f(x):
        y = 1
        if x:
            y = 2
        use(y)
    """
    assert _reaching(code, "y", 6) == [3, 5]


def test_both_branches_of_an_if_reach_the_code_after_it() -> None:
    code = """
    def f(x):
        if x:
            y = 1
        else:
            y = 2
        use(y)
    """
    assert _reaching(code, "y", 7) == [4, 6]


def test_a_use_inside_a_branch_sees_only_that_branch() -> None:
    code = """
    def f(x):
        y = 0
        if x:
            y = 1
            use(y)
        else:
            y = 2
    """
    assert _reaching(code, "y", 6) == [5]


def test_an_assignment_later_in_a_loop_reaches_around_the_back_edge() -> None:
    code = """
    def f(items):
        total = 0
        for item in items:
            use(total)
            total = total + item
    """
    assert _reaching(code, "total", 5) == [3, 6]


def test_a_loop_variable_is_bound_by_its_loop() -> None:
    code = """
    def f(timesteps):
        t = None
        for t in timesteps:
            use(t)
    """
    assert _reaching(code, "t", 5) == [4]


def test_an_unassigned_parameter_reaches_every_use() -> None:
    code = """
    def f(device):
        use(device)
    """
    assert _reaching(code, "device", 3) == [0]


def test_the_assignment_being_evaluated_does_not_reach_its_own_value() -> None:
    code = """
    def f(x):
        x = x * 2
        use(x)
    """
    assert _reaching(code, "x", 3) == [0]


def test_a_comprehension_variable_hides_the_parameter_it_shares_a_name_with() -> None:
    code = """
    def f(x):
        return [x + 1 for x in range(3)]
    """
    function = ast.parse(textwrap.dedent(code)).body[0]
    use = next(n for n in ast.walk(function) if isinstance(n, ast.BinOp)).left
    assert [b.kind for b in FunctionBindings(function).reaching("x", use)] == ["element"]


def test_a_names_bindings_come_in_the_order_they_are_written() -> None:
    code = """
    def f(x):
        try:
            x = 1
        except ValueError:
            x = 2
        else:
            x = 3
        finally:
            x = 4
        if x:
            x = 5
        else:
            x = 6
    """
    function = ast.parse(textwrap.dedent(code)).body[0]
    bindings = FunctionBindings(function).of("x")
    assert [0 if b.kind == "parameter" else b.owner.lineno for b in bindings] == [0, 4, 6, 8, 10, 12, 14]
