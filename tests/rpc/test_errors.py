"""The error tree and connect codes."""

from __future__ import annotations

import pytest

from omnigent_agy.errors import (
    AgyError,
    Code,
    CsrfError,
    NonLoopbackHostError,
    ProtocolError,
    RpcError,
    StreamStalled,
    code_from_http_status,
    failure_for,
)
from omnigent_agy.rpc.wire import EndStream, EnvelopeDecoder, encode_envelope

# The connect protocol's code ↔ HTTP status table.
CONNECT_HTTP_STATUS = {
    "canceled": 499,
    "unknown": 500,
    "invalid_argument": 400,
    "deadline_exceeded": 504,
    "not_found": 404,
    "already_exists": 409,
    "permission_denied": 403,
    "resource_exhausted": 429,
    "failed_precondition": 400,
    "aborted": 409,
    "out_of_range": 400,
    "unimplemented": 501,
    "internal": 500,
    "unavailable": 503,
    "data_loss": 500,
    "unauthenticated": 401,
}


def test_there_are_exactly_the_sixteen_connect_codes() -> None:
    assert {code.value for code in Code} == set(CONNECT_HTTP_STATUS)


@pytest.mark.parametrize("code", list(Code), ids=[code.value for code in Code])
def test_every_code_travels_as_its_wire_string(code: Code) -> None:
    assert code.value == code.name.lower()
    assert Code.parse(code.value) is code
    assert code.http_status == CONNECT_HTTP_STATUS[code.value]
    # Decoded from an end-of-stream envelope exactly as a server would send it.
    decoder = EnvelopeDecoder()
    payload = {"error": {"code": code.value, "message": f"m-{code.value}"}}
    (end,) = decoder.feed(encode_envelope(payload, end_stream=True))
    assert isinstance(end, EndStream)
    assert end.error is not None
    assert (end.error.connect_code, end.error.message) == (code, f"m-{code.value}")
    error = RpcError(code, "boom", http_status=code.http_status, method="Heartbeat")
    assert str(error) == f"Heartbeat: [{code.value}] boom (HTTP {code.http_status})"


@pytest.mark.parametrize("value", ["", "UNAVAILABLE", "bogus", 14, None])
def test_an_unrecognised_code_is_unknown(value: object) -> None:
    assert Code.parse(value) is Code.UNKNOWN


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (400, Code.INTERNAL),
        (401, Code.UNAUTHENTICATED),
        (403, Code.PERMISSION_DENIED),
        (404, Code.UNIMPLEMENTED),
        (429, Code.UNAVAILABLE),
        (502, Code.UNAVAILABLE),
        (503, Code.UNAVAILABLE),
        (504, Code.UNAVAILABLE),
        (500, Code.UNKNOWN),
        (418, Code.UNKNOWN),
    ],
)
def test_an_http_status_without_a_code_maps_per_connect(status: int, code: Code) -> None:
    assert code_from_http_status(status) is code


def test_every_error_derives_from_the_root() -> None:
    for error_type in (RpcError, CsrfError, ProtocolError, StreamStalled, NonLoopbackHostError):
        assert issubclass(error_type, AgyError)
    for error_type in (CsrfError, ProtocolError, StreamStalled):
        assert issubclass(error_type, RpcError)
    assert issubclass(NonLoopbackHostError, ValueError)


@pytest.mark.parametrize(
    ("status", "says"),
    [(401, "none was sent"), (403, "Re-discover agy's port")],
    ids=["missing-401", "invalid-403"],
)
def test_a_csrf_error_says_what_to_do(status: int, says: str) -> None:
    error = CsrfError(code_from_http_status(status), "refused", http_status=status)
    assert says in str(error)
    assert "omnigent-agy doctor" in str(error)
    assert error.remediation is not None
    assert says in error.remediation


def test_a_plain_rpc_error_has_no_remediation() -> None:
    assert RpcError(Code.INTERNAL, "x").remediation is None


def test_protocol_errors_and_stalls_carry_their_codes() -> None:
    assert ProtocolError("bad").connect_code is Code.INTERNAL
    assert (
        ProtocolError("big", connect_code=Code.RESOURCE_EXHAUSTED).connect_code
        is Code.RESOURCE_EXHAUSTED
    )
    stalled = StreamStalled(2.5, method="StreamAgentStateUpdates")
    assert stalled.connect_code is Code.DEADLINE_EXCEEDED
    assert stalled.idle_timeout == 2.5
    assert "2.5 s" in str(stalled)


@pytest.mark.parametrize(
    ("error", "connect_code", "code"),
    [
        (RpcError(Code.UNAVAILABLE, "refused"), Code.UNAVAILABLE, "agy_unreachable"),
        (RpcError(Code.INTERNAL, "odd", http_status=200), Code.INTERNAL, "agy_protocol_error"),
        (RpcError(Code.NOT_FOUND, "no cascade"), Code.NOT_FOUND, "agy_rpc_failed"),
        (StreamStalled(1.0), Code.DEADLINE_EXCEEDED, "agy_unreachable"),
        (
            ProtocolError("big", connect_code=Code.RESOURCE_EXHAUSTED),
            Code.RESOURCE_EXHAUSTED,
            "agy_protocol_error",
        ),
    ],
)
def test_code_is_the_failure_code_and_the_wire_code_is_connect_code(
    error: RpcError, connect_code: Code, code: str
) -> None:
    # `.code` means one thing on every error: the failure a person sees.
    assert (error.connect_code, error.code, error.kind.code) == (connect_code, code, code)
    assert failure_for(error).code == code
