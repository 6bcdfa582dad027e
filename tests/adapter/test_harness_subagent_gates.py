"""A sub-agent that asks, through the real harness app and agy-sim as agy 1.5.16 (a separate
process in tmux): since agy 1.5.15 a sub-agent's own tool call waits on an approval or a
question in the sub-agent's cascade, not the conversation's (docs/wire.md §7).

The card says which sub-agent asks; the answer lands in the sub-agent's cascade and the
parent's turn goes on; a denial is an answer; Stop during a sub-agent's card stops the whole
tree and closes the card; a harness that went away while the card waited shows it again; the
operator's rules apply to a sub-agent's calls as to the conversation's own.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harnessproc import runner_env
from omnigent.community.harness.agy.app import create_app
from test_harness_app import agy_call, agy_record, steps_of
from waiting import wait_until

from agy_sim.stack.harness_server import HarnessServer, StreamedTurn

pytestmark = pytest.mark.tmux

RUN = "CORTEX_STEP_TYPE_RUN_COMMAND"
ASK = "CORTEX_STEP_TYPE_ASK_QUESTION"
DONE = "CORTEX_STEP_STATUS_DONE"
IDLE = "CASCADE_RUN_STATUS_IDLE"


@pytest.fixture
def agy_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """The runner's environment, with agy-sim as an agy whose sub-agents ask (1.5.16)."""
    monkeypatch.setenv("AGY_SIM_VERSION", "1.5.16")
    with runner_env(tmp_path, monkeypatch) as values:
        yield values


@pytest.fixture
def harness(agy_env: dict[str, str]) -> Iterator[HarnessServer]:
    with HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}") as server:
        yield server


def children(env: dict[str, str], conversation: str) -> list[str]:
    """The conversation's sub-agents' cascades, as agy lists them."""
    parent = agy_record(env, conversation).cascade_id
    listed = agy_call(env, conversation, "GetAllCascadeTrajectories", {})["trajectorySummaries"]
    return [
        cid
        for cid, summary in listed.items()
        if summary.get("trajectoryMetadata", {}).get("parentConversationId") == parent
    ]


def child_steps(env: dict[str, str], conversation: str) -> list[dict[str, Any]]:
    [child] = children(env, conversation)
    reply = agy_call(env, conversation, "GetCascadeTrajectorySteps", {"cascadeId": child})
    return list(reply.get("steps", []))


def last_of(steps: list[dict[str, Any]], step_type: str) -> dict[str, Any]:
    return [s for s in steps if s["type"] == step_type][-1]


def subagent_events(turn: StreamedTurn, kind: str) -> list[dict[str, Any]]:
    return [e for e in turn.events if e.get("type") == f"subagent.{kind}"]


