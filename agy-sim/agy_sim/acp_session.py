"""One ACP session over one engine cascade: a prompt turn followed step by step.

``AcpSession.prompt`` delivers the person's message to the cascade as the TUI or RPC side
would, then follows the cascade's change log (the same log the connect streams read) and
sends each change as ``session/update``s (``acp_updates``) until the turn ends. A WAITING
permission gate becomes a ``session/request_permission`` to the client; the option chosen is
delivered to the gate as HandleCascadeUserInteraction delivers one (docs/wire.md §6):

- ``allow_once``: allowed, this once; ``allow_always``: allowed with
  ``PERMISSION_SCOPE_CONVERSATION`` (the engine then runs that command again unasked);
- ``reject_once``: refused, and the turn goes on (agy replies); ``reject_always``: refused, and
  the session refuses that command again unasked (a **guess**: nothing recorded says what agy
  does with it);
- a ``cancelled`` outcome: refused (the client cancels the turn with ``session/cancel``).

``session/cancel`` stops the cascade's turn (CancelCascadeSteps' path) and the prompt answers
``stopReason: cancelled`` once the last update went out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from agy_sim import steps_factory as sf
from agy_sim.acp_config import SessionConfig
from agy_sim.acp_scripts import acp_script, first_prompt_script
from agy_sim.acp_updates import ERROR_MESSAGE, PLANNER, UpdateTracker
from agy_sim.acp_wire import INTERNAL_ERROR, INVALID_REQUEST, PeerClosedError, RpcError
from agy_sim.answers import PERMISSION_SCOPES
from agy_sim.cascade import Cascade, Gate, GateRejectedError, QueuedMessage
from agy_sim.engine import SimEngine

_log = logging.getLogger("agy-sim.acp")

Json = dict[str, Any]
Notify = Callable[[str, Json], Awaitable[None]]
Ask = Callable[[str, Json], Awaitable[Json]]

ALLOW_ONCE: Final = "allow-once"
ALLOW_ALWAYS: Final = "allow-always"
REJECT_ONCE: Final = "reject-once"
REJECT_ALWAYS: Final = "reject-always"
#: The options of every permission request: (optionId, name, kind).
PERMISSION_OPTIONS: Final = (
    (ALLOW_ONCE, "Allow once", "allow_once"),
    (ALLOW_ALWAYS, "Allow for this conversation", "allow_always"),
    (REJECT_ONCE, "Deny", "reject_once"),
    (REJECT_ALWAYS, "Always deny", "reject_always"),
)
_CONVERSATION: Final = "PERMISSION_SCOPE_CONVERSATION"
_ONCE: Final = "PERMISSION_SCOPE_ONCE"
assert {_CONVERSATION, _ONCE} <= PERMISSION_SCOPES


def prompt_text(blocks: Any) -> str:
    """The text of a ``session/prompt``'s content blocks: text as is, a linked resource as
    ``@uri``, an embedded text resource's text (no image or audio is advertised)."""
    if not isinstance(blocks, list) or not blocks:
        raise RpcError(-32602, "prompt must be a non-empty list of content blocks")
    parts: list[str] = []
    for block in blocks:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource_link":
            parts.append(f"@{block.get('uri', '')}")
        elif kind == "resource":
            resource = block.get("resource") or {}
            if isinstance(resource, dict) and isinstance(resource.get("text"), str):
                parts.append(resource["text"])
    return "\n".join(parts)


