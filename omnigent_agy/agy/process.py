"""A running agy as the session sees it: where it listens, its tmux session, its conversation.

`AgyProcess` is what a launch or a re-attach (``launcher``) hands back; its cascade id is kept
with the conversation's record, so a respawned harness binds the same conversation.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from pathlib import Path

from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir, state_key
from omnigent_agy.agy.terminal import AgyTerminal
from omnigent_agy.agy.workspace import remove_link
from omnigent_agy.errors import LaunchError
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.pinning import Pin
from omnigent_agy.rpc.whereabouts import Whereabouts

__all__ = ["AgyProcess", "LaunchError", "session_name"]


@dataclass(slots=True)
class AgyProcess:
    """A running agy: where it listens and how to talk to it. ``repr`` hides the token.

    Once a session follows it (`follow`), its port and bound cascade are read from the
    session's `Whereabouts`, their one owner, and its record follows every change there.
    """

    pid: int
    found_port: int
    """Where the launch or re-attach found agy listening; `port` is where it listens now."""
    csrf_token: str = field(repr=False)
    log_file: Path
    terminal: AgyTerminal
    state_dir: SessionStateDir
    recorded_cascade: str | None = None
    """The cascade the record names (or `bind_cascade` wrote) before a session follows it."""
    recorded_follows_tui: bool = False
    resumed_after: str | None = None
    """Set when this agy was started again on a conversation an earlier agy had: why that
    one ended (the stop reason in its record, or that it was gone)."""
    pin: Pin | None = field(default=None, repr=False)
    """The port with the certificate the launch or re-attach found agy serving there just
    now, handed to the session's endpoint once (`take_pin`) so that it is not fetched and
    checked a second time on the way to the first answer."""
    whereabouts: Whereabouts | None = field(default=None, repr=False)

    @property
    def port(self) -> int:
        """The port agy listens on now."""
        where = self.whereabouts
        return self.found_port if where is None else where.port

    @property
    def cascade_id(self) -> str | None:
        """The cascade the conversation is bound to now."""
        where = self.whereabouts
        return self.recorded_cascade if where is None else where.cascade_id

    @property
    def follows_tui(self) -> bool:
        """Whether the bound cascade is the one agy's TUI shows (a `/clear` there moves it)."""
        where = self.whereabouts
        return self.recorded_follows_tui if where is None else where.follows_tui

    def take_pin(self) -> Pin | None:
        """The launch's pin of agy's current port, once; None after that or once agy moved."""
        pin, self.pin = self.pin, None
        return pin if pin is not None and pin.port == self.port else None

    def client(self, *, timeout: float = 10.0) -> RpcClient:
        """A new RpcClient for this agy (one per event loop, docs/decisions.md §10)."""
        return RpcClient(port=self.port, csrf_token=self.csrf_token, timeout=timeout)

    def follow(self, whereabouts: Whereabouts) -> None:
        """Take port and cascade from `whereabouts` from now on; the record follows it."""
        whereabouts.on_bind(self._record_cascade)
        whereabouts.on_move(self.record_port)
        self.whereabouts = whereabouts

    def bind_cascade(self, cascade_id: str, *, follows_tui: bool = False) -> None:
        """Bind the conversation to `cascade_id` and keep it with the record
        (docs/decisions.md §4); `follows_tui`: it is the cascade agy's TUI shows (a `/clear`
        there moves it). Through the whereabouts when a session follows this agy."""
        if self.whereabouts is not None:
            self.whereabouts.bind(cascade_id, follows_tui=follows_tui)
        else:
            self._record_cascade(cascade_id, follows_tui)

    def _record_cascade(self, cascade_id: str, follows_tui: bool) -> None:
        def bound(record: AgyRecord) -> AgyRecord:
            if record.pid != self.pid:
                raise LaunchError(f"the agy record in {self.state_dir.path} is not this agy's")
            return record.with_cascade(cascade_id, follows_tui=follows_tui)

        if self.state_dir.update_record(bound) is None:
            raise LaunchError(f"the agy record in {self.state_dir.path} is not this agy's")
        self.recorded_cascade, self.recorded_follows_tui = cascade_id, follows_tui

    def record_port(self, port: int) -> None:
        """agy moved: the record says so, unless it is another agy's or a stopped one's."""
        self.state_dir.update_record(
            lambda record: (
                replace(record, port=port)
                if record.pid == self.pid and record.stopped_at is None
                else record
            )
        )

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop agy and its tmux session, and forget the record."""
        await asyncio.to_thread(self.terminal.stop, timeout=timeout)
        record = self.state_dir.read_record()
        if record is not None and record.pid == self.pid:
            self.state_dir.clear_record()
        remove_link(self.state_dir.path)  # made for this agy; the next launch makes it again


def session_name(conversation_id: str) -> str:
    """The tmux session name of a conversation's agy."""
    return f"agy-{state_key(conversation_id)}"
