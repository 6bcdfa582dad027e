"""agy-sim's errors; none of them is the plugin's (``omnigent_agy``'s tree is its own)::

    SimError                 root of every error agy-sim raises
    ├── FaultConfigError     (faults) a fault rule, spec or control file that cannot be used
    └── ServerError          (server) the TLS server could not bind, start, serve or stop

A handler fails one RPC with ``connect_app.ConnectHandlerError`` instead: that is an answer
on the wire, not a failure of agy-sim.
"""

from __future__ import annotations

__all__ = ["ServerError", "SimError"]


class SimError(Exception):
    """Root of every error agy-sim raises."""


class ServerError(SimError):
    """The TLS server could not bind, start, serve or stop; the message says which."""