class AcpSession:
    """An ACP session: its engine's cascade, its options, what its client was sent."""

    def __init__(
        self, session_id: str, engine: SimEngine, cascade: Cascade, *, notify: Notify, ask: Ask
    ) -> None:
        self.session_id = session_id
        self.engine = engine
        self.cascade = cascade
        self.config = SessionConfig.starting_on(engine.catalog, engine.tui_model)
        self._notify = notify
        self._ask = ask
        self._tracker = UpdateTracker()
        self._refused: set[str] = set()  # targets refused "always" in this session
        self._asked: dict[int, Gate] = {}
        self._asks: set[asyncio.Task[None]] = set()
        self._cancelled = False
        self._prompted = False

    async def update(self, update: Json) -> None:
        await self._notify("session/update", {"sessionId": self.session_id, "update": update})

    # -- a prompt turn -----------------------------------------------------------------
    async def prompt(self, blocks: Any) -> Json:
        text = prompt_text(blocks)
        cascade = self.cascade
        if cascade.running:
            raise RpcError(INVALID_REQUEST, "a prompt is already running in this session")
        self._cancelled = False
        self.engine.choose_script = acp_script if self._prompted else first_prompt_script
        self._prompted = True
        first = len(cascade.steps)
        position = cascade.log_position
        model = self.config.model
        config = self.engine.planner_config({"planModel": model.model})
        self.engine.deliver(cascade, QueuedMessage([{"text": text}], config, ""))
        task = cascade.task
        if task is not None:
            await self._follow(task, position)
        for ask in list(self._asks):
            ask.cancel()
        return await self._outcome(first, model.max_tokens)

    async def _follow(self, task: asyncio.Task[None], position: int) -> None:
        cascade = self.cascade
        while True:
            changed = cascade.change_event  # taken before reading, as the streams do
            indices, _ = cascade.changed_since(position)
            position = cascade.log_position
            for index in indices:
                step = cascade.steps[index]
                for update in self._tracker.updates(index, step):
                    await self.update(update)
                self._maybe_ask(index, step)
            if task.done() and cascade.log_position == position:
                return
            waiter = asyncio.ensure_future(changed.wait())
            await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()

    async def _outcome(self, first: int, window: int) -> Json:
        steps = self.cascade.steps[first:]
        if self._cancelled:
            return {"stopReason": "cancelled"}
        for step in steps:
            if step.get("type") == ERROR_MESSAGE:
                error = step.get("errorMessage", {}).get("error", {})
                raise RpcError(
                    INTERNAL_ERROR,
                    str(error.get("userErrorMessage") or "the model failed"),
                    {"shortError": error.get("shortError", "")},
                )
        usage = [
            step["metadata"]["modelUsage"]
            for step in steps
            if step.get("type") == PLANNER and "modelUsage" in step.get("metadata", {})
        ]
        if not usage:
            return {"stopReason": "end_turn"}

        def total(key: str) -> int:
            return sum(int(u.get(key, 0)) for u in usage)

        tokens: Json = {
            "inputTokens": total("inputTokens"),
            "outputTokens": total("outputTokens"),
            "thoughtTokens": total("thinkingOutputTokens"),
            "cachedReadTokens": total("cacheReadTokens"),
        }
        tokens["totalTokens"] = tokens["inputTokens"] + tokens["outputTokens"]
        if window:
            # The context in use after the turn: its last model call's input and output.
            last = usage[-1]
            used = int(last.get("inputTokens", 0)) + int(last.get("outputTokens", 0))
            await self.update({"sessionUpdate": "usage_update", "used": used, "size": window})
        return {"stopReason": "end_turn", "usage": tokens}

    # -- permission gates ----------------------------------------------------------------
    def _maybe_ask(self, index: int, step: Json) -> None:
        gate = self.cascade.gates.get(index)
        if step.get("status") != sf.S_WAITING or gate is None or gate.kind != "permission":
            return
        if self._asked.get(index) is gate:
            return
        self._asked[index] = gate
        task = asyncio.get_running_loop().create_task(self._answer(index, gate, step))
        self._asks.add(task)
        task.add_done_callback(self._asks.discard)

    async def _answer(self, index: int, gate: Gate, step: Json) -> None:
        target = str(step["requestedInteraction"]["permission"]["resource"]["target"])
        if target in self._refused:
            allow, scope = False, _ONCE
        else:
            try:
                result = await self._ask(
                    "session/request_permission",
                    {
                        "sessionId": self.session_id,
                        "toolCall": self._tracker.permission_tool_call(step),
                        "options": [
                            {"optionId": o, "name": n, "kind": k} for o, n, k in PERMISSION_OPTIONS
                        ],
                    },
                )
            except (RpcError, PeerClosedError) as exc:
                _log.warning("permission request for step %d failed: %s", index, exc)
                result = {"outcome": {"outcome": "cancelled"}}
            allow, scope = self._decision(target, result)
        if self.cascade.gates.get(index) is not gate:
            return  # the wait timed out or the turn was stopped meanwhile
        body = {
            "trajectoryId": self.cascade.trajectory_id,
            "stepIndex": index,
            "permission": {"allow": allow, "scope": scope},
        }
        with contextlib.suppress(GateRejectedError):
            gate.accept(body)

    def _decision(self, target: str, result: Json) -> tuple[bool, str]:
        outcome = result.get("outcome")
        chosen = outcome.get("optionId") if isinstance(outcome, dict) else None
        if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
            return False, _ONCE
        if chosen == ALLOW_ONCE:
            return True, _ONCE
        if chosen == ALLOW_ALWAYS:
            return True, _CONVERSATION
        if chosen == REJECT_ALWAYS:
            self._refused.add(target)
        elif chosen != REJECT_ONCE:
            _log.warning("unknown permission option %r: refused", chosen)
        return False, _ONCE

    # -- cancel --------------------------------------------------------------------------
    async def cancel(self) -> None:
        """``session/cancel``: stop the running turn; its prompt answers ``cancelled``."""
        if not self.cascade.running:
            return
        self._cancelled = True
        for ask in list(self._asks):
            ask.cancel()
        await self.engine.stop(self.cascade)
