"""A session core without processes: an `AgyBinding` whose agy, reader and client are fakes.

`FakeAgy` plays agy's side of the calls a turn makes (the listing, the send, the cancel); a
`script` given to it runs when a message arrives and publishes what "agy" does into the
session's sink, as the reader thread would. Nothing here starts a process or talks to tmux.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from omnigent_agy.errors import Code, RpcError
from omnigent_agy.models.catalog import ModelCatalog
from omnigent_agy.reading.events import AssistantMessage, TurnBoundary, UsageReported
from omnigent_agy.reading.reader import ConversationRotated, ReaderEvent, TurnEnded
from omnigent_agy.reading.sink import EventSink
from omnigent_agy.reading.steps import ModelUsage, StepKey
from omnigent_agy.rpc.endpoint import AgyEndpoint
from omnigent_agy.rpc.whereabouts import Whereabouts
from omnigent_agy.session.binding import AgyBinding, SessionSettings

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CATALOG = ModelCatalog.from_response(
    json.loads((FIXTURES / "catalog" / "get_available_models.json").read_text())
)
CASCADE = "cascade-1"


def key(index: int, cascade: str = CASCADE) -> StepKey:
    return StepKey(cascade, "traj-1", index)


class FakeTerminal:
    def __init__(self) -> None:
        self.alive = True

    def is_alive(self) -> bool:
        return self.alive


@dataclass
class FakeProcess:
    """What the session reads of an `AgyProcess`: its port and cascade come from the
    binding's real `Whereabouts`; `bound` is what its record was told (each bind)."""

    pid: int = 4242
    recorded_cascade: str | None = CASCADE
    recorded_follows_tui: bool = False
    resumed_after: str | None = None
    csrf_token: str = "token-never-shown"
    terminal: FakeTerminal = field(default_factory=FakeTerminal)
    bound: list[tuple[str, bool]] = field(default_factory=list)
    whereabouts: Whereabouts | None = None

    @property
    def cascade_id(self) -> str | None:
        where = self.whereabouts
        return self.recorded_cascade if where is None else where.cascade_id

    @property
    def follows_tui(self) -> bool:
        where = self.whereabouts
        return self.recorded_follows_tui if where is None else where.follows_tui

    def follow(self, whereabouts: Whereabouts) -> None:
        whereabouts.on_bind(lambda cascade, tui: self.bound.append((cascade, tui)))
        self.whereabouts = whereabouts


type Script = Callable[["FakeAgy", str], None]


