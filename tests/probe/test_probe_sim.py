"""`omnigent-agy probe` against agy-sim: a separate process in tmux, started by the plugin's
launcher, over real TLS HTTP/2, every turn included; then what it leaves behind (nothing but
the recording) and whether the recording reads as the fixtures do.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import ModuleType

import libtmux
import pytest
from conftest import REPO_ROOT
from simproc import AGY_SIM

from agy_sim.versions import DEFAULT_VERSION, OLDER, SUBAGENT_GATES, at_least
from omnigent_agy.config.settings import load_config
from omnigent_agy.probe.consent import RESUME
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.run import ProbeReport, ProbeSettings, run_probe
from omnigent_agy.probe.turn_checks import PLANS
from omnigent_agy.reading.mapper import MapperState, map_step

pytestmark = pytest.mark.tmux

ALL_TURNS = tuple(plan.name for plan in PLANS)
# What agy-sim does not model yet; each must fail (the probe notices), none other may.
KNOWN_GAPS: dict[str, str] = {}


# Steps the probe's turns do not make and agy-sim's capture plans do (tests/simulator/
# test_sim_conformance.py compares the plans' steps with a recording).
RECORDING_LACKS = {
    "selectedOptionIds": "the probe skips its question; the plans pick options",
    "skipped": "the plans answer their questions; the probe skips",
    "error": "the probe cancels no running command (cancel_command does)",
    "plannerConfig.planModel": "a plan sends the older requestedModel form",
}


def sim_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "OMNIGENT_CONFIG_HOME": str(tmp_path / "omnigent"),
        "OMNIGENT_AGY_CLI_PATH": str(AGY_SIM),
        "AGY_SIM_STARTUP_DELAY": "0.3",
        "AGY_SIM_TOKEN_DELAY": "0.005",
        "AGY_SIM_LONG_TOKEN_DELAY": "0.05",
        # The report wraps to the terminal's width: one width, whatever runs the test (a
        # pytest-xdist worker's differs), so a sentence is matched unwrapped.
        "COLUMNS": "120",
        **extra,
    }


@pytest.fixture
def scratch_base(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The probe's scratch folders go here, so the test sees that none is left."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    yield base
    assert sorted(p.name for p in base.iterdir()) == []


def probe(
    tmp_path: Path,
    *,
    turns: tuple[str, ...] = ALL_TURNS,
    resume: bool = True,
    record: bool = True,
    ready_timeout: float = 30.0,
    **env: str,
) -> ProbeReport:
    environment = sim_env(tmp_path, **env)
    settings = ProbeSettings(
        config=load_config(env=environment),
        env=environment,
        turns=turns,
        resume=resume,
        record=tmp_path / "recording" if record else None,
        ready_timeout=ready_timeout,
        turn_timeout=60.0,
    )
    said: list[str] = []
    report = asyncio.run(run_probe(settings, said.append))
    assert said, "the probe says what it is doing"
    socket = f"omnigent-agy-probe-{os.getpid()}"
    assert not libtmux.Server(socket_name=socket).is_alive(), "the probe's tmux server is gone"
    return report


def by_fact(findings: tuple[Finding, ...]) -> dict[str, list[Finding]]:
    found: dict[str, list[Finding]] = {}
    for finding in findings:
        found.setdefault(finding.fact, []).append(finding)
    return found


def test_the_probe_passes_against_agy_sim(tmp_path: Path, scratch_base: Path) -> None:
    report = probe(tmp_path)
    failed = {f.fact: f.seen for f in report.findings if f.verdict is FactVerdict.FAIL}
    assert failed.keys() == KNOWN_GAPS.keys(), failed
    assert report.version == DEFAULT_VERSION
    facts = by_fact(report.findings)
    for fact in (
        "agy starts",
        "TLS and HTTP/2",
        "CSRF: no header",
        "CSRF: a wrong token",
        "turn: text streams",
        "turn: usage",
        "turn: as the plugin reads it",
        "command: output as the plugin reads it",
        "Stop: CancelCascadeSteps on a gate",
        "deny: agy carries on",
        "question: agy carries on after a skip",
        "interrupt: Stop stops the turn",
        "/clear: a new conversation",
        "resume: --conversation on a copy",
        "fields: PLANNER_RESPONSE DONE",
        "fields: RUN_COMMAND WAITING",
        "fields: ASK_QUESTION WAITING",
        # agy-sim models docs/wire.md §9: a hidden folder ignored, a dot-free link taken.
        "hidden folder: agy ignores it",
        "hidden folder: a dot-free link",
    ):
        assert [f.verdict for f in facts[fact]] == [FactVerdict.PASS], facts[fact]
    (hidden,) = facts["hidden folder: agy ignores it"]
    assert hidden.seen == "logged; its conversation works in agy's scratch folder"
    (link,) = facts["hidden folder: a dot-free link"]
    assert link.seen == "no such line; its conversation works in the folder as given"
    (notes,) = facts["agy changelog"]
    assert notes.verdict is FactVerdict.INFO
    assert notes.seen.startswith("33 lines; first: Antigravity CLI release notes"), notes.seen
    assert "/ 1.5.16 / - Sub-agents:" in notes.seen
    # agy-sim runs the command the probe names (docs/simulator.md, approval_command).
    (gate,) = facts["command: a permission gate"]
    assert gate.seen.endswith("command 'echo omnigent-agy-probe'")
    assert "omnigent-agy-probe" in facts["command: output as the plugin reads it"][0].seen
    skipped = [f.fact for f in report.findings if f.verdict is FactVerdict.SKIP]
    # An agy-sim before 1.5.15 has sub-agents that run without asking: nothing to check.
    asks = at_least(report.version or "", SUBAGENT_GATES)
    assert skipped == ([] if asks else ["sub-agent: a gate in its own cascade"])
    # agy-sim models docs/wire.md §9's public reports: glog lines, version, sign-in, quota.
    for fact in (
        "log: line form",
        "log: version line",
        "log: sign-in line",
        "quota: GetUserStatus",
    ):
        assert [f.verdict for f in facts[fact]] == [FactVerdict.PASS], facts[fact]
    assert report.recording == tmp_path / "recording"
    recorded = json.loads((report.recording / "probe.json").read_text())
    assert recorded["agyVersion"] == DEFAULT_VERSION
    printed = recorded["agyPrinted"]["agy changelog"]
    assert printed[0].startswith("Antigravity CLI release notes")
    assert "1.5.16" in printed


def test_an_agy_without_a_changelog_is_said_not_failed(tmp_path: Path, scratch_base: Path) -> None:
    """agy-sim as 1.2.14, which has no `agy changelog`: the probe says so (INFO), records no
    lines, and nothing fails for it; its version is the one the probe names."""
    report = probe(tmp_path, turns=(), resume=False, AGY_SIM_VERSION=OLDER)
    assert report.version == OLDER
    facts = by_fact(report.findings)
    (notes,) = facts["agy changelog"]
    assert notes.verdict is FactVerdict.INFO
    assert notes.seen == (
        "not available here (exit status 2: agy-sim: error: argument command: invalid choice: "
        "'changelog' (choose from 'models'))"
    )
    assert [f.verdict for f in facts["agy version"]] == [FactVerdict.PASS]
    assert [f.fact for f in report.findings if f.verdict is FactVerdict.FAIL] == list(KNOWN_GAPS)
    assert report.recording is not None
    recorded = json.loads((report.recording / "probe.json").read_text())
    assert recorded["agyPrinted"] == {"agy changelog": []}


def test_an_untested_agy_is_said_and_probed_all_the_same(
    tmp_path: Path, scratch_base: Path
) -> None:
    report = probe(tmp_path, turns=(), resume=False, record=False, AGY_SIM_VERSION="1.6.0")
    assert report.version == "1.6.0"
    (version,) = by_fact(report.findings)["agy version"]
    assert version.verdict is FactVerdict.INFO
    assert version.seen == "1.6.0: omnigent-agy is tested with agy 1.2.x to 1.5.x only"
    assert version.expected.startswith("a version the plugin is tested with: agy 1.2.x to 1.5.x")
    assert [f.fact for f in report.findings if f.verdict is FactVerdict.FAIL] == list(KNOWN_GAPS)


def test_no_turn_without_consent(tmp_path: Path, scratch_base: Path) -> None:
    report = probe(tmp_path, turns=(), resume=False, record=False)
    assert report.recording is None
    facts = by_fact(report.findings)
    for plan in PLANS:
        (finding,) = facts[f"turn: {plan.name}"]
        assert finding.verdict is FactVerdict.SKIP
        assert finding.seen == "not run: no turns were agreed to"
    assert facts["fields: RUN_COMMAND WAITING"][0].verdict is FactVerdict.SKIP
    # Without turns the model was never called: no USER_INPUT anywhere.
    assert facts["fields: USER_INPUT"][0].seen.startswith("the plain turn was not run")
    assert [f.fact for f in report.findings if f.verdict is FactVerdict.FAIL] == list(KNOWN_GAPS)


def _conformance() -> ModuleType:
    path = REPO_ROOT / "tests" / "simulator" / "test_sim_conformance.py"
    spec = importlib.util.spec_from_file_location("probe_sim_conformance", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_recording_reads_as_fixtures_do(tmp_path: Path, scratch_base: Path) -> None:
    """Every step of the recording goes through the mapper, and the simulator's conformance
    checks take the recording as their reference and find agy-sim's steps like it."""
    report = probe(tmp_path, turns=ALL_TURNS, resume=False)
    assert report.recording is not None
    files = sorted(report.recording.glob("*.json"))
    names = {p.name for p in files}
    assert {"plain.poll.json", "plain.stream.json", "command.poll.json", "calls.json"} <= names
    conformance = _conformance()
    mapped = 0
    for path in files:
        for step in conformance.steps_of(json.loads(path.read_text())):
            list(map_step(MapperState(cascade_id="c"), step, absolute_index=0))
            mapped += 1
    assert mapped > 20
    refs = conformance.References(files)
    kinds = {kind for kind, _, _ in refs.by_key}
    assert kinds == {"poll", "stream"}
    captures = {p.name: conformance.run_plan(p, tmp_path / "ws") for p in conformance.PLANS}
    checked = 0
    all_issues: list[str] = []
    for captured in captures.values():
        issues, count = conformance._check(captured, refs)
        all_issues += issues
        checked += count
    # What the comparison finds is what the probe's turns did not do and agy-sim's capture
    # plans do: it reads the recording as it reads the real ones.
    unexplained = [i for i in set(all_issues) if not any(k in i for k in RECORDING_LACKS)]
    assert unexplained == []
    assert all_issues, "the comparison must see the recording's steps"
    assert checked > 50


