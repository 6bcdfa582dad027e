"""The connect method handlers of the simulated language server (docs/wire.md §3, §4, §6).

``RpcHandlers(engine)`` answers the connect methods from one engine's cascades: ``unary()``
and ``streams()`` are what ``connect_app.ConnectApp`` serves. Methods agy does not have
(GetCascadeId, ListCascadeIds, GetCascadeStatus) are simply not registered, so the server
answers 404 as agy does.

Each handler takes the decoded protojson request and returns the response dict (unary) or
yields update messages (streams). Failures raise ``ConnectHandlerError`` with the status and
message real agy answers with where it is known ("trajectory not found", "input not
registered for step N": both HTTP 500, connect code ``unknown`` as a Go handler's plain error
is).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any, Final

from agy_sim import steps_factory as sf
from agy_sim.cascade import IDLE, Cascade, GateRejectedError, QueuedMessage
from agy_sim.connect_app import ConnectHandlerError, StreamHandler, UnaryHandler
from agy_sim.engine import SimEngine
from agy_sim.frame_log import FrameLog
from agy_sim.generator_metadata import generator_metadata

STRATEGIES: Final = frozenset(
    {
        "MESSAGE_DELIVERY_STRATEGY_UNSPECIFIED",
        "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION",
        "MESSAGE_DELIVERY_STRATEGY_WHEN_IDLE",
    }
)


def _invalid(message: str) -> ConnectHandlerError:
    return ConnectHandlerError("invalid_argument", message, 400)


def _not_registered(index: int) -> ConnectHandlerError:
    return ConnectHandlerError("unknown", f"input not registered for step {index}", 500)


def _int(value: Any, name: str) -> int:
    """uint32 fields may arrive as numbers or strings (protojson accepts both)."""
    try:
        number = int(value or 0)
    except (TypeError, ValueError):
        raise _invalid(f"{name} must be an integer") from None
    if number < 0:
        raise _invalid(f"{name} must not be negative")
    return number


class RpcHandlers:
    """Binds the method names to one engine's state."""

    def __init__(self, engine: SimEngine) -> None:
        self._engine = engine
        self._frame_log = FrameLog(engine.settings.frame_log)

    def unary(self) -> dict[str, UnaryHandler]:
        handlers: dict[str, UnaryHandler] = {
            "Heartbeat": self.heartbeat,
            "GetConversationMetadata": self.get_conversation_metadata,
            "GetAllCascadeTrajectories": self.get_all_cascade_trajectories,
            "StartCascade": self.start_cascade,
            "SendUserCascadeMessage": self.send_user_cascade_message,
            "SendAgentMessage": self.send_agent_message,
            "GetCascadeTrajectorySteps": self.get_cascade_trajectory_steps,
            "HandleCascadeUserInteraction": self.handle_cascade_user_interaction,
            "CancelCascadeSteps": self.cancel_cascade_steps,
            "ForceStopCascadeTree": self.force_stop_cascade_tree,
            "GetAvailableModels": self.get_available_models,
            "GetCascadeTrajectoryGeneratorMetadata": self.get_generator_metadata,
        }
        if self._engine.settings.debug_rpc:
            handlers["SimulatorSnapshot"] = self.simulator_snapshot
        return handlers

    def streams(self) -> dict[str, StreamHandler]:
        return {
            "StreamAgentStateUpdates": self.stream_agent_state_updates,
            "StreamCascadeReactiveUpdates": self.stream_cascade_reactive_updates,
        }

    def _cascade(self, request: dict[str, Any], key: str = "cascadeId") -> Cascade:
        cascade = self._engine.cascades.get(str(request.get(key) or ""))
        if cascade is None:
            raise ConnectHandlerError("unknown", "trajectory not found", 500)
        return cascade

    # -- unary --------------------------------------------------------------------------
    async def heartbeat(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"lastExtensionHeartbeat": self._engine.now()}

    async def get_conversation_metadata(self, request: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": self._cascade(request, "conversationId").metadata()}

    async def get_all_cascade_trajectories(self, request: dict[str, Any]) -> dict[str, Any]:
        exclude = bool(request.get("excludeSubtrajectories"))
        summaries = {
            cid: cascade.summary()
            for cid, cascade in self._engine.cascades.items()
            if not (exclude and cascade.parent_id)
        }
        return {"trajectorySummaries": summaries} if summaries else {}

    async def start_cascade(self, request: dict[str, Any]) -> dict[str, Any]:
        wanted = str(request.get("cascadeId") or "")
        existing = self._engine.cascades.get(wanted)
        cascade = existing or self._engine.new_cascade(cascade_id=wanted)
        return {"cascadeId": cascade.cascade_id}

    async def send_user_cascade_message(self, request: dict[str, Any]) -> dict[str, Any]:
        cascade = self._cascade(request)
        items = request.get("items")
        if not isinstance(items, list) or not items or not all(isinstance(i, dict) for i in items):
            # Text goes in items[].text, not a flat field (docs/wire.md §3).
            raise _invalid("items must be a non-empty list of {text} objects")
        config = ((request.get("cascadeConfig") or {}).get("plannerConfig")) or {}
        if not isinstance(config, dict):
            raise _invalid("cascadeConfig.plannerConfig must be an object")
        plan_model = config.get("planModel") or (config.get("requestedModel") or {}).get("model")
        if plan_model and self._engine.catalog.by_enum(str(plan_model)) is None:
            # An enum name protojson does not know is rejected when the request is parsed.
            raise _invalid(f'invalid value for enum field planModel: "{plan_model}"')
        strategy = str(request.get("deliveryStrategy") or "")
        if strategy and strategy not in STRATEGIES:
            raise _invalid(f'invalid value for enum field deliveryStrategy: "{strategy}"')
        message = QueuedMessage(copy.deepcopy(items), self._engine.planner_config(config), strategy)
        self._engine.deliver(cascade, message)
        return {}

    async def send_agent_message(self, request: dict[str, Any]) -> dict[str, Any]:
        # Not for user turns: agy records the text as a SYSTEM_MESSAGE and runs nothing (§3).
        cascade = self._cascade(request)
        raw_items = request.get("items")
        items: list[Any] = raw_items if isinstance(raw_items, list) else []
        text = str(request.get("message") or request.get("text") or "") or "\n".join(
            str(i.get("text", "")) for i in items if isinstance(i, dict)
        )
        ident = sf.StepIdentity(
            cascade.trajectory_id, cascade.cascade_id, len(cascade.steps), self._engine.new_id()
        )
        ts = self._engine.now()
        step = sf.system_step(
            ident,
            ts,
            step_type="CORTEX_STEP_TYPE_SYSTEM_MESSAGE",
            payload_key="systemMessage",
            payload={"message": text},
        )
        cascade.append(step, ts)
        return {}

    async def get_cascade_trajectory_steps(self, request: dict[str, Any]) -> dict[str, Any]:
        cascade = self._cascade(request)
        offset = _int(request.get("stepOffset"), "stepOffset")
        steps = copy.deepcopy(cascade.steps[offset:])
        return {"steps": steps} if steps else {}

    async def handle_cascade_user_interaction(self, request: dict[str, Any]) -> dict[str, Any]:
        cascade = self._cascade(request)
        interaction = request.get("interaction")
        if not isinstance(interaction, dict):
            raise _not_registered(0)
        # trajectoryId and stepIndex count only inside `interaction` (docs/wire.md §3, §6).
        index = _int(interaction.get("stepIndex"), "interaction.stepIndex")
        gate = cascade.gates.get(index)
        if (
            interaction.get("trajectoryId") != cascade.trajectory_id
            or gate is None
            or cascade.steps[index]["status"] != sf.S_WAITING
            or gate.kind not in interaction
        ):
            raise _not_registered(index)
        try:
            gate.accept(interaction)
        except GateRejectedError as exc:
            if exc.not_registered:
                raise _not_registered(index) from exc
            raise _invalid(str(exc)) from exc
        return {}

    async def cancel_cascade_steps(self, request: dict[str, Any]) -> dict[str, Any]:
        cascade = self._cascade(request)
        record: dict[str, Any] = {"stepIndices": list(request.get("stepIndices") or [])}
        cascade.cancel_requests.append(record)
        if cascade.waiting_indices():
            # A no-op on a step WAITING for an interaction: 200, nothing changes (§3).
            record["effect"] = "ignored: waiting for an interaction"
            return {}
        stopped = await self._engine.stop(cascade)
        record["effect"] = "stopped" if stopped else "nothing running"
        return {}

    async def force_stop_cascade_tree(self, request: dict[str, Any]) -> dict[str, Any]:
        root = self._cascade(request, "conversationId")
        tree, frontier = [root], [root.cascade_id]
        while frontier:
            parent = frontier.pop()
            children = [c for c in self._engine.cascades.values() if c.parent_id == parent]
            tree.extend(children)
            frontier.extend(c.cascade_id for c in children)
        stopped = []
        for cascade in tree:  # parents first: a parent waiting on its child ends as stopped
            cascade.cancel_requests.append({"forceStopTree": root.cascade_id})
            if await self._engine.stop(cascade):
                stopped.append(cascade.cascade_id)
        return {"stoppedConversationIds": stopped} if stopped else {}

    async def get_available_models(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._engine.catalog.to_wire()

    async def get_generator_metadata(self, request: dict[str, Any]) -> dict[str, Any]:
        return generator_metadata(self._cascade(request))

    async def simulator_snapshot(self, request: dict[str, Any]) -> dict[str, Any]:
        return self._engine.snapshot()

    # -- streams ------------------------------------------------------------------------
    def _frame(self, cascade: Cascade, indices: list[int]) -> dict[str, Any]:
        steps_update: dict[str, Any] = {}
        if indices:
            steps_update["indices"] = indices
            steps_update["steps"] = [sf.stream_shape(cascade.steps[i]) for i in indices]
        if cascade.steps:
            steps_update["totalLength"] = len(cascade.steps)
        main: dict[str, Any] = {"stepsUpdate": steps_update}
        waiting = [
            {"step": sf.stream_shape(cascade.steps[i]), **({"stepIndex": i} if i else {})}
            for i in cascade.waiting_indices()
        ]
        if waiting:
            main["waitingSteps"] = waiting
        update: dict[str, Any] = {"conversationId": cascade.cascade_id, "status": cascade.status}
        if cascade.status == IDLE:
            update["fullyIdle"] = True
        update["mainTrajectoryUpdate"] = main
        return {"update": update}

    async def stream_agent_state_updates(
        self, request: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        cascade = self._cascade(request, "conversationId")
        position, changed = cascade.log_position, cascade.change_event
        bounds = request.get("initialStepsPageBounds") or {}
        total = len(cascade.steps)
        start = min(_int(bounds.get("startIndex"), "startIndex"), total)
        end = _int(bounds.get("endIndexExclusive"), "endIndexExclusive") or total
        # First frame: a snapshot of the prior steps, within the page bounds if asked (§4).
        yield self._sent(self._frame(cascade, list(range(start, max(start, min(end, total))))))
        while not self._engine.closed:
            await changed.wait()
            changed = cascade.change_event
            indices, status_flipped = cascade.changed_since(position)
            position = cascade.log_position
            if indices or status_flipped:
                # Sparse and cumulative: each changed step is re-sent whole. Nothing is sent
                # while the cascade is parked on a WAITING step, since nothing changes (§4).
                yield self._sent(self._frame(cascade, indices))

    def _sent(self, frame: dict[str, Any]) -> dict[str, Any]:
        self._frame_log.sent(frame)
        return frame

    async def stream_cascade_reactive_updates(
        self, request: dict[str, Any]
    ) -> AsyncIterator[dict[str, Any]]:
        # Deprecated in agy: the stream ends at once with this error (docs/wire.md §3).
        no_frames: tuple[dict[str, Any], ...] = ()
        for message in no_frames:  # the loop only makes this an async generator
            yield message
        raise ConnectHandlerError("unknown", "reactive state is deprecated", 500)
