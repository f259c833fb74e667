"""Memoized places of one function's expressions and bindings, where names are rebound in a cycle.

A binding asked for while it is being worked out (`x = x * 2` in a loop) adds nothing to a join
(`Place.PENDING`), so an answer worked out inside a cycle depends on which bindings were in
progress then: it is kept for good only where it ran into none of them. Such an answer is kept
apart with the bindings it looked up, and given again wherever the same ones of those are in
progress: the same lookups with the same outcomes give the same answer. Without this, a cycle of
bindings spread over nested loops (LTX's long multi-prompt pipeline) is worked out again for each
order in which it is entered, tens of thousands of times.

One thing can change such an answer between two asks: something it worked out while a binding was
in progress (so not for good) has been worked out for good since, and a new lookup would find that
value. Each such event starts a new epoch, and answers of older epochs are not given again.
"""

from __future__ import annotations

import ast
from typing import NamedTuple

from codemods.analysis.placement.place import Place
from codemods.analysis.values.binding_sites import Binding


class _OpenAnswer(NamedTuple):
    """An answer that ran into a binding in progress (bindings as bits: see `CycleMemo._bit`)."""

    looked_up: int  # every binding its computation asked for
    in_progress: int  # those of them that were in progress: the answer holds where the same ones are
    ran_into: int  # those of them whose `PENDING` it used (where it reached a cycle)
    epoch: int
    place: Place


class CycleMemo:
    """The memo of `place` and `_binding_place`; a subclass says how to work out each (`_place`, `_binding_value`)."""

    def __init__(self) -> None:
        self._memo: dict[int, Place] = {}
        self._binding_memo: dict[int, Place] = {}
        self._bits: dict[int, int] = {}  # a binding's bit in the masks below, given when first asked for
        self._in_progress = 0  # the bindings being worked out
        self._ran_into = 0  # those the current computation found in progress
        self._looked_up = 0  # the bindings the current computation asked for
        self._open: dict[int, list[_OpenAnswer]] = {}  # by node
        self._was_open: set[int] = set()  # nodes and bindings worked out at least once not for good
        self._epoch = 0

    def place(self, node: ast.expr) -> Place:
        """Where `node`'s value lives."""
        key = id(node)
        if key in self._memo:
            return self._memo[key]
        if not self._in_progress:  # nothing to run into: the answer is for good
            place = self._memo[key] = self._place(node)
            self._forget_open(key)
            return place
        for answer in self._open.get(key, ()):
            if answer.epoch == self._epoch and self._in_progress & answer.looked_up == answer.in_progress:
                self._ran_into |= answer.ran_into
                self._looked_up |= answer.looked_up
                return answer.place
        outer_ran_into, outer_looked_up, epoch = self._ran_into, self._looked_up, self._epoch
        self._ran_into = self._looked_up = 0
        place = self._place(node)
        ran_into, looked_up = self._ran_into, self._looked_up
        if ran_into:
            self._open.setdefault(key, []).append(
                _OpenAnswer(looked_up, self._in_progress & looked_up, ran_into, epoch, place)
            )
            self._was_open.add(key)
        else:
            self._memo[key] = place
            self._forget_open(key)
        self._ran_into, self._looked_up = outer_ran_into | ran_into, outer_looked_up | looked_up
        return place

    def _binding_place(self, binding: Binding) -> Place:
        key = id(binding)
        if key in self._binding_memo:
            return self._binding_memo[key]
        bit = self._bits.get(key)
        if bit is None:
            bit = self._bits[key] = 1 << len(self._bits)
        self._looked_up |= bit
        if self._in_progress & bit:
            self._ran_into |= bit
            return Place.PENDING
        outer_ran_into, self._ran_into = self._ran_into, 0
        self._in_progress |= bit
        place = self._binding_value(binding)
        self._in_progress ^= bit
        ran_into = self._ran_into & ~bit  # a cycle that closes on this binding is its own
        if ran_into:
            self._was_open.add(key)
        else:
            self._binding_memo[key] = place
            self._forget_open(key)
        self._ran_into = outer_ran_into | ran_into
        return place

    def _forget_open(self, key: int) -> None:
        """`key`'s answer is now for good: answers that worked it out while not for good may no longer hold."""
        if key in self._was_open:
            self._was_open.discard(key)
            self._epoch += 1

    def _new_epoch_if_ran_into(self, ran_into_before: int) -> None:
        """A cache of the subclass was just filled, with an answer that ran into bindings in progress (more than
        `ran_into_before`): answers that worked it out would not run into them again."""
        if self._ran_into & ~ran_into_before:
            self._epoch += 1

    def _place(self, node: ast.expr) -> Place:
        raise NotImplementedError

    def _binding_value(self, binding: Binding) -> Place:
        raise NotImplementedError
