"""agy's sub-agents as omnigent's sub-agent rows: title, task, tool calls, summary.

omnigent's runner makes a child session for each `SubAgentStarted` (its Subagents panel lists
one row per child), seeds it with the `task`, appends each `SubAgentToolCall` to it and closes
it with `SubAgentCompleted`'s `summary` (``runner/acp_subagent_sessions.py``). agy's
INVOKE_SUBAGENT step names each child's role and prompt in ``subagents[]`` and its report in
``results[].summary`` (docs/wire.md §5, a guess); the child's own tool calls come from its
cascade (`omnigent_agy.session.subagents`) and read as the parent's own calls do
(`tool_rows`). The child's cascade id is the row's key.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from omnigent.inner.executor import (
    ExecutorEvent,
    SubAgentCompleted,
    SubAgentStarted,
    SubAgentToolCall,
)

from omnigent_agy.reading import events as ev
from omnigent_agy.reading.steps import text

from .tool_rows import row

__all__ = ["is_wake_for", "subagent_event"]

_FALLBACK_TITLE = "agy sub-agent"
# omnigent's runner wakes a parent whose sub-agent finished with a new turn saying so
# (runner/subagent_work.py, `_format_subagent_wake_notice`): "[System: sub-agent
# <agent>/<title> finished (<status>) — <n> result(s) waiting in inbox. Call sys_read_inbox to
# collect.]". agy's sub-agents ran inside agy's own turn, whose reply already has their result.
_WAKE = re.compile(
    r"\[System: sub-agent (?P<agent>.+?)/(?P<title>.+?) finished \(\w+\) — \d+ results? "
    r"waiting in inbox\. Call sys_read_inbox to collect\.\]"
)


def is_wake_for(text: str, titles: Collection[str]) -> bool:
    """Whether `text` is omnigent's wake notice for one of agy's own sub-agents (`titles`: the
    titles this harness reported), which agy must not get as a turn of its own."""
    match = _WAKE.fullmatch(text.strip())
    return match is not None and match["title"] in titles


def subagent_event(event: object) -> ExecutorEvent | None:
    """omnigent's event for one of agy's sub-agent events; None for any other event."""
    if isinstance(event, ev.SubAgentStarted):
        title = event.role or event.agent_type or _FALLBACK_TITLE
        task = text(event.spec.get("prompt")) or text(event.spec.get("task")) or ""
        return SubAgentStarted(child_key=event.child_cascade_id, title=title, task=task)
    if isinstance(event, ev.SubAgentFinished):
        summary = text(event.result.get("summary")) or ""
        return SubAgentCompleted(child_key=event.child_cascade_id, ok=event.ok, summary=summary)
    if isinstance(event, ev.SubAgentEvent) and isinstance(event.event, ev.ToolCallStarted):
        call = event.event
        # The row the parent's own call would have (tool_rows): a listing reads as a
        # listing, a command as the command, agy's own name kept as `agy_tool`.
        name, arguments = row(call.name, call.arguments)
        return SubAgentToolCall(
            child_key=event.child_cascade_id, call_id=call.call_id, name=name, args=arguments
        )
    return None
