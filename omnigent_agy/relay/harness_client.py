"""The MCP server's side of the harness's private socket (``channel``): one request per
connection, one JSON line each way, on plain blocking sockets (the server runs each request on
a thread of its own; standard library only).

It holds no state of its own, so a harness restarted meanwhile is simply found again at the
same path. When no harness listens, listing falls back to the tools of the last turn (kept
0600 beside the socket's state) and a call answers a clear error at once.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from pathlib import Path
from typing import Any, Final

from omnigent_agy.errors import RelayError
from omnigent_agy.relay import MAX_LINE

__all__ = [
    "CANCELLED",
    "CONNECT_TIMEOUT",
    "LIST_TIMEOUT",
    "NO_HARNESS",
    "Abandon",
    "HarnessClient",
]

CONNECT_TIMEOUT: Final = 5.0
#: The harness lists its tools from memory; one that does not answer in this long is treated
#: as gone and the last turn's tools are listed.
LIST_TIMEOUT: Final = 10.0
NO_HARNESS: Final = (
    "omnigent's harness for this conversation is not running, so omnigent's tools cannot "
    "answer now; send the next message from omnigent and try again"
)


CANCELLED: Final = "the call was cancelled"


class Abandon:
    """Lets another thread give up a call in flight (MCP's ``notifications/cancelled``): its
    socket is shut down, so the waiting read ends at once, whichever comes first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.cancelled = False

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.cancelled:
                _shut(sock)

    def detach(self) -> None:
        with self._lock:
            self._sock = None

    def cancel(self) -> None:
        with self._lock:
            self.cancelled = True
            if self._sock is not None:
                _shut(self._sock)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # not connected yet, or closed: the call ends anyway
        sock.shutdown(socket.SHUT_RDWR)


class HarnessClient:
    """One request per connection to the harness's socket."""

    def __init__(self, socket_path: Path, tools_file: Path) -> None:
        self.socket_path = socket_path
        self.tools_file = tools_file

    def request(
        self,
        payload: dict[str, Any],
        *,
        timeout: float | None = None,
        abandon: Abandon | None = None,
    ) -> dict[str, Any]:
        """Send ``payload`` and read the answer. ``timeout`` bounds the answer (None: a tool
        may take long; omnigent's own timeouts and the turn's end bound it, and a harness that
        dies closes the socket)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if abandon is not None:
            abandon.attach(sock)
        try:
            sock.settimeout(CONNECT_TIMEOUT)
            try:
                sock.connect(str(self.socket_path))
            except OSError as exc:
                raise RelayError(NO_HARNESS) from exc
            if abandon is not None and abandon.cancelled:
                # Cancelled before the socket was connected (shutting it down did nothing);
                # a cancel after this line finds it connected and ends the read.
                raise RelayError(CANCELLED)
            sock.settimeout(timeout)
            try:
                sock.sendall(json.dumps(payload).encode() + b"\n")
                with sock.makefile("rb") as answers:
                    line = answers.readline(MAX_LINE + 1)
            except OSError as exc:
                raise RelayError(NO_HARNESS) from exc
        finally:
            if abandon is not None:
                abandon.detach()
            sock.close()
        if abandon is not None and abandon.cancelled:
            raise RelayError(CANCELLED)
        if not line.endswith(b"\n"):
            raise RelayError("omnigent's harness closed the call without an answer")
        try:
            reply = json.loads(line)
        except ValueError as exc:
            raise RelayError("omnigent's harness answered something that is not JSON") from exc
        if not isinstance(reply, dict) or not reply.get("ok"):
            error = reply.get("error") if isinstance(reply, dict) else None
            raise RelayError(str(error or "the call failed"))
        return reply

    def tools(self) -> list[dict[str, Any]]:
        """The harness's tools, else the last turn's (none when that file is unreadable)."""
        try:
            listed = self.request({"op": "list"}, timeout=LIST_TIMEOUT).get("tools")
        except RelayError:
            listed = self._saved_tools()
        return [tool for tool in listed or () if isinstance(tool, dict)]

    def _saved_tools(self) -> list[Any]:
        try:
            saved = json.loads(self.tools_file.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        return saved if isinstance(saved, list) else []

    def call(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        abandon: Abandon | None = None,
    ) -> dict[str, Any]:
        payload = {"op": "call", "name": name, "arguments": arguments}
        result = self.request(payload, abandon=abandon).get("result")
        return result if isinstance(result, dict) else {"result": result}