def test_a_sub_agents_approval_is_its_own_card_and_the_parent_goes_on(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("use a sub-agent to run: echo from the researcher")
    card = turn.until("response.elicitation_request")
    message = card["params"]["message"]
    assert message.startswith(
        "Antigravity CLI's sub-agent “Researcher” wants to run “echo from the researcher”"
    ), message
    # The gate is the sub-agent's: the conversation's own cascade waits on nothing.
    parent = steps_of(agy_env, harness.conversation_id)
    assert not [s for s in parent if s["status"] == "CORTEX_STEP_STATUS_WAITING"]
    harness.press(card, "allow once")
    turn.until("response.completed", timeout=120)
    ran = last_of(child_steps(agy_env, harness.conversation_id), RUN)
    assert ran["status"] == DONE
    assert ran["runCommand"].get("userRejected") is not True
    assert "from the researcher" in ran["runCommand"]["combinedOutput"]["full"]
    # The row: named by its role, asked its own first input, its last answer as summary.
    [started] = subagent_events(turn, "started")
    assert started["title"] == "Researcher"
    assert started["task"] == "run: echo from the researcher"
    assert started["child_key"].startswith("Researcher · ")
    [completed] = subagent_events(turn, "completed")
    assert completed["child_key"] == started["child_key"]
    child_answer = last_of(
        child_steps(agy_env, harness.conversation_id), "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
    )
    assert completed["summary"] == child_answer["plannerResponse"]["response"]
    [call] = subagent_events(turn, "tool_call")
    assert call["child_key"] == started["child_key"]
    assert "echo from the researcher" in call["arguments"]
    # The parent's answer comes after the sub-agent's end, and says what it reported.
    kinds = turn.kinds()
    assert kinds.index("subagent.completed") < kinds.index("response.completed")
    assert completed["summary"] in turn.text()


def test_a_sub_agents_denied_command_is_an_answer(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("use a sub-agent to run: echo refused")
    card = turn.until("response.elicitation_request")
    harness.press(card, "deny")
    turn.until("response.completed", timeout=120)
    assert "response.cancelled" not in turn.kinds()
    ran = last_of(child_steps(agy_env, harness.conversation_id), RUN)
    assert ran["runCommand"].get("userRejected") is True


def test_a_sub_agents_question_is_answered_in_its_cascade(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("have a sub-agent ask me a question")
    card = turn.until("response.elicitation_request")
    assert "sub-agent “Researcher”" in card["params"]["message"]
    asked = last_of(child_steps(agy_env, harness.conversation_id), ASK)
    first = asked["askQuestion"]["questions"][0]["options"][0]["text"]
    harness.press(card, first)
    turn.until("response.completed", timeout=120)
    answered = last_of(child_steps(agy_env, harness.conversation_id), ASK)
    assert answered["status"] == DONE
    response = answered["completedInteractions"][-1]["response"]
    assert response["askQuestion"]["responses"][0]["selectedOptionIds"] == ["1"]


def test_stop_during_a_sub_agents_card_stops_the_tree_and_closes_it(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    turn = harness.turn("use a sub-agent to run: echo stopped")
    card = turn.until("response.elicitation_request")
    assert harness.post({"type": "interrupt"}).status_code == 204
    turn.until("response.cancelled", timeout=60)
    closed = [e for e in turn.events if e.get("type") == "response.elicitation_resolved"]
    assert [(e["elicitation_id"], e.get("reason")) for e in closed] == [
        (card["elicitation_id"], "unanswered")
    ]
    conversation = harness.conversation_id
    tree = [agy_record(agy_env, conversation).cascade_id, *children(agy_env, conversation)]

    def stopped() -> bool:
        listed = agy_call(agy_env, conversation, "GetAllCascadeTrajectories", {})
        return all(listed["trajectorySummaries"][c]["status"] == IDLE for c in tree)

    wait_until(stopped, timeout=30, what="the conversation and its sub-agent to stop")
    ran = last_of(child_steps(agy_env, conversation), RUN)
    assert ran["runCommand"].get("userRejected") is True, "the sub-agent's gate was left open"


def test_a_sub_agents_card_open_when_the_harness_restarted_is_asked_again(
    agy_env: dict[str, str],
) -> None:
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as first:
        before = first.turn("use a sub-agent to run: echo left waiting")
        before.until("response.elicitation_request")
    # The harness went away with the card on screen; the sub-agent still waits for an answer.
    with HarnessServer(create_app(), conversation) as second:
        turn = second.turn("are you still there?")
        card = turn.until("response.elicitation_request", timeout=60)
        assert (
            "sub-agent “Researcher” wants to run “echo left waiting”" in card["params"]["message"]
        )
        second.press(card, "allow once")
        turn.until("response.completed", timeout=120)
    ran = last_of(child_steps(agy_env, conversation), RUN)
    assert ran["status"] == DONE
    assert ran["runCommand"].get("userRejected") is not True
    # What the first process showed of the sub-agent is not shown again: its calls (omnigent
    # appends each to the child's row) and its task (seeded into the child at each start).
    calls = [e["call_id"] for t in (before, turn) for e in subagent_events(t, "tool_call")]
    assert calls, "the sub-agent's command was never shown"
    assert len(calls) == len(set(calls)), f"a sub-agent's call was shown twice: {calls}"
    [again] = subagent_events(turn, "started")  # the runner of the new turn needs its start
    assert again["task"] == "", "the sub-agent's task was seeded into its row again"
    assert subagent_events(turn, "completed")


def test_the_operators_rules_apply_to_a_sub_agents_calls(
    agy_env: dict[str, str],
) -> None:
    config = Path(agy_env["OMNIGENT_CONFIG_HOME"]) / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(
        "harness:\n  agy-cli:\n    permissions:\n"
        "      deny: ['command(echo never:*)']\n      allow: ['command(echo fine:*)']\n"
    )
    with HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}") as harness:
        denied = harness.turn("use a sub-agent to run: echo never mind")
        denied.until("response.completed", timeout=120)
        assert "response.elicitation_request" not in denied.kinds(), "a denied call was asked"
        ran = last_of(child_steps(agy_env, harness.conversation_id), RUN)
        assert ran["runCommand"].get("userRejected") is True
        allowed = harness.turn("use a sub-agent to run: echo fine by the rules")
        allowed.until("response.completed", timeout=120)
        assert "response.elicitation_request" not in allowed.kinds(), "an allowed call was asked"


def test_for_this_conversation_covers_the_sub_agents_calls(
    harness: HarnessServer, agy_env: dict[str, str]
) -> None:
    first = harness.turn("run: echo allowed all along")
    card = first.until("response.elicitation_request")
    harness.press(card, "allow “echo allowed all along” for this conversation")
    first.until("response.completed", timeout=120)
    # The sub-agent's own cascade knows nothing of that answer; the person's answer holds.
    second = harness.turn("use a sub-agent to run: echo allowed all along")
    second.until("response.completed", timeout=120)
    assert "response.elicitation_request" not in second.kinds(), "the person was asked again"
    ran = last_of(child_steps(agy_env, harness.conversation_id), RUN)
    assert ran["status"] == DONE
    assert ran["runCommand"].get("userRejected") is not True
    # Another command is still the person's to decide.
    third = harness.turn("use a sub-agent to run: echo something else")
    card = third.until("response.elicitation_request")
    harness.press(card, "deny")
    third.until("response.completed", timeout=120)


def test_for_this_conversation_outlives_a_harness_restart(agy_env: dict[str, str]) -> None:
    """The person's "for this conversation" answers, on the conversation's own card and on a
    sub-agent's, still hold for the sub-agents of a harness process started after them."""
    conversation = f"conv_{uuid.uuid4().hex[:12]}"
    with HarnessServer(create_app(), conversation) as first:
        own = first.turn("run: echo kept by the parent")
        card = own.until("response.elicitation_request")
        first.press(card, "allow “echo kept by the parent” for this conversation")
        own.until("response.completed", timeout=120)
        delegated = first.turn("use a sub-agent to run: echo kept by the child")
        card = delegated.until("response.elicitation_request")
        first.press(card, "allow “echo kept by the child” for this conversation")
        delegated.until("response.completed", timeout=120)
    with HarnessServer(create_app(), conversation) as second:
        for command in ("echo kept by the parent", "echo kept by the child"):
            turn = second.turn(f"use a sub-agent to run: {command}")
            turn.until("response.completed", timeout=120)
            assert "response.elicitation_request" not in turn.kinds(), f"asked again: {command}"
            runs = [s for s in sub_agents_runs(agy_env, conversation) if command in str(s)]
            assert runs, f"no sub-agent ran {command}"
            for ran in runs:  # this turn's and, for the second, the first process's
                assert ran["status"] == DONE
                assert ran["runCommand"].get("userRejected") is not True


def sub_agents_runs(env: dict[str, str], conversation: str) -> list[dict[str, Any]]:
    """Every command step of the conversation's sub-agents."""
    return [
        step
        for child in children(env, conversation)
        for step in agy_call(
            env, conversation, "GetCascadeTrajectorySteps", {"cascadeId": child}
        ).get("steps", [])
        if step["type"] == RUN
    ]
