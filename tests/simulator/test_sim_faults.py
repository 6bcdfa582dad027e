"""Fault injection: the plan model, the control file, and the ASGI middleware.

The middleware is driven here directly through ASGI with a small streaming app, so each
cut can be checked byte for byte; tests/simulator/test_sim_process.py checks every fault again
against the real agy-sim process over TLS HTTP/2.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from pathlib import Path
from typing import Any

import pytest

from agy_sim.connect_app import ConnectApp
from agy_sim.fault_injector import GARBAGE_BODY, FaultInjector, method_of
from agy_sim.faults import (
    DropMode,
    FaultConfigError,
    FaultKind,
    FaultPlan,
    FaultRule,
    FaultSource,
    parse_plan,
    parse_rule,
    parse_spec,
)
from agy_sim.reshape import reshape_of
from agy_sim.server import TlsConnectServer
from omnigent_agy.errors import Code, CsrfError, ProtocolError, RpcError, StreamStalled
from omnigent_agy.rpc.client import RpcClient

SERVICE = "/exa.language_server_pb.LanguageServerService"


def envelope(payload: dict[str, Any], flag: int = 0) -> bytes:
    data = json.dumps(payload).encode()
    return bytes([flag]) + len(data).to_bytes(4, "big") + data


FRAMES = [envelope({"update": {"n": n}}) for n in range(4)]
TRAILER = envelope({}, flag=2)


class StreamApp:
    """Answers a stream of four frames and a trailer, in body chunks of the given sizes."""

    def __init__(self, chunking: str = "one-per-frame") -> None:
        self.chunking = chunking
        self.finished = False
        self.stopped_by: BaseException | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        while (await receive()).get("more_body"):
            pass
        payload = b"".join([*FRAMES, TRAILER])
        if self.chunking == "one-per-frame":
            chunks = [*FRAMES, TRAILER]
        elif self.chunking == "bytewise":
            chunks = [payload[i : i + 1] for i in range(len(payload))]
        else:
            chunks = [payload]
        content_type = dict(scope["headers"]).get(b"content-type", b"application/json")
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-type", content_type)],
                }
            )
            for chunk in chunks:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            self.finished = True
        except BaseException as exc:
            self.stopped_by = exc
            raise


async def call(
    app: Any, method: str = "StreamAgentStateUpdates", *, stream: bool = True
) -> list[dict[str, Any]]:
    content_type = b"application/connect+json" if stream else b"application/json"
    scope = {
        "type": "http",
        "method": "POST",
        "path": f"{SERVICE}/{method}",
        "headers": [(b"content-type", content_type)],
    }
    requests = [{"type": "http.request", "body": b"{}", "more_body": False}]

    async def receive() -> dict[str, Any]:
        return requests.pop(0) if requests else {"type": "http.disconnect"}

    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def body_of(sent: list[dict[str, Any]]) -> bytes:
    return b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def injector(
    *rules: FaultRule, control_file: Path | None = None
) -> tuple[FaultInjector, StreamApp]:
    app = StreamApp()
    return FaultInjector(app, FaultSource(static_rules=rules, control_file=control_file)), app


# -- the plan model ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("delay:seconds=2.5", FaultRule(FaultKind.DELAY, seconds=2.5)),
        (
            "drop_stream:method=StreamAgentStateUpdates,after_frames=2,mode=truncate",
            FaultRule(
                FaultKind.DROP_STREAM,
                method="StreamAgentStateUpdates",
                after_frames=2,
                mode=DropMode.TRUNCATE,
            ),
        ),
        ("stall_stream", FaultRule(FaultKind.STALL_STREAM)),
        (
            "http_error:method=Heartbeat,status=500,times=3",
            FaultRule(FaultKind.HTTP_ERROR, method="Heartbeat", status=500, times=3),
        ),
        (" garbage : id = x ", FaultRule(FaultKind.GARBAGE, id="x")),
        (
            "rename_field:method=StreamAgentStateUpdates,field=modifiedResponse,to=text",
            FaultRule(
                FaultKind.RENAME_FIELD,
                method="StreamAgentStateUpdates",
                field="modifiedResponse",
                to="text",
            ),
        ),
        ("drop_field:field=modelUsage", FaultRule(FaultKind.DROP_FIELD, field="modelUsage")),
        ("no_csrf:method=Heartbeat", FaultRule(FaultKind.NO_CSRF, method="Heartbeat")),
    ],
    ids=["delay", "drop", "stall", "http_error", "spaces", "rename", "drop_field", "no_csrf"],
)
def test_parse_spec(spec: str, expected: FaultRule) -> None:
    assert parse_spec(spec) == expected


@pytest.mark.parametrize(
    "spec",
    [
        "explode",
        "delay:seconds",
        "delay:seconds=soon",
        "http_error:status=200",
        "http_error:times=-1",
        "drop_stream:mode=rst",
        "drop_stream:frames=2",
        "delay:seconds=-1",
        "rename_field:field=modifiedResponse",
        "rename_field:to=x",
        "drop_field",
    ],
)
def test_parse_spec_rejects(spec: str) -> None:
    with pytest.raises(FaultConfigError):
        parse_spec(spec)


def test_parse_plan_from_json() -> None:
    plan = parse_plan(
        {
            "restart": 2,
            "restart_pause": 1.5,
            "faults": [
                {"kind": "http_error", "method": "Heartbeat", "times": 1},
                {"kind": "delay", "seconds": 0.5},
            ],
        }
    )
    assert plan == FaultPlan(
        rules=(
            FaultRule(FaultKind.HTTP_ERROR, method="Heartbeat", times=1),
            FaultRule(FaultKind.DELAY, seconds=0.5),
        ),
        restart=2,
        restart_pause=1.5,
    )


@pytest.mark.parametrize(
    "raw",
    [
        [],
        {"faults": {}},
        {"faults": ["delay"]},
        {"restart": True},
        {"faults": [{"kind": "x"}]},
        {"restart_pause": -1},
        {"restart_pause": "soon"},
    ],
    ids=[
        "not-object",
        "faults-object",
        "faults-strings",
        "restart-bool",
        "bad-kind",
        "pause-negative",
        "pause-word",
    ],
)
def test_parse_plan_rejects(raw: object) -> None:
    with pytest.raises(FaultConfigError):
        parse_plan(raw)


def test_rule_bool_is_not_an_integer() -> None:
    with pytest.raises(FaultConfigError):
        parse_rule({"kind": "drop_stream", "after_frames": True})


def test_method_of_takes_the_last_path_segment() -> None:
    assert method_of({"path": f"{SERVICE}/Heartbeat"}) == "Heartbeat"


# -- the control file -------------------------------------------------------------------


def test_control_file_is_reread_and_keeps_the_last_good_plan(tmp_path: Path) -> None:
    control = tmp_path / "faults.json"
    static = FaultRule(FaultKind.DELAY, seconds=1)
    source = FaultSource(static_rules=(static,), control_file=control)
    assert source.current() == FaultPlan(rules=(static,))

    control.write_text(json.dumps({"restart": 1, "faults": [{"kind": "garbage"}]}))
    assert source.current() == FaultPlan(rules=(static, FaultRule(FaultKind.GARBAGE)), restart=1)

    control.write_text('{"faults": [')  # caught half-written
    assert source.current().restart == 1

    control.write_text("")
    assert source.current() == FaultPlan(rules=(static,))
    control.unlink()
    assert source.current() == FaultPlan(rules=(static,))


# -- the middleware ---------------------------------------------------------------------


def test_no_fault_passes_everything_through() -> None:
    app, inner = injector(FaultRule(FaultKind.GARBAGE, method="Heartbeat"))
    sent = asyncio.run(call(app))
    assert body_of(sent) == b"".join([*FRAMES, TRAILER])
    assert inner.finished


@pytest.mark.parametrize("chunking", ["one-per-frame", "bytewise", "all-at-once"])
@pytest.mark.parametrize("after", [0, 1, 3])
def test_drop_stream_after_k_frames_ends_without_trailer(chunking: str, after: int) -> None:
    rule = FaultRule(FaultKind.DROP_STREAM, after_frames=after)
    app = FaultInjector(StreamApp(chunking), FaultSource(static_rules=(rule,)))
    sent = asyncio.run(call(app))
    assert body_of(sent) == b"".join(FRAMES[:after])
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


def test_drop_stream_truncate_ends_inside_an_envelope() -> None:
    app, inner = injector(FaultRule(FaultKind.DROP_STREAM, after_frames=1, mode=DropMode.TRUNCATE))
    body = body_of(asyncio.run(call(app)))
    assert body.startswith(FRAMES[0])
    tail = body[len(FRAMES[0]) :]
    assert int.from_bytes(tail[1:5], "big") > len(tail) - 5
    assert inner.finished  # its later sends were swallowed, not raised into it


def test_drop_on_a_unary_call_sends_headers_and_an_empty_body() -> None:
    app, _ = injector(FaultRule(FaultKind.DROP_STREAM, method="Heartbeat", after_frames=3))
    sent = asyncio.run(call(app, "Heartbeat", stream=False))
    assert sent[0]["status"] == 200
    assert body_of(sent) == b""


def test_stall_holds_the_stream_until_released() -> None:
    async def scenario() -> tuple[bytes, bool, bool]:
        app, _ = injector(FaultRule(FaultKind.STALL_STREAM, after_frames=2))
        task = asyncio.create_task(call(app))
        await asyncio.wait({task}, timeout=0.2)
        stalled = not task.done()
        app.release_stalls()
        sent = await asyncio.wait_for(task, timeout=5)
        ended = any(m.get("more_body") is False for m in sent)
        return body_of(sent), stalled, ended

    body, stalled, ended = asyncio.run(scenario())
    assert stalled
    assert body == b"".join(FRAMES[:2])
    assert not ended  # released, but the stream was never ended


@pytest.mark.parametrize("status", [500, 503])
def test_http_error_answers_the_status_n_times(status: int) -> None:
    rule = FaultRule(FaultKind.HTTP_ERROR, method="Heartbeat", status=status, times=2)
    app, _ = injector(rule)

    async def three_calls() -> list[list[dict[str, Any]]]:
        return [await call(app, "Heartbeat", stream=False) for _ in range(3)]

    first, second, third = asyncio.run(three_calls())
    for sent in (first, second):
        assert sent[0]["status"] == status
        assert json.loads(body_of(sent))["code"] in {"internal", "unavailable", "unknown"}
    assert third[0]["status"] == 200
    assert app.fired(rule) == 2


def test_http_error_only_for_its_method() -> None:
    app, _ = injector(FaultRule(FaultKind.HTTP_ERROR, method="Heartbeat"))
    sent = asyncio.run(call(app, "GetAllCascadeTrajectories", stream=False))
    assert sent[0]["status"] == 200


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "unary"])
def test_garbage_answers_200_with_undecodable_bytes(stream: bool) -> None:
    app, inner = injector(FaultRule(FaultKind.GARBAGE))
    sent = asyncio.run(call(app, stream=stream))
    assert sent[0]["status"] == 200
    assert body_of(sent) == GARBAGE_BODY
    assert not inner.finished
    with pytest.raises(ValueError):  # noqa: PT011 - any decoding error is the point
        json.loads(GARBAGE_BODY)
    assert GARBAGE_BODY[0] not in (0, 2)


def test_delay_waits_before_the_app_runs() -> None:
    async def scenario() -> bool:
        app, inner = injector(FaultRule(FaultKind.DELAY, seconds=30))
        task = asyncio.create_task(call(app))
        await asyncio.wait({task}, timeout=0.2)
        started = inner.finished or inner.stopped_by is not None
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return started

    assert asyncio.run(scenario()) is False


def test_rewriting_the_control_file_rearms_with_a_new_id(tmp_path: Path) -> None:
    control = tmp_path / "faults.json"
    app, _ = injector(control_file=control)

    def write(rule_id: str) -> None:
        faults = [{"kind": "http_error", "method": "Heartbeat", "times": 1, "id": rule_id}]
        control.write_text(json.dumps({"faults": faults}))

    async def status() -> int:
        return int((await call(app, "Heartbeat", stream=False))[0]["status"])

    write("a")
    assert asyncio.run(status()) == 503
    assert asyncio.run(status()) == 200
    write("a")
    assert asyncio.run(status()) == 200
    write("b")
    assert asyncio.run(status()) == 503


# -- around the real connect app, over TLS HTTP/2 ----------------------------------------
# The fault must reach a real client as the failure a real network would cause.

TOKEN = "fault-test-token"


async def _heartbeat(_request: dict[str, Any]) -> dict[str, Any]:
    return {"lastExtensionHeartbeat": "2026-01-01T00:00:00Z"}


async def _updates(request: dict[str, Any]) -> Any:
    for n in range(1000):
        yield {"update": {"conversationId": request.get("conversationId", ""), "n": n}}
        if n >= 3:
            await asyncio.sleep(3600)  # a live stream that has nothing more to say


@pytest.fixture
def faulty_server(tmp_path: Path) -> Any:
    control = tmp_path / "faults.json"
    connect = ConnectApp(
        csrf_token=TOKEN,
        unary={"Heartbeat": _heartbeat},
        streams={"StreamAgentStateUpdates": _updates},
    )
    injector = FaultInjector(connect, FaultSource(control_file=control))
    server = TlsConnectServer(injector)
    with server:
        yield server, control, injector


def write_faults(control: Path, *faults: dict[str, Any]) -> None:
    control.write_text(json.dumps({"faults": list(faults)}))


async def take(client: RpcClient, count: int, *, idle: float = 10.0) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    updates = client.stream_agent_state_updates("c1", idle_timeout=idle)
    async with contextlib.aclosing(updates):
        async for update in updates:
            got.append(update)
            if len(got) == count:
                break
    return got


async def drain(client: RpcClient, *, idle: float = 10.0) -> tuple[list[int], BaseException]:
    """Every update's number until the stream fails, and the failure."""
    seen: list[int] = []
    try:
        async for update in client.stream_agent_state_updates("c1", idle_timeout=idle):
            seen.append(update["update"]["n"])  # noqa: PERF401 - keep what came before the error
    except RpcError as exc:
        return seen, exc
    raise AssertionError(f"the stream ended cleanly after {seen}")


