"""Where the conversation is: agy's port now and the cascade bound to it, with one owner.

Two things move under a running session: agy's language server (a new port, docs/wire.md §1:
the `AgyEndpoint` follows it) and the conversation agy's TUI shows (a `/clear` typed there
starts a new root cascade, docs/wire.md §7). `Whereabouts` owns both for one agy: every part
asks it instead of keeping a copy — the reader (which notices a `/clear` and rotates it), the
interaction bridge (which refuses the waiting gates of the conversation now), the interrupt,
steering, the turn's send — and the agy's record follows through its callbacks (`on_bind`,
`on_move`), so `omnigent-agy ps` and a respawned harness see the port and cascade of now.

Safe from any thread: the reader rotates on its own thread while the turn's loop reads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from omnigent_agy.rpc.endpoint import AgyEndpoint

__all__ = ["BindCallback", "Whereabouts"]

_logger = logging.getLogger(__name__)

BindCallback = Callable[[str, bool], None]
"""Called with the cascade bound now and whether it is the one agy's TUI shows."""


class Whereabouts:
    """agy's endpoint (its port now) and the conversation's bound cascade."""

    def __init__(
        self,
        endpoint: AgyEndpoint,
        *,
        cascade_id: str | None = None,
        follows_tui: bool = False,
    ) -> None:
        # Binds one at a time, each with its callbacks, so the record ends with the last one.
        # Readers take no lock: the pair is one tuple, replaced whole, never half-written.
        self._binding = threading.Lock()
        self.endpoint = endpoint
        self._bound = (cascade_id, follows_tui)
        self._on_bind: list[BindCallback] = []

    def __repr__(self) -> str:
        return f"Whereabouts(port={self.port}, cascade_id={self.cascade_id!r})"

    @property
    def port(self) -> int:
        """The port agy listens on now (the endpoint follows a move)."""
        return self.endpoint.port

    @property
    def cascade_id(self) -> str | None:
        """The cascade the conversation is bound to now; None before the first bind."""
        return self._bound[0]

    @property
    def follows_tui(self) -> bool:
        """Whether the bound cascade is the one agy's TUI shows (a `/clear` there moves it);
        a cascade started over RPC never moves."""
        return self._bound[1]

    def on_bind(self, callback: BindCallback) -> None:
        """Call `callback(cascade_id, follows_tui)` after each bind (on the binding thread)."""
        self._on_bind.append(callback)

    def on_move(self, callback: Callable[[int], None]) -> None:
        """Call `callback(new_port)` after agy moved to a new port."""
        self.endpoint.on_move(callback)

    def bind(self, cascade_id: str, *, follows_tui: bool = False) -> None:
        """Bind the conversation to `cascade_id` (launch, re-attach, a fresh cascade)."""
        with self._binding:
            self._bound = (cascade_id, follows_tui)
            for callback in self._on_bind:
                callback(cascade_id, follows_tui)

    def rotate(self, old: str, new: str) -> bool:
        """A `/clear` in agy's TUI: bind `new` if the conversation is still bound to `old`
        and follows the TUI; False (nothing changed) otherwise."""
        with self._binding:
            if self._bound != (old, True):
                return False
            self._bound = (new, True)
            _logger.info("following agy's TUI to its new conversation after /clear")
            for callback in self._on_bind:
                callback(new, True)
        return True
