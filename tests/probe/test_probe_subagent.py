"""`omnigent-agy probe`'s sub-agent turn against agy-sim as a separate process: as agy 1.5.16
the sub-agent's gate is found in its own cascade and answered there; as 1.2.14, whose
sub-agents do not ask, the check is a SKIP, not a failure."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_probe_sim import by_fact, probe, scratch_base  # noqa: F401 - the fixture

from omnigent_agy.probe.facts import FactVerdict

pytestmark = pytest.mark.tmux


def test_a_sub_agents_gate_is_found_and_answered_in_its_cascade(
    tmp_path: Path,
    scratch_base: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGY_SIM_VERSION", "1.5.16")  # agy's tmux server inherits it
    report = probe(
        tmp_path, turns=("subagent",), resume=False, record=False, AGY_SIM_VERSION="1.5.16"
    )
    facts = by_fact(report.findings)
    for fact in (
        "sub-agent: a gate in its own cascade",
        "sub-agent: answered in its cascade",
        "sub-agent: the parent goes on",
    ):
        assert [f.verdict for f in facts[fact]] == [FactVerdict.PASS], facts[fact]


def test_an_agy_whose_sub_agents_do_not_ask_is_a_skip(
    tmp_path: Path,
    scratch_base: Path,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("AGY_SIM_VERSION", "1.2.14")  # agy's tmux server inherits it
    report = probe(
        tmp_path, turns=("subagent",), resume=False, record=False, AGY_SIM_VERSION="1.2.14"
    )
    (finding,) = by_fact(report.findings)["sub-agent: a gate in its own cascade"]
    assert finding.verdict is FactVerdict.SKIP
    assert "without asking" in finding.seen
