"""RpcClient against the real TLS HTTP/2 connect server core on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from _helpers_server import SNAPSHOT_STEPS, STREAM_UPDATES, TOKEN, FakeAgy, fake_agy
from waiting import await_until

from agy_sim.server import TlsConnectServer
from omnigent_agy.errors import (
    AgyError,
    Code,
    CsrfError,
    NeverSentError,
    NonLoopbackHostError,
    RpcError,
    StreamStalled,
)
from omnigent_agy.rpc import retry as retry_module
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.lazyjson import LazyArray

__all__ = ["fake_agy"]  # the fixture is used by name

pytestmark = pytest.mark.anyio

type Served = tuple[FakeAgy, TlsConnectServer]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Retries wait no time; the waits they asked for are recorded."""
    asked: list[float] = []

    async def record(seconds: float) -> None:
        asked.append(seconds)

    monkeypatch.setattr(retry_module, "_sleep", record)
    return asked


async def collect(updates: AsyncIterator[dict[str, Any]], into: list[dict[str, Any]]) -> None:
    """Append every update to ``into`` until the stream ends or raises."""
    async for update in updates:
        into.append(update)  # noqa: PERF401 -- one by one: the stream raises midway


def rpc(server: TlsConnectServer, **kwargs: Any) -> RpcClient:
    kwargs.setdefault("csrf_token", TOKEN)
    return RpcClient(port=server.port, **kwargs)


async def test_unary_calls_speak_http2_and_the_wire_shapes(fake_agy: Served) -> None:
    agy, server = fake_agy
    async with rpc(server) as client:
        assert await client.heartbeat() == {"lastExtensionHeartbeat": "2026-08-02T04:49:11Z"}
        assert client.http_version == "HTTP/2"
        assert await client.get_conversation_metadata("known") == {
            "metadata": {"rootConversationId": "known"}
        }
        summaries = await client.get_all_cascade_trajectories(exclude_subtrajectories=True)
        assert summaries["trajectorySummaries"]["c-7"]["stepCount"] == 5
        assert await client.start_cascade() == "cascade-new"
        assert await client.start_cascade(cascade_id="c-7") == "c-7"
        await client.send_user_cascade_message(
            "c-7", "hello", plan_model="MODEL_X", delivery_strategy="WHEN_IDLE"
        )
        steps = await client.get_cascade_trajectory_steps("c-7", step_offset=3)
        assert steps == agy.steps[3:]
        assert await client.get_cascade_trajectory_steps("c-7") == agy.steps
        await client.handle_cascade_user_interaction(
            "c-7", trajectory_id="t-1", step_index=4, permission={"allow": False}
        )
        await client.cancel_cascade_steps("c-7", [4])
        assert await client.force_stop_cascade_tree("c-7") == ["c-7", "child"]
        models = await client.get_available_models()
        assert models["response"]["models"]["m"]["model"] == "MODEL_X"
        assert client.http_version == "HTTP/2"

    assert agy.requests["GetAllCascadeTrajectories"] == [{"excludeSubtrajectories": True}]
    assert agy.requests["StartCascade"] == [
        {"source": "CORTEX_TRAJECTORY_SOURCE_CLI"},
        {"source": "CORTEX_TRAJECTORY_SOURCE_CLI", "cascadeId": "c-7"},
    ]
    assert agy.requests["SendUserCascadeMessage"] == [
        {
            "cascadeId": "c-7",
            "items": [{"text": "hello"}],
            "cascadeConfig": {"plannerConfig": {"planModel": "MODEL_X"}},
            "deliveryStrategy": "WHEN_IDLE",
        }
    ]
    assert agy.requests["GetCascadeTrajectorySteps"] == [
        {"cascadeId": "c-7", "stepOffset": 3},
        {"cascadeId": "c-7"},
    ]
    # trajectoryId and stepIndex travel INSIDE interaction (docs/wire.md §3/§6).
    assert agy.requests["HandleCascadeUserInteraction"] == [
        {
            "cascadeId": "c-7",
            "interaction": {"trajectoryId": "t-1", "stepIndex": 4, "permission": {"allow": False}},
        }
    ]
    assert agy.requests["CancelCascadeSteps"] == [{"cascadeId": "c-7", "stepIndices": [4]}]


@pytest.mark.parametrize(
    ("token", "status", "code"),
    [("", 401, Code.UNAUTHENTICATED), ("not-the-token", 403, Code.PERMISSION_DENIED)],
    ids=["missing-token-401", "wrong-token-403"],
)
async def test_csrf_is_enforced_and_the_error_says_what_to_do(
    fake_agy: Served, token: str, status: int, code: Code
) -> None:
    agy, server = fake_agy
    async with rpc(server, csrf_token=token) as client:
        with pytest.raises(CsrfError) as caught:
            await client.heartbeat()
    error = caught.value
    assert (error.http_status, error.connect_code, error.method) == (status, code, "Heartbeat")
    assert "omnigent-agy doctor" in str(error)
    assert TOKEN not in str(error)
    assert not token or token not in str(error)
    assert agy.calls["Heartbeat"] == 0  # refused before any handler ran


