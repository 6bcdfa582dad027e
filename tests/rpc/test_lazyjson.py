"""A large frame's steps decoded one at a time (rpc.lazyjson), and the decoder that uses it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from omnigent_agy.errors import ProtocolError
from omnigent_agy.rpc.lazyjson import LazyArray, loads_lazily
from omnigent_agy.rpc.wire import LAZY_FRAME_BYTES, DataFrame, EnvelopeDecoder, encode_envelope

PATH = ("update", "mainTrajectoryUpdate", "stepsUpdate", "steps")


def steps(count: int, size: int = 40) -> list[dict[str, Any]]:
    return [
        {"type": "CORTEX_STEP_TYPE_PLANNER_RESPONSE", "n": n, "text": 'é✓ "q"\\ ' * size}
        for n in range(count)
    ]


def update(items: object, **extra: object) -> dict[str, Any]:
    return {
        "update": {
            "conversationId": "c",
            "mainTrajectoryUpdate": {
                "stepsUpdate": {"indices": [0, 1], "steps": items, "totalLength": 2},
                **extra,
            },
            "status": "CASCADE_RUN_STATUS_RUNNING",
        }
    }


def plain(value: object) -> object:
    """`value` with every LazyArray read into a list (to compare with json.loads)."""
    if isinstance(value, LazyArray):
        return [plain(item) for item in value]
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def at_path(value: Any) -> Any:
    for key in PATH:
        value = value[key]
    return value


DOCUMENTS = [
    update(steps(5)),
    update(steps(1)),
    update([]),
    update([1, "two", None, [3], {"four": 4.5}, True]),
    update({"not": "an array"}),
    update("a string"),
    {"update": {"conversationId": "no steps at all"}},
    {"update": ["an array, not an object"]},
    [1, 2, 3],
    {},
]


@pytest.mark.parametrize("document", DOCUMENTS)
@pytest.mark.parametrize("spaces", [False, True], ids=["compact", "spaced"])
def test_decodes_what_json_loads_does(document: object, spaces: bool) -> None:
    # Go's protojson sprinkles spaces into its output; every gap may hold JSON whitespace.
    text = json.dumps(document, indent=1 if spaces else None, ensure_ascii=False)
    if spaces:
        text = f" \n\t{text.replace(':', ' :\t')}\r\n "
    payload = text.encode()
    decoded = loads_lazily(payload, PATH)
    assert plain(decoded) == json.loads(payload)


def test_an_array_of_several_elements_is_lazy_and_read_again_each_time() -> None:
    items = steps(4)
    decoded = at_path(loads_lazily(json.dumps(update(items)).encode(), PATH))
    assert isinstance(decoded, LazyArray)
    assert repr(decoded) == "LazyArray(4 elements)"
    assert len(decoded) == 4
    assert decoded[2] == items[2]
    assert decoded[-1] == items[-1]
    assert decoded[1:3] == items[1:3]
    first = decoded[0]
    first["n"] = "changed"
    assert decoded[0] == items[0]  # decoded afresh: nothing of an earlier read is kept
    assert list(decoded) == items


def test_an_array_of_one_element_is_a_plain_list() -> None:
    # A growth frame re-sends one step: decoding it twice would double its cost for nothing.
    decoded = at_path(loads_lazily(json.dumps(update(steps(1))).encode(), PATH))
    assert decoded == steps(1)
    assert type(decoded) is list


@pytest.mark.parametrize(
    "text",
    [
        '{"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"steps": [1, 2 3]}}}}',
        '{"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"steps": [1, 2,]}}}}',
        '{"update": {"mainTrajectoryUpdate": {"stepsUpdate": {"steps": [1, 2]',
        '{"update": {"mainTrajectoryUpdate" {"stepsUpdate": {}}}}',
        '{"update": {mainTrajectoryUpdate: {}}}',
        '{"update": {"a": 1 "b": 2}}',
        '{"update": {}} trailing',
        "",
    ],
)
def test_malformed_json_is_refused_as_json_loads_refuses_it(text: str) -> None:
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    with pytest.raises(json.JSONDecodeError):
        loads_lazily(text.encode(), PATH)


def test_bad_utf8_is_refused() -> None:
    with pytest.raises(UnicodeDecodeError):
        loads_lazily(b'{"update": "\xff"}', PATH)


def big_update(count: int) -> dict[str, Any]:
    """An update whose payload reaches LAZY_FRAME_BYTES (a snapshot of many steps)."""
    size = LAZY_FRAME_BYTES // count // 9 + 1
    return update(steps(count, size))


@pytest.mark.parametrize("chunk", [1 << 16, 7, 10**9], ids=["64KB", "7B", "whole"])
def test_the_decoder_reads_a_large_frames_steps_lazily_however_it_arrives(chunk: int) -> None:
    message = big_update(50)
    data = encode_envelope(message) + encode_envelope({"small": [1, 2]})
    data += encode_envelope(b"", end_stream=True)
    assert len(data) > LAZY_FRAME_BYTES
    decoder = EnvelopeDecoder(lazy_array=PATH)
    frames = []
    for start in range(0, len(data), chunk):
        frames += decoder.feed(data[start : start + chunk])
    decoder.close()
    assert decoder.ended
    big, small = frames[0], frames[1]
    assert isinstance(big, DataFrame)
    assert isinstance(at_path(big.message), LazyArray)
    assert plain(big.message) == message
    assert big.size == len(encode_envelope(message)) - 5
    assert isinstance(small, DataFrame)
    assert small.message == {"small": [1, 2]}


def test_without_a_lazy_path_or_below_the_size_a_frame_is_decoded_whole() -> None:
    message = big_update(50)
    (frame,) = EnvelopeDecoder().feed(encode_envelope(message))
    assert isinstance(frame, DataFrame)
    assert type(at_path(frame.message)) is list
    (frame,) = EnvelopeDecoder(lazy_array=PATH).feed(encode_envelope(update(steps(5))))
    assert isinstance(frame, DataFrame)
    assert type(at_path(frame.message)) is list


def test_a_large_frame_of_bad_json_is_a_protocol_error() -> None:
    payload = json.dumps(big_update(50)).encode()[:-1]  # the last brace missing
    decoder = EnvelopeDecoder(lazy_array=PATH)
    with pytest.raises(ProtocolError, match="not valid JSON"):
        decoder.feed(encode_envelope(payload))


def test_a_truncated_large_frame_says_how_much_came() -> None:
    data = encode_envelope(big_update(50))
    decoder = EnvelopeDecoder(lazy_array=PATH)
    assert decoder.feed(data[:-10]) == []
    with pytest.raises(ProtocolError, match=f"after {len(data) - 15} of {len(data) - 5} bytes"):
        decoder.close()