def run_client(port: int, scenario: Any) -> Any:
    async def main() -> Any:
        async with RpcClient(port=port, csrf_token=TOKEN) as client:
            result = await scenario(client)
            # Unary calls on the HTTP/2 connection, streams on HTTP/1.1 connections of their own.
            assert client.http_version in (None, "HTTP/2")
            assert client.stream_http_version in (None, "HTTP/1.1")
            return result

    return asyncio.run(main())


@pytest.mark.parametrize("mode", ["eof", "truncate"])
def test_dropped_stream_fails_the_client_after_k_frames(faulty_server: Any, mode: str) -> None:
    server, control, _ = faulty_server
    write_faults(
        control,
        {
            "kind": "drop_stream",
            "method": "StreamAgentStateUpdates",
            "after_frames": 2,
            "mode": mode,
        },
    )

    async def scenario(client: RpcClient) -> tuple[list[int], BaseException]:
        seen, error = await drain(client)
        await client.heartbeat()  # the connection for unary calls is unharmed
        return seen, error

    seen, error = run_client(server.port, scenario)
    assert seen == [0, 1]
    assert isinstance(error, ProtocolError)


def test_stalled_stream_trips_the_liveness_deadline(faulty_server: Any) -> None:
    server, control, _ = faulty_server
    write_faults(control, {"kind": "stall_stream", "after_frames": 1})
    seen, error = run_client(server.port, lambda client: drain(client, idle=0.5))
    assert seen == [0]
    assert isinstance(error, StreamStalled)


