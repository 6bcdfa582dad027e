"""What happens on agy's side of the real stack: the plan model a turn reaches agy with,
`/clear` typed in agy's own TUI, and the harness process dying under a conversation."""

from __future__ import annotations

import json
import os
import signal

import psutil
import pytest
from stack import Conversation, agy_call, agy_record, agy_steps, plan_model, typed, user_inputs
from waiting import wait_until

from agy_sim.stack.local_stack import LocalStack
from omnigent_agy.agy.terminal import TerminalHost

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_a_model_and_effort_override_between_turns_changes_agys_plan_model(
    conversation: Conversation,
) -> None:
    conversation.say("hello")
    first = plan_model(user_inputs(conversation.host, conversation.id)[-1])
    models = agy_call(conversation.host, conversation.id, "GetAvailableModels", {})
    by_name = {m["displayName"]: m["model"] for m in models["response"]["models"].values()}
    assert by_name["Gemini 3 Pro (High)"] == first, "the agent's default is not agy's default"
    # The web UI's model and effort pickers (omnigent takes a model id without spaces: agy's
    # slug, here of the High variant; the effort then picks the Low one of the same model).
    conversation.client.update(
        conversation.id, model_override="gemini-3-1-pro-high", reasoning_effort="low"
    )
    assert conversation.say("hello again")["type"] == "response.completed"
    second = plan_model(user_inputs(conversation.host, conversation.id)[-1])
    assert second == by_name["Gemini 3.1 Pro (Low)"]


def test_clear_typed_in_agys_tui_moves_the_session_to_agys_new_conversation(
    conversation: Conversation, monkeypatch: pytest.MonkeyPatch
) -> None:
    conversation.say("before the clear")
    before = agy_record(conversation.host, conversation.id)
    # The host passes its TMUX_TMPDIR on to the harness (hostenv): agy's tmux socket is there,
    # where `tmux -L` looks with the host's environment.
    monkeypatch.setenv("TMUX_TMPDIR", conversation.host.env["TMUX_TMPDIR"])
    terminal = TerminalHost(socket_name=before.tmux_socket).find(before.tmux_session)
    assert terminal is not None, "agy's tmux session is not there"
    terminal.send_text("/clear")
    wait_until(
        lambda: "[cleared]" in "\n".join(terminal.capture()),
        timeout=60,
        what="agy's TUI to clear",
    )
    assert conversation.say("after the clear")["type"] == "response.completed"
    after = agy_record(conversation.host, conversation.id)
    assert after.cascade_id != before.cascade_id
    assert typed(conversation) == ["after the clear"]
    # The omnigent session goes on: both answers are in it, once each.
    assert len(conversation.assistant_texts()) == 2


def harness_process(stack: LocalStack, conversation: Conversation) -> psutil.Process:
    """The harness process the host's runner spawned for `conversation`: the one talking to
    the conversation's agy (the runner forks it from a zygote, so its command line is
    omnigent's, not ours)."""
    host = stack.main.process
    assert host is not None
    record = agy_record(conversation.host, conversation.id)
    for proc in psutil.Process(host.pid).children(recursive=True):
        if proc.pid == record.pid:
            continue
        try:
            connections = proc.net_connections(kind="tcp")
        except psutil.Error:
            continue
        if any(c.raddr and c.raddr.port == record.port for c in connections):
            return proc
    raise LookupError(f"no process of the host is connected to agy's port {record.port}")


def test_a_killed_harness_is_respawned_and_reattaches_without_repeating(
    stack: LocalStack, conversation: Conversation
) -> None:
    conversation.say("first message")
    record = agy_record(conversation.host, conversation.id)
    harness = harness_process(stack, conversation)
    os.kill(harness.pid, signal.SIGKILL)
    psutil.wait_procs([harness], timeout=10)
    ended = conversation.say("second message", timeout=120)
    if ended["type"] == "response.failed" and "connection_error" in json.dumps(ended):
        # omnigent's own race: its runner learns that a harness died by polling (every
        # 0.1 s), and a message sent in that instant goes to the dead socket and fails
        # ("Harness stream connection error") without reaching the harness or agy. The
        # person's next message starts the new harness process (docs/reliability.md).
        ended = conversation.say("second message", timeout=120)
    assert ended["type"] == "response.completed", ended
    again = agy_record(conversation.host, conversation.id)
    assert (again.pid, again.cascade_id) == (record.pid, record.cascade_id), "not re-attached"
    assert typed(conversation) == ["first message", "second message"]
    answers = [
        s["plannerResponse"]["response"]
        for s in agy_steps(conversation.host, conversation.id)
        if s["type"] == "CORTEX_STEP_TYPE_PLANNER_RESPONSE" and s["plannerResponse"].get("response")
    ]
    assert conversation.assistant_texts() == answers
    ids = [item["id"] for item in conversation.items()]
    assert len(ids) == len(set(ids))
