"""agy's sub-agents as omnigent's sub-agent rows: title, task, tool calls, summary.

omnigent's runner makes a child session for each `SubAgentStarted` (its Subagents panel lists
one row per child), seeds it with the `task`, appends each `SubAgentToolCall` to it and closes
it with `SubAgentCompleted`'s `summary` (``runner/acp_subagent_sessions.py``). The task is the
child's own first user input and the summary its last answer, read from its cascade
(`omnigent_agy.session.subagents`); agy's INVOKE_SUBAGENT step's ``subagents[].prompt`` and
``results[].summary`` (docs/wire.md §5, a guess) stand in only where those are missing. The
child's tool calls read as the parent's own calls do (`tool_rows`).

The row's key is what omnigent's web names the sub-agent by, in the chat's "Started …" and
"Completed …" markers and in its Agents panel (it shows the part of the child's title after
the colon, and that part is the key: ``server/subagent_activity.py``). So the key is the
sub-agent's title and the start of its cascade id, which keeps two sub-agents of one role
apart, never the bare cascade id.
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

from omnigent_agy import events as ev
from omnigent_agy import step_text as text
from omnigent_agy import subagent_title

from .tool_rows import row

__all__ = ["is_wake_for", "row_key", "subagent_event"]

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


def row_key(child_cascade_id: str, title: str) -> str:
    """The row's key: "<title> · <the cascade id's first 8 characters>" (see above)."""
    return f"{title} · {child_cascade_id[:8]}" if title else child_cascade_id


def subagent_event(event: object, keys: dict[str, str] | None = None) -> ExecutorEvent | None:
    """omnigent's event for one of agy's sub-agent events; None for any other event. `keys`
    remembers each child's row key from its start, for its calls and its end."""
    keys = {} if keys is None else keys
    if isinstance(event, ev.SubAgentStarted):
        title = subagent_title(event)
        task = event.task or text(event.spec.get("prompt")) or text(event.spec.get("task")) or ""
        key = keys[event.child_cascade_id] = row_key(event.child_cascade_id, title)
        return SubAgentStarted(child_key=key, title=title, task=task)
    if isinstance(event, ev.SubAgentFinished):
        summary = event.summary or text(event.result.get("summary")) or ""
        key = keys.pop(event.child_cascade_id, "") or row_key(event.child_cascade_id, event.title)
        return SubAgentCompleted(child_key=key, ok=event.ok, summary=summary)
    if isinstance(event, ev.SubAgentEvent) and isinstance(event.event, ev.ToolCallStarted):
        call = event.event
        # The row the parent's own call would have (tool_rows): a listing reads as a
        # listing, a command as the command, agy's own name kept as `agy_tool`.
        name, arguments = row(call.name, call.arguments)
        child = event.child_cascade_id
        key = keys.get(child) or row_key(child, event.title)
        return SubAgentToolCall(child_key=key, call_id=call.call_id, name=name, args=arguments)
    return None
