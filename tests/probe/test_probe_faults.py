"""The probe against an agy of another shape: agy-sim with one fault switch each
(docs/simulator.md, "Fault injection"); the probe must name that shape, and nothing else.

Each case starts agy-sim (a separate process, TLS HTTP/2) through the probe with one switch
and the turns that can show it; the FAIL lines must be exactly the ones listed (besides what
agy-sim does not model yet, `test_probe_sim.KNOWN_GAPS`), each saying what it saw.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_probe_sim import KNOWN_GAPS, probe

from omnigent_agy.probe.facts import FactVerdict

pytestmark = pytest.mark.tmux


@dataclass(frozen=True)
class Case:
    id: str
    env: dict[str, str]
    turns: tuple[str, ...]
    names: dict[str, str]
    """FAIL facts → a part of what each must say it saw."""
    ready_timeout: float = 30.0
    also: dict[str, str] = field(default_factory=dict)
    """Other facts that must not pass (INFO, SKIP) → a part of what they saw."""


def fault(spec: str) -> dict[str, str]:
    return {"AGY_SIM_FAULT": spec}


CASES = (
    Case(
        "renamed modifiedResponse in the stream",
        fault("rename_field:method=StreamAgentStateUpdates,field=modifiedResponse,to=text"),
        ("plain",),
        {
            "turn: text streams": "none with plannerResponse.modifiedResponse",
            "fields: PLANNER_RESPONSE GENERATING": "MISSING plannerResponse.modifiedResponse "
            "(read by reading/mapper.py)",
        },
    ),
    Case(
        "no modelUsage",
        fault("drop_field:field=modelUsage"),
        ("plain",),
        {
            "turn: usage": "no modelUsage at DONE",
            "turn: as the plugin reads it": "no usage",
            "fields: PLANNER_RESPONSE DONE": "MISSING metadata.modelUsage.inputTokens",
        },
    ),
    Case(
        "stepCount renamed in the listing",
        fault("rename_field:method=GetAllCascadeTrajectories,field=stepCount,to=numSteps"),
        ("plain",),
        {"fields: GetAllCascadeTrajectories after a turn": "MISSING trajectorySummaries.*.step"},
    ),
    Case(
        "no waitingSteps",
        fault("drop_field:method=GetAllCascadeTrajectories,field=waitingSteps"),
        ("command",),
        {
            "gate: listed as waiting": "waitingSteps []",
            "fields: GetAllCascadeTrajectories while a gate is open": "MISSING trajectorySummari",
        },
    ),
    Case(
        "question options renamed",
        fault("rename_field:field=options,to=choices"),
        ("question",),
        {
            "question: asked": "option ids [[]]",
            "fields: ASK_QUESTION WAITING": "MISSING requestedInteraction.askQuestion.questions[]",
        },
    ),
    Case(
        "no CSRF check",
        fault("no_csrf"),
        (),
        {"CSRF: no header": "agy checks no token", "CSRF: a wrong token": "200"},
    ),
    Case(
        "HTTP/1.1 only",
        {"AGY_SIM_HTTP1_ONLY": "1"},
        (),
        {"agy starts": "never answered", "TLS and HTTP/2": "ALPN http/1.1"},
        ready_timeout=8.0,
    ),
    Case(
        "no model catalog",
        fault("http_error:method=GetAvailableModels,status=404"),
        ("plain",),
        {"GetAvailableModels": "404"},
        also={"turn: plain": "agy offered no model"},
    ),
)


@pytest.fixture
def scratch_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    assert sorted(p.name for p in base.iterdir()) == []


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_probe_names_the_shape(case: Case, tmp_path: Path, scratch_base: Path) -> None:
    del scratch_base
    report = probe(
        tmp_path,
        turns=case.turns,
        resume=False,
        record=False,
        ready_timeout=case.ready_timeout,
        **case.env,
    )
    failed = {f.fact: f.seen for f in report.findings if f.verdict is FactVerdict.FAIL}
    # An agy that never answered cannot show the quota gaps either.
    expected = set(case.names) | (set(KNOWN_GAPS) if "agy starts" not in case.names else set())
    assert set(failed) == expected, failed
    for fact, part in case.names.items():
        assert part in failed[fact], (fact, failed[fact])
    others = {f.fact: f for f in report.findings if f.fact in case.also}
    for fact, part in case.also.items():
        assert others[fact].verdict is not FactVerdict.PASS
        assert part in others[fact].seen
    assert os.environ.get("AGY_SIM_FAULT") is None, "the switch stays with that agy"
