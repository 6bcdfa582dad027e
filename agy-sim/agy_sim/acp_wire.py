"""JSON-RPC 2.0 as the Agent Client Protocol carries it: one JSON object per line on stdio.

``JsonRpcPeer`` reads requests and notifications from the client, dispatches each to its
handler in a task of its own (a ``session/cancel`` must reach the agent while a
``session/prompt`` is still being answered), writes the replies, and sends the agent's own
requests (``session/request_permission``) and notifications (``session/update``) the other
way. Written from the JSON-RPC 2.0 specification, not from any ACP library: the tests hold it
to the protocol with an independent client.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

_log = logging.getLogger("agy-sim.acp")

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603
#: ACP's "authentication required" (the code agents answer ``session/new`` with).
AUTH_REQUIRED: Final = -32000
#: Lines longer than this are refused (a client must not make the agent buffer for ever).
LINE_LIMIT: Final = 64 * 1024 * 1024

Json = dict[str, Any]
Handler = Callable[[Json], Awaitable[Json | None]]


class RpcError(Exception):
    """A handler's refusal, answered as a JSON-RPC error object."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def to_wire(self) -> Json:
        error: Json = {"code": self.code, "message": self.message}
        if self.data is not None:
            error["data"] = self.data
        return error


class PeerClosedError(Exception):
    """The client went away before answering one of the agent's requests."""


class JsonRpcPeer:
    """One newline-delimited JSON-RPC connection; the agent side of ACP."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        write: Callable[[bytes], Awaitable[None]],
        *,
        requests: Mapping[str, Handler],
        notifications: Mapping[str, Callable[[Json], Awaitable[None]]],
    ) -> None:
        self._reader = reader
        self._write = write
        self._requests = dict(requests)
        self._notifications = dict(notifications)
        self._next_id = 0
        self._waiting: dict[int, asyncio.Future[Json]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._lock = asyncio.Lock()

    # -- the agent's side ---------------------------------------------------------------
    async def notify(self, method: str, params: Json) -> None:
        await self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def request(self, method: str, params: Json) -> Json:
        """Send a request to the client and wait for its result (a ``RpcError`` if it
        answered with an error, ``PeerClosedError`` if it went away)."""
        self._next_id += 1
        ident = self._next_id
        answer: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
        self._waiting[ident] = answer
        try:
            await self._send({"jsonrpc": "2.0", "id": ident, "method": method, "params": params})
            return await answer
        finally:
            self._waiting.pop(ident, None)

    # -- the loop -----------------------------------------------------------------------
    async def serve(self) -> None:
        """Read until the client closes stdin. The handlers still running are left to the
        caller: stop what they wait for, then ``drain`` them."""
        try:
            while True:
                try:
                    line = await self._reader.readline()
                except ValueError:  # a line over the limit: its rest is unreadable
                    await self._reply_error(None, RpcError(PARSE_ERROR, "line too long"))
                    return
                if not line:
                    return
                if line.strip():
                    self._receive(line)
        finally:
            for waiting in self._waiting.values():
                if not waiting.done():
                    waiting.set_exception(PeerClosedError("the client closed the connection"))

    async def drain(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the handlers still running, then cancel the rest."""
        tasks = set(self._tasks)
        if not tasks:
            return
        _done, pending = await asyncio.wait(tasks, timeout=timeout)
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending)

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._spawn(self._reply_error(None, RpcError(PARSE_ERROR, "not JSON")))
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            ident = message.get("id") if isinstance(message, dict) else None
            self._spawn(self._reply_error(ident, RpcError(INVALID_REQUEST, "not JSON-RPC 2.0")))
            return
        if "method" not in message:
            self._answer(message)
        elif "id" in message:
            self._spawn(self._handle_request(message))
        else:
            self._spawn(self._handle_notification(message))

    def _answer(self, message: Json) -> None:
        ident = message.get("id")
        waiting = self._waiting.get(ident) if isinstance(ident, int) else None
        if waiting is None or waiting.done():
            _log.warning("a reply to no request of ours (id %r)", ident)
            return
        error = message.get("error")
        if isinstance(error, dict):
            waiting.set_exception(
                RpcError(int(error.get("code", INTERNAL_ERROR)), str(error.get("message", "")))
            )
        else:
            result = message.get("result")
            waiting.set_result(result if isinstance(result, dict) else {})

    async def _handle_request(self, message: Json) -> None:
        ident = message["id"]
        method = message.get("method")
        handler = self._requests.get(method) if isinstance(method, str) else None
        if handler is None:
            await self._reply_error(ident, RpcError(METHOD_NOT_FOUND, f"no method {method!r}"))
            return
        params = message.get("params", {})
        if not isinstance(params, dict):
            await self._reply_error(ident, RpcError(INVALID_PARAMS, "params must be an object"))
            return
        try:
            result = await handler(params)
        except RpcError as exc:
            await self._reply_error(ident, exc)
            return
        except Exception as exc:  # noqa: BLE001 - a bug must answer, not hang the client
            _log.exception("%s failed", method)
            await self._reply_error(ident, RpcError(INTERNAL_ERROR, f"{method} failed: {exc}"))
            return
        await self._send({"jsonrpc": "2.0", "id": ident, "result": result or {}})

    async def _handle_notification(self, message: Json) -> None:
        method = message.get("method")
        handler = self._notifications.get(method) if isinstance(method, str) else None
        if handler is None:
            _log.info("ignored notification %r", method)
            return
        params = message.get("params", {})
        try:
            await handler(params if isinstance(params, dict) else {})
        except Exception:  # noqa: BLE001 - a notification has no reply to carry it
            _log.exception("notification %s failed", method)

    async def _reply_error(self, ident: Any, error: RpcError) -> None:
        await self._send({"jsonrpc": "2.0", "id": ident, "error": error.to_wire()})

    async def _send(self, message: Json) -> None:
        data = json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n"
        async with self._lock:  # one line at a time, whichever task writes
            await self._write(data.encode("utf-8"))

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