async def test_csrf_errors_are_not_retried(fake_agy: Served, backoffs: list[float]) -> None:
    _, server = fake_agy
    async with rpc(server, csrf_token="wrong") as client:
        with pytest.raises(CsrfError):
            await client.get_available_models()
    assert backoffs == []


async def test_a_stream_yields_every_frame_then_ends(fake_agy: Served) -> None:
    agy, server = fake_agy
    async with rpc(server) as client:
        updates = [
            update
            async for update in client.stream_agent_state_updates(
                "multi", start_index=7, subscriber_id="omnigent"
            )
        ]
        # A stream speaks HTTP/1.1 on its own connection where agy offers it (it is cheaper
        # per frame); unary calls stay on the one HTTP/2 connection.
        assert client.stream_http_version == "HTTP/1.1"
        await client.heartbeat()
        assert client.http_version == "HTTP/2"
    assert updates == STREAM_UPDATES
    assert agy.requests["StreamAgentStateUpdates"] == [
        {
            "conversationId": "multi",
            "subscriberId": "omnigent",
            "initialStepsPageBounds": {"startIndex": 7},
        }
    ]


async def test_a_stream_trailer_error_is_raised_after_its_frames(fake_agy: Served) -> None:
    _, server = fake_agy
    received: list[dict[str, Any]] = []
    async with rpc(server) as client:
        with pytest.raises(RpcError) as caught:
            await collect(client.stream_agent_state_updates("error"), received)
    assert received == STREAM_UPDATES
    error = caught.value
    assert type(error) is RpcError
    assert (error.connect_code, error.message) == (Code.FAILED_PRECONDITION, "cascade was cleared")
    assert error.method == "StreamAgentStateUpdates"


@pytest.mark.parametrize("conversation", ["silent", "stall-after-one"])
async def test_a_silent_stream_stalls_and_is_closed(fake_agy: Served, conversation: str) -> None:
    agy, server = fake_agy
    received: list[dict[str, Any]] = []
    async with rpc(server) as client:
        updates = client.stream_agent_state_updates(conversation, idle_timeout=0.3)
        with pytest.raises(StreamStalled) as caught:
            await collect(updates, received)
        assert caught.value.connect_code is Code.DEADLINE_EXCEEDED
        assert caught.value.method == "StreamAgentStateUpdates"
        assert received == STREAM_UPDATES[: 1 if conversation == "stall-after-one" else 0]
        assert await asyncio.to_thread(agy.stream_closed.wait, 10)  # the server let go too
        assert await client.heartbeat()  # and the unary connection is unharmed


async def test_closing_a_stream_early_ends_it_on_the_server(fake_agy: Served) -> None:
    agy, server = fake_agy
    async with rpc(server) as client:
        updates = client.stream_agent_state_updates("endless")
        async with contextlib.aclosing(updates):
            first = await anext(updates)
        assert first == STREAM_UPDATES[0]
        assert await asyncio.to_thread(agy.stream_closed.wait, 10)
        assert await client.heartbeat()


