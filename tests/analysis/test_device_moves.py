"""`.to(...)` calls: which ones provably move to a device, and when their result is changed in place."""

from __future__ import annotations

import ast
import textwrap

import pytest

from codemods.analysis.values.device_moves import changed_in_place, device_move


def _call(code: str) -> ast.Call:
    return ast.parse(code, mode="eval").body


@pytest.mark.parametrize(
    "code",
    [
        "t.to(device)",
        "t.to(x.device)",
        "t.to(device=d)",
        't.to("cuda")',
        't.to(torch.device("cuda:0"))',
        "t.to(self.device)",
    ],
)
def test_device_only_moves(code: str) -> None:
    move = device_move(_call(code))
    assert move is not None and move.device_only


@pytest.mark.parametrize("code", ["t.to(x.dtype)", "t.to(torch.float32)", "t.to(other)", "t.to(*args)", "t.float()"])
def test_not_a_provable_device_move(code: str) -> None:
    assert device_move(_call(code)) is None


def test_a_move_that_also_casts_says_which_dtype() -> None:
    runtime = device_move(_call("t.to(device=x.device, dtype=x.dtype)"))
    constant = device_move(_call("t.to(x.device, torch.float32)"))
    assert runtime.dtype is not None and not runtime.constant_dtype
    assert constant.constant_dtype
    assert device_move(_call("t.to(device, non_blocking=True)")).options == ("non_blocking",)


def _function(code: str) -> tuple[ast.FunctionDef, list[ast.Call]]:
    function = ast.parse(textwrap.dedent(code)).body[0]
    moves = [n for n in ast.walk(function) if isinstance(n, ast.Call) and device_move(n)]
    return function, moves


def test_in_place_change_through_a_view_is_found() -> None:
    function, moves = _function(
        """
        def forward(self, x):
            freqs = self.freqs.to(x.device)
            head = freqs[:4].view(2, 2)
            head.mul_(2)
            return head
        """
    )
    assert changed_in_place(function, moves).lineno == 5


def test_new_tensors_break_the_alias() -> None:
    function, moves = _function(
        """
        def forward(self, x):
            freqs = self.freqs.to(x.device).split([2, 2])
            out = torch.cat([freqs[0], freqs[1]])
            out.mul_(2)
            scaled = freqs[0] * 2
            scaled += 1
            return out
        """
    )
    assert changed_in_place(function, moves) is None


def test_subscript_assignment_and_out_are_changes() -> None:
    function, moves = _function(
        """
        def forward(self, x):
            freqs = self.freqs.to(x.device)
            freqs[0] = 1
        """
    )
    assert changed_in_place(function, moves) is not None
    function, moves = _function(
        """
        def forward(self, x):
            freqs = self.freqs.to(x.device)
            torch.mul(x, 2, out=freqs)
        """
    )
    assert changed_in_place(function, moves) is not None
