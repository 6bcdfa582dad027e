"""One turn of the scripted model: scenario intentions → agy-shaped steps over time.

``Turn`` implements ``scenarios.TurnApi``. It appends and mutates the cascade's steps the
way agy does (WIRE.md §4-§6): PLANNER_RESPONSE streams thinking then a growing
``modifiedResponse`` and commits with ``modelUsage``; a tool call is a committed
PLANNER_RESPONSE followed by the tool's own step; gates park a step in WAITING until
HandleCascadeUserInteraction delivers an answer (applied synchronously by ``Gate.accept``)
or the WAITING timeout moves it to ERROR and a fresh WAITING step is made at a higher index.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from omnigent_agy.simulator import steps_factory as sf
from omnigent_agy.simulator.answers import (
    apply_permission,
    apply_question,
    validate_question_answer,
)
from omnigent_agy.simulator.cascade import Cascade, Gate, GateKind, TranscriptEvent
from omnigent_agy.simulator.catalog import CatalogModel
from omnigent_agy.simulator.scenarios import (
    CommandOutcome,
    Question,
    QuestionOutcome,
    ScenarioKnobs,
)

SpawnSubagent = Callable[[Cascade, str, CatalogModel, Callable[[str], None]], Awaitable[str]]


class TurnAbortedError(Exception):
    """The turn cannot go on (a gate timed out too often); an error step says why."""


@dataclass(frozen=True, slots=True)
class TurnEnv:
    """What a turn needs from the engine: time, ids, pacing and the outside world."""

    now: Callable[[], str]
    new_uuid: Callable[[], str]
    new_short_id: Callable[[], str]
    emit: Callable[[TranscriptEvent], None]
    spawn_subagent: SpawnSubagent
    workspace: Path
    knobs: ScenarioKnobs
    token_interval: float
    waiting_timeout: float
    waiting_retries: int
    session_id: str


def _chunks(text: str, words: int = 3) -> list[str]:
    parts = re.findall(r"\S+\s*|\s+", text)
    return ["".join(parts[i : i + words]) for i in range(0, len(parts), words)]


def _tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


def _describe_request(request: dict[str, Any]) -> str:
    """One line for the TUI: what the WAITING step asks."""
    if "permission" in request:
        return f"permission to run: {request['permission']['resource']['target']}"
    questions = request.get("askQuestion", {}).get("questions", [])
    return "question: " + " | ".join(
        q["question"] + " " + " ".join(f"[{o['id']}] {o['text']}" for o in q.get("options", []))
        for q in questions
    )


def _signature(thinking: str) -> str:
    return base64.b64encode(hashlib.sha256(thinking.encode()).digest() * 2).decode()


class Turn:
    """The scripted model's hands for one execution (``executionId``) of a cascade."""

    def __init__(
        self, env: TurnEnv, cascade: Cascade, *, text: str, model: CatalogModel, execution_id: str
    ) -> None:
        self._env = env
        self._cascade = cascade
        self._text = text
        self._model = model
        self.execution_id = execution_id
        self._active: int | None = None  # the step a cancel would stop
        self._tool_metadata_index = 0
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

    # -- helpers ------------------------------------------------------------------------
    def _ident(self, metadata_index: int = 0) -> sf.StepIdentity:
        return sf.StepIdentity(
            self._cascade.trajectory_id,
            self._cascade.cascade_id,
            len(self._cascade.steps),
            self.execution_id,
            metadata_index,
        )

    def _emit(self, kind: str, text: str, index: int | None) -> None:
        self._env.emit(TranscriptEvent(self._cascade.cascade_id, kind, text, index))

    def _touch(self, index: int) -> None:
        self._cascade.touch(index, self._env.now())

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

    async def _pause(self, interval: float | None = None) -> None:
        await asyncio.sleep(self._env.token_interval if interval is None else interval)

    def add_user_input(
        self,
        items: list[dict[str, Any]],
        planner_config: dict[str, Any],
        source: str = sf.SRC_USER_EXPLICIT,
    ) -> int:
        """The turn's USER_INPUT (and a steering message's, mid-turn)."""
        ts = self._env.now()
        step = sf.user_input_step(
            self._ident(), ts, items=items, planner_config=planner_config, source=source
        )
        index = self._cascade.append(step, ts)
        self._cascade.last_user_input_time = ts
        self._cascade.last_user_input_index = index
        self._emit("user", step["userInput"]["userResponse"], index)
        return index

    def add_system_step(self, step_type: str, payload_key: str, payload: dict[str, Any]) -> int:
        ts = self._env.now()
        step = sf.system_step(
            self._ident(), ts, step_type=step_type, payload_key=payload_key, payload=payload
        )
        return self._cascade.append(step, ts)

    def add_checkpoint(self, checkpoint_model: str, user_requests: Sequence[str]) -> None:
        ts = self._env.now()
        ident = self._ident(self._cascade.planner_invocations)
        usage = sf.Usage(
            model=checkpoint_model,
            input_tokens=35,
            thinking_tokens=0,
            response_tokens=3,
            response_id=self._env.new_short_id(),
            session_id=self._env.session_id,
        )
        step = sf.checkpoint_step(
            ident, ts, usage=usage, user_requests=user_requests, included_end=ident.step_index
        )
        self._cascade.append(step, ts)

    def drain_steering(self) -> None:
        """NEXT_INVOCATION messages join the turn before the next model call (WIRE.md §3)."""
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
        metadata_index = self._cascade.planner_invocations
        ident = self._ident(metadata_index)
        ts = self._env.now()
        step = sf.planner_step(
            ident, ts, model=self._model.model, message_id=f"bot-{self._env.new_uuid()}"
        )
        index = self._cascade.append(step, ts)
        self._active = index
        self._cascade.planner_invocations += 1
        shown = ""
        for piece in _chunks(thinking):
            shown += piece
            sf.planner_progress(step, thinking=shown)
            self._touch(index)
            self._emit("thinking", piece, index)
            await self._pause(interval)
        shown = ""
        for piece in chunks if chunks is not None else _chunks(text):
            shown += piece
            sf.planner_progress(step, text=shown)
            self._touch(index)
            self._emit("answer_delta", piece, index)
            await self._pause(interval)
        # A tool call is model output too: its arguments count as response tokens.
        emitted = text + "".join(json.dumps(dict(c.arguments)) for c in tool_calls)
        sf.planner_done(
            step,
            self._env.now(),
            usage=self._usage(thinking, emitted),
            thinking_signature=_signature(thinking) if thinking else "",
            tool_calls=tool_calls,
        )
        self._touch(index)
        self._active = None
        if text:
            self._emit("answer", text, index)
        self._tool_metadata_index = metadata_index
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

    def _new_tool_step(
        self, call: sf.ToolCall, step_type: str, payload_key: str, payload: dict[str, Any]
    ) -> int:
        ts = self._env.now()
        step = sf.tool_step(
            self._ident(self._tool_metadata_index),
            ts,
            model=self._model.model,
            step_type=step_type,
            payload_key=payload_key,
            payload=payload,
            call=call,
            output_tokens=20 + len(call.arguments) * 6,
        )
        index = self._cascade.append(step, ts)
        self._active = index
        self._emit("tool", f"{call.name} {call.tool_summary}".strip(), index)
        return index

    def _set(self, index: int, status: str) -> None:
        ts = self._env.now()
        sf.set_status(self._cascade.steps[index], status, ts)
        self._cascade.touch(index, ts)

    # -- gates --------------------------------------------------------------------------
    async def _gate(
        self,
        index: int,
        kind: GateKind,
        request: dict[str, Any],
        apply: Callable[[dict[str, Any]], Any],
    ) -> Any:
        """Park step ``index`` in WAITING until answered; None when the wait timed out."""
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Any] = loop.create_future()
        step = self._cascade.steps[index]
        step["requestedInteraction"] = request

        def accept(interaction: dict[str, Any]) -> None:
            result = apply(interaction)  # raises GateRejectedError before changing anything
            del self._cascade.gates[index]
            self._cascade.interactions.append({"stepIndex": index, **interaction})
            self._set(index, sf.S_RUNNING)
            self._emit("answered", kind, index)
            answered.set_result(result)

        self._cascade.gates[index] = Gate(index, kind, accept)
        self._set(index, sf.S_WAITING)
        self._emit("waiting", _describe_request(request), index)
        try:
            return await asyncio.wait_for(asyncio.shield(answered), self._env.waiting_timeout)
        except TimeoutError:
            if answered.done():  # the answer and the deadline met in one loop iteration
                return answered.result()
            # WAITING times out server-side → ERROR; the caller retries at a higher index (§6).
            self._cascade.gates.pop(index, None)
            self._set(index, sf.S_ERROR)
            self._emit("error", "timed out waiting for the user", index)
            return None
        finally:
            self._cascade.gates.pop(index, None)

    async def _retrying(self, make: Callable[[], Awaitable[Any]]) -> Any:
        for _ in range(self._env.waiting_retries + 1):
            result = await make()
            if result is not None:
                return result
        await self.model_error(
            "Timed out waiting for user input.", "interaction timed out too many times (agy-sim)"
        )
        raise TurnAbortedError("interaction timed out")

    async def run_command(
        self, call: sf.ToolCall, command: str, *, output: str, runtime: float = 0.0
    ) -> CommandOutcome:
        parts = [p.strip() for p in command.split("&&") if p.strip()]
        pending = list(parts)

        async def attempt() -> CommandOutcome | None:
            payload = {
                "commandLine": command,
                "proposedCommandLine": command,
                "cwd": str(self._env.workspace),
                "waitMsBeforeAsync": "2000",
                "blocking": True,
            }
            index = self._new_tool_step(call, "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand", payload)
            step = self._cascade.steps[index]
            # Chained commands: one gate per part, on the same step (WIRE.md §6).
            while pending:
                request = sf.permission_request(target=pending[0], description=call.tool_action)
                allowed = await self._gate(
                    index, "permission", request, partial(apply_permission, step)
                )
                if allowed is None:
                    return None
                pending.pop(0)
                if not allowed:
                    step["runCommand"]["userRejected"] = True
                    self._set(index, sf.S_DONE)
                    self._active = None
                    return CommandOutcome(allowed=False)
            return await self._execute(index, output, runtime)

        result: CommandOutcome = await self._retrying(attempt)
        return result

    async def _execute(self, index: int, output: str, runtime: float) -> CommandOutcome:
        step = self._cascade.steps[index]
        step["runCommand"]["shellName"] = "bash"
        if step["status"] != sf.S_RUNNING:
            self._set(index, sf.S_RUNNING)
        else:
            self._touch(index)
        if runtime > 0:
            step["runCommand"]["combinedOutput"] = {"full": "start\r\n"}
            self._touch(index)
            await asyncio.sleep(runtime)
        step["runCommand"].update(exitCode=0, combinedOutput={"full": output})
        self._set(index, sf.S_DONE)
        self._active = None
        self._emit("tool", output.rstrip("\n"), index)
        return CommandOutcome(allowed=True, output=output, exit_code=0)

    async def ask(self, call: sf.ToolCall, questions: Sequence[Question]) -> QuestionOutcome:
        wire = [q.to_wire() for q in questions]

        async def attempt() -> QuestionOutcome | None:
            index = self._new_tool_step(
                call,
                "CORTEX_STEP_TYPE_ASK_QUESTION",
                "askQuestion",
                {"questions": [dict(q) for q in wire]},
            )
            self._set(index, sf.S_RUNNING)
            step = self._cascade.steps[index]

            def apply(interaction: dict[str, Any]) -> QuestionOutcome:
                outcome = validate_question_answer(index, questions, interaction)
                apply_question(step, interaction, outcome)
                return outcome

            outcome: QuestionOutcome | None = await self._gate(
                index, "askQuestion", sf.question_request(wire), apply
            )
            if outcome is not None:
                self._set(index, sf.S_DONE)
                self._active = None
            return outcome

        result: QuestionOutcome = await self._retrying(attempt)
        return result

    # -- other tools --------------------------------------------------------------------
    async def view_file(self, call: sf.ToolCall, path: Path) -> None:
        content = path.read_text(errors="replace")[:20000] if path.is_file() else ""
        lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        payload: dict[str, Any] = {"absolutePathUri": path.as_uri()}
        if lines:
            payload["endLine"] = max(lines - 1, 0) or lines
        if content:
            payload.update(
                content=content,
                numLines=lines,
                numBytes=len(content.encode()),
                lineRangeBytes=len(content.encode()),
            )
        await self._quick_tool(call, "CORTEX_STEP_TYPE_VIEW_FILE", "viewFile", payload)

    async def list_directory(self, call: sf.ToolCall, path: Path) -> None:
        results: list[dict[str, Any]] = []
        entries = sorted(path.iterdir(), key=lambda p: p.name)[:200] if path.is_dir() else []
        for entry in entries:
            if entry.is_dir():
                results.append({"name": entry.name, "isDir": True})
            else:
                size = entry.stat().st_size
                results.append({"name": entry.name, **({"sizeBytes": str(size)} if size else {})})
        payload: dict[str, Any] = {"directoryPathUri": path.as_uri()}
        if results:
            payload["results"] = results
        await self._quick_tool(call, "CORTEX_STEP_TYPE_LIST_DIRECTORY", "listDirectory", payload)

    async def _quick_tool(
        self, call: sf.ToolCall, step_type: str, key: str, payload: dict[str, Any]
    ) -> None:
        index = self._new_tool_step(call, step_type, key, payload)
        self._set(index, sf.S_RUNNING)
        await self._pause()
        self._set(index, sf.S_DONE)
        self._active = None

    async def invoke_subagent(self, call: sf.ToolCall, *, role: str, task: str) -> str:
        # No recorded INVOKE_SUBAGENT payload exists: the shape is a guess, the same one the
        # project's hand-made fixtures use (subagents[] requested, results[] per child).
        payload = {"subagents": [{"role": role, "typeName": "general", "prompt": task}]}
        index = self._new_tool_step(
            call, "CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "invokeSubagent", payload
        )
        self._set(index, sf.S_RUNNING)
        step = self._cascade.steps[index]

        def started(child_id: str) -> None:
            step["invokeSubagent"]["results"] = [{"conversationId": child_id}]
            self._touch(index)

        report = await self._env.spawn_subagent(self._cascade, task, self._model, started)
        step["invokeSubagent"]["results"][0]["summary"] = report
        self._set(index, sf.S_DONE)
        self._active = None
        return report

    async def model_error(self, user_message: str, short_error: str) -> None:
        self.drain_steering()
        ts = self._env.now()
        step = sf.error_message_step(
            self._ident(),
            ts,
            model=self._model.model,
            user_message=user_message,
            short_error=short_error,
            error_code=2,
        )
        index = self._cascade.append(step, ts)
        self._emit("error", user_message, index)

    # -- cancellation -------------------------------------------------------------------
    def stop_active(self) -> None:
        """Mark the in-flight step CANCELED (CancelCascadeSteps / ForceStopCascadeTree)."""
        index, self._active = self._active, None
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
        self._set(index, sf.S_CANCELED)
        self._emit("status", "canceled", index)
