"""The connect envelope codec (docs/wire.md §2), split every way a network can split it."""

from __future__ import annotations

import itertools
import json
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES

from omnigent_agy.errors import Code, ProtocolError
from omnigent_agy.rpc.wire import (
    DEFAULT_MAX_FRAME_BYTES,
    DataFrame,
    EndStream,
    EnvelopeDecoder,
    Frame,
    encode_envelope,
)


def steps_in(document: Any) -> Iterator[dict[str, Any]]:
    """Every step in a recorded file: a bare step, ``{"steps": [...]}`` or a list of either."""
    if isinstance(document, list):
        for item in document:
            yield from steps_in(item)
    elif isinstance(document, dict):
        if "type" in document:
            yield document
        elif isinstance(document.get("step"), dict):
            yield document["step"]
        elif isinstance(document.get("steps"), list):
            yield from steps_in(document["steps"])


def update_carrying(index: int, step: dict[str, Any]) -> dict[str, Any]:
    return {
        "update": {
            "conversationId": "c-1",
            "status": "CASCADE_RUN_STATUS_RUNNING",
            "mainTrajectoryUpdate": {
                "stepsUpdate": {"indices": [index], "steps": [step], "totalLength": 99}
            },
        }
    }


def messages_in(document: Any) -> list[dict[str, Any]]:
    """Stream messages for a recorded file: its own ``{"update"}`` frames when it is a
    recorded stream, else one update per step it holds."""
    items = document if isinstance(document, list) else [document]
    frames = [item for item in items if isinstance(item, dict) and "update" in item]
    if frames:
        return frames
    return [update_carrying(index, step) for index, step in enumerate(steps_in(document))]


def stream_of(messages: tuple[dict[str, Any], ...]) -> bytes:
    """The response body of a stream carrying ``messages``, then end-of-stream."""
    body = b"".join(encode_envelope(message) for message in messages)
    return body + encode_envelope({"metadata": {"k": "v"}}, end_stream=True)


def decode(chunks: list[bytes]) -> list[Frame]:
    decoder = EnvelopeDecoder()
    frames = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    decoder.close()
    return frames


def expected_frames(messages: list[dict[str, Any]]) -> list[Frame]:
    return [*(DataFrame(m) for m in messages), EndStream(error=None, metadata={"k": "v"})]


def assert_decodes_split_at(body: bytes, messages: list[dict[str, Any]], cuts: Any) -> None:
    expected = expected_frames(messages)
    for cut in cuts:
        assert decode([body[:cut], body[cut:]]) == expected, f"split at byte {cut}"
    # One byte per chunk: every boundary is a chunk boundary at once.
    assert decode([body[i : i + 1] for i in range(len(body))]) == expected