class FakeAgy:
    """agy's side of the session's calls (the `RpcClient` methods a turn uses)."""

    def __init__(self, sink: EventSink[Any]) -> None:
        self.sink = sink
        self.whereabouts: Whereabouts | None = None
        """The session's, once bound: `clear` rotates it as the reader does."""
        self.step_count = 3
        self.sent: list[dict[str, Any]] = []
        self.cancelled: list[str] = []
        self.steps: list[dict[str, Any]] = []
        self.script: Script | None = None
        self.send_errors: list[RpcError] = []
        """Raised by the next sends, in order (after `arrives` decided whether it got there)."""
        self.arrives = True
        self.children: dict[str, list[dict[str, Any]]] = {}
        """The steps of sub-agents' child cascades, by cascade id."""
        self.listed = asyncio.Event()
        """Set once the cascades were listed."""
        self.context_estimate: int | None = None
        """What GetCascadeTrajectoryGeneratorMetadata says of the context in use; None: agy
        does not have the method."""

    # --- RpcClient ------------------------------------------------------------------------
    async def get_all_cascade_trajectories(self) -> dict[str, Any]:
        self.listed.set()
        return {"trajectorySummaries": {CASCADE: {"stepCount": self.step_count}}}

    async def send_user_cascade_message(
        self,
        cascade_id: str,
        text: str,
        *,
        plan_model: str | None = None,
        delivery_strategy: str | None = None,
    ) -> dict[str, Any]:
        self.sent.append(
            {
                "cascade": cascade_id,
                "text": text,
                "model": plan_model,
                "strategy": delivery_strategy,
            }
        )
        if self.send_errors:
            error = self.send_errors.pop(0)
            if self.arrives:
                user_input = {"userResponse": text}
                self.steps.append({"type": "CORTEX_STEP_TYPE_USER_INPUT", "userInput": user_input})
                if self.script is not None:
                    self.script(self, text)
            raise error
        if delivery_strategy is None and self.script is not None:
            self.script(self, text)
        return {}

    async def get_cascade_trajectory_steps(
        self, cascade_id: str, *, step_offset: int = 0
    ) -> list[dict[str, Any]]:
        del step_offset
        return list(self.children.get(cascade_id, self.steps))

    async def cancel_cascade_steps(self, cascade_id: str) -> dict[str, Any]:
        self.cancelled.append(cascade_id)
        return {}

    async def get_generator_metadata(self, cascade_id: str) -> dict[str, Any]:
        del cascade_id
        if self.context_estimate is None:
            raise RpcError(Code.UNIMPLEMENTED, "404 page not found", http_status=404)
        window = {"contextWindowMetadata": {"estimatedTokensUsed": self.context_estimate}}
        return {"generatorMetadata": [{"chatModel": {"chatStartMetadata": window}}]}

    # --- what agy does --------------------------------------------------------------------
    def publish(self, *events: ReaderEvent) -> None:
        for event in events:
            self.sink.publish(event)

    def clear(self, new: str) -> None:
        """A `/clear` typed in agy's screen, as the reader follows it: the whereabouts
        rotated, then `ConversationRotated` published."""
        assert self.whereabouts is not None
        old = self.whereabouts.cascade_id
        assert old is not None
        self.whereabouts.rotate(old, new)
        self.publish(ConversationRotated(old, new))

    def answer(self, text: str, *, start: int = 3, usage: ModelUsage | None = None) -> None:
        """A whole turn: the user input, the answer, its usage, agy idle."""
        usage = usage or ModelUsage(input_tokens=10, output_tokens=5)
        self.publish(
            TurnBoundary(key(start), text),
            AssistantMessage(key(start + 1), f"answer to {text}", "DONE"),
            UsageReported(key(start + 1), usage),
            TurnEnded(CASCADE, key(start), usage),
        )


class FakeClient:
    """`FollowingClient.run` on the fake agy."""

    def __init__(self, agy: FakeAgy) -> None:
        self.agy = agy
        self.resend_safe: list[bool] = []

    async def run(self, call: Callable[[Any], Any], *, resend_safe: bool = True) -> Any:
        self.resend_safe.append(resend_safe)
        return await call(self.agy)

    async def aclose(self) -> None:
        return None


class FakeBinding(AgyBinding):
    """The real state folder, home and workspace gate; a fake agy, reader and client."""

    def __init__(
        self, settings: SessionSettings, *, sink: EventSink[ReaderEvent], **kw: Any
    ) -> None:
        super().__init__(settings, sink=sink, **kw)
        self.fake = FakeAgy(sink)
        self.client = FakeClient(self.fake)
        self.process: FakeProcess | None = None
        self.next_process = FakeProcess()
        self.reader_alive = True
        self.started = 0
        self.clear_checks = 0
        self.clear_waits_for_listing = False
        self.closed: list[bool | None] = []

    @property
    def agy(self) -> Any:
        return self.process

    @property
    def known_catalog(self) -> ModelCatalog | None:
        return CATALOG if self.process is not None else None

    async def ensure_started(self) -> Any:
        self.started += 1
        if self.process is None:
            process = self.process = self.next_process
            endpoint = AgyEndpoint(port=1, csrf_token=process.csrf_token)
            where = Whereabouts(
                endpoint, cascade_id=process.cascade_id, follows_tui=process.follows_tui
            )
            process.follow(where)
            self._whereabouts = self.fake.whereabouts = where
        return self.process

    async def rpc(self) -> Any:
        return self.client

    async def catalog(self) -> ModelCatalog:
        return CATALOG

    async def follow_clear(self) -> None:
        self.clear_checks += 1
        if self.clear_waits_for_listing:
            # The reader's look takes as long as the listing: it ends only once that was asked.
            await asyncio.wait_for(self.fake.listed.wait(), 10)

    def reader_ok(self) -> bool:
        return self.reader_alive

    async def close(self, *, stop_agy: bool | None = None) -> None:
        self.closed.append(stop_agy)
        self.process = None