def test_http_error_then_recovery(faulty_server: Any) -> None:
    server, control, _ = faulty_server
    write_faults(control, {"kind": "http_error", "method": "Heartbeat", "status": 503, "times": 1})

    async def scenario(client: RpcClient) -> tuple[Code, dict[str, Any]]:
        with pytest.raises(RpcError) as caught:
            await client.call("Heartbeat", {})  # not retried: the fault is seen
        return caught.value.connect_code, await client.call("Heartbeat", {})

    code, answer = run_client(server.port, scenario)
    assert code is Code.UNAVAILABLE
    assert "lastExtensionHeartbeat" in answer


def test_idempotent_read_retries_through_transient_errors(faulty_server: Any) -> None:
    server, control, injector = faulty_server
    write_faults(control, {"kind": "http_error", "method": "Heartbeat", "times": 2})
    answer = run_client(server.port, lambda client: client.heartbeat())
    assert "lastExtensionHeartbeat" in answer
    assert injector.fired(FaultRule(FaultKind.HTTP_ERROR, method="Heartbeat", times=2)) == 2


@pytest.mark.parametrize("method", ["Heartbeat", "StreamAgentStateUpdates"])
def test_garbage_is_a_protocol_error(faulty_server: Any, method: str) -> None:
    server, control, _ = faulty_server
    write_faults(control, {"kind": "garbage", "method": method})

    async def scenario(client: RpcClient) -> BaseException | None:
        if method == "StreamAgentStateUpdates":
            return (await drain(client))[1]
        try:
            await client.call("Heartbeat", {})
        except RpcError as exc:
            return exc
        return None

    assert isinstance(run_client(server.port, scenario), ProtocolError)


