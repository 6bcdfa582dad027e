"""What the probe's hidden-folder check says of each thing an agy may do (probe/hidden.py).

agy-sim does what users reported (tests/probe/test_probe_sim.py: both lines PASS); these are
the other agys: one that fixed hidden folders, one that ignores them without the log line, one
that ignores the link too, one that does not start there.
"""

from __future__ import annotations

import pytest

from omnigent_agy.errors import ProbeError
from omnigent_agy.probe.facts import FactVerdict
from omnigent_agy.probe.hidden import WorkspaceSeen, judge_hidden, judge_link

GIVEN = "the folder as given"
SCRATCH = "agy's scratch folder"


@pytest.mark.parametrize(
    ("seen", "verdict", "says"),
    [
        (WorkspaceSeen(True, SCRATCH), FactVerdict.PASS, "logged; its conversation works in agy's"),
        (WorkspaceSeen(False, GIVEN), FactVerdict.INFO, "this agy takes hidden folders"),
        (WorkspaceSeen(False, SCRATCH), FactVerdict.FAIL, "no such line"),
        (WorkspaceSeen(False, "no workspace reported"), FactVerdict.INFO, "no such line"),
        (ProbeError("no port"), FactVerdict.INFO, "agy did not start there: no port"),
    ],
    ids=["as-reported", "fixed", "silent", "unreported", "no-start"],
)
def test_the_hidden_folder(seen: object, verdict: FactVerdict, says: str) -> None:
    finding = judge_hidden(seen)  # type: ignore[arg-type]
    assert finding.verdict is verdict
    assert says in finding.seen
    assert finding.section == "§9"


@pytest.mark.parametrize(
    ("seen", "verdict"),
    [
        (WorkspaceSeen(False, GIVEN), FactVerdict.PASS),
        (WorkspaceSeen(False, "the folder the link names"), FactVerdict.PASS),
        (WorkspaceSeen(False, "no workspace reported"), FactVerdict.PASS),
        (WorkspaceSeen(True, SCRATCH), FactVerdict.FAIL),
        (WorkspaceSeen(False, SCRATCH), FactVerdict.FAIL),
        (WorkspaceSeen(False, "another folder"), FactVerdict.FAIL),
        (ProbeError("no port"), FactVerdict.FAIL),
    ],
    ids=["given", "target", "unreported", "ignored", "silently-elsewhere", "elsewhere", "no-start"],
)
def test_the_dot_free_link(seen: object, verdict: FactVerdict) -> None:
    assert judge_link(seen).verdict is verdict  # type: ignore[arg-type]


def test_a_bug_of_the_probe_is_not_taken_for_agys_answer() -> None:
    with pytest.raises(ZeroDivisionError):
        judge_link(ZeroDivisionError())
