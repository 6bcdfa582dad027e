"""`AgyExecutor`: omnigent's `Executor` contract on top of the host-agnostic `AgySession`.

A new executor is made per `executor_factory()` call (after an error omnigent discards the
old one); all the state that matters lives in agy and in the session's private state
directory, so a fresh executor — or a fresh harness process — re-attaches to the same agy and
cascade (DESIGN-NOTES §4). This module only translates: configuration in, events out.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pluggy
from omnigent.debug_logging import debug_event
from omnigent.inner.executor import (
    Executor,
    ExecutorConfig,
    ExecutorError,
    ExecutorEvent,
    ReasoningChunk,
    SubAgentCompleted,
    SubAgentStarted,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    ToolCallStatus,
    TurnCancelled,
    TurnComplete,
)

from omnigent_agy.agy.gemini_home import McpSelection
from omnigent_agy.interactions.hooks import (
    get_plugin_manager,
    interrupt_session_hook,
    run_turn_hook,
)
from omnigent_agy.onboarding.agy_home import gemini_seed
from omnigent_agy.onboarding.config import (
    AgyConfig,
    ConfigError,
    load_config,
    resolve_executable,
)
from omnigent_agy.onboarding.doctor import preflight
from omnigent_agy.reading import events as ev
from omnigent_agy.reading.mapper import DEFAULT_OUTPUT_CAP
from omnigent_agy.reading.reader_state import DEFAULT_IDLE_TIMEOUT, ReaderSettings
from omnigent_agy.reading.steps import StepKey
from omnigent_agy.relay.channel import RELAY_SERVER
from omnigent_agy.session.agy_session import AgySession, PreflightError, SessionSettings
from omnigent_agy.session.messages import MessageError, newest_user_message, user_message
from omnigent_agy.session.shown import ShownLedger
from omnigent_agy.session.turns import AgyRestarted, TurnResult

from .failures import executor_error_for, to_executor_error
from .prompts import OmnigentPrompts

_logger = logging.getLogger(__name__)

MODEL_ENV = "HARNESS_AGY_CLI_MODEL"
EFFORT_ENV = "HARNESS_AGY_CLI_REASONING_EFFORT"
CWD_ENV = "HARNESS_AGY_CLI_CWD"
TMUX_SOCKET_ENV = "OMNIGENT_AGY_TMUX_SOCKET"
READY_TIMEOUT_ENV = "OMNIGENT_AGY_READY_TIMEOUT"
MCP_SERVERS_ENV = "HARNESS_AGY_CLI_MCP_SERVERS"
STREAM_IDLE_ENV = "OMNIGENT_AGY_STREAM_IDLE_TIMEOUT"
DEFAULT_TMUX_SOCKET = "omnigent-agy"

_TOOL_STATUS = {
    "success": ToolCallStatus.SUCCESS,
    "error": ToolCallStatus.ERROR,
    "canceled": ToolCallStatus.CANCELLED,
    "denied": ToolCallStatus.BLOCKED,
}


def usage_dict(result: TurnResult, model: str | None = None) -> dict[str, Any] | None:
    """agy's summed `modelUsage` in omnigent's usage keys.

    `context_tokens` (how full the context window is, for the web's context ring) is the
    prompt of the turn's last model call, cached part included; `model` names agy's model.
    """
    usage = result.usage
    if usage is None:
        return None
    reported: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }
    if result.last_call is not None:
        reported["context_tokens"] = (
            result.last_call.input_tokens + result.last_call.cache_read_tokens
        )
    if model:
        reported["model"] = model
    return reported


class _Stream:
    """Turns splice deltas (`events.apply_delta`) into omnigent's append-only chunks.

    What it hands over is recorded in the session's `ShownLedger`, so a harness process
    started after this one was killed mid-answer goes on where the host's text stops instead
    of showing the step again from its start (session/shown.py).
    """

    def __init__(self, ledger: ShownLedger | None = None) -> None:
        self._ledger = ledger
        self._shown: dict[str, int] = ledger.load() if ledger is not None else {}
        self._last_text_key: object = None
        self.calls: set[str] = set()
        """The tool calls this turn showed as started (`ToolCallRequest`)."""

    def text(self, delta: ev.TextDelta) -> str:
        piece = self._append_only(_stream_key("text", delta.key), delta.offset, delta.text)
        if piece and self._last_text_key not in (None, delta.key):
            piece = "\n\n" + piece  # a new message of the same turn starts a new paragraph
        if piece:
            self._last_text_key = delta.key
        return piece

    def reasoning(self, delta: ev.ReasoningDelta) -> str:
        return self._append_only(_stream_key("reasoning", delta.key), delta.offset, delta.text)

    def ended(self) -> None:
        """The turn ended with every step settled: nothing of it is open any more."""
        if self._ledger is not None:
            self._ledger.clear()

    def _append_only(self, key: str, offset: int, text: str) -> str:
        shown = self._shown.get(key, 0)
        end = offset + len(text)
        if offset > shown:
            _logger.warning("a delta skipped %d characters", offset - shown)
        if end <= shown:
            if offset < shown:
                _logger.info("agy rewrote text already shown; the committed text keeps it")
            return ""
        self._shown[key] = end
        if self._ledger is not None:
            self._ledger.record(key, end)
        return text[max(0, shown - offset) :]


def _stream_key(kind: str, key: StepKey) -> str:
    return f"{kind}|{key.cascade_id}|{key.trajectory_id}|{key.step_index}"


class AgyExecutor(Executor):
    """Drives the agy of one omnigent conversation."""

    def __init__(
        self,
        *,
        conversation_id: Callable[[], str],
        config: AgyConfig | None = None,
        env: Mapping[str, str] | None = None,
        plugin_manager: pluggy.PluginManager | None = None,
        state_base: Path | None = None,
        tmux_socket: str | None = None,
    ) -> None:
        self._conversation_id = conversation_id
        self._config = config
        self._env = dict(os.environ if env is None else env)
        self._pm = plugin_manager or get_plugin_manager()
        self._state_base = state_base
        self._tmux_socket = tmux_socket
        self._session: AgySession | None = None
        # Bridges omnigent's ExecutorAdapter installs (it fills attributes that are None).
        self._tool_executor: object = None
        self._elicitation_handler: object = None
        self._policy_evaluator: Any = None
        self._form_elicitor: Any = None  # installed by AgyExecutorAdapter

    # --- capabilities ---------------------------------------------------------------------

    def supports_streaming(self) -> bool:
        return True

    def handles_tools_internally(self) -> bool:
        return True

    def supports_live_message_queue(self) -> bool:
        return True

    # --- the session ----------------------------------------------------------------------

    def _load_config(self) -> AgyConfig:
        if self._config is None:
            self._config = load_config(env=self._env)
        return self._config

    def session(self) -> AgySession:
        if self._session is None:
            config = self._load_config()
            executable = resolve_executable(config, self._env)
            workspace = Path(self._env.get(CWD_ENV) or Path.cwd())
            settings = SessionSettings(
                conversation_id=self._conversation_id(),
                workspace=workspace,
                command=(str(executable), *config.args),
                state_base=self._state_base,
                tmux_socket=(
                    self._tmux_socket
                    or self._env.get(TMUX_SOCKET_ENV)
                    or config.tmux_socket
                    or DEFAULT_TMUX_SOCKET
                ),
                keep_agy_running=config.keep_agy_running,
                keep=config.keep,
                ready_timeout=_float_env(self._env, READY_TIMEOUT_ENV, 60.0),
                reader=ReaderSettings(
                    idle_timeout=_float_env(self._env, STREAM_IDLE_ENV, DEFAULT_IDLE_TIMEOUT)
                ),
                preflight=lambda: preflight(config, self._env),
                gemini_seed=gemini_seed(
                    config, workspace, self._env, selection=_agent_selection(self._env)
                ),
                omnigent_tools=config.omnigent_tools,
            )
            self._session = AgySession(settings, policy=config.permissions, plugin_manager=self._pm)
        return self._session

    # --- Executor -------------------------------------------------------------------------

    async def run_turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_prompt: str,
        config: ExecutorConfig | None = None,
    ) -> AsyncIterator[ExecutorEvent]:
        session_key = str(messages[-1].get("session_id", "")) if messages else ""
        events = run_turn_hook(
            self._pm,
            self,
            session_key=session_key,
            messages=messages,
            tools=tools,
            system_prompt=system_prompt,
            config=config,
        )
        async for event in events:
            if not isinstance(event, ExecutorEvent):
                raise TypeError(f"an agy_run_turn plugin yielded {type(event).__name__}")
            yield event

    async def builtin_run_turn(
        self,
        *,
        session_key: str,
        messages: list[dict[str, object]],
        tools: list[dict[str, object]],
        system_prompt: str,
        config: object,
    ) -> AsyncIterator[ExecutorEvent]:
        del session_key
        turn_config = config if isinstance(config, ExecutorConfig) else ExecutorConfig()
        try:
            session = self.session()
            message = newest_user_message(messages, attachments_dir=session.attachments_dir)
            model = turn_config.model or self._env.get(MODEL_ENV) or None
            effort = turn_config.extra.get("reasoning_effort") or self._env.get(EFFORT_ENV)
            prompts = OmnigentPrompts(
                policy_evaluator=self._policy_evaluator,
                elicit=self._form_elicitor,
            )
            stream = _Stream(session.shown)
            async for event in session.run_turn(
                message.as_prompt(),
                model=model,
                effort=str(effort) if effort else None,
                prompts=prompts,
                instructions=system_prompt or None,
                tools=tools,
                tool_runner=self._run_omnigent_tool,
            ):
                for translated in self._translated(event, stream):
                    yield translated
        except PreflightError as exc:
            yield to_executor_error(exc.failure)
        except Exception as exc:  # every failure reaches the person, with a code
            _logger.warning("agy turn failed: %s", type(exc).__name__, exc_info=True)
            yield executor_error_for(exc, secrets=self._secrets())

    async def _run_omnigent_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One of omnigent's tools, called by agy through the relay: omnigent's tool bridge
        runs it, so its TOOL_CALL / TOOL_RESULT policies apply (and it shows in the
        transcript, once: agy's own MCP step for it is not translated)."""
        bridge = self._tool_executor
        if not callable(bridge):
            return {"error": "omnigent's tool bridge is not installed in this harness"}
        result = await bridge(name, arguments)
        return result if isinstance(result, dict) else {"result": result}

    def _translated(self, event: object, stream: _Stream) -> list[ExecutorEvent]:
        translated = self._translate(event, stream)
        if translated is None:
            return []
        if isinstance(event, ev.ToolCallFinished) and event.call_id not in stream.calls:
            # Started under a harness process that died mid-turn (AgySession's leftovers):
            # omnigent's adapter shows a call as completed only after seeing its request in
            # the same turn, so the request is told again (same call id: one card).
            stream.calls.add(event.call_id)
            started = ToolCallRequest(
                name=event.name,
                args=dict(event.arguments or {}),
                metadata={"call_id": event.call_id, "internally_executed": True},
            )
            return [started, translated]
        return [translated]

    def _translate(self, event: object, stream: _Stream) -> ExecutorEvent | None:  # noqa: PLR0911
        if isinstance(event, ev.ToolCallStarted | ev.ToolCallFinished) and event.name.startswith(
            f"{RELAY_SERVER}/"
        ):
            return None  # the relay's call: omnigent's bridge already shows it with its result
        if isinstance(event, ev.TextDelta):
            piece = stream.text(event)
            return TextChunk(text=piece) if piece else None
        if isinstance(event, ev.ReasoningDelta):
            piece = stream.reasoning(event)
            return ReasoningChunk(delta=piece, event_type="reasoning_text") if piece else None
        if isinstance(event, ev.ToolCallStarted):
            stream.calls.add(event.call_id)
            return ToolCallRequest(
                name=event.name,
                args=dict(event.arguments),
                metadata={"call_id": event.call_id, "internally_executed": True},
            )
        if isinstance(event, ev.ToolCallFinished):
            return ToolCallComplete(
                name=event.name,
                status=_TOOL_STATUS.get(str(event.outcome), ToolCallStatus.SUCCESS),
                result=_tool_result(event),
                error=event.error,
                metadata={"call_id": event.call_id},
            )
        if isinstance(event, ev.SubAgentStarted):
            title = event.role or event.agent_type or "agy sub-agent"
            return SubAgentStarted(child_key=event.child_cascade_id, title=title)
        if isinstance(event, ev.SubAgentFinished):
            return SubAgentCompleted(child_key=event.child_cascade_id, ok=event.ok)
        if isinstance(event, TurnResult):
            stream.ended()
            return self._finish(event)
        if isinstance(event, AgyRestarted):
            # The transcript itself is unchanged (agy kept the history); the session's log
            # says why agy had to be started again.
            _logger.info(
                "agy was restarted on conversation %s (the earlier agy ended: %s)",
                event.cascade_id,
                event.reason,
                extra=debug_event(
                    "agy_restarted",
                    session_id=self._conversation_id(),
                    cascade_id=event.cascade_id,
                    reason=event.reason,
                ),
            )
        return None

    def _finish(self, result: TurnResult) -> ExecutorEvent:
        session = self._session
        usage = usage_dict(result, session.turn_model_name if session is not None else None)
        if result.status == "cancelled":
            return TurnCancelled()
        if result.status == "failed" and result.error is not None and result.gave_up_waiting:
            return ExecutorError(
                message=f"agy stopped waiting for an answer: {result.error.message}",
                retryable=True,
                usage=usage,
                preserve_session=True,
                code="agy_interaction_timed_out",
                title="agy gave up waiting for your answer",
                remediation=(
                    "agy asked for an approval or an answer and timed out before one came; "
                    "an answer given now is refused. Send the message again and answer the "
                    "card while it is shown."
                ),
            )
        if result.status == "failed" and result.error is not None:
            return ExecutorError(
                message=result.error.message,
                retryable=result.error.retryable,
                usage=usage,
                preserve_session=True,
                code="agy_model_error",
                title="agy's model call failed",
                remediation=(
                    "Send the message again; if it keeps failing, pick another model with "
                    "/model or check agy's status with `omnigent-agy doctor`."
                ),
            )
        return TurnComplete(response=result.text or None, usage=usage)

    def _secrets(self) -> tuple[str, ...]:
        agy = self._session.agy if self._session is not None else None
        return (agy.csrf_token,) if agy is not None else ()

    async def interrupt_session(self, session_key: str) -> bool:
        return await interrupt_session_hook(self._pm, self, session_key)

    async def builtin_interrupt_session(self, session_key: str) -> bool:
        del session_key
        if self._session is None:
            return False
        return await self._session.interrupt()

    async def enqueue_session_message(self, session_key: str, content: Any) -> bool:
        del session_key
        session = self._session
        if session is None:
            return False
        try:
            message = user_message(content, session.attachments_dir)
        except MessageError as exc:
            # Not steerable as it is: the runner then sends it as the next turn, where the
            # same error reaches the person with its code.
            _logger.info("not steering with this message: %s", exc)
            return False
        return await session.steer(message.as_prompt())

    async def close_session(self, session_key: str) -> None:
        del session_key
        await self.close()

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None:
            await session.close()


def _agent_selection(env: Mapping[str, str]) -> McpSelection | None:
    """The agent's own MCP server selection (its YAML's executor.extra.mcp_servers, passed by
    the spawn-env builder as JSON); None: the config block's applies."""
    raw = env.get(MCP_SERVERS_ENV, "").strip()
    if not raw:
        return None
    try:
        return McpSelection.parse(json.loads(raw), key="executor.extra.mcp_servers")
    except ValueError as exc:
        raise ConfigError(f"the agent's {exc}", key="executor.extra.mcp_servers") from None


def _float_env(env: Mapping[str, str], name: str, default: float) -> float:
    value = env.get(name, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        _logger.warning(
            "ignoring %s=%r: not a positive number of seconds; using %s", name, value, default
        )
        return default
    return seconds


def _tool_result(event: ev.ToolCallFinished) -> str:
    output = event.output or ""
    if event.full_bytes is not None:
        shown = len(output.encode("utf-8", errors="replace"))
        output += (
            f"\n[output truncated: {shown:,} of {event.full_bytes:,} bytes shown; omnigent-agy"
            f" passes at most {DEFAULT_OUTPUT_CAP // 1024} KiB of a tool's output to omnigent,"
            " agy itself saw all of it. Ask agy about the part you need, or have the command"
            " write its output to a file and read that in parts.]"
        )
    elif event.truncated:
        output += "\n[output truncated by agy]"
    if event.exit_code is not None and event.exit_code != 0:
        output += f"\n[exit code {event.exit_code}]"
    return output
