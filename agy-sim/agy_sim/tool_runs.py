"""A turn's tool runs and the gates that park them (docs/wire.md §5-§6).

``ToolRuns`` writes each tool's own step after the PLANNER_RESPONSE that called it:
RUN_COMMAND (one permission gate per ``&&`` part, on the same step), ASK_QUESTION (a
question gate), VIEW_FILE, LIST_DIRECTORY and INVOKE_SUBAGENT. A gate parks its step in
WAITING until HandleCascadeUserInteraction delivers an answer (applied synchronously by
``Gate.accept``) or the WAITING timeout moves it to ERROR; then a fresh WAITING step is
made at a higher index, ``waiting_retries`` times, before the turn gives up.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from agy_sim import steps_factory as sf
from agy_sim.answers import (
    apply_permission,
    apply_question,
    lasting_allow,
    validate_question_answer,
)
from agy_sim.cascade import Gate, GateKind
from agy_sim.turn_api import (
    CommandOutcome,
    CommandOutput,
    McpOutcome,
    Question,
    QuestionOutcome,
)
from agy_sim.turn_steps import StepWriter, TurnAbortedError

ModelError = Callable[[str, str], Awaitable[None]]


def _describe_request(request: dict[str, Any]) -> str:
    """One line for the TUI: what the WAITING step asks."""
    if "permission" in request:
        return f"permission to run: {request['permission']['resource']['target']}"
    questions = request.get("askQuestion", {}).get("questions", [])
    return "question: " + " | ".join(
        q["question"] + " " + " ".join(f"[{o['id']}] {o['text']}" for o in q.get("options", []))
        for q in questions
    )


class ToolRuns:
    """The tools of one turn, written through the turn's ``StepWriter``.

    ``model_error`` is the turn's own (it writes the ERROR_MESSAGE step a turn ends with
    when a gate timed out too often).
    """

    def __init__(self, steps: StepWriter, model_error: ModelError) -> None:
        self._steps = steps
        self._model_error = model_error

    def _new_tool_step(
        self, call: sf.ToolCall, step_type: str, payload_key: str, payload: dict[str, Any]
    ) -> int:
        steps = self._steps
        ts = steps.env.now()
        step = sf.tool_step(
            steps.ident(steps.tool_metadata_index),
            ts,
            model=steps.model.model,
            step_type=step_type,
            payload_key=payload_key,
            payload=payload,
            call=call,
            output_tokens=20 + len(call.arguments) * 6,
        )
        index = steps.cascade.append(step, ts)
        steps.active = index
        steps.emit("tool", f"{call.name} {call.tool_summary}".strip(), index)
        return index

    def _finish(self, index: int) -> None:
        self._steps.set_status(index, sf.S_DONE)
        self._steps.active = None

    # -- gates --------------------------------------------------------------------------
    async def _gate(
        self,
        index: int,
        kind: GateKind,
        request: dict[str, Any],
        apply: Callable[[dict[str, Any]], Any],
    ) -> Any:
        """Park step ``index`` in WAITING until answered; None when the wait timed out."""
        steps = self._steps
        cascade = steps.cascade
        loop = asyncio.get_running_loop()
        answered: asyncio.Future[Any] = loop.create_future()
        step = cascade.steps[index]
        step["requestedInteraction"] = request

        def accept(interaction: dict[str, Any]) -> None:
            result = apply(interaction)  # raises GateRejectedError before changing anything
            del cascade.gates[index]
            cascade.interactions.append({"stepIndex": index, **interaction})
            steps.set_status(index, sf.S_RUNNING)
            steps.emit("answered", kind, index)
            answered.set_result(result)

        cascade.gates[index] = Gate(index, kind, accept)
        steps.set_status(index, sf.S_WAITING)
        steps.emit("waiting", _describe_request(request), index)
        try:
            return await asyncio.wait_for(asyncio.shield(answered), steps.env.waiting_timeout)
        except TimeoutError:
            if answered.done():  # the answer and the deadline met in one loop iteration
                return answered.result()
            # WAITING times out server-side → ERROR; the caller retries at a higher index (§6).
            cascade.gates.pop(index, None)
            steps.set_status(index, sf.S_ERROR)
            steps.emit("error", "timed out waiting for the user", index)
            return None
        finally:
            cascade.gates.pop(index, None)

    async def _retrying(self, make: Callable[[], Awaitable[Any]]) -> Any:
        for _ in range(self._steps.env.waiting_retries + 1):
            result = await make()
            if result is not None:
                return result
        await self._model_error(
            "Timed out waiting for user input.", "interaction timed out too many times (agy-sim)"
        )
        raise TurnAbortedError("interaction timed out")

    # -- gated tools --------------------------------------------------------------------
    async def mcp_tool(
        self, call: sf.ToolCall, server: str, tool: str, arguments: dict[str, Any]
    ) -> McpOutcome | None:
        """An MCP_TOOL step: gated unless `tool` is in the server's enabledTools (§1b), then
        the real server's result. None: no such tool. The payload's field names are those
        the schema gives (serverName, toolCall, resultString); no MCP step was recorded."""
        steps = self._steps
        host = steps.env.mcp
        if host is not None:
            await host.ready()
        found = host.find(server, tool) if host is not None else None
        if host is None or found is None:
            return None
        payload = {
            "serverName": server,
            "toolCall": {"name": tool, "argumentsJson": json.dumps(arguments)},
        }
        index = self._new_tool_step(call, "CORTEX_STEP_TYPE_MCP_TOOL", "mcpTool", payload)
        step = steps.cascade.steps[index]
        if tool not in found[0].enabled_tools:
            request = sf.permission_request(target=f"{server}/{tool}", description=call.tool_action)
            request["permission"]["resource"]["action"] = "mcp"
            allowed = await self._gate(
                index, "permission", request, partial(apply_permission, step)
            )
            if not allowed:  # denied, or the wait timed out (a guess: agy carries on)
                step["mcpTool"]["userRejected"] = True
                self._finish(index)
                return McpOutcome(allowed=False, text="")
        else:
            steps.set_status(index, sf.S_RUNNING)
        text, error = await host.call(server, tool, arguments)
        step["mcpTool"]["resultString"] = text
        steps.set_status(index, sf.S_ERROR if error else sf.S_DONE)
        steps.active = None
        steps.emit("tool", text[:200], index)
        return McpOutcome(allowed=True, text=text, error=error)

    async def run_command(
        self, call: sf.ToolCall, command: str, *, output: CommandOutput, runtime: float = 0.0
    ) -> CommandOutcome:
        """Gate and run ``command``; ``output`` is its text, or made only once it is allowed
        (a command agy-sim really runs, ``touch``, must not run when refused)."""
        parts = [p.strip() for p in command.split("&&") if p.strip()]
        pending = list(parts)
        payload = {
            "commandLine": command,
            "proposedCommandLine": command,
            "cwd": str(self._steps.env.workspace),
            "waitMsBeforeAsync": "2000",
            "blocking": True,
        }
        hooks = self._steps.env.hooks
        if hooks is not None:  # agy ≥ 1.4: a PreToolUse hook decides first (hooks.py)
            decision = await hooks.pre_tool_use(call.name, {"CommandLine": command})
            if not decision.allowed:
                index = self._new_tool_step(
                    call, "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand", dict(payload)
                )
                step = self._steps.cascade.steps[index]
                text = f"denied by a PreToolUse hook: {decision.reason}"
                step["runCommand"].update(userRejected=True, combinedOutput={"full": text})
                self._finish(index)
                return CommandOutcome(allowed=False)

        async def attempt() -> CommandOutcome | None:
            index = self._new_tool_step(
                call, "CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand", dict(payload)
            )
            allowed = await self._gate_parts(call, index, pending)
            if allowed is None:
                return None
            if not allowed:
                return CommandOutcome(allowed=False)
            return await self._execute(index, output, runtime)

        result: CommandOutcome = await self._retrying(attempt)
        if hooks is not None and result.allowed:
            await hooks.fire("PostToolUse", tool=call.name, tool_input={"CommandLine": command})
        return result

    async def _gate_parts(self, call: sf.ToolCall, index: int, pending: list[str]) -> bool | None:
        """The parts of a command line still `pending`, each gated on step `index` (one
        gate per part, on the same step: docs/wire.md §6) unless allowed for the
        conversation earlier; False (the step finished as refused) at the first refused,
        None when the gate timed out (agy asks again)."""
        cascade = self._steps.cascade
        step = cascade.steps[index]

        def answer(target: str, interaction: dict[str, Any]) -> bool:
            allowed = apply_permission(step, interaction)
            if lasting_allow(interaction):
                cascade.allowed_commands.add(target)
            return allowed

        while pending:
            if pending[0] in cascade.allowed_commands:
                pending.pop(0)  # allowed for the conversation earlier: not asked again
                continue
            request = sf.permission_request(target=pending[0], description=call.tool_action)
            allowed = await self._gate(index, "permission", request, partial(answer, pending[0]))
            if allowed is None:
                return None
            pending.pop(0)
            if not allowed:
                step["runCommand"]["userRejected"] = True
                self._finish(index)
                return False
        return True

    async def _execute(self, index: int, output: CommandOutput, runtime: float) -> CommandOutcome:
        output = output() if callable(output) else output
        steps = self._steps
        step = steps.cascade.steps[index]
        step["runCommand"]["shellName"] = "bash"
        if step["status"] != sf.S_RUNNING:
            steps.set_status(index, sf.S_RUNNING)
        else:
            steps.touch(index)
        if runtime > 0:
            step["runCommand"]["combinedOutput"] = {"full": "start\r\n"}
            steps.touch(index)
            await asyncio.sleep(runtime)
        step["runCommand"].update(exitCode=0, combinedOutput={"full": output})
        self._finish(index)
        steps.emit("tool", output.rstrip("\n"), index)
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
            self._steps.set_status(index, sf.S_RUNNING)
            step = self._steps.cascade.steps[index]

            def apply(interaction: dict[str, Any]) -> QuestionOutcome:
                outcome = validate_question_answer(index, questions, interaction)
                apply_question(step, interaction, outcome)
                return outcome

            outcome: QuestionOutcome | None = await self._gate(
                index, "askQuestion", sf.question_request(wire), apply
            )
            if outcome is not None:
                self._finish(index)
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
            name = _wire_text(entry.name)
            if entry.is_dir():
                results.append({"name": name, "isDir": True})
            else:
                size = entry.stat().st_size
                results.append({"name": name, **({"sizeBytes": str(size)} if size else {})})
        payload: dict[str, Any] = {"directoryPathUri": _wire_text(path.as_uri())}
        if results:
            payload["results"] = results
        await self._quick_tool(call, "CORTEX_STEP_TYPE_LIST_DIRECTORY", "listDirectory", payload)

    async def _quick_tool(
        self, call: sf.ToolCall, step_type: str, key: str, payload: dict[str, Any]
    ) -> None:
        index = self._new_tool_step(call, step_type, key, payload)
        self._steps.set_status(index, sf.S_RUNNING)
        await self._steps.pause()
        self._finish(index)

    async def invoke_subagent(
        self, call: sf.ToolCall, *, role: str, task: str, delegate: bool = False
    ) -> str:
        # No recorded INVOKE_SUBAGENT payload exists: the shape is a guess, the same one the
        # project's hand-made fixtures use (subagents[] requested, results[] per child).
        steps = self._steps
        payload = {"subagents": [{"role": role, "typeName": "general", "prompt": task}]}
        index = self._new_tool_step(
            call, "CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "invokeSubagent", payload
        )
        steps.set_status(index, sf.S_RUNNING)
        step = steps.cascade.steps[index]

        def started(child_id: str) -> None:
            step["invokeSubagent"]["results"] = [{"conversationId": child_id}]
            steps.touch(index)

        report = await steps.env.spawn_subagent(steps.cascade, task, steps.model, started, delegate)
        step["invokeSubagent"]["results"][0]["summary"] = report
        self._finish(index)
        return report


def _wire_text(name: str) -> str:
    """A file name as agy's JSON carries it: bytes that are no UTF-8 (Python keeps them as
    surrogate escapes) become U+FFFD, as Go's encoding/json replaces invalid UTF-8."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
