"""No error text carries the CSRF token, whatever the server answers (docs/decisions.md §9).

agy-sim runs as a separate process with a fresh random token; its hostile ``echo_headers``
fault (docs/simulator.md: not agy's behaviour) answers with an error whose text repeats the
request's headers, the token among them: as a connect error JSON (message and details), as
plain text clipped where the token is, as a stream's end-of-stream error. Transport failures
(a timeout, TLS against the plain port, garbage, a refused port) are driven too. Every error
in the chain (``__cause__``, ``__context__``) is searched in ``str``, ``repr``, its args,
message and details and its formatted traceback, and so is every log record, at DEBUG.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import socket
import traceback
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
from simproc import FAST, Sim, sim_launcher

from omnigent_agy.errors import Code, CsrfError, DiscoveryError, RpcError, redact_secret
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.discovery import discover_pin

pytestmark = pytest.mark.tmux

TOKEN = secrets.token_urlsafe(32)
ECHO_PREFIX = "request headers: x-codeium-csrf-token: "
CLIP = 200  # the client keeps the first 200 bytes of a plain-text error answer
HEAD = 8  # the token's first characters: no error text may end with them either

type Call = Callable[[RpcClient], Awaitable[object]]


@pytest.fixture(scope="module")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sim]:
    with sim_launcher(tmp_path_factory.mktemp("echo"), "agy-echo") as launcher:
        yield launcher.launch(*FAST, token=TOKEN)


def texts_of(error: BaseException) -> list[str]:
    """Every text an error chain shows: str, repr, args, message, details, traceback."""
    found = ["".join(traceback.format_exception(error))]
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        found += [str(current), repr(current), *(repr(arg) for arg in current.args)]
        if isinstance(current, RpcError):
            found += [current.message, repr(current.details)]
        pending += [e for e in (current.__cause__, current.__context__) if e is not None]
    return found


def assert_no_token(texts: list[str]) -> None:
    for text in texts:
        assert TOKEN not in text, text
        assert TOKEN[:HEAD] not in text, text


async def _stream(client: RpcClient) -> None:
    async for _ in client.stream_agent_state_updates("any-conversation", idle_timeout=5):
        pass


async def _send(client: RpcClient) -> None:
    await client.send_user_cascade_message("any-cascade", "hello", plan_model="MODEL_X")


CASES: list[Any] = [
    pytest.param(
        {"kind": "echo_headers", "method": "GetAllCascadeTrajectories", "status": 500},
        lambda c: c.get_all_cascade_trajectories(),
        RpcError,
        id="json-500-retried-read",
    ),
    pytest.param(
        {"kind": "echo_headers", "method": "Heartbeat", "status": 403},
        lambda c: c.heartbeat(),
        CsrfError,
        id="json-403-csrf",
    ),
    pytest.param(
        {"kind": "echo_headers", "method": "SendUserCascadeMessage", "status": 503},
        _send,
        RpcError,
        id="json-503-send",
    ),
    pytest.param(
        # The token straddles the 200th byte: the clipped text must not end with its head.
        {
            "kind": "echo_headers",
            "method": "Heartbeat",
            "status": 500,
            "text": True,
            "pad": CLIP - len(ECHO_PREFIX) - HEAD - 2,
        },
        lambda c: c.heartbeat(),
        RpcError,
        id="text-clipped-in-the-token",
    ),
    pytest.param(
        {"kind": "echo_headers", "method": "StreamAgentStateUpdates", "status": 500},
        _stream,
        RpcError,
        id="end-of-stream-error",
    ),
    pytest.param(
        {"kind": "garbage", "method": "Heartbeat"},
        lambda c: c.heartbeat(),
        RpcError,
        id="garbage",
    ),
    pytest.param(
        {"kind": "delay", "method": "Heartbeat", "seconds": 2},
        lambda c: c.heartbeat(),
        RpcError,
        id="timeout",
    ),
]


@pytest.mark.parametrize(("fault", "call", "kind"), CASES)
def test_no_error_text_or_log_carries_the_token(
    sim: Sim,
    caplog: pytest.LogCaptureFixture,
    fault: dict[str, object],
    call: Call,
    kind: type[RpcError],
) -> None:
    sim.set_faults(fault)
    retry = RetryPolicy(attempts=2, deadline=5)

    async def run() -> RpcError:
        async with RpcClient(port=sim.port, csrf_token=TOKEN, timeout=0.5, retry=retry) as client:
            with pytest.raises(kind) as info:
                await call(client)
            return info.value

    try:
        with caplog.at_level(logging.DEBUG):
            error = asyncio.run(run())
    finally:
        sim.clear_faults()
    assert sim.log_text().count("fault ") >= 1  # the fault did fire
    texts = texts_of(error)
    if fault["kind"] == "echo_headers":
        # The server did echo the headers: the redaction is what keeps the token out.
        assert any("[redacted]" in text for text in texts), texts
    assert_no_token([*texts, caplog.text])


@pytest.mark.parametrize("where", ["plain-port", "refused-port"])
def test_transport_failures_carry_no_token(
    sim: Sim, caplog: pytest.LogCaptureFixture, where: str
) -> None:
    # N+1 speaks plain HTTP (the TLS handshake fails); a closed port refuses the connection.
    port = sim.port + 1 if where == "plain-port" else _closed_port()

    async def run() -> RpcError:
        async with RpcClient(port=port, csrf_token=TOKEN, retry=RetryPolicy(attempts=1)) as client:
            with pytest.raises(RpcError) as info:
                await client.heartbeat()
            return info.value

    with caplog.at_level(logging.DEBUG):
        error = asyncio.run(run())
    assert_no_token([*texts_of(error), caplog.text])


def test_discovery_failures_carry_no_token(sim: Sim, caplog: pytest.LogCaptureFixture) -> None:
    sim.set_faults({"kind": "echo_headers", "method": "Heartbeat", "status": 403})
    try:
        with caplog.at_level(logging.DEBUG), pytest.raises(DiscoveryError) as info:
            asyncio.run(discover_pin(pid=sim.pid, log_file=sim.log, csrf_token=TOKEN, deadline=5.0))
    finally:
        sim.clear_faults()
    assert_no_token([*texts_of(info.value), caplog.text])


def test_the_request_headers_hpack_logs_never_show_the_token(
    sim: Sim, caplog: pytest.LogCaptureFixture
) -> None:
    # A host logging everything at DEBUG: hpack would print each header it encodes.
    async def run() -> None:
        async with RpcClient(port=sim.port, csrf_token=TOKEN) as client:
            await client.heartbeat()

    with caplog.at_level(logging.DEBUG):
        asyncio.run(run())
    assert "x-codeium-csrf-token" not in caplog.text.lower()
    assert_no_token([caplog.text])


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"a {TOKEN} b", "a [redacted] b"),
        (f"{TOKEN}{TOKEN}", "[redacted][redacted]"),
        (f"cut: {TOKEN[:10]}", "cut: [redacted]"),
        (f"cut: {TOKEN[:4]}", "cut: [redacted]"),
        (f"short: {TOKEN[:3]}", f"short: {TOKEN[:3]}"),
        ("nothing here", "nothing here"),
    ],
    ids=["whole", "twice", "clipped", "clipped-4", "too-short-to-tell", "none"],
)
def test_redact_secret(text: str, expected: str) -> None:
    assert redact_secret(text, TOKEN) == expected
    assert redact_secret(text, "") == text


def _closed_port() -> int:
    with contextlib.closing(socket.socket()) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_redacted_error_keeps_its_code_and_shape() -> None:
    error = RpcError(Code.INTERNAL, f"echo {TOKEN}", http_status=500, details=[{"k": TOKEN}])
    error.redact(TOKEN)
    assert error.args == (Code.INTERNAL, "echo [redacted]")
    assert isinstance(error.args[0], Code)
    assert error.details == ({"k": "[redacted]"},)
    assert str(error) == "[internal] echo [redacted] (HTTP 500)"
