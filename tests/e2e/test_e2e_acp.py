"""agy in omnigent's generic ACP harness, with no plugin: `agy acp` on the real stack.

The stack's config lists agy as an ACP agent (`acp: {agents: [{name: Antigravity, command:
agy acp}]}`, `LocalStack.acp_agents`); the stack's `agy` is agy-sim, so `agy acp` is `agy-sim
acp`. omnigent's server lists it as harness `acp:antigravity` and seeds an agent `antigravity`;
a session of that agent runs omnigent's `AcpExecutor` in a harness process, which starts
`agy acp` and speaks ACP to it. Everything below is read through omnigent's REST API, as its
web UI reads it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from stack import Conversation

from agy_sim.stack.local_stack import AGY_ACP_HARNESS, LocalStack
from agy_sim.stack.rest import card_choices

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

#: The agent omnigent seeds for the configured ACP agent (named by its slug).
ACP_AGENT = AGY_ACP_HARNESS.split(":", 1)[1]


@pytest.fixture
def acp_conversation(stack: LocalStack) -> Iterator[Conversation]:
    with Conversation(stack, agent=ACP_AGENT) as opened:
        yield opened


def test_the_server_lists_agy_acp_as_an_acp_harness(stack: LocalStack) -> None:
    listed = [h for h in stack.client.harnesses() if h.get("id") == AGY_ACP_HARNESS]
    assert listed, f"{AGY_ACP_HARNESS} is not in GET /v1/harnesses"
    assert listed[0]["label"] == "Antigravity"
    assert listed[0]["capabilities"]["integration_mode"] == "acp-subprocess"


def test_a_turn_streams_agys_answer_through_the_acp_harness(
    acp_conversation: Conversation,
) -> None:
    ended = acp_conversation.say("Say hello in one short sentence.")
    assert ended["type"] == "response.completed"
    deltas = acp_conversation.seen("response.output_text.delta")
    assert len(deltas) > 1, "the answer was not streamed"
    streamed = "".join(str(d["delta"]) for d in deltas)
    assert streamed.startswith("Hello from the agy simulator (Gemini 3 Pro (High))")
    assert acp_conversation.assistant_texts() == [streamed]


def test_a_permission_card_denied_and_the_turn_goes_on(
    stack: LocalStack, acp_conversation: Conversation
) -> None:
    acp_conversation.send("Please run: touch made-through-acp")
    card = acp_conversation.card()
    # agy's own options on omnigent's choice card (its ACP permission bridge).
    assert card_choices(card["params"]) == [
        "Allow once",
        "Allow for this conversation",
        "Deny",
        "Always deny",
    ]
    acp_conversation.answer(card, "Deny")
    assert acp_conversation.turn_end()["type"] == "response.completed"
    assert "I did not run `touch made-through-acp`" in acp_conversation.assistant_texts()[-1]
    assert not (stack.workspace / "made-through-acp").exists()


def test_allow_once_runs_the_command_and_shows_its_row(acp_conversation: Conversation) -> None:
    acp_conversation.send("Please run: echo hi through acp")
    acp_conversation.answer(acp_conversation.card(), "Allow once")
    assert acp_conversation.turn_end()["type"] == "response.completed"
    items = acp_conversation.items()
    calls = [i for i in items if i["type"] == "function_call"]
    # omnigent names an ACP tool row by the tool call's title (agy's toolAction here).
    assert [c["name"] for c in calls] == ["Running echo hi through acp"]
    assert "exit code 0" in acp_conversation.assistant_texts()[-1]


def test_a_model_picked_in_omnigent_reaches_agy(acp_conversation: Conversation) -> None:
    assert acp_conversation.say("hello")["type"] == "response.completed"
    # The web's model picker: omnigent switches the live ACP session (session/set_config_option).
    acp_conversation.client.update(acp_conversation.id, model_override="gemini-3-flash")
    assert acp_conversation.say("hello again")["type"] == "response.completed"
    assert "(Gemini 3 Flash)" in acp_conversation.assistant_texts()[-1]
