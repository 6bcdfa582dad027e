"""agy's sub-agent events as omnigent's sub-agent events
(omnigent_harness_agy/subagent_events.py)."""

from __future__ import annotations

from dataclasses import replace

from omnigent.community.harness.agy.subagent_events import is_wake_for, subagent_event
from omnigent.inner.executor import SubAgentCompleted, SubAgentStarted, SubAgentToolCall

from omnigent_agy.reading import events as ev
from omnigent_agy.reading.steps import StepKey

SPEC = {"role": "Test Runner", "typeName": "general", "prompt": "Run the tests."}


CHILD = "fab03895-9f00-4c1e-8d2a-0e6a3c8c4f11"


def test_a_started_sub_agent_is_named_by_its_role_and_asked_its_own_first_input() -> None:
    # The task is what the child cascade was asked (its first user input), not the guess.
    started = ev.SubAgentStarted(
        "call-1", CHILD, "Test Runner", "general", SPEC, task="run: pytest -q"
    )
    # The key is what omnigent's web shows in "Started …" / "Completed …": the role first.
    assert subagent_event(started) == SubAgentStarted(
        child_key="Test Runner · fab03895", title="Test Runner", task="run: pytest -q"
    )
    guessed = replace(started, task="")  # no user input read: the guessed prompt stands in
    assert subagent_event(guessed) == SubAgentStarted(
        child_key="Test Runner · fab03895", title="Test Runner", task="Run the tests."
    )
    bare = ev.SubAgentStarted("call-1", "child-2", "", "", {})
    assert subagent_event(bare) == SubAgentStarted(
        child_key="sub-agent · child-2", title="sub-agent"
    )


def test_a_finished_sub_agent_carries_its_last_answer_and_outcome() -> None:
    done = ev.SubAgentFinished(
        "call-1", CHILD, True, {"summary": "8 passed."}, summary="All 8 passed.", title="Tests"
    )
    assert subagent_event(done) == SubAgentCompleted(
        child_key="Tests · fab03895", ok=True, summary="All 8 passed."
    )
    guessed = replace(done, summary="")  # no answer read: agy's (guessed) summary stands in
    assert subagent_event(guessed) == SubAgentCompleted(
        child_key="Tests · fab03895", ok=True, summary="8 passed."
    )
    failed = ev.SubAgentFinished("call-1", "child-1", False, {"summary": 42})
    assert subagent_event(failed) == SubAgentCompleted(child_key="child-1", ok=False)


def test_a_childs_tool_call_reads_as_the_parents_own_call_would() -> None:
    call = ev.ToolCallStarted(
        "c9",
        StepKey("child-1", "t", 3),
        "list_directory",
        {"path": "/w"},
        "LIST_DIRECTORY",
        title="Listing the workspace",
    )
    # omnigent's listing row (tool_rows), agy's own name kept, as for the parent's calls.
    titled = ev.SubAgentEvent("call-1", CHILD, call, title="Lister")
    assert subagent_event(titled) == SubAgentToolCall(
        child_key="Lister · fab03895",
        call_id="c9",
        name="list",
        args={"path": "/w", "agy_tool": "list_directory"},
    )
    command = replace(call, name="run_command", arguments={"command_line": "pytest -q"})
    shown = subagent_event(ev.SubAgentEvent("call-1", "child-1", command))
    assert isinstance(shown, SubAgentToolCall)
    assert (shown.name, shown.args) == (
        "sys_os_shell",
        {"command": "pytest -q", "agy_tool": "run_command"},
    )
    # A tool without a counterpart in omnigent keeps agy's name, as the parent's does.
    other = replace(call, name="browser_open", arguments={"url": "http://127.0.0.1/"})
    shown = subagent_event(ev.SubAgentEvent("call-1", "child-1", other))
    assert isinstance(shown, SubAgentToolCall)
    assert (shown.name, shown.args) == ("browser_open", {"url": "http://127.0.0.1/"})
    text = ev.SubAgentEvent("call-1", "child-1", ev.AssistantMessage(call.key, "hi", "DONE"))
    assert subagent_event(text) is None
    assert subagent_event(call) is None  # the parent's own tool call is not a sub-agent's


WAKE = (
    "[System: sub-agent Test Runner/Test Runner finished (completed) \u2014 1 result waiting in "
    "inbox. Call sys_read_inbox to collect.]"
)


def test_omnigents_wake_notice_for_agys_own_sub_agent_is_recognised() -> None:
    assert is_wake_for(WAKE, {"Test Runner"})
    assert is_wake_for(WAKE.replace("1 result", "3 results"), {"Test Runner"})
    assert not is_wake_for(WAKE, {"Someone else"})  # an omnigent sub-agent agy started itself
    assert not is_wake_for(f"please read this: {WAKE}", {"Test Runner"})
