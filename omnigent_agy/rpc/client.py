"""RpcClient: the typed methods of agy's language server (docs/wire.md §3).

Each method builds its request body the way agy reads it and checks the shape of the answer;
the transport (one persistent TLS HTTP/2 connection, one owner loop, error translation,
streams, retries of idempotent reads) is `connection.RpcConnection`'s.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, Mapping
from typing import Any, Final

from omnigent_agy.errors import ProtocolError
from omnigent_agy.rpc.connection import SERVICE, RpcConnection
from omnigent_agy.rpc.retry import (
    DEFAULT_RETRY,
    IDEMPOTENT_METHODS,
    TRANSIENT_CODES,
    RetryPolicy,
    is_transient,
)

__all__ = [
    "DEFAULT_RETRY",
    "IDEMPOTENT_METHODS",
    "SERVICE",
    "STEPS_PATH",
    "TRANSIENT_CODES",
    "RetryPolicy",
    "RpcClient",
    "is_transient",
]


# Where a StreamAgentStateUpdates message holds its steps (docs/wire.md §3-§4).
STEPS_PATH: Final = ("update", "mainTrajectoryUpdate", "stepsUpdate", "steps")


class RpcClient(RpcConnection):
    """Async client for one agy's language server. Use ``async with`` or ``aclose()``."""

    async def heartbeat(self) -> dict[str, Any]:
        return await self.call("Heartbeat", {}, idempotent=True)

    async def get_conversation_metadata(self, conversation_id: str) -> dict[str, Any]:
        return await self.call(
            "GetConversationMetadata", {"conversationId": conversation_id}, idempotent=True
        )

    async def get_all_cascade_trajectories(
        self, *, exclude_subtrajectories: bool = False
    ) -> dict[str, Any]:
        body = {"excludeSubtrajectories": True} if exclude_subtrajectories else {}
        return await self.call("GetAllCascadeTrajectories", body, idempotent=True)

    async def start_cascade(
        self, *, source: str = "CORTEX_TRAJECTORY_SOURCE_CLI", cascade_id: str | None = None
    ) -> str:
        """A new cascade's id. Not retried: a lost answer would leave a second cascade."""
        body: dict[str, Any] = {"source": source}
        if cascade_id is not None:
            body["cascadeId"] = cascade_id
        result = await self.call("StartCascade", body)
        cascade = result.get("cascadeId")
        if not isinstance(cascade, str) or not cascade:
            raise ProtocolError("StartCascade answered without a cascadeId", method="StartCascade")
        return cascade

    async def send_user_cascade_message(
        self,
        cascade_id: str,
        text: str,
        *,
        plan_model: str,
        delivery_strategy: str | None = None,
    ) -> dict[str, Any]:
        """Post a user turn. The text goes in ``items[].text`` and the model is required per
        turn (docs/wire.md §3). Never retried: a retry after a lost answer would post it twice."""
        body: dict[str, Any] = {
            "cascadeId": cascade_id,
            "items": [{"text": text}],
            "cascadeConfig": {"plannerConfig": {"planModel": plan_model}},
        }
        if delivery_strategy is not None:
            body["deliveryStrategy"] = delivery_strategy
        return await self.call("SendUserCascadeMessage", body)

    async def get_cascade_trajectory_steps(
        self, cascade_id: str, *, step_offset: int = 0
    ) -> list[dict[str, Any]]:
        """Steps from ``step_offset`` on (absolute index = offset + position, docs/wire.md §3)."""
        body: dict[str, Any] = {"cascadeId": cascade_id}
        if step_offset:  # protojson omits zero values
            body["stepOffset"] = step_offset
        result = await self.call("GetCascadeTrajectorySteps", body, idempotent=True)
        steps = result.get("steps", [])
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise ProtocolError(
                "GetCascadeTrajectorySteps: steps is not a list of objects",
                method="GetCascadeTrajectorySteps",
            )
        return steps

    async def stream_agent_state_updates(
        self,
        conversation_id: str,
        *,
        start_index: int | None = None,
        end_index_exclusive: int | None = None,
        subscriber_id: str | None = None,
        idle_timeout: float = 30.0,
    ) -> AsyncGenerator[dict[str, Any]]:
        """Each ``{"update": {...}}`` message agy streams for the conversation (docs/wire.md §4).

        ``start_index``/``end_index_exclusive`` ask agy to replay from a cursor
        (``initialStepsPageBounds``); agy may ignore them and replay everything.
        Close the iterator (``contextlib.aclosing``) to end the stream early. In a large
        frame (a snapshot of many steps) ``steps`` is a `lazyjson.LazyArray`: each step is
        decoded as it is read, so the snapshot is never one tree in memory.
        """
        body: dict[str, Any] = {"conversationId": conversation_id}
        if subscriber_id is not None:
            body["subscriberId"] = subscriber_id
        bounds: dict[str, int] = {}
        if start_index is not None:
            bounds["startIndex"] = start_index
        if end_index_exclusive is not None:
            bounds["endIndexExclusive"] = end_index_exclusive
        if bounds:
            body["initialStepsPageBounds"] = bounds
        async with contextlib.aclosing(
            self.stream(
                "StreamAgentStateUpdates", body, idle_timeout=idle_timeout, lazy_array=STEPS_PATH
            )
        ) as updates:
            async for update in updates:
                yield update
                del update  # not kept while the next frame is awaited (see RpcConnection.stream)

    async def handle_cascade_user_interaction(
        self,
        cascade_id: str,
        *,
        trajectory_id: str,
        step_index: int,
        permission: Mapping[str, Any] | None = None,
        ask_question: Mapping[str, Any] | None = None,
        elicitation: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Answer a WAITING step. ``trajectoryId``/``stepIndex`` go INSIDE ``interaction``:
        agy silently drops them at the top level (docs/wire.md §3/§6). Never retried: agy may
        have re-opened the gate at a higher step index meanwhile."""
        payloads = {
            "permission": permission,
            "askQuestion": ask_question,
            "elicitation": elicitation,
        }
        given = {key: dict(value) for key, value in payloads.items() if value is not None}
        if len(given) != 1:
            raise ValueError(
                "give exactly one of permission, ask_question, elicitation "
                f"(got {len(given) or 'none'})"
            )
        interaction: dict[str, Any] = {"trajectoryId": trajectory_id, "stepIndex": step_index}
        interaction.update(given)
        return await self.call(
            "HandleCascadeUserInteraction", {"cascadeId": cascade_id, "interaction": interaction}
        )

    async def cancel_cascade_steps(
        self, cascade_id: str, step_indices: list[int] | None = None
    ) -> dict[str, Any]:
        """Stop a running cascade. A no-op on a step WAITING for an interaction
        (docs/wire.md §3)."""
        body: dict[str, Any] = {"cascadeId": cascade_id}
        if step_indices is not None:
            body["stepIndices"] = list(step_indices)
        return await self.call("CancelCascadeSteps", body)

    async def force_stop_cascade_tree(self, conversation_id: str) -> list[str]:
        """Stop a conversation and its sub-agents; the ids agy stopped."""
        result = await self.call("ForceStopCascadeTree", {"conversationId": conversation_id})
        stopped = result.get("stoppedConversationIds", [])
        if not isinstance(stopped, list):
            raise ProtocolError(
                "ForceStopCascadeTree: stoppedConversationIds is not a list",
                method="ForceStopCascadeTree",
            )
        return [str(item) for item in stopped]

    async def get_available_models(self) -> dict[str, Any]:
        return await self.call("GetAvailableModels", {}, idempotent=True)

    async def get_generator_metadata(self, cascade_id: str) -> dict[str, Any]:
        """One entry per model call of the conversation, with agy's running estimate of the
        context in use (docs/wire.md §3, §9; read with `reading.context`)."""
        return await self.call(
            "GetCascadeTrajectoryGeneratorMetadata", {"cascadeId": cascade_id}, idempotent=True
        )

    async def retrieve_user_quota_summary(self) -> dict[str, Any]:
        """The account's quota per model group (docs/wire.md §9; read with `models.quota`)."""
        return await self.call("RetrieveUserQuotaSummary", {}, idempotent=True)

    async def get_user_status(self) -> dict[str, Any]:
        """The account and its plan (docs/wire.md §9; read with `models.quota`)."""
        return await self.call("GetUserStatus", {}, idempotent=True)
