"""The probe's table: one line per fact, what was expected and what agy showed.

`render_table` gives the plain-text table the probe prints and the recording keeps; each
line is the verdict, the docs/wire.md section, the fact and what was seen, with what was
expected under every FAIL and INFO line. Long texts wrap in their columns to the width given.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from collections.abc import Sequence
from itertools import zip_longest
from typing import Final

from omnigent_agy.probe.facts import FactVerdict, Finding

__all__ = ["exit_code", "render", "render_table", "summary"]

_FACT_WIDTH: Final = 34
_SECTION_WIDTH: Final = 8
_SHOW_EXPECTED: Final = frozenset({FactVerdict.FAIL, FactVerdict.INFO})


def render_table(findings: Sequence[Finding], *, width: int = 100) -> str:
    """The findings as aligned lines (see the module doc); a long fact wraps in its column."""
    indent = " " * (4 + 2 + _SECTION_WIDTH + 2)
    room = max(20, width - len(indent) - _FACT_WIDTH - 2)
    lines = []
    for finding in findings:
        facts = textwrap.wrap(finding.fact, _FACT_WIDTH) or [""]
        seen = textwrap.wrap(finding.seen or "-", room) or ["-"]
        if finding.verdict in _SHOW_EXPECTED and finding.expected:
            seen += textwrap.wrap(f"expected: {finding.expected}", room)
        head = f"{finding.verdict.value:<4}  {finding.section:<{_SECTION_WIDTH}}  "
        for number, (fact, said) in enumerate(zip_longest(facts, seen, fillvalue="")):
            start = head if number == 0 else indent
            lines.append(f"{start}{fact:<{_FACT_WIDTH}}  {said}".rstrip())
    return "\n".join(lines)


def summary(findings: Sequence[Finding]) -> str:
    counts = Counter(finding.verdict for finding in findings)
    return ", ".join(f"{counts[v]} {v.value}" for v in FactVerdict if counts[v])


def render(executable: str, version: str, findings: Sequence[Finding], *, width: int) -> str:
    """The whole report: which agy, the table, the tally."""
    header = f"omnigent-agy probe: agy {version} ({executable})"
    columns = f"{'':4}  {'wire.md':<{_SECTION_WIDTH}}  {'fact':<{_FACT_WIDTH}}  seen"
    return "\n".join(
        [header, "", columns, render_table(findings, width=width), "", summary(findings)]
    )


def exit_code(findings: Sequence[Finding]) -> int:
    """1 when any fact failed, else 0 (INFO and SKIP are not failures)."""
    return 1 if any(f.verdict is FactVerdict.FAIL for f in findings) else 0