def test_delay_holds_the_answer(faulty_server: Any) -> None:
    server, control, _ = faulty_server
    write_faults(control, {"kind": "delay", "method": "StreamAgentStateUpdates", "seconds": 30})

    async def scenario(client: RpcClient) -> bool:
        first = asyncio.create_task(take(client, 1))
        done, _ = await asyncio.wait({first}, timeout=0.5)
        first.cancel()
        await asyncio.gather(first, return_exceptions=True)
        await client.heartbeat()  # other methods answer at once
        return bool(done)

    assert run_client(server.port, scenario) is False


def test_reshape_renames_and_drops_keys_at_any_depth() -> None:
    shape = reshape_of(
        [
            FaultRule(FaultKind.RENAME_FIELD, field="modifiedResponse", to="text"),
            FaultRule(FaultKind.DROP_FIELD, field="modelUsage"),
            FaultRule(FaultKind.DELAY),
        ]
    )
    assert shape is not None
    step = {"plannerResponse": {"modifiedResponse": "hi"}, "metadata": {"modelUsage": {"a": 1}}}
    frame = {"update": {"steps": [step, {"modifiedResponse": ["x"]}]}}
    assert shape(frame) == {
        "update": {"steps": [{"plannerResponse": {"text": "hi"}, "metadata": {}}, {"text": ["x"]}]}
    }
    assert reshape_of([FaultRule(FaultKind.DELAY)]) is None


