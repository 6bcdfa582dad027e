"""`create_app()`: the harness app omnigent's runner serves for one agy-cli conversation."""

from __future__ import annotations

import asyncio
import secrets
from typing import Any

from fastapi import FastAPI
from omnigent.runtime.harnesses._executor_adapter import ExecutorAdapter
from omnigent.server.schemas import (
    ElicitationRequestParams,
    ElicitationResolvedEvent,
    ElicitationResult,
)

from omnigent_agy import HARNESS_LABEL

from .executor import AgyExecutor


class AgyExecutorAdapter(ExecutorAdapter):
    """omnigent's adapter plus one bridge it lacks: a form elicitation with custom params.

    agy's questions need omnigent's `ask_user_question` form (several questions, multi-select,
    write-in), which only `TurnContext.elicit` can show; the stock bridges offer yes/no and
    one-of-N cards. The bridge reads the current turn's context at call time, like the stock
    ones, so a handler captured on one turn never answers into a dead one.

    A card that ends without an answer (Stop cancels `TurnContext.elicit`, or the interaction
    bridge withdraws it) is closed on the server with ``response.elicitation_resolved``
    (reason "unanswered"), the event omnigent's own runner sends for an approval wait that
    ended unanswered: `TurnContext.elicit` itself emits nothing then, so the card would stay
    in the session's ``pending_elicitations`` and on the web page, answerable but dead.

    A turn whose runner goes away under it with no Stop asked is left to agy
    (`AgyExecutor.leave_running_turn`): the runner closes its client (the turn's stream)
    before it stops this process, and a SIGTERM alone has uvicorn cancel the open stream
    after its graceful timeout, racing the app's shutdown, which marks the turn cancelled as
    a Stop does — so both are watched. omnigent's cleanup then interrupts the turn, which
    would refuse the card a person may still answer once the host is back; left, agy keeps
    waiting and the next harness process asks it again (docs/host.md).
    """

    def _on_shutdown_signal(self) -> None:
        self._leave_running_turn()
        super()._on_shutdown_signal()

    async def _teardown_turn(
        self, ctx: Any, run_task: asyncio.Task[None], heartbeat_task: asyncio.Task[None]
    ) -> None:
        if not run_task.done() and not ctx.cancelled.is_set():
            # The turn's stream closed while it ran and nobody asked to stop it.
            self._leave_running_turn()
        await super()._teardown_turn(ctx, run_task, heartbeat_task)

    def _leave_running_turn(self) -> None:
        if isinstance(self._executor, AgyExecutor):
            self._executor.leave_running_turn()

    async def run_turn(self, request: Any, ctx: Any) -> None:
        executor = self._ensure_executor()
        if getattr(executor, "_form_elicitor", None) is None:
            executor._form_elicitor = self._stable_form_elicitor  # type: ignore[attr-defined]
        await super().run_turn(request, ctx)

    async def _stable_form_elicitor(self, params: ElicitationRequestParams) -> ElicitationResult:
        ctx = self._current_ctx
        if ctx is None:
            # No turn to show it in: dismiss, which the bridge delivers as a refusal.
            return ElicitationResult(action="cancel")
        elicitation_id = f"elicit_{secrets.token_hex(16)}"
        answered = False
        try:
            result = await ctx.elicit(elicitation_id, params)
            answered = True
            return result
        finally:
            if not answered:
                ctx.emit(
                    ElicitationResolvedEvent(
                        type="response.elicitation_resolved",
                        elicitation_id=elicitation_id,
                        reason="unanswered",
                    )
                )


def create_app() -> FastAPI:
    """The app; a fresh executor per factory call (omnigent discards one after an error)."""
    app: FastAPI | None = None

    def conversation_id() -> str:
        # The runner sets it on app.state after create_app() returns, before the first turn.
        assert app is not None
        value = getattr(app.state, "conversation_id", None)
        if not isinstance(value, str) or not value:
            raise RuntimeError("the harness app has no conversation id (app.state)")
        return value

    adapter = AgyExecutorAdapter(
        executor_factory=lambda: AgyExecutor(conversation_id=conversation_id),
        harness_label=HARNESS_LABEL,
    )
    app = adapter.build()
    return app
