"""Every step the simulator emits, checked against the shapes of recorded real steps.

For each scenario plan (``agy_sim.capture.PLANS``) every poll-shape state and
every stream-frame step is compared with the recorded steps of the same type and status
(``../shared/agy-wire/recorded``: live agy and the offline cortex engine):

1. *required keys*: every key path that all recorded steps of that type/status share is
   present in the simulator's step (minus ``NOT_EMITTED``);
2. *value types*: where both have a path, the JSON types agree;
3. *no invented keys*: every path the simulator emits appears in some recorded step of the
   same type (any status) or is listed in ``ADDITIONS`` with the reason.

The same checks run against recordings of `omnigent-agy probe` (docs/probe.md), and the
type and key checks against the project's hand-made fixtures
(``fixtures/recorded_steps/*.json``), and the committed simulator fixtures
(``fixtures/recorded_steps/sim/``) must match what the engine emits now.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from agy_sim.capture import PLANS, Capture, Plan, capture

REPO = Path(__file__).resolve().parents[2]
OWN = REPO / "fixtures" / "recorded_steps"
SIM = OWN / "sim"
Shape = dict[str, set[str]]  # key path → JSON type names seen there

# Recorded paths the simulator deliberately does not emit (docs/simulator.md lists them).
NOT_EMITTED: dict[str, str] = {
    "metadata.modelApiContentId": "offline-engine bookkeeping, never seen from agy",
    "metadata.modelInfo*": "offline-engine model descriptor, never seen from agy",
    "_fixtureProvenance": "a note in a hand-made recording",
}
# Paths the simulator emits that no recorded step of the type has, with the evidence.
ADDITIONS: dict[str, str] = {
    "plannerResponse.thinking": "docs/wire.md §4: thinking streams while GENERATING (not recorded)",
    "runCommand.userRejected": "docs/wire.md §5 field list; a denied command",
    "completedInteractions[].response.permission.scope": "docs/wire.md §6 scopes, echoed",
    "*askQuestion.questions[].isMultiSelect": "docs/wire.md §5 (recorded questions were single)",
    "*askQuestion.questions[].writeInResponse": "write-in answer written into the step (guess)",
    "*askQuestion.questions[].skipped": "skipped answer written into the step (guess)",
    "completedInteractions[].response.askQuestion.responses[].writeInResponse": "docs/wire.md §3",
    "completedInteractions[].response.askQuestion.responses[].skipped": "docs/wire.md §3",
    "completedInteractions[].response.askQuestion.cancelled": "docs/wire.md §3",
    "userInput.userConfig.plannerConfig.requestedModel*": "docs/wire.md §5, older agy's form",
}
STREAM_STRIPPED = ("metadata.toolCall", "plannerResponse.toolCalls", "metadata.internalMetadata")


def shape(value: Any, path: str = "", into: Shape | None = None) -> Shape:
    """Key paths of a JSON value with the types found there; list items share ``[]``."""
    out: Shape = into if into is not None else defaultdict(set)
    if isinstance(value, dict):
        if path:
            out[path].add("object")
        for key, item in value.items():
            shape(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list):
        out[path].add("array")
        for item in value:
            shape(item, f"{path}[]", out)
    else:
        kind = {bool: "bool", str: "string", int: "number", float: "number"}.get(type(value))
        out[path].add(kind or "null")
    return out


def _matches(path: str, pattern: str) -> bool:
    """``*`` is the only wildcard (``[]`` in paths is literal); a match covers sub-paths."""
    regex = re.escape(pattern).replace(r"\*", ".*")
    return re.fullmatch(f"{regex}(\\..*|\\[\\].*)?", path) is not None


def _listed(path: str, patterns: dict[str, str]) -> bool:
    return any(_matches(path, p) for p in patterns)


def _stripped(path: str) -> bool:
    return any(_matches(path, p) for p in STREAM_STRIPPED)


# Recorded keys whose absence depends on the content of the simulator's step, not on its
# shape: (pattern, condition on our step under which absence is expected, why).
CONTENT_DEPENDENT: tuple[tuple[str, Any, str], ...] = (
    (
        "metadata.sourceTrajectoryStepInfo.metadataIndex",
        lambda s: True,
        "0 (omitted) for steps of a cascade's first model call; recordings were later ones",
    ),
    ("*selectedOptionIds*", lambda s: True, "a write-in, skipped or cancelled answer has none"),
    (
        "runCommand.combinedOutput*",
        lambda s: s["status"] != "CORTEX_STEP_STATUS_DONE" or s["runCommand"].get("userRejected"),
        "no output before it ran, or when denied",
    ),
    ("runCommand.exitCode", lambda s: s["runCommand"].get("userRejected"), "a denied command"),
    ("runCommand.shellName", lambda s: s["runCommand"].get("userRejected"), "never started"),
)


def _absence_expected(path: str, step: dict[str, Any]) -> bool:
    return any(_matches(path, p) and bool(cond(step)) for p, cond, _ in CONTENT_DEPENDENT)


def steps_of(document: Any) -> list[dict[str, Any]]:
    """Steps in a recorded file: a step, a list, ``{"steps": [...]}`` or ``{"idx", "step"}``."""
    if isinstance(document, list):
        return [s for item in document for s in steps_of(item)]
    if not isinstance(document, dict):
        return []
    if "type" in document and "status" in document:
        return [document]
    if isinstance(document.get("step"), dict):
        return steps_of(document["step"])
    update = document.get("update")
    if isinstance(update, dict):
        main = update.get("mainTrajectoryUpdate", {})
        return steps_of(main.get("stepsUpdate", {}).get("steps", []))
    return steps_of(document.get("steps", []))


class References:
    """Recorded steps grouped by (shape, type, status) and by type."""

    def __init__(self, files: list[Path]) -> None:
        self.by_key: dict[tuple[str, str, str], list[Shape]] = defaultdict(list)
        self.by_type: dict[str, Shape] = defaultdict(lambda: defaultdict(set))
        for path in files:
            # Recorded stream steps: `stream_*.json` (../shared), `*.stream.json` (captures of
            # agy-sim and recordings of `omnigent-agy probe`, fixtures/recorded_steps/).
            stream = path.name.startswith("stream_") or path.name.endswith(".stream.json")
            kind = "stream" if stream else "poll"
            for step in steps_of(json.loads(path.read_text())):
                step_shape = shape(step)
                self.by_key[kind, step["type"], step["status"]].append(step_shape)
                for key, types in step_shape.items():
                    self.by_type[step["type"]][key] |= types

    def union(self, step_type: str) -> Shape:
        """Paths seen on this type, plus any ``metadata.*`` path (one message for all types)."""
        if step_type not in self.by_type:
            return {}
        merged: Shape = defaultdict(set)
        for shapes in self.by_type.values():
            for key, types in shapes.items():
                if key.startswith("metadata."):
                    merged[key] |= types
        for key, types in self.by_type[step_type].items():
            merged[key] |= types
        return merged

    def candidates(self, kind: str, step: dict[str, Any]) -> list[Shape]:
        found = self.by_key.get((kind, step["type"], step["status"]), [])
        if found or kind == "poll":
            return found
        # No stream recording of this type/status: the poll recording minus what the stream
        # strips (docs/wire.md §4).
        return [
            {k: v for k, v in s.items() if not _stripped(k)}
            for s in self.by_key.get(("poll", step["type"], step["status"]), [])
        ]


def problems(kind: str, step: dict[str, Any], refs: References) -> list[str]:
    ours = shape(step)
    found: list[str] = []
    candidates = refs.candidates(kind, step)
    if candidates:
        required = set.intersection(*(set(c) for c in candidates))
        found += [
            f"missing {p}"
            for p in sorted(required - set(ours))
            if not _listed(p, NOT_EMITTED) and not _absence_expected(p, step)
        ]
    union = refs.union(step["type"])
    if union:
        for path, types in sorted(ours.items()):
            if path in union and not types <= union[path]:
                found.append(f"type of {path}: {sorted(types)} vs recorded {sorted(union[path])}")
            elif path not in union and not _listed(path, ADDITIONS):
                found.append(f"invented {path}")
    if kind == "stream":
        found += [f"stream carries {p}" for p in ours if _stripped(p)]
    return found


def run_plan(plan: Plan, workspace: Path) -> Capture:
    return asyncio.run(capture(plan, workspace))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("conformance") / "project"
    (root / "src").mkdir(parents=True)
    (root / "README.md").write_text("# Demo project\nhello file content\n")
    (root / "notes.txt").write_text("")
    return root


@pytest.fixture(scope="module")
def captures(workspace: Path) -> dict[str, Capture]:
    return {plan.name: run_plan(plan, workspace) for plan in PLANS}


def _check(captured: Capture, refs: References) -> tuple[list[str], int]:
    issues, checked = [], 0
    for kind, steps in (("poll", captured.poll_steps()), ("stream", captured.stream_steps())):
        for step in steps:
            if step["type"] not in refs.by_type:
                continue
            checked += 1
            issues += [
                f"{kind} {step['type']} {step['status']}: {p}" for p in problems(kind, step, refs)
            ]
    return sorted(set(issues)), checked


@pytest.mark.shared
@pytest.mark.parametrize("plan", PLANS, ids=[p.name for p in PLANS])
def test_steps_match_recorded_real_steps(
    plan: Plan, captures: dict[str, Capture], shared_recorded: Path
) -> None:
    refs = References(sorted(shared_recorded.rglob("*.json")))
    issues, checked = _check(captures[plan.name], refs)
    if not checked:
        pytest.skip("no recorded real step of these types (e.g. SYSTEM_MESSAGE) to compare with")
    assert issues == []


def probe_recordings() -> list[Path]:
    """Recordings of `omnigent-agy probe` against real agys (docs/probe.md): committed under
    fixtures/recorded_steps/probe/<name>/, or named by AGY_PROBE_RECORDING (folders, separated
    by the path separator) to check one a person sent before it is committed."""
    named = [Path(p) for p in os.environ.get("AGY_PROBE_RECORDING", "").split(os.pathsep) if p]
    committed = sorted(p for p in (OWN / "probe").glob("*") if p.is_dir())
    return [*committed, *named]


@pytest.mark.parametrize("recording", probe_recordings() or [None], ids=str)
def test_steps_match_probe_recordings(recording: Path | None, captures: dict[str, Capture]) -> None:
    """agy-sim's steps against what a real agy answered the probe; each difference is either
    fixed in agy-sim or listed above with its reason."""
    if recording is None:
        pytest.skip("no probe recording (fixtures/recorded_steps/probe/, AGY_PROBE_RECORDING)")
    refs = References(sorted(recording.glob("*.json")))
    issues = sorted({i for c in captures.values() for i in _check(c, refs)[0]})
    assert issues == []


@pytest.mark.parametrize("plan", PLANS, ids=[p.name for p in PLANS])
def test_steps_match_the_projects_hand_made_fixtures(
    plan: Plan, captures: dict[str, Capture]
) -> None:
    refs = References(sorted(OWN.glob("*.json")))
    issues, _ = _check(captures[plan.name], refs)
    # The hand-made fixtures are guesses and leave out much of a real step, so only the value
    # types of the paths both have are compared with them.
    assert [i for i in issues if ": type of " in i] == []


def test_every_emitted_type_and_status_is_covered(captures: dict[str, Capture]) -> None:
    emitted = {(s["type"], s["status"]) for c in captures.values() for s in c.poll_steps()}
    for expected in (
        ("CORTEX_STEP_TYPE_PLANNER_RESPONSE", "CORTEX_STEP_STATUS_GENERATING"),
        ("CORTEX_STEP_TYPE_PLANNER_RESPONSE", "CORTEX_STEP_STATUS_CANCELED"),
        ("CORTEX_STEP_TYPE_RUN_COMMAND", "CORTEX_STEP_STATUS_WAITING"),
        ("CORTEX_STEP_TYPE_RUN_COMMAND", "CORTEX_STEP_STATUS_CANCELED"),
        ("CORTEX_STEP_TYPE_ASK_QUESTION", "CORTEX_STEP_STATUS_ERROR"),
        ("CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "CORTEX_STEP_STATUS_DONE"),
        ("CORTEX_STEP_TYPE_ERROR_MESSAGE", "CORTEX_STEP_STATUS_DONE"),
        ("CORTEX_STEP_TYPE_SYSTEM_MESSAGE", "CORTEX_STEP_STATUS_DONE"),
    ):
        assert expected in emitted


def test_the_checker_catches_drift(shared_recorded: Path) -> None:
    """The comparison itself can fail: a wrong type, a missing and an invented key."""
    refs = References(sorted(shared_recorded.rglob("*.json")))
    real = json.loads((shared_recorded / "agy-live" / "run_command_done.json").read_text())
    assert problems("poll", real, refs) == []
    broken = json.loads(json.dumps(real))
    broken["runCommand"]["exitCode"] = "0"
    del broken["metadata"]["executionId"]
    broken["runCommand"]["madeUp"] = True
    found = problems("poll", broken, refs)
    assert "missing metadata.executionId" in found
    assert any(p.startswith("type of runCommand.exitCode") for p in found)
    assert "invented runCommand.madeUp" in found
    streamed = json.loads((shared_recorded / "agy-live" / "run_command_done.json").read_text())
    assert "stream carries metadata.toolCall" in problems("stream", streamed, refs)


def _structure(document: Any) -> set[tuple[str, str, str]]:
    return {
        (s["type"], s["status"], json.dumps({k: sorted(v) for k, v in sorted(shape(s).items())}))
        for s in steps_of(document)
    }


@pytest.mark.parametrize("plan", PLANS, ids=[p.name for p in PLANS])
def test_committed_sim_fixtures_match_the_engine(plan: Plan, captures: dict[str, Capture]) -> None:
    """fixtures/recorded_steps/sim/ is regenerated by scripts/capture_sim_fixtures.py."""
    captured = captures[plan.name]
    poll = json.loads((SIM / f"{plan.name}.poll.json").read_text())
    stream = json.loads((SIM / f"{plan.name}.stream.json").read_text())
    fresh_poll = {"steps": [e for entries in captured.poll.values() for e in entries]}
    fresh_stream = [f for frames in captured.frames.values() for f in frames]
    assert _structure(poll) == _structure(fresh_poll)
    assert _structure(stream) == _structure(fresh_stream)
