"""The MCP stdio server agy starts for omnigent's tools (the ``omnigent`` entry of its
``mcp_config.json``, docs/wire.md §1b), on the standard library alone.

Every agy of every conversation starts one and keeps it for its whole life, so it must cost
little: the ``mcp`` SDK (pydantic, anyio, starlette) took about a second and 57 MB per agy
before a single message (docs/performance.md, "The relay"). MCP's stdio transport is
JSON-RPC 2.0, one message per line; this server speaks the part of it a client of tools uses:

- ``initialize`` (the client's protocol version when it is one of ``PROTOCOL_VERSIONS``,
  else the newest; capabilities: tools only), ``ping``;
- ``tools/list`` (all of them, one page) and ``tools/call`` (text content, ``isError`` for a
  failure), each answered on a thread of its own, so a long tool never holds up a ping;
- ``notifications/cancelled`` abandons that call (its socket to the harness is shut down) and
  no answer is sent for it; other notifications and any responses are ignored;
- anything else with an id is ``-32601`` (method not found); a line that is not JSON is
  ``-32700``; a batch (an array, MCP 2025-03-26) is answered message by message.

The tools and the calls go over the harness's socket (``harness_client``). Nothing but
JSON-RPC is ever written to stdout. The ``mcp`` SDK's own client holds this to the protocol
(tests/relay/test_mcp_server.py).
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, Any, Final

from omnigent_agy.constants import __version__
from omnigent_agy.errors import RelayError
from omnigent_agy.relay import RELAY_SERVER
from omnigent_agy.relay.harness_client import Abandon, HarnessClient

__all__ = ["PROTOCOL_VERSIONS", "McpServer", "main"]

#: MCP's protocol versions this server answers in, oldest first; what it uses (tools with
#: text content) reads the same in each.
PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

type Message = dict[str, Any]


def as_mcp_tool(schema: dict[str, Any]) -> Message | None:
    """One of omnigent's tool schemas (flat or ``function``-nested) as an MCP tool."""
    nested = schema.get("function")
    function: dict[str, Any] = nested if isinstance(nested, dict) else schema
    name = function.get("name")
    if not isinstance(name, str) or not name:
        return None
    parameters = function.get("parameters") or function.get("input_schema")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        parameters = {"type": "object", "properties": {}}
    return {
        "name": name,
        "description": str(function.get("description") or ""),
        "inputSchema": parameters,
    }


def _text_result(text: str, *, error: bool = False) -> Message:
    return {"content": [{"type": "text", "text": text}], "isError": error}


def call_result(result: dict[str, Any]) -> Message:
    """omnigent's dispatch result as MCP content: ``{"result": text}`` unwraps to the text, a
    refused or failed call (``{"error": …}``, as omnigent's bridge reports it) is an error."""
    error = result.get("error")
    if error is not None and set(result) <= {"error", "code"}:
        return _text_result(str(error), error=True)
    if set(result) == {"result"} and isinstance(result["result"], str):
        return _text_result(result["result"])
    return _text_result(json.dumps(result, indent=2, sort_keys=True))