async def test_a_snapshots_steps_are_read_lazily_and_not_kept_after_use(fake_agy: Served) -> None:
    # The first frame replays every step (docs/wire.md §4). Its steps are decoded one at a time as
    # they are read, and nothing in the stream keeps the frame while it waits for the next
    # one: that is when it hands freed memory back, so a snapshot kept there would stay.
    _, server = fake_agy
    async with rpc(server) as client:
        updates = client.stream_agent_state_updates("snapshot")
        async with contextlib.aclosing(updates):
            first = await anext(updates)
            steps = first["update"]["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]
            assert isinstance(steps, LazyArray)
            assert list(steps) == SNAPSHOT_STEPS
            kept = weakref.ref(steps)
            del first, steps
            waiting = asyncio.create_task(anext(updates))  # the stream is silent now
            try:
                await await_until(
                    lambda: kept() is None,
                    timeout=10,
                    what="the frame to be garbage while the stream awaits the next",
                )
                assert not waiting.done()
            finally:
                waiting.cancel()
                with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                    await waiting


async def test_a_long_stream_and_concurrent_calls_share_the_loop(fake_agy: Served) -> None:
    # docs/decisions.md §10: one owner loop drives a held-open stream and many unary calls.
    agy, server = fake_agy
    async with rpc(server) as client:
        updates = client.stream_agent_state_updates("endless")
        async with contextlib.aclosing(updates):
            assert await anext(updates) == STREAM_UPDATES[0]
            beats = await asyncio.gather(*(client.heartbeat() for _ in range(50)))
            assert await anext(updates) == STREAM_UPDATES[1]
    assert len(beats) == 50
    assert agy.calls["Heartbeat"] == 50


READS = [
    ("Heartbeat", lambda c: c.heartbeat()),
    ("GetConversationMetadata", lambda c: c.get_conversation_metadata("known")),
    ("GetAllCascadeTrajectories", lambda c: c.get_all_cascade_trajectories()),
    ("GetCascadeTrajectorySteps", lambda c: c.get_cascade_trajectory_steps("c")),
    ("GetAvailableModels", lambda c: c.get_available_models()),
]


@pytest.mark.parametrize(("method", "invoke"), READS, ids=[m for m, _ in READS])
async def test_reads_are_retried_after_transient_failures(
    fake_agy: Served, backoffs: list[float], method: str, invoke: Any
) -> None:
    agy, server = fake_agy
    agy.failures_left[method] = 2
    policy = RetryPolicy(attempts=4, initial_backoff=0.2, max_backoff=2.0)
    async with rpc(server, retry=policy) as client:
        assert await invoke(client)
    assert agy.calls[method] == 3
    assert len(backoffs) == 2
    assert all(0 <= wait <= 2.0 for wait in backoffs)


async def test_retries_stop_after_the_attempts(fake_agy: Served, backoffs: list[float]) -> None:
    agy, server = fake_agy
    agy.failures_left["Heartbeat"] = 10
    async with rpc(server, retry=RetryPolicy(attempts=3)) as client:
        with pytest.raises(RpcError) as caught:
            await client.heartbeat()
    assert (caught.value.connect_code, caught.value.http_status) == (Code.UNAVAILABLE, 503)
    assert agy.calls["Heartbeat"] == 3
    assert len(backoffs) == 2


WRITES = [
    (
        "SendUserCascadeMessage",
        lambda c: c.send_user_cascade_message("c", "hi", plan_model="MODEL_X"),
    ),
    (
        "HandleCascadeUserInteraction",
        lambda c: c.handle_cascade_user_interaction(
            "c", trajectory_id="t", step_index=2, ask_question={"responses": []}
        ),
    ),
    ("StartCascade", lambda c: c.start_cascade()),
    ("CancelCascadeSteps", lambda c: c.cancel_cascade_steps("c")),
]


@pytest.mark.parametrize(("method", "invoke"), WRITES, ids=[m for m, _ in WRITES])
async def test_writes_are_never_retried(
    fake_agy: Served, backoffs: list[float], method: str, invoke: Any
) -> None:
    agy, server = fake_agy
    agy.failures_left[method] = 1
    async with rpc(server) as client:
        with pytest.raises(RpcError) as caught:
            await invoke(client)
    assert caught.value.connect_code is Code.UNAVAILABLE
    assert agy.calls[method] == 1
    assert backoffs == []


async def test_a_permanent_error_is_not_retried(fake_agy: Served, backoffs: list[float]) -> None:
    agy, server = fake_agy
    async with rpc(server) as client:
        with pytest.raises(RpcError) as caught:
            await client.get_conversation_metadata("someone-elses")
    assert (caught.value.connect_code, caught.value.http_status) == (Code.UNKNOWN, 500)
    assert caught.value.message == "trajectory not found"
    assert agy.calls["GetConversationMetadata"] == 1
    assert backoffs == []


async def test_an_unknown_method_is_unimplemented(fake_agy: Served) -> None:
    _, server = fake_agy
    async with rpc(server) as client:
        with pytest.raises(RpcError) as caught:
            await client.call("GetCascadeId", {})  # does not exist on agy (docs/wire.md §3)
    assert (caught.value.connect_code, caught.value.http_status) == (Code.UNIMPLEMENTED, 404)


async def test_a_slow_answer_is_deadline_exceeded(fake_agy: Served) -> None:
    _, server = fake_agy
    async with rpc(server, timeout=0.3) as client:
        with pytest.raises(RpcError) as caught:
            await client.call("Slow", {})
    assert caught.value.connect_code is Code.DEADLINE_EXCEEDED
    assert isinstance(caught.value.__cause__, TimeoutError)
    assert "within 0.3 s" in caught.value.message


async def test_nothing_listening_is_unavailable_after_retries(backoffs: list[float]) -> None:
    server = TlsConnectServer(FakeAgy().app()).bind()
    port = server.port
    server.stop()  # the port is free again: nothing answers there
    async with RpcClient(port=port, csrf_token=TOKEN, retry=RetryPolicy(attempts=2)) as client:
        with pytest.raises(RpcError) as caught:
            await client.heartbeat()
    assert caught.value.connect_code is Code.UNAVAILABLE
    assert caught.value.http_status is None
    assert isinstance(caught.value.__cause__, NeverSentError)
    assert len(backoffs) == 1


@pytest.mark.parametrize(
    "host", ["10.0.0.1", "192.168.1.20", "0.0.0.0", "example.com", "::ffff:10.0.0.1", "2001:db8::1"]
)
def test_a_non_loopback_host_is_refused(host: str) -> None:
    with pytest.raises(NonLoopbackHostError) as caught:
        RpcClient(port=443, csrf_token=TOKEN, host=host)
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, AgyError)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost"])
async def test_loopback_hosts_are_accepted(host: str) -> None:
    async with RpcClient(port=443, csrf_token=TOKEN, host=host) as client:
        assert "443" in client.base_url


