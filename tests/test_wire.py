"""The connect envelope codec (WIRE.md §2), split every way a network can split it."""

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
from omnigent_agy.wire import DataFrame, EndStream, EnvelopeDecoder, Frame, encode_envelope


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


def stream_of(steps: tuple[dict[str, Any], ...]) -> tuple[bytes, list[dict[str, Any]]]:
    """A StreamAgentStateUpdates body: one update envelope per step, then end-of-stream."""
    messages = [
        {
            "update": {
                "conversationId": "c-1",
                "status": "CASCADE_RUN_STATUS_RUNNING",
                "mainTrajectoryUpdate": {
                    "stepsUpdate": {"indices": [index], "steps": [step], "totalLength": 99}
                },
            }
        }
        for index, step in enumerate(steps)
    ]
    body = b"".join(encode_envelope(message) for message in messages)
    return body + encode_envelope({"metadata": {"k": "v"}}, end_stream=True), messages


def assert_file_decodes_at_every_split(path: Path) -> None:
    steps = list(steps_in(json.loads(path.read_text())))
    assert steps, f"{path.name} holds no steps"
    # Streams of a few envelopes each: every byte boundary of every step is still cut,
    # without the quadratic cost of re-decoding a whole long file per cut.
    for group in itertools.batched(steps, 3):
        assert_decodes_at_every_split(*stream_of(group))


def decode(chunks: list[bytes]) -> list[Frame]:
    decoder = EnvelopeDecoder()
    frames = [frame for chunk in chunks for frame in decoder.feed(chunk)]
    decoder.close()
    return frames


def assert_decodes_at_every_split(body: bytes, messages: list[dict[str, Any]]) -> None:
    expected: list[Frame] = [DataFrame(m) for m in messages]
    expected.append(EndStream(error=None, metadata={"k": "v"}))
    for cut in range(len(body) + 1):
        assert decode([body[:cut], body[cut:]]) == expected, f"split at byte {cut}"
    assert decode([body[i : i + 1] for i in range(len(body))]) == expected


def recorded_files(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob("*.json") if path.is_file())


def test_project_recorded_steps_decode_at_every_byte_boundary() -> None:
    files = recorded_files(FIXTURES / "recorded_steps")
    if not files:
        pytest.skip("fixtures/recorded_steps/ holds no step files yet")
    for path in files:
        assert_file_decodes_at_every_split(path)


@pytest.mark.shared
def test_shared_recorded_steps_decode_at_every_byte_boundary(shared_recorded: Path) -> None:
    files = recorded_files(shared_recorded)
    assert files
    for path in files:
        assert_file_decodes_at_every_split(path)


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
    assert (end.error.code, end.error.message) == (Code.RESOURCE_EXHAUSTED, "quota")
    assert end.error.details == ({"type": "x"},)


def test_an_end_of_stream_error_without_a_code_is_unknown() -> None:
    # agy's answer for the deprecated reactive stream (WIRE.md §3) carries only a message.
    frames = decode(
        [encode_envelope({"error": {"message": "reactive state is deprecated"}}, end_stream=True)]
    )
    end = frames[0]
    assert isinstance(end, EndStream)
    assert end.error is not None
    assert end.error.code is Code.UNKNOWN


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
    pytest.param([prefix(0, 17 * 1024 * 1024)], Code.RESOURCE_EXHAUSTED, id="oversized-frame"),
]


@pytest.mark.parametrize(("chunks", "code"), MALFORMED)
def test_malformed_input_is_a_protocol_error(chunks: list[bytes], code: Code) -> None:
    with pytest.raises(ProtocolError) as caught:
        decode(chunks)
    assert caught.value.code is code


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