class McpServer:
    """Reads JSON-RPC lines from ``incoming`` and writes the answers to ``outgoing``."""

    def __init__(self, client: HarnessClient, incoming: IO[bytes], outgoing: IO[bytes]) -> None:
        self._client = client
        self._in = incoming
        self._out = outgoing
        self._write_lock = threading.Lock()
        self._closed = False  # under the write lock: no answer is written once serve() ended
        self._calls: dict[str, Abandon] = {}  # in flight, by the JSON of their id
        self._calls_lock = threading.Lock()
        self._inline: dict[str, Callable[[Message], Message]] = {
            "initialize": self._initialize,
            "ping": lambda params: {},
        }
        self._threaded: dict[str, Callable[[Message, Abandon], Message]] = {
            "tools/list": lambda params, abandon: {"tools": self._tools()},
            "tools/call": self._call,
        }

    def serve(self) -> None:
        """Until the client closes stdin (agy ends); calls still running are abandoned."""
        try:
            for line in iter(self._in.readline, b""):
                if line.strip():
                    self._receive(line)
        finally:
            # An answer being written is finished, later ones are dropped: a daemon thread
            # writing to stdout while Python shuts down can abort it (SIGABRT).
            with self._write_lock:
                self._closed = True

    def _receive(self, line: bytes) -> None:
        try:
            message = json.loads(line)
        except ValueError:
            self._send({"jsonrpc": "2.0", "id": None, "error": _error(PARSE_ERROR, "Parse error")})
            return
        for one in message if isinstance(message, list) else [message]:
            self._dispatch(one)

    def _dispatch(self, message: object) -> None:
        if not isinstance(message, dict) or not isinstance(message.get("method", ""), str):
            self._send(
                {"jsonrpc": "2.0", "id": None, "error": _error(INVALID_REQUEST, "Invalid Request")}
            )
            return
        method = message.get("method")
        if method is None:
            return  # a response to a request of ours: this server sends none
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if "id" not in message:
            if method == "notifications/cancelled":
                self._cancel(params.get("requestId"))
            return  # notifications/initialized and the rest need nothing
        request_id = message["id"]
        if method in self._inline:
            self._answer(request_id, lambda: self._inline[method](params))
        elif (invalid := _invalid_params(method, params)) is not None:
            self._send(
                _reply(request_id, error=_error(INVALID_PARAMS, f"Invalid params: {invalid}"))
            )
        elif method in self._threaded:
            self._start(request_id, self._threaded[method], params)
        else:
            self._send(_reply(request_id, error=_error(METHOD_NOT_FOUND, "Method not found")))

    def _start(
        self, request_id: object, handler: Callable[[Message, Abandon], Message], params: Message
    ) -> None:
        key = json.dumps(request_id)
        abandon = Abandon()
        with self._calls_lock:
            self._calls[key] = abandon

        def run() -> None:
            try:
                self._answer(request_id, lambda: handler(params, abandon), abandon)
            finally:
                with self._calls_lock:
                    if self._calls.get(key) is abandon:
                        del self._calls[key]

        threading.Thread(target=run, name=f"mcp {key}", daemon=True).start()

    def _cancel(self, request_id: object) -> None:
        with self._calls_lock:
            abandon = self._calls.pop(json.dumps(request_id), None)
        if abandon is not None:
            abandon.cancel()

    def _answer(
        self, request_id: object, produce: Callable[[], Message], abandon: Abandon | None = None
    ) -> None:
        try:
            reply = _reply(request_id, result=produce())
        except Exception as exc:  # noqa: BLE001 - one request's failure never ends the server
            reply = _reply(request_id, error=_error(INTERNAL_ERROR, f"{type(exc).__name__}: {exc}"))
        if abandon is None or not abandon.cancelled:
            self._send(reply)

    def _send(self, message: Message) -> None:
        data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        with self._write_lock:
            if self._closed:
                return  # agy closed our stdin: nobody is left to answer
            try:
                self._out.write(data)
                self._out.flush()
            except (BrokenPipeError, ValueError):
                pass  # agy is gone (or closed our stdout): nobody is left to answer

    def _initialize(self, params: Message) -> Message:
        asked = params.get("protocolVersion")
        return {
            "protocolVersion": asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": RELAY_SERVER, "version": __version__},
        }

    def _tools(self) -> list[Message]:
        return [tool for tool in map(as_mcp_tool, self._client.tools()) if tool is not None]

    def _call(self, params: Message, abandon: Abandon) -> Message:
        name, arguments = params["name"], params.get("arguments") or {}
        # omnigent validates arguments itself (and its policies see them as sent).
        try:
            result = self._client.call(name, arguments, abandon=abandon)
        except RelayError as exc:
            return _text_result(str(exc), error=True)
        return call_result(result)


def _invalid_params(method: str, params: Message) -> str | None:
    """What is wrong with a request's params (answered ``-32602``), or None."""
    if method != "tools/call":
        return None
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or not name:
        return "tools/call needs the tool's name"
    if arguments is not None and not isinstance(arguments, dict):
        return "a tool's arguments are an object"
    return None


def _error(code: int, message: str) -> Message:
    return {"code": code, "message": message}


def _reply(
    request_id: object, *, result: Message | None = None, error: Message | None = None
) -> Message:
    if error is not None:
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


USAGE: Final = "usage: python -m omnigent_agy.relay --socket PATH --tools PATH"


def _options(argv: Sequence[str]) -> tuple[Path, Path]:
    """``--socket PATH --tools PATH`` (argparse alone would add to every agy's start-up)."""
    values: dict[str, str] = {}
    words = list(argv)
    while words:
        flag = words.pop(0)
        if flag not in ("--socket", "--tools") or not words:
            raise SystemExit(f"{USAGE}\n(unexpected {flag!r})")
        values[flag] = words.pop(0)
    if set(values) != {"--socket", "--tools"}:
        raise SystemExit(f"{USAGE}\n(both are needed)")
    return Path(values["--socket"]), Path(values["--tools"])


def main(argv: Sequence[str] | None = None) -> int:
    socket_path, tools_file = _options(sys.argv[1:] if argv is None else argv)
    server = McpServer(HarnessClient(socket_path, tools_file), sys.stdin.buffer, sys.stdout.buffer)
    try:
        server.serve()
    except KeyboardInterrupt:
        return 130
    return 0