@pytest.mark.parametrize(
    "resolved",
    [["10.0.0.7"], ["127.0.0.1", "192.168.1.2"], []],
    ids=["elsewhere", "partly-elsewhere", "nowhere"],
)
def test_localhost_resolving_elsewhere_is_refused(
    resolved: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hosts file (or resolver) pointing "localhost" away: the one environment fault a test
    # can only fake, by answering getaddrinfo as such a machine would.
    def getaddrinfo(host: str, *args: object, **kwargs: object) -> list[Any]:
        assert host == "localhost"
        if not resolved:
            raise socket.gaierror("no address")
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, 0)) for ip in resolved]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(NonLoopbackHostError, match="resolves to"):
        RpcClient(port=443, csrf_token=TOKEN, host="localhost")


async def test_localhost_is_pinned_to_the_loopback_address_it_resolves_to(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def getaddrinfo(host: str, *args: object, **kwargs: object) -> list[Any]:
        return [(socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("::1", 0, 0, 0))]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    async with RpcClient(port=443, csrf_token=TOKEN, host="localhost") as client:
        assert client.base_url == "https://[::1]:443"  # the name is never resolved again


async def test_the_plain_port_refuses_rpc(fake_agy: Served) -> None:
    agy, server = fake_agy
    assert server.plain_port == server.port + 1
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{server.plain_port}") as plain:
        response = await plain.post(
            "/exa.language_server_pb.LanguageServerService/Heartbeat",
            json={},
            headers={"x-codeium-csrf-token": TOKEN, "Connect-Protocol-Version": "1"},
        )
    assert response.status_code == 404
    assert agy.calls["Heartbeat"] == 0


async def test_stop_is_prompt_with_a_stream_open_and_leaves_no_thread() -> None:
    agy = FakeAgy()
    server = TlsConnectServer(agy.app()).start()
    async with rpc(server) as client:
        updates = client.stream_agent_state_updates("endless", idle_timeout=30)
        async with contextlib.aclosing(updates):
            assert await anext(updates) == STREAM_UPDATES[0]
            await asyncio.to_thread(server.stop)  # raises if the thread does not end
            with pytest.raises(RpcError) as caught:
                await collect(updates, [])  # the frames sent before the stop, then the end
    # The stream was cut: either the connection dropped or it ended without a trailer.
    assert not isinstance(caught.value, StreamStalled)
    assert caught.value.connect_code in (Code.UNAVAILABLE, Code.INTERNAL)
    assert not [t for t in threading.enumerate() if t.name.startswith("tls-connect-server")]
    for port in (server.port, server.plain_port):  # nothing listens there any more
        with socket.socket() as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is fine
            probe.bind(("127.0.0.1", port))


async def test_a_client_belongs_to_one_event_loop(fake_agy: Served) -> None:
    _, server = fake_agy
    async with rpc(server) as client:
        await client.heartbeat()
        with pytest.raises(AgyError, match="one event loop"):
            await asyncio.to_thread(asyncio.run, client.heartbeat())


def test_an_interaction_takes_exactly_one_answer() -> None:
    client = RpcClient(port=443, csrf_token=TOKEN)
    for answers in ({}, {"permission": {"allow": True}, "ask_question": {"responses": []}}):
        with pytest.raises(ValueError, match="exactly one"):
            asyncio.run(
                client.handle_cascade_user_interaction(
                    "c", trajectory_id="t", step_index=1, **answers
                )
            )
    asyncio.run(client.aclose())


def test_the_token_never_shows_in_the_clients_repr() -> None:
    client = RpcClient(port=443, csrf_token=TOKEN)
    assert TOKEN not in repr(client)
    asyncio.run(client.aclose())
