"""`AgyExecutor`: omnigent's `Executor` contract on top of the host-agnostic `AgySession`.

A new executor is made per `executor_factory()` call (after an error omnigent discards the
old one); all the state that matters lives in agy and in the session's private state
directory, so a fresh executor — or a fresh harness process — re-attaches to the same agy and
cascade (docs/decisions.md §4). This module only translates: configuration in, events out.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pluggy
from omnigent.inner.executor import (
    Executor,
    ExecutorConfig,
    ExecutorEvent,
    ReasoningChunk,
    SubAgentCompleted,
    SubAgentStarted,
    SubAgentToolCall,
    TextChunk,
    ToolCallComplete,
    ToolCallRequest,
    ToolCallStatus,
    TurnCancelled,
    TurnComplete,
)

from omnigent_agy import (
    DEFAULT_IDLE_TIMEOUT,
    RELAY_SERVER,
    TMUX_SOCKET_ENV,
    AgyConfig,
    AgyRestarted,
    AgySession,
    ConversationLost,
    McpSelection,
    PreflightError,
    ReaderSettings,
    SessionSettings,
    SessionStateDir,
    Turn,
    TurnResult,
    answered,
    carry_history,
    gemini_seed,
    load_config,
    mark_delivered,
    newest_user_message,
    preflight,
    read_agy_version,
    resolve_executable,
    user_message,
    workspace_trust,
)
from omnigent_agy import TMUX_SOCKET as DEFAULT_TMUX_SOCKET
from omnigent_agy import events as ev
from omnigent_agy.errors import (
    AgyError,
    ConfigError,
    MessageError,
    WorkspaceNotTrustedError,
    gave_up_waiting_failure,
    model_error_failure,
)
from omnigent_agy.plugins import TurnCall, get_plugin_manager, interrupt_session_hook, run_turn_hook

from .deletion import mark_for_deletion
from .executor_errors import executor_error_for, to_executor_error
from .notes import log_restart, lost_note
from .omnigent_prompts import OmnigentPrompts
from .spawn_env import CWD_ENV_KEY as CWD_ENV
from .spawn_env import EFFORT_ENV_KEY as EFFORT_ENV
from .spawn_env import MCP_SERVERS_ENV_KEY as MCP_SERVERS_ENV
from .spawn_env import MODEL_ENV_KEY as MODEL_ENV
from .subagent_events import is_wake_for, subagent_event
from .timing import TimingLog
from .titles import SessionTitle
from .tool_rows import row
from .translate import TOOL_STATUS, Stream, tool_result
from .usage import usage_dict

_logger = logging.getLogger(__name__)

READY_TIMEOUT_ENV = "OMNIGENT_AGY_READY_TIMEOUT"
STREAM_IDLE_ENV = "OMNIGENT_AGY_STREAM_IDLE_TIMEOUT"


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
        self._title: SessionTitle | None = None  # agy's title given to the session (titles)
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
        self._subagent_titles: set[str] = set()  # agy's sub-agents this harness reported
        self._subagent_keys: dict[str, str] = {}  # their rows' keys, by child cascade
        self._stream: Stream | None = None  # the turn's, while it runs
        self._timing = TimingLog.from_env(self._env)  # opt-in, for benchmarks (timing.py)

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
                agy_version=lambda: read_agy_version(executable, env=self._env).shown,
                gemini_seed=gemini_seed(config, self._env, selection=_agent_selection(self._env)),
                omnigent_tools=config.omnigent_tools,
                trust=workspace_trust(config, self._env, self._state_base),
            )
            self._session = AgySession(settings, policy=config.permissions, plugin_manager=self._pm)
            mark_for_deletion(self._state(), settings.conversation_id)
        return self._session

    def _state(self) -> SessionStateDir:
        return SessionStateDir.open(self._conversation_id(), base=self._state_base)

    # --- Executor -------------------------------------------------------------------------

    async def run_turn(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        system_prompt: str,
        config: ExecutorConfig | None = None,
    ) -> AsyncIterator[ExecutorEvent]:
        session_key = str(messages[-1].get("session_id", "")) if messages else ""
        call = TurnCall(session_key, messages, tools, system_prompt, config)
        events = run_turn_hook(self._pm, self, call)
        async for event in events:
            if not isinstance(event, ExecutorEvent):
                raise TypeError(f"an agy_run_turn plugin yielded {type(event).__name__}")
            self._timing.handed(self._conversation_id, event)
            yield event

    async def builtin_run_turn(self, call: TurnCall) -> AsyncIterator[ExecutorEvent]:
        config = call.config if isinstance(call.config, ExecutorConfig) else ExecutorConfig()
        self._stream = None
        try:
            session = self.session()
            message = newest_user_message(call.messages, attachments_dir=session.attachments_dir)
            if answered(call.messages) or is_wake_for(message.text, self._subagent_titles):
                # Nothing new for agy: its answer is there (history.answered), or omnigent's
                # notice that agy's sub-agent finished, whose result agy had (subagents.py).
                yield TurnComplete(response=None)
                return
            # A fork's or an import's earlier messages, once (session/history.py).
            state = SessionStateDir(session.attachments_dir.parent)  # the conversation's folder
            prompt = message.as_prompt()
            carried = carry_history(state, call.messages, prompt)
            carrying = bool(carried.messages)
            self._title = self._title or SessionTitle.open(self._state(), call.messages)
            effort = config.extra.get("reasoning_effort") or self._env.get(EFFORT_ENV)
            turn = Turn(
                carried.prompt,
                OmnigentPrompts(
                    policy_evaluator=self._policy_evaluator,
                    elicit=self._form_elicitor,
                ),
                model=config.model or self._env.get(MODEL_ENV) or None,
                effort=str(effort) if effort else None,
                instructions=call.system_prompt or None,
                tools=call.tools,
                tool_runner=self._run_omnigent_tool,
                # A new agy conversation instead of the one recorded: carried there too.
                carry_anew=lambda: carry_history(state, call.messages, prompt, anew=True),
            )
            stream = self._stream = Stream(session.shown)
            async for event in session.run_turn(turn):
                if isinstance(event, ConversationLost) and event.carried:
                    carrying = True
                if carrying and isinstance(event, ev.TurnBoundary):
                    mark_delivered(state)  # agy has them now
                if isinstance(event, TurnResult) and event.status == "completed":
                    await self._retitle(session, carrying)
                for translated in self._translated(event, stream):
                    yield translated
        except PreflightError as exc:
            yield to_executor_error(exc.failure)
        except WorkspaceNotTrustedError as exc:
            # The person's answer (or nobody could be asked), not a fault: no traceback, and
            # the session stays, to ask again at the next message (docs/decisions.md §11).
            _logger.info("agy not started: %s", exc)
            yield executor_error_for(exc, preserve_session=True)
        except Exception as exc:  # every failure reaches the person, with a code
            _logger.warning("agy turn failed: %s", type(exc).__name__, exc_info=True)
            # The sub-agents that ended still end on their rows (held for the turn's end).
            for held in self._stream.closing() if self._stream is not None else []:
                yield held
            yield executor_error_for(exc, secrets=self._secrets())

    async def _retitle(self, session: AgySession, carried: bool) -> None:
        """agy's title for the conversation as the session's (titles); never worth the turn."""
        run = self._run_omnigent_tool
        try:
            if self._title is not None:  # opened as the turn started
                await self._title.after_turn(session.cascade_id, run, carried=carried)
        except (AgyError, OSError) as exc:
            _logger.info("the session keeps its title: %s", exc)

    async def _run_omnigent_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One of omnigent's tools, called by agy through the relay: omnigent's tool bridge
        runs it, so its TOOL_CALL / TOOL_RESULT policies apply (and it shows in the
        transcript, once: agy's own MCP step for it is not translated)."""
        bridge = self._tool_executor
        if not callable(bridge):
            return {"error": "omnigent's tool bridge is not installed in this harness"}
        if self._stream is not None:
            self._stream.note_call()  # the runner shows the call: the web closes the text
        result = await bridge(name, arguments)
        return result if isinstance(result, dict) else {"result": result}

    def _translated(self, event: object, stream: Stream) -> list[ExecutorEvent]:
        translated = self._translate(event, stream)
        if translated is None:
            return []
        if isinstance(translated, SubAgentCompleted):
            stream.ends.append(translated)  # said at the turn's end (translate.Stream.ends)
            return []
        if isinstance(event, TurnResult):
            return [*stream.closing(), translated]
        stream.note(translated)
        if isinstance(event, ev.ToolCallFinished) and event.call_id not in stream.calls:
            # Started under a harness process that died mid-turn (AgySession's leftovers):
            # omnigent's adapter shows a call as completed only after seeing its request in
            # the same turn, so the request is told again (same call id: one card).
            stream.calls.add(event.call_id)
            name, args = row(event.name, event.arguments)
            started = ToolCallRequest(
                name=name,
                args=args,
                metadata={"call_id": event.call_id, "internally_executed": True},
            )
            return [started, translated]
        return [translated]

    def _translate(self, event: object, stream: Stream) -> ExecutorEvent | None:  # noqa: PLR0911
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
            # Under the name and keys omnigent's web titles its own tools by (tool_rows).
            name, args = row(event.name, event.arguments)
            return ToolCallRequest(
                name=name,
                args=args,
                metadata={"call_id": event.call_id, "internally_executed": True},
            )
        if isinstance(event, ev.ToolCallFinished):
            return ToolCallComplete(
                name=row(event.name, event.arguments)[0],
                status=TOOL_STATUS.get(str(event.outcome), ToolCallStatus.SUCCESS),
                result=tool_result(event),
                error=event.error,
                metadata={"call_id": event.call_id},
            )
        if isinstance(event, ev.SubAgentStarted | ev.SubAgentFinished | ev.SubAgentEvent):
            return self._subagent(event, stream)
        if isinstance(event, TurnResult):
            stream.ended()
            return self._finish(event)
        if isinstance(event, AgyRestarted):
            log_restart(event, self._conversation_id())
        return lost_note(event) if isinstance(event, ConversationLost) else None

    def _subagent(self, event: object, stream: Stream) -> ExecutorEvent | None:
        """A sub-agent's event, with what a process killed mid-turn showed left out: its calls
        (each would be a second row) and its task (seeded into its row again). Its start is
        said again, task-less, since the new turn's runner knows the sub-agent only so."""
        translated = subagent_event(event, self._subagent_keys)
        if isinstance(translated, SubAgentToolCall):
            shown = f"subagent-call|{translated.child_key}|{translated.call_id}"
            return translated if stream.once(shown) else None
        if isinstance(translated, SubAgentStarted):
            self._subagent_titles.add(translated.title)
            if not stream.once(f"subagent|{translated.child_key}"):
                return replace(translated, task="")
        return translated

    def _finish(self, result: TurnResult) -> ExecutorEvent:
        session = self._session
        usage = usage_dict(
            result,
            catalog=session.model_catalog if session is not None else None,
            model=session.turn_model if session is not None else None,
        )
        if result.status == "cancelled":
            return TurnCancelled()
        if result.status == "failed" and result.failure is not None:
            return to_executor_error(result.failure, usage=usage, preserve_session=True)
        if result.status == "failed" and result.error is not None:
            failure = (
                gave_up_waiting_failure(result.error.message)
                if result.gave_up_waiting
                else model_error_failure(result.error.message, retryable=result.error.retryable)
            )
            return to_executor_error(failure, usage=usage, preserve_session=True)
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

    def leave_running_turn(self) -> None:
        """omnigent's runner is going away under the running turn, and no Stop was asked: the
        turn is left to agy for the next harness process (`AgySession.leave_running_turn`)."""
        if self._session is not None:
            self._session.leave_running_turn()

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
        # Deleted, reaped or the host stopping: omnigent says which no other way, and the watch
        # armed at the first turn (deletion.py) decides once this process has ended.
        del session_key
        await self.close()

    async def close(self) -> None:
        session, self._session = self._session, None
        self._timing.close()
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