def envelope_edges(body: bytes) -> Iterator[int]:
    """Every cut inside each 5-byte prefix, and around the start, middle and end of each
    payload: all the places where the decoder changes what it waits for."""
    offset = 0
    while offset < len(body):
        (length,) = struct.unpack_from(">I", body, offset + 1)
        end = offset + 5 + length
        yield from range(offset, offset + 7)
        yield from (offset + 5 + length // 2, end - 1, end)
        offset = end


def recorded_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.json") if path.is_file())


def file_streams(path: Path, per_stream: int) -> Iterator[tuple[bytes, list[dict[str, Any]]]]:
    messages = messages_in(json.loads(path.read_text()))
    assert messages, f"{path.name} holds no steps or stream frames"
    for group in itertools.batched(messages, per_stream):
        yield stream_of(group), list(group)


# Decoding re-parses the whole body at each cut, so the cost of cutting everywhere grows
# with the square of a body's size: streams of two messages (three envelopes with the end)
# keep every cut of every payload affordable.
def test_project_recorded_steps_decode_at_every_byte_boundary() -> None:
    files = [
        path for path in recorded_files(FIXTURES / "recorded_steps") if "sim" not in path.parts
    ]
    if not files:
        pytest.skip("fixtures/recorded_steps/ holds no step files yet")
    for path in files:
        for body, messages in file_streams(path, per_stream=2):
            assert_decodes_split_at(body, messages, range(len(body) + 1))


def test_simulator_captures_decode_across_every_envelope_edge() -> None:
    # The simulator's captures are whole conversations of cumulative snapshots (half a MB):
    # each is cut at every byte at once (one-byte chunks) and at every envelope edge.
    files = recorded_files(FIXTURES / "recorded_steps" / "sim")
    if not files:
        pytest.skip("fixtures/recorded_steps/sim/ holds no captures yet")
    for path in files:
        for body, messages in file_streams(path, per_stream=1000):
            assert_decodes_split_at(body, messages, envelope_edges(body))


@pytest.mark.shared
def test_shared_recorded_steps_decode_at_every_byte_boundary(shared_recorded: Path) -> None:
    files = recorded_files(shared_recorded)
    assert files
    for path in files:
        for body, messages in file_streams(path, per_stream=2):
            assert_decodes_split_at(body, messages, range(len(body) + 1))


def test_an_envelope_is_flag_length_payload() -> None:
    assert encode_envelope({"a": 1}) == b"\x00\x00\x00\x00\x07" + b'{"a":1}'
    assert encode_envelope(b"{}", end_stream=True) == b"\x02\x00\x00\x00\x02{}"


def test_merged_envelopes_in_one_chunk_all_decode() -> None:
    body = (
        encode_envelope({"n": 1}) + encode_envelope({"n": 2}) + encode_envelope({}, end_stream=True)
    )
    assert decode([body]) == [DataFrame({"n": 1}), DataFrame({"n": 2}), EndStream()]


def test_an_end_of_stream_error_is_decoded() -> None:
    error = {"code": "resource_exhausted", "message": "quota", "details": [{"type": "x"}]}
    frames = decode([encode_envelope({"error": error}, end_stream=True)])
    assert len(frames) == 1
    end = frames[0]
    assert isinstance(end, EndStream)
    assert end.error is not None
    assert (end.error.connect_code, end.error.message) == (Code.RESOURCE_EXHAUSTED, "quota")
    assert end.error.details == ({"type": "x"},)


def test_an_end_of_stream_error_without_a_code_is_unknown() -> None:
    # agy's answer for the deprecated reactive stream (docs/wire.md §3) carries only a message.
    frames = decode(
        [encode_envelope({"error": {"message": "reactive state is deprecated"}}, end_stream=True)]
    )
    end = frames[0]
    assert isinstance(end, EndStream)
    assert end.error is not None
    assert end.error.connect_code is Code.UNKNOWN


def test_an_empty_end_of_stream_payload_is_a_clean_end() -> None:
    assert decode([b"\x02\x00\x00\x00\x00"]) == [EndStream()]


def test_nothing_at_all_is_no_frames() -> None:
    assert decode([]) == []


def prefix(flags: int, length: int) -> bytes:
    return struct.pack(">BI", flags, length)


MALFORMED = [
    pytest.param([prefix(1, 2) + b"{}"], Code.INTERNAL, id="compressed-flag"),
    pytest.param([prefix(0x80, 2) + b"{}"], Code.INTERNAL, id="unknown-flag"),
    pytest.param([prefix(0, 5) + b"{nope"], Code.INTERNAL, id="invalid-json"),
    pytest.param([prefix(0, 3) + b"\xff\xfe\xfd"], Code.INTERNAL, id="not-utf8"),
    pytest.param([prefix(0, 2) + b"[]"], Code.INTERNAL, id="json-not-an-object"),
    pytest.param([prefix(0, 3) + b"{}x"], Code.INTERNAL, id="an-object-then-garbage"),
    pytest.param([prefix(0, 4) + b"{}{}"], Code.INTERNAL, id="two-objects-in-one-payload"),
    pytest.param([prefix(0, 6) + b'{"a":}'], Code.INTERNAL, id="an-object-missing-a-value"),
    pytest.param([prefix(0, 4) + b"{}"], Code.INTERNAL, id="truncated-payload"),
    pytest.param([prefix(0, 2)[:3]], Code.INTERNAL, id="truncated-prefix"),
    pytest.param(
        [encode_envelope({}, end_stream=True) + encode_envelope({})],
        Code.INTERNAL,
        id="data-after-end-in-one-chunk",
    ),
    pytest.param(
        [encode_envelope({}, end_stream=True), encode_envelope({})],
        Code.INTERNAL,
        id="data-after-end-in-a-later-chunk",
    ),
    pytest.param(
        [prefix(0, DEFAULT_MAX_FRAME_BYTES + 1)], Code.RESOURCE_EXHAUSTED, id="oversized-frame"
    ),
]


@pytest.mark.parametrize(("chunks", "code"), MALFORMED)
def test_malformed_input_is_a_protocol_error(chunks: list[bytes], code: Code) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(chunks)
    assert caught.value.connect_code is code


@pytest.mark.parametrize(
    "payload",
    [
        pytest.param(b'{"a":[1,2.5,null,true],"b":{"c":"d"}}', id="plain"),
        pytest.param(b' {"a":1}\n', id="whitespace-around"),
        pytest.param('{"a":"\u00e9"}'.encode("utf-16-le"), id="utf-16"),
        pytest.param(b'\xef\xbb\xbf{"a":1}', id="utf-8-bom"),
        pytest.param(b'{"s":"\\ud800","t":"\xed\xa0\x80"}', id="lone-surrogates"),
        pytest.param('{"é":"ü"}'.encode(), id="non-ascii"),
    ],
)
def test_a_payload_decodes_as_json_loads_decodes_it(payload: bytes) -> None:
    # The decoder scans a plain UTF-8 object itself; every other payload goes to json.loads.
    assert decode([encode_envelope(payload)]) == [DataFrame(json.loads(payload))]


def test_an_oversized_frame_is_refused_at_its_prefix() -> None:
    # Memory stays bounded: the length is judged before a byte of payload is held.
    decoder = EnvelopeDecoder(max_frame_bytes=1024)
    assert decoder.feed(b"\x00\x00\x00") == []
    with pytest.raises(ProtocolError, match="1025 bytes exceeds the 1024-byte limit"):
        decoder.feed(b"\x04\x01")


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    payload = b'{"x":"' + b"a" * (1024 - 8) + b'"}'
    assert len(payload) == 1024
    decoder = EnvelopeDecoder(max_frame_bytes=1024)
    assert decoder.feed(encode_envelope(payload)) == [DataFrame({"x": "a" * (1024 - 8)})]


def test_ended_is_reported() -> None:
    decoder = EnvelopeDecoder()
    decoder.feed(encode_envelope({}))
    assert not decoder.ended
    decoder.feed(encode_envelope({}, end_stream=True))
    assert decoder.ended
