"""The probe's table: one line per fact, wrapped in its columns, and the exit status."""

from __future__ import annotations

from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.report import exit_code, render, render_table, summary

FINDINGS = (
    Finding(
        "CSRF: no header", FactVerdict.PASS, "401 unauthenticated", "401 unauthenticated", "§1"
    ),
    Finding(
        "fields: GetAllCascadeTrajectories while a gate is open",
        FactVerdict.FAIL,
        "trajectorySummaries.*.waitingSteps[].stepIndex",
        "1 seen; MISSING trajectorySummaries.*.waitingSteps[].stepIndex (read by "
        "interactions/delivery.py, agy/sweep.py): command listing at trajectorySummaries.x",
        "§3, §6",
    ),
    Finding("turn: question", FactVerdict.SKIP, "a question", "not run: --no-turns", ""),
)


def test_every_fact_is_whole_and_every_line_fits() -> None:
    table = render_table(FINDINGS, width=100)
    lines = table.splitlines()
    assert all(len(line) <= 100 for line in lines)
    assert lines[0] == ("PASS  §1        CSRF: no header                     401 unauthenticated")
    # A long fact wraps in its column instead of being cut (two facts may share a prefix).
    assert lines[1].startswith("FAIL  §3, §6    fields: GetAllCascadeTrajectories   1 seen;")
    assert lines[2].startswith("                while a gate is open                ")
    assert "expected:" in table
    assert "(read by" in table
    assert lines[-1] == "SKIP            turn: question                      not run: --no-turns"
    assert "expected: a question" not in table  # only FAIL and INFO say what was expected


def test_header_tally_and_exit_status() -> None:
    shown = render("/usr/bin/agy", "1.2.14", FINDINGS, width=100)
    assert shown.startswith("omnigent-agy probe: agy 1.2.14 (/usr/bin/agy)\n")
    assert shown.endswith("\n1 PASS, 1 FAIL, 1 SKIP")
    assert summary(FINDINGS[:1]) == "1 PASS"
    assert exit_code(FINDINGS) == 1
    assert exit_code([f for f in FINDINGS if f.verdict is not FactVerdict.FAIL]) == 0
    info = Finding("unconfirmed: a title", FactVerdict.INFO, "a title", "no such field", "§7")
    assert exit_code([info]) == 0
