"""One turn of the scripted model: scenario intentions → agy-shaped steps over time.

``ScriptedRun`` implements ``scenarios.TurnApi``. It appends and mutates the cascade's steps the
way agy does (docs/wire.md §4-§6): PLANNER_RESPONSE streams thinking then a growing
``modifiedResponse`` and commits with ``modelUsage``; a tool call is a committed
PLANNER_RESPONSE followed by the tool's own step, written by ``tool_runs.ToolRuns``
(which also owns the WAITING gates). Both write through one ``turn_steps.StepWriter``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agy_sim import steps_factory as sf
from agy_sim.carried import split_carried
from agy_sim.cascade import Cascade
from agy_sim.catalog import CHECKPOINT_MODEL_ENUM, CatalogModel
from agy_sim.tool_runs import ToolRuns
from agy_sim.turn_api import (
    CommandOutcome,
    CommandOutput,
    McpOutcome,
    Question,
    QuestionOutcome,
    ScenarioKnobs,
)
from agy_sim.turn_steps import StepWriter, TurnAbortedError, TurnEnv

__all__ = ["ScriptedRun", "TurnAbortedError", "TurnEnv"]


def _chunks(text: str, words: int = 3) -> list[str]:
    parts = re.findall(r"\S+\s*|\s+", text)
    return ["".join(parts[i : i + words]) for i in range(0, len(parts), words)]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _signature(thinking: str) -> str:
    return base64.b64encode(hashlib.sha256(thinking.encode()).digest() * 2).decode()


class ScriptedRun:
    """The scripted model's hands for one execution (``executionId``) of a cascade."""

    def __init__(
        self, env: TurnEnv, cascade: Cascade, *, text: str, model: CatalogModel, execution_id: str
    ) -> None:
        self._env = env
        self._cascade = cascade
        self._text = text
        self._model = model
        self.execution_id = execution_id
        self._steps = StepWriter(env, cascade, model, execution_id)
        self._tools = ToolRuns(self._steps, self.model_error)
        self.steered: list[str] = []

    # -- TurnApi properties ---------------------------------------------------------------
    @property
    def text(self) -> str:
        return self._text

    @property
    def model_display_name(self) -> str:
        return self._model.display_name

    @property
    def workspace(self) -> Path:
        return self._env.workspace

    @property
    def knobs(self) -> ScenarioKnobs:
        return self._env.knobs

    @property
    def rules(self) -> str:
        return self._env.rules()

    @property
    def earlier_messages(self) -> list[str]:
        texts: list[str] = []
        for step in self._cascade.steps:
            if step.get("type") == "CORTEX_STEP_TYPE_USER_INPUT":
                # A message may carry earlier ones of a conversation begun elsewhere (carried.py).
                carried, said = split_carried(
                    str(step.get("userInput", {}).get("userResponse", ""))
                )
                texts += [*carried, said]
        return texts[:-1]  # the last one is this turn's

    # -- helpers ------------------------------------------------------------------------
    def _usage(self, thinking: str, text: str) -> sf.Usage:
        history = len(self._cascade.steps)
        return sf.Usage(
            model=self._model.model,
            input_tokens=1200 + 40 * history + _tokens(self._text),
            thinking_tokens=_tokens(thinking),
            response_tokens=_tokens(text),
            cache_read_tokens=900 * min(history, 10) if self._cascade.planner_invocations else 0,
            api_provider=self._model.api_provider,
            response_id=self._env.new_short_id() + self._env.new_short_id(),
            session_id=self._env.session_id,
        )

    def add_user_input(
        self,
        items: list[dict[str, Any]],
        planner_config: dict[str, Any],
        source: str = sf.SRC_USER_EXPLICIT,
    ) -> int:
        """The turn's USER_INPUT (and a steering message's, mid-turn)."""
        ts = self._env.now()
        step = sf.user_input_step(
            self._steps.ident(), ts, items=items, planner_config=planner_config, source=source
        )
        index = self._cascade.append(step, ts)
        self._cascade.last_user_input_time = ts
        self._cascade.last_user_input_index = index
        self._steps.emit("user", step["userInput"]["userResponse"], index)
        return index

    def add_system_step(self, step_type: str, payload_key: str, payload: dict[str, Any]) -> int:
        ts = self._env.now()
        step = sf.system_step(
            self._steps.ident(), ts, step_type=step_type, payload_key=payload_key, payload=payload
        )
        return self._cascade.append(step, ts)

    def add_checkpoint(
        self, checkpoint_model: str, user_requests: Sequence[str], *, summary: str | None = None
    ) -> None:
        ts = self._env.now()
        ident = self._steps.ident(self._cascade.planner_invocations)
        usage = sf.Usage(
            model=checkpoint_model,
            input_tokens=35,
            thinking_tokens=0,
            response_tokens=3,
            response_id=self._env.new_short_id(),
            session_id=self._env.session_id,
        )
        step = sf.checkpoint_step(
            ident,
            ts,
            usage=usage,
            user_requests=user_requests,
            included_end=ident.step_index,
            summary=summary,
        )
        self._cascade.append(step, ts)

    def compact(self) -> None:
        """agy compacts its context: a summary of the conversation so far stands in for it."""
        asked = [*self.earlier_messages, self.text]
        summary = "The person asked, in order: " + "; ".join(asked)
        self.add_checkpoint(CHECKPOINT_MODEL_ENUM, asked, summary=summary)

    def drain_steering(self) -> None:
        """NEXT_INVOCATION messages join the turn before the next model call (docs/wire.md §3)."""
        while self._cascade.steering:
            message = self._cascade.steering.pop(0)
            self.add_user_input(message.items, message.planner_config)
            self.steered.append("\n".join(str(i.get("text", "")) for i in message.items))

    # -- model calls --------------------------------------------------------------------
    async def _generate(
        self,
        *,
        thinking: str,
        text: str,
        chunks: Sequence[str] | None,
        interval: float | None,
        tool_calls: Sequence[sf.ToolCall] = (),
    ) -> int:
        self.drain_steering()
        steps = self._steps
        metadata_index = self._cascade.planner_invocations
        ident = steps.ident(metadata_index)
        ts = self._env.now()
        step = sf.planner_step(
            ident, ts, model=self._model.model, message_id=f"bot-{self._env.new_uuid()}"
        )
        index = self._cascade.append(step, ts)
        steps.active = index
        self._cascade.planner_invocations += 1
        shown = ""
        for piece in _chunks(thinking):
            shown += piece
            sf.planner_progress(step, thinking=shown)
            steps.touch(index)
            steps.emit("thinking", piece, index)
            await steps.pause(interval)
        shown = ""
        for piece in chunks if chunks is not None else _chunks(text):
            shown += piece
            sf.planner_progress(step, text=shown)
            steps.touch(index)
            steps.emit("answer_delta", piece, index)
            await steps.pause(interval)
        # A tool call is model output too: its arguments count as response tokens.
        emitted = text + "".join(json.dumps(dict(c.arguments)) for c in tool_calls)
        sf.planner_done(
            step,
            self._env.now(),
            usage=self._usage(thinking, emitted),
            thinking_signature=_signature(thinking) if thinking else "",
            tool_calls=tool_calls,
        )
        steps.touch(index)
        steps.active = None
        if text:
            steps.emit("answer", text, index)
        steps.tool_metadata_index = metadata_index
        return index

    async def say(
        self,
        text: str,
        *,
        thinking: str = "",
        chunks: Sequence[str] | None = None,
        interval: float | None = None,
    ) -> None:
        # The recorded models always think before answering (thinkingOutputTokens > 0).
        thinking = thinking or "**Composing the answer**"
        await self._generate(thinking=thinking, text=text, chunks=chunks, interval=interval)

    async def call_tool(
        self, name: str, arguments: dict[str, Any], *, thinking: str = ""
    ) -> sf.ToolCall:
        thinking = thinking or f"**Choosing a tool**\n\n`{name}` fits the request."
        call = sf.ToolCall(
            self._env.new_short_id(),
            name,
            arguments,
            thinking_signature=_signature(name + thinking),
        )
        await self._generate(
            thinking=thinking, text="", chunks=None, interval=None, tool_calls=[call]
        )
        return call

    async def model_error(
        self,
        user_message: str,
        short_error: str,
        *,
        full_error: str | None = None,
        error_code: int = 2,
    ) -> None:
        self.drain_steering()
        ts = self._env.now()
        step = sf.error_message_step(
            self._steps.ident(),
            ts,
            model=self._model.model,
            user_message=user_message,
            short_error=short_error,
            error_code=error_code,
            full_error=full_error,
        )
        index = self._cascade.append(step, ts)
        self._steps.emit("error", user_message, index)

    # -- tools (tool_runs.ToolRuns) -----------------------------------------------------
    async def run_command(
        self, call: sf.ToolCall, command: str, *, output: CommandOutput, runtime: float = 0.0
    ) -> CommandOutcome:
        return await self._tools.run_command(call, command, output=output, runtime=runtime)

    async def ask(self, call: sf.ToolCall, questions: Sequence[Question]) -> QuestionOutcome:
        return await self._tools.ask(call, questions)

    async def view_file(self, call: sf.ToolCall, path: Path) -> None:
        await self._tools.view_file(call, path)

    async def list_directory(self, call: sf.ToolCall, path: Path) -> None:
        await self._tools.list_directory(call, path)

    async def invoke_subagent(
        self, call: sf.ToolCall, *, role: str, task: str, delegate: bool = False
    ) -> str:
        return await self._tools.invoke_subagent(call, role=role, task=task, delegate=delegate)

    async def mcp_tool(
        self, call: sf.ToolCall, server: str, tool: str, arguments: dict[str, Any]
    ) -> McpOutcome:
        outcome = await self._tools.mcp_tool(call, server, tool, arguments)
        if outcome is None:
            await self.say(f"I have no MCP tool {server}/{tool}.")
            return McpOutcome(allowed=False, text="", error=True)
        return outcome

    # -- cancellation -------------------------------------------------------------------
    def stop_active(self) -> None:
        """Mark the in-flight step CANCELED (CancelCascadeSteps / ForceStopCascadeTree)."""
        index, self._steps.active = self._steps.active, None
        if index is None:
            return
        self._cascade.gates.pop(index, None)
        if self._cascade.steps[index]["status"] in {sf.S_DONE, sf.S_ERROR, sf.S_CANCELED}:
            return
        step = self._cascade.steps[index]
        if step["type"] == "CORTEX_STEP_TYPE_RUN_COMMAND":
            # As recorded in engine/run_command_CANCELED.json.
            step["error"] = {
                "shortError": "context canceled by user",
                "fullError": "context canceled by user",
            }
        self._steps.set_status(index, sf.S_CANCELED)
        self._steps.emit("status", "canceled", index)
