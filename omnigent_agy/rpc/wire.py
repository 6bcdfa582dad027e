"""Connect envelopes: the framing of agy's streaming RPCs (docs/wire.md §2).

An envelope is ``[flags: 1 byte][length: 4 bytes big-endian][payload]``. Flag 0x00 is a
data message (JSON), flag 0x02 ends the stream and its JSON payload may carry
``{"error": {"code", "message", "details"}}`` and ``{"metadata": {}}``. Flag 0x01 says
the payload is compressed; compression is never negotiated with agy, so it is rejected.

Envelopes arrive split across network chunks and merged within them, so the decoder is
incremental: ``feed`` whatever bytes came in and get back the frames they completed.
An oversized length is rejected as soon as the 5-byte prefix is read, before any of the
payload is buffered, which keeps memory bounded whatever the server announces.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from omnigent_agy.errors import Code, ProtocolError, RpcError
from omnigent_agy.rpc.lazyjson import SCANNER, loads_lazily

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "FLAG_COMPRESSED",
    "FLAG_END_STREAM",
    "LAZY_FRAME_BYTES",
    "DataFrame",
    "EndStream",
    "EnvelopeDecoder",
    "Frame",
    "encode_envelope",
]

FLAG_COMPRESSED: Final = 0x01
FLAG_END_STREAM: Final = 0x02
# A sanity ceiling, not a budget: the first frame replays every step asked for (docs/wire.md §4),
# about 1.9 KB a step, so a 10,000-step conversation sends 19 MB and agy may ignore the
# bounds asked for. The reader asks for only what its cursor needs; this refuses only a
# length no conversation reaches (a corrupt prefix), before any of it is buffered.
DEFAULT_MAX_FRAME_BYTES: Final = 512 * 1024 * 1024
# A payload this large has its `lazy_array` decoded element by element (`EnvelopeDecoder`).
LAZY_FRAME_BYTES: Final = 1024 * 1024
_PREFIX: Final = struct.Struct(">BI")


@dataclass(slots=True)
class DataFrame:
    """One data message of a stream (``size``: its payload's bytes on the wire).

    Not frozen: one is made per frame, and a frozen dataclass's ``__init__`` sets each field
    through ``object.__setattr__``, a call per field (nothing changes a frame once made)."""

    message: dict[str, Any]
    size: int = field(default=0, compare=False)


@dataclass(frozen=True, slots=True)
class EndStream:
    """The end-of-stream envelope: ``error`` is None when the stream ended cleanly."""

    error: RpcError | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


type Frame = DataFrame | EndStream


def encode_envelope(message: Mapping[str, Any] | bytes, *, end_stream: bool = False) -> bytes:
    """One envelope holding ``message`` (JSON-encoded unless already bytes)."""
    payload = message if isinstance(message, bytes) else _dumps(message)
    flags = FLAG_END_STREAM if end_stream else 0
    return _PREFIX.pack(flags, len(payload)) + payload


def _dumps(message: Mapping[str, Any]) -> bytes:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()


class EnvelopeDecoder:
    """Incremental decoder for a stream of envelopes.

    ``feed`` returns the frames completed by the bytes so far; ``close`` checks that the
    stream did not stop in the middle of an envelope. Any protocol violation raises
    :class:`~omnigent_agy.errors.ProtocolError`; after that the decoder is unusable.

    ``lazy_array``: the path (keys of nested objects) of an array that, in a payload of
    `LAZY_FRAME_BYTES` or more, is decoded element by element as it is read (`lazyjson`):
    a stream's snapshot of thousands of steps is never one tree in memory.
    """

    def __init__(
        self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES, *, lazy_array: Sequence[str] = ()
    ) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._lazy_array = tuple(lazy_array)
        # An envelope begun in an earlier chunk: its prefix until that is whole, then its
        # payload in one buffer of the announced length, filled in place (a 13 MB frame
        # arriving in 64 KB chunks is neither regrown nor joined). A chunk that completes
        # envelopes is parsed in place: a frame is copied at most once (its payload slice).
        self._prefix = bytearray()
        self._flags = 0
        self._payload: bytearray | None = None
        self._filled = 0
        self._ended = False

    @property
    def ended(self) -> bool:
        """True once the end-of-stream envelope has been decoded."""
        return self._ended

    def feed(self, data: bytes) -> list[Frame]:
        """Add ``data`` and return every frame it completes, in order."""
        if not data:
            return []
        if self._ended:
            raise ProtocolError(f"{len(data)} bytes arrived after the end-of-stream envelope")
        frames: list[Frame] = []
        position, size = 0, len(data)
        if self._prefix or self._payload is not None:
            position = self._continue(data)
            if self._prefix or (self._payload is not None and self._filled < len(self._payload)):
                return frames  # still incomplete: no work until it is whole
            frames.append(self._complete())
        while not self._ended and size - position >= _PREFIX.size:
            flags, length = _PREFIX.unpack_from(data, position)
            if flags or length > self._max_frame_bytes:  # a data frame's prefix needs no call
                flags, length = self._check_prefix(data, position)
            start = position + _PREFIX.size
            position = start + length
            if position > size:
                self._begin(flags, length, memoryview(data)[start:])
                return frames
            # A large payload is decoded in place (its text is made from the chunk's bytes);
            # a small one is copied, which is cheaper than a memoryview's decoding path.
            if length >= LAZY_FRAME_BYTES and self._lazy_array:
                frames.append(self._decode(flags, memoryview(data)[start:position]))
            else:
                frames.append(self._decode(flags, data[start:position]))
        if position < size:
            if self._ended:
                raise ProtocolError(
                    f"{size - position} bytes arrived after the end-of-stream envelope"
                )
            self._prefix += data[position:]
        return frames

    def close(self) -> None:
        """Declare the input finished; raises if it stopped inside an envelope."""
        if self._payload is not None:
            have, want = self._filled, len(self._payload)
        elif self._prefix:
            have, want = len(self._prefix), _PREFIX.size
        else:
            return
        raise ProtocolError(f"truncated envelope: the stream ended after {have} of {want} bytes")

    def _continue(self, data: bytes) -> int:
        """Add the start of ``data`` to the envelope begun earlier; how much of it was used."""
        used = 0
        if self._payload is None:  # the prefix is not whole yet
            used = min(_PREFIX.size - len(self._prefix), len(data))
            self._prefix += data[:used]
            if len(self._prefix) < _PREFIX.size:
                return used
            flags, length = self._check_prefix(self._prefix, 0)
            self._prefix.clear()
            self._begin(flags, length, memoryview(data)[used : used + length])
            return used + min(length, len(data) - used)
        payload = self._payload
        used = min(len(payload) - self._filled, len(data))
        payload[self._filled : self._filled + used] = memoryview(data)[:used]
        self._filled += used
        return used

    def _begin(self, flags: int, length: int, start: memoryview) -> None:
        """Start buffering an envelope of ``length`` payload bytes; ``start`` came already."""
        self._flags = flags
        self._payload = bytearray(length)
        self._payload[: len(start)] = start
        self._filled = len(start)

    def _complete(self) -> Frame:
        payload, self._payload = self._payload, None
        assert payload is not None
        return self._decode(self._flags, payload)

    def _check_prefix(self, data: bytes | bytearray, position: int) -> tuple[int, int]:
        flags, length = _PREFIX.unpack_from(data, position)
        if flags & FLAG_COMPRESSED:
            raise ProtocolError("compressed envelope, but no compression was negotiated")
        if flags & ~FLAG_END_STREAM:
            raise ProtocolError(f"unknown envelope flags 0x{flags:02x}")
        if length > self._max_frame_bytes:
            # Checked before buffering the payload so a hostile length cannot grow memory.
            raise ProtocolError(
                f"envelope of {length} bytes exceeds the {self._max_frame_bytes}-byte limit",
                connect_code=Code.RESOURCE_EXHAUSTED,
            )
        return flags, length

    def _decode(self, flags: int, payload: bytes | bytearray | memoryview) -> Frame:
        size = len(payload)
        lazy = self._lazy_array if size >= LAZY_FRAME_BYTES else ()
        body = _loads_object(payload, lazy) if size or not flags & FLAG_END_STREAM else {}
        del payload
        if not flags & FLAG_END_STREAM:
            return DataFrame(body, size)
        self._ended = True
        metadata = body.get("metadata")
        error = body.get("error")
        return EndStream(
            error=None if error is None else error_from_json(error),
            metadata=metadata if isinstance(metadata, dict) else {},
        )


def error_from_json(
    error: object, *, http_status: int | None = None, code_missing: Code = Code.UNKNOWN
) -> RpcError:
    """The RpcError described by a connect error object ``{"code", "message", "details"}``.

    Missing pieces are tolerated: docs/wire.md §3 shows agy answering ``{"error":{"message"}}``
    without a code (then ``code_missing``).
    """
    if not isinstance(error, dict):
        return RpcError(Code.UNKNOWN, f"malformed error: {error!r}"[:200], http_status=http_status)
    message = error.get("message")
    details = error.get("details")
    return RpcError(
        Code.parse(error.get("code")) if "code" in error else code_missing,
        message if isinstance(message, str) else "",
        http_status=http_status,
        details=details if isinstance(details, list) else (),
    )


def _loads_object(
    payload: bytes | bytearray | memoryview, lazy_array: tuple[str, ...]
) -> dict[str, Any]:
    if lazy_array:  # a large payload (`EnvelopeDecoder`): its steps read one at a time
        return _checked(lambda: loads_lazily(payload, lazy_array))
    payload = bytes(payload) if isinstance(payload, memoryview) else payload
    # Fast path: a UTF-8 JSON object from byte 0 to the end (what agy sends, docs/wire.md §2),
    # decoded as json.loads decodes UTF-8, by json's C scanner without the Python calls
    # `json.loads` wraps it in (encoding detection, whitespace checks), which cost as much as
    # a small frame's mapping. Anything else (whitespace around it, another
    # encoding, an error) takes json.loads, for the same value or the same error.
    if payload[:1] == b"{" and payload[1:2] != b"\x00":  # a NUL second byte: UTF-16
        try:
            text = payload.decode("utf-8", "surrogatepass")
            value, end = SCANNER(text, 0)
        except (UnicodeDecodeError, StopIteration, ValueError):
            pass
        else:
            if end == len(text):
                return value  # type: ignore[no-any-return] # "{" scans to a dict
    return _checked(lambda: json.loads(payload))


def _checked(loads: Callable[[], object]) -> dict[str, Any]:
    try:
        value = loads()
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"envelope payload is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ProtocolError(f"envelope payload is JSON {type(value).__name__}, not an object")
    return value
