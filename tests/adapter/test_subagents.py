"""agy's sub-agent events as omnigent's sub-agent events (omnigent_harness_agy/subagents.py)."""

from __future__ import annotations

from dataclasses import replace

from omnigent.community.harness.agy.subagents import is_wake_for, subagent_event
from omnigent.inner.executor import SubAgentCompleted, SubAgentStarted, SubAgentToolCall

from omnigent_agy.reading import events as ev
from omnigent_agy.reading.steps import StepKey

SPEC = {"role": "Test Runner", "typeName": "general", "prompt": "Run the tests."}


def test_a_started_sub_agent_has_its_role_as_title_and_its_prompt_as_task() -> None:
    started = ev.SubAgentStarted("call-1", "child-1", "Test Runner", "general", SPEC)
    assert subagent_event(started) == SubAgentStarted(
        child_key="child-1", title="Test Runner", task="Run the tests."
    )
    bare = ev.SubAgentStarted("call-1", "child-2", "", "", {})
    assert subagent_event(bare) == SubAgentStarted(child_key="child-2", title="agy sub-agent")


def test_a_finished_sub_agent_carries_its_summary_and_outcome() -> None:
    done = ev.SubAgentFinished("call-1", "child-1", True, {"summary": "8 passed."})
    assert subagent_event(done) == SubAgentCompleted(
        child_key="child-1", ok=True, summary="8 passed."
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
    assert subagent_event(ev.SubAgentEvent("call-1", "child-1", call)) == SubAgentToolCall(
        child_key="child-1",
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
