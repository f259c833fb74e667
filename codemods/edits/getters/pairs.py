"""DIF001's rewrite of a guarded pair of moves into one call of a tuple getter.

    pos_freqs = self.pos_freqs.to(device) if device is not None else self.pos_freqs
    neg_freqs = self.neg_freqs.to(device) if device is not None else self.neg_freqs

becomes (diffusers #13406's idiom)

    pos_freqs, neg_freqs = self._get_device_freqs(device) if device is not None else (self.pos_freqs, self.neg_freqs)

when one statement per cached attribute follows the other, all with the same test and device.
"""

from __future__ import annotations

from codemods.analysis.values.device_moves import Site
from codemods.edits.getters.names import indent_of, too_wide
from codemods.edits.getters.sites import consecutive_run, ternary_move
from codemods.findings import Edit
from codemods.source import SourceFile


def rewrite_pairs(
    source: SourceFile, sites: list[Site], attributes: list[str], getter: str, line_length: int
) -> tuple[list[Edit], set[int]] | str:
    """The edits and the ids of the sites they rewrite, or why a pair cannot be written."""
    candidates = [(s, ternary_move(s)) for s in sites]
    candidates = [(s, statement) for s, statement in candidates if statement is not None]
    edits: list[Edit] = []
    done: set[int] = set()
    for site, statement in candidates:
        if id(site) in done:
            continue
        run = consecutive_run(source, statement, {id(st): s for s, st in candidates}, len(attributes))
        if run is None or sorted(s.attribute for s, _ in run) != sorted(attributes):
            continue
        tests = {source.segment(st.value.test) for _, st in run}
        devices = {source.segment(s.move.device) for s, _ in run}
        if len(tests) != 1 or len(devices) != 1:
            continue
        targets = {s.attribute: st.targets[0].id for s, st in run}
        value = f"self.{getter}({devices.pop()}) if {tests.pop()} else ({', '.join(f'self.{a}' for a in attributes)})"
        assigned = f"{', '.join(targets[a] for a in attributes)} = "
        indent = indent_of(source, run[0][1])
        if len(indent) + len(assigned) + len(value) <= line_length:
            text = f"{assigned}{value}\n"
        elif too_wide([value], indent + "    ", line_length):
            return f"the rewritten pair would exceed {line_length} characters; add it by hand"
        else:
            text = f"{assigned}(\n    {value}\n)\n"
        first, *rest = [st for _, st in run]
        edits.append(Edit(source.ref(first, "SimpleStatementLine"), "replace_statement", (("text", text),)))
        edits.extend(Edit(source.ref(st, "SimpleStatementLine"), "remove_statement") for st in rest)
        done |= {id(s) for s, _ in run}
    return edits, done