def test_the_cli_without_a_terminal_spends_no_turn(tmp_path: Path) -> None:
    """`omnigent-agy probe` with no stdin: no turn, the table, exit 0 (1 while agy-sim has a
    known gap), no recording."""
    env = sim_env(tmp_path, TMPDIR=str(tmp_path))
    ran = subprocess.run(
        [sys.executable, "-m", "omnigent_agy.cli", "probe", "--no-record"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert ran.returncode == (1 if KNOWN_GAPS else 0), ran.stdout + ran.stderr
    assert f"omnigent-agy probe: agy {DEFAULT_VERSION}" in ran.stdout
    assert "not run: no terminal to ask (run with --yes to spend turns)" in ran.stdout
    assert "PASS  §1        CSRF: no header" in ran.stdout
    assert "starting agy as the plugin does" in ran.stderr
    assert not list(tmp_path.glob("agy-probe-*"))
    assert not list(tmp_path.glob("omnigent-agy-probe-*"))
    assert RESUME not in ran.stdout.split("agy starts")[0]


def test_a_gate_after_the_answered_one_is_refused(
    tmp_path: Path, scratch_base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A model that asks again after the probe's one answer (here agy-sim's chained command:
    a gate per part, on one step) gets each later gate refused, and the turn still ends."""
    from omnigent_agy.probe import run  # noqa: PLC0415

    chained = [
        replace(plan, prompt="Please run: echo one && echo two") if plan.name == "command" else plan
        for plan in PLANS
    ]
    monkeypatch.setattr(run, "PLANS", tuple(chained))
    report = probe(tmp_path, turns=("command",), resume=False, record=False)
    facts = by_fact(report.findings)
    (again,) = facts["gate: asked again"]
    assert again.verdict is FactVerdict.INFO
    assert again.seen == "agy asked 1 more time(s) after the answer; refused each"
    assert facts["command: allowed once"][0].verdict is FactVerdict.PASS
    assert [f.verdict for f in facts["poll: the same steps as the stream"]] == [FactVerdict.PASS]