def test_a_reshaped_agy_over_tls(faulty_server: Any) -> None:
    """A renamed key in a unary answer and in every stream frame, only for its method; a key
    left out; no token checked where no_csrf applies, checked elsewhere."""
    server, control, _ = faulty_server
    write_faults(
        control,
        {
            "kind": "rename_field",
            "method": "Heartbeat",
            "field": "lastExtensionHeartbeat",
            "to": "renamed",
        },
        {"kind": "drop_field", "method": "StreamAgentStateUpdates", "field": "conversationId"},
        {"kind": "no_csrf", "method": "Heartbeat"},
    )

    async def scenario(client: RpcClient) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        return await client.heartbeat(), await take(client, 2)

    answer, frames = run_client(server.port, scenario)
    assert answer == {"renamed": "2026-01-01T00:00:00Z"}
    assert [f["update"] for f in frames] == [{"n": 0}, {"n": 1}]

    async def tokenless() -> tuple[dict[str, Any], BaseException | None]:
        async with RpcClient(port=server.port, csrf_token="") as client:
            answer = await client.heartbeat()  # no_csrf: taken without a token
            try:
                await take(client, 1)
            except RpcError as exc:
                return answer, exc
            return answer, None

    answer, refused = asyncio.run(tokenless())
    assert "renamed" in answer
    assert isinstance(refused, CsrfError)
    assert refused.http_status == 401
