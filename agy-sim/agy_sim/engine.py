"""The simulator's engine: cascades and their turns (docs/wire.md §3-§7).

``SimEngine`` holds every cascade of one simulated agy; the connect methods the plugin uses
answer from it (``handlers.RpcHandlers(engine)``, served by ``connect_app.ConnectApp``).
Turns run as asyncio tasks on the caller's loop; the scripted model lives in ``scenarios``,
the step mechanics in ``turn``.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from agy_sim import steps_factory as sf
from agy_sim.carried import split_carried
from agy_sim.cascade import (
    IDLE,
    RUNNING,
    Cascade,
    GateRejectedError,
    QueuedMessage,
    TranscriptEvent,
)
from agy_sim.catalog import (
    CHECKPOINT_MODEL_ENUM,
    CatalogModel,
    ModelCatalog,
)
from agy_sim.engine_config import EngineSettings, IdSource
from agy_sim.history import seed_history
from agy_sim.hooks import Hooks, around_invocation
from agy_sim.mcp_host import McpHost
from agy_sim.quota import QUOTA_TRIGGER, QuotaAccount
from agy_sim.scenarios import subagent_worker
from agy_sim.store import ConversationStore
from agy_sim.triggers import choose
from agy_sim.turn import ScriptedRun, TurnAbortedError, TurnEnv
from agy_sim.turn_api import Script

StartedChild = Callable[[str], None]  # told the child cascade id as the sub-agent starts

__all__ = ["SimEngine", "TranscriptEvent"]

logger = logging.getLogger(__name__)

NEXT_INVOCATION: Final = "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION"
WHEN_IDLE: Final = "MESSAGE_DELIVERY_STRATEGY_WHEN_IDLE"
NO_MODEL_ERROR: Final = "neither PlanModel nor RequestedModel specified"
_UNSPECIFIED_MODEL: Final = CatalogModel("unspecified", "MODEL_UNSPECIFIED", "unspecified")


@dataclass(slots=True)
class _Runtime:
    turns: dict[str, ScriptedRun] = field(default_factory=dict)
    listeners: list[Callable[[TranscriptEvent], None]] = field(default_factory=list)
    closed: bool = False


class SimEngine:
    """Every cascade of one simulated agy, and the handlers that serve them."""

    def __init__(
        self,
        settings: EngineSettings,
        *,
        workspace: str | Path,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        ids: IdSource | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = Path(workspace)
        tui_model = ModelCatalog(settings.models).resolve(settings.default_model)
        if tui_model is None:
            raise ValueError(f"unknown default model {settings.default_model!r}")
        self.tui_model = tui_model
        # GetAvailableModels' defaultAgentModelId is the model the TUI runs with (--model).
        self.catalog = ModelCatalog(settings.models, default_model=tui_model.model)
        self._clock = clock
        self._wall_clock = wall_clock
        self._ids = ids or IdSource()
        self._session_id = f"-{int(self._ids.uuid().replace('-', ''), 16) % 10**19}"
        self._rt = _Runtime()
        self.cascades: dict[str, Cascade] = {}
        self._started_at = clock()
        self._store = ConversationStore(Path(settings.store_dir)) if settings.store_dir else None
        # The TUI's own conversation exists from the start (§3): the one `--conversation`
        # names when it is stored, else a new one; StartCascade makes others.
        self.resumed = self._resume(settings.resume_conversation)
        self.tui_cascade_id = self.resumed or self.new_cascade().cascade_id
        if settings.history_steps and not self.resumed:
            seed_history(
                self.cascades[self.tui_cascade_id],
                settings.history_steps,
                model=tui_model.model,
                now=self.now,
                new_id=self.new_id,
                planner_config=self.planner_config,
            )
        # The process sets these from the gemini dir (gemini.py, mcp_host.py).
        self.mcp: McpHost | None = None
        self.hooks: Hooks | None = None  # agy ≥ 1.4's hooks (hooks.py)
        self.quota: QuotaAccount | None = None
        """The account's quota (quota.py); a turn on a used-up model group fails."""
        self.rules: Callable[[], str] = lambda: ""
        self.choose_script: Callable[[str], Script] = lambda text: choose(text)[1]
        """The scenario a turn's text picks (``triggers``; the ACP side narrows it)."""

    # -- public interface (the process, the TUI and tests) --------------------------------
    def add_listener(self, callback: Callable[[TranscriptEvent], None]) -> None:
        self._rt.listeners.append(callback)

    async def submit_tui_text(self, text: str) -> None:
        """A line typed in the TUI: a turn on the TUI's cascade, or ``/clear`` (§7)."""
        if text.strip() == "/clear":
            cascade = self.new_cascade()
            self.tui_cascade_id = cascade.cascade_id
            self.emit(TranscriptEvent(cascade.cascade_id, "cleared", cascade.cascade_id))
            return
        config = self.planner_config({"planModel": self.tui_model.model})
        self.deliver(
            self.cascades[self.tui_cascade_id], QueuedMessage([{"text": text}], config, "")
        )

    def switch_tui_model(self, model: CatalogModel) -> None:
        """``/model`` typed in the TUI: the model of the turns typed there from now on."""
        self.tui_model = model

    async def answer_tui(self, interaction: dict[str, Any]) -> str:
        """Answer the freshest WAITING step of the TUI's cascade (``/allow``, ``/answer``…).

        ``interaction`` holds ``permission`` or ``askQuestion`` as on the wire; the step's
        identity is filled in. Returns a short status line for the TUI.
        """
        cascade = self.cascades[self.tui_cascade_id]
        waiting = cascade.waiting_indices()
        if not waiting:
            return "nothing is waiting for an answer"
        index = waiting[-1]
        body = {"trajectoryId": cascade.trajectory_id, "stepIndex": index, **interaction}
        try:
            cascade.gates[index].accept(body)
        except GateRejectedError as exc:
            return f"not accepted: {exc}"
        return f"answered step {index}"

    def snapshot(self) -> dict[str, Any]:
        """Everything tests check on the simulator side (answers, models, cancels)."""
        return {
            "tuiCascadeId": self.tui_cascade_id,
            "uptimeSeconds": self._clock() - self._started_at,
            "cascades": {cid: c.snapshot() for cid, c in self.cascades.items()},
        }

    async def aclose(self) -> None:
        """Stop every turn, end every open stream and store every conversation."""
        self._rt.closed = True
        tasks = [c.task for c in self.cascades.values() if c.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks)
        for cascade in self.cascades.values():
            cascade.wake()
            self._save(cascade)

    # -- used by the handlers ---------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._rt.closed

    def now(self) -> str:
        return sf.rfc3339(self._wall_clock())

    def new_id(self) -> str:
        return self._ids.uuid()

    def emit(self, event: TranscriptEvent) -> None:
        for listener in list(self._rt.listeners):
            try:
                listener(event)
            except Exception:  # a broken display must not break the language server
                logger.exception("transcript listener failed")

    def new_cascade(self, *, cascade_id: str = "", parent: Cascade | None = None) -> Cascade:
        cascade = Cascade(
            cascade_id=cascade_id or self._ids.uuid(),
            trajectory_id=self._ids.uuid(),
            created_at=self.now(),
            workspace_uri=self.workspace.as_uri(),
            parent_id=parent.cascade_id if parent else "",
            root_id=(parent.root_id or parent.cascade_id) if parent else "",
        )
        self.cascades[cascade.cascade_id] = cascade
        self._save(cascade)
        return cascade

    def _resume(self, cascade_id: str) -> str:
        """Load a stored conversation (and its sub-agents); its id, or "" when not stored."""
        if not cascade_id:
            return ""
        tree = self._store.load_tree(cascade_id) if self._store is not None else []
        if not tree:
            # What real agy does with an unknown id is not recorded (a guess: start afresh).
            logger.warning("conversation %s is not stored; starting a new one", cascade_id)
            return ""
        for cascade in tree:
            self.cascades[cascade.cascade_id] = cascade
        logger.info("resumed conversation %s (%d steps)", cascade_id, len(tree[0].steps))
        return tree[0].cascade_id

    def _save(self, cascade: Cascade) -> None:
        if self._store is None:
            return
        try:
            self._store.save(cascade)
        except OSError as exc:  # a full disk must not take the language server down
            logger.warning("could not store conversation %s: %s", cascade.cascade_id, exc)

    def planner_config(self, requested: dict[str, Any]) -> dict[str, Any]:
        """The ``userConfig.plannerConfig`` agy echoes on USER_INPUT (user_input.json)."""
        base = self.settings.gemini_dir or "~/.gemini"
        config: dict[str, Any] = {
            "conversational": {"agenticMode": False},
            "customizationConfig": {
                "customizationDiscoveryConfig": {
                    "skills": {
                        "inheritUser": True,
                        "skillsPaths": [{"absolute": f"{base}/antigravity-cli/skills"}],
                    }
                },
                "enableJsonHooks": True,
                "workspacePaths": {},
            },
            "toolConfig": {
                "runCommand": {
                    "autoCommandConfig": {
                        "autoExecutionPolicy": "CASCADE_COMMANDS_AUTO_EXECUTION_OFF"
                    },
                    "enableTerminalSandbox": False,
                },
                "notifyUser": {"artifactReviewMode": "ARTIFACT_REVIEW_MODE_ALWAYS"},
                "permissionConfig": {
                    "enterpriseConfig": {"enforceWorkspaceValidation": True},
                    "effectiveGrants": {},
                },
            },
            "useAiCredits": False,
        }
        config.update(copy.deepcopy(requested))
        return config

    def deliver(self, cascade: Cascade, message: QueuedMessage) -> None:
        """Start a turn, or queue the message while one runs (deliveryStrategy, §3)."""
        if cascade.running:
            if message.strategy == NEXT_INVOCATION:
                cascade.steering.append(message)
            else:  # WHEN_IDLE, and agy's TUI behaviour when none is given
                cascade.queue.append(message)
            return
        self._start_turn(cascade, message)

    def turn_of(self, cascade: Cascade) -> ScriptedRun | None:
        return self._rt.turns.get(cascade.cascade_id)

    async def stop(self, cascade: Cascade) -> bool:
        """Cancel the cascade's running turn; True when one was running."""
        cascade.queue.clear()
        cascade.steering.clear()
        task = cascade.task
        if task is None or task.done():
            return False
        task.cancel()
        await asyncio.wait([task])
        return True

    # -- turns --------------------------------------------------------------------------
    def _start_turn(
        self,
        cascade: Cascade,
        message: QueuedMessage,
        *,
        script: Script | None = None,
        source: str = sf.SRC_USER_EXPLICIT,
    ) -> None:
        cascade.set_run_status(RUNNING, self.now())
        cascade.task = asyncio.get_running_loop().create_task(
            self._run_turn(cascade, message, script, source),
            name=f"agy-sim turn {cascade.cascade_id}",
        )

    def _turn_env(self) -> TurnEnv:
        s = self.settings
        return TurnEnv(
            now=self.now,
            new_uuid=self._ids.uuid,
            new_short_id=self._ids.short,
            emit=self.emit,
            spawn_subagent=self._spawn_subagent,
            workspace=self.workspace,
            knobs=s.knobs,
            token_interval=s.token_interval,
            waiting_timeout=s.waiting_timeout,
            waiting_retries=s.waiting_retries,
            session_id=self._session_id,
            mcp=self.mcp,
            rules=self.rules,
            hooks=self.hooks,
        )

    async def _run_turn(
        self, cascade: Cascade, message: QueuedMessage, script: Script | None, source: str
    ) -> None:
        config = message.planner_config
        plan_model = config.get("planModel") or (config.get("requestedModel") or {}).get("model")
        model = self.catalog.by_enum(plan_model) if plan_model else None
        cascade.plan_models.append(plan_model or "")
        cascade.turns_started += 1
        text = "\n".join(str(i.get("text", "")) for i in message.items)
        turn = ScriptedRun(
            self._turn_env(),
            cascade,
            text=text,
            model=model or _UNSPECIFIED_MODEL,
            execution_id=self._ids.uuid(),
        )
        self._rt.turns[cascade.cascade_id] = turn
        try:
            turn.add_user_input(message.items, config, source)
            turn.add_system_step("CORTEX_STEP_TYPE_CONVERSATION_HISTORY", "conversationHistory", {})
            if model is None:
                # agy accepts the call and then fails the turn (docs/wire.md §3).
                await turn.model_error(NO_MODEL_ERROR, NO_MODEL_ERROR)
                return
            if self.quota is not None:  # a model whose quota is used up (quota.py)
                if QUOTA_TRIGGER.search(text):
                    self.quota.use_up(model)
                if refused := self.quota.refusal(model):
                    await turn.model_error(
                        refused.user_message,
                        refused.short_error,
                        full_error=refused.full_error,
                        error_code=refused.error_code,
                    )
                    return
            script = script or self.choose_script(split_carried(text)[1])
            await around_invocation(self.hooks, script, turn)
            answered = 0
            while True:  # NEXT_INVOCATION messages that arrived late still get an answer
                turn.drain_steering()
                if answered == len(turn.steered):
                    break
                for steer in turn.steered[answered:]:
                    await turn.say(f"Noted your follow-up: {steer}")
                    answered += 1
            if cascade.turns_started == 1 and not cascade.parent_id:
                turn.add_checkpoint(CHECKPOINT_MODEL_ENUM, [text])
        except TurnAbortedError:
            pass
        except asyncio.CancelledError:
            turn.stop_active()
            raise
        finally:
            self._finish_turn(cascade)

    def _finish_turn(self, cascade: Cascade) -> None:
        cascade.task = None
        cascade.set_run_status(IDLE, self.now())
        self._save(cascade)
        self.emit(TranscriptEvent(cascade.cascade_id, "status", "idle"))
        if cascade.queue and not self._rt.closed:
            self._start_turn(cascade, cascade.queue.pop(0))

    async def _spawn_subagent(
        self, parent: Cascade, task: str, model: CatalogModel, started: StartedChild, ask: bool
    ) -> str:
        child = self.new_cascade(parent=parent)
        # agy 1.5.15+: a delegated task runs as a turn's text would, gates in the child (§7).
        worker = choose(task)[1] if ask and self.settings.subagents_ask else subagent_worker
        started(child.cascade_id)
        config = self.planner_config({"planModel": model.model})
        message = QueuedMessage([{"text": task}], config, "")
        self._start_turn(child, message, script=worker, source=sf.SRC_SYSTEM)
        assert child.task is not None
        try:
            # Shielded: cancelling the parent (CancelCascadeSteps) leaves the child running;
            # ForceStopCascadeTree stops both.
            await asyncio.shield(child.task)
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise
            return "the sub-agent was stopped before it finished."
        for step in reversed(child.steps):
            response = step.get("plannerResponse", {}).get("response")
            if response:
                return str(response)
        return "the sub-agent finished without a report."
