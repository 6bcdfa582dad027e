"""Connect envelopes: the framing of agy's streaming RPCs (WIRE.md §2).

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
import json.scanner
import struct
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from omnigent_agy.rpc.errors import Code, ProtocolError, RpcError

__all__ = [
    "DEFAULT_MAX_FRAME_BYTES",
    "FLAG_COMPRESSED",
    "FLAG_END_STREAM",
    "DataFrame",
    "EndStream",
    "EnvelopeDecoder",
    "Frame",
    "encode_envelope",
]

FLAG_COMPRESSED: Final = 0x01
FLAG_END_STREAM: Final = 0x02
# A sanity ceiling, not a budget: the first frame replays every step asked for (WIRE.md §4),
# about 1.9 KB a step, so a 10,000-step conversation sends 19 MB and agy may ignore the
# bounds asked for. The reader asks for only what its cursor needs; this refuses only a
# length no conversation reaches (a corrupt prefix), before any of it is buffered.
DEFAULT_MAX_FRAME_BYTES: Final = 512 * 1024 * 1024
_PREFIX: Final = struct.Struct(">BI")


@dataclass(frozen=True, slots=True)
class DataFrame:
    """One data message of a stream (``size``: its payload's bytes on the wire)."""

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
    :class:`~omnigent_agy.rpc.errors.ProtocolError`; after that the decoder is unusable.
    """

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._max_frame_bytes = max_frame_bytes
        # Bytes of an envelope not complete yet. A chunk that completes envelopes is parsed
        # in place: a frame is copied once (its payload slice), never through this buffer.
        self._buffer = bytearray()
        self._needed = _PREFIX.size  # bytes the buffered envelope needs before it completes
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
        if self._buffer:
            self._buffer += data
            if len(self._buffer) < self._needed:
                return []  # a large frame arriving chunk by chunk: no work until it is whole
            if self._needed == _PREFIX.size:
                self._needed += self._check_prefix(self._buffer, 0)[1]
                if len(self._buffer) < self._needed:
                    return []
            data = bytes(self._buffer)
            self._buffer.clear()
        frames: list[Frame] = []
        position, size = 0, len(data)
        while size - position >= _PREFIX.size:
            flags, length = self._check_prefix(data, position)
            end = position + _PREFIX.size + length
            if end > size:
                break
            frame = self._decode(flags, data[position + _PREFIX.size : end])
            position = end
            frames.append(frame)
            if isinstance(frame, EndStream):
                if position < size:
                    raise ProtocolError(
                        f"{size - position} bytes arrived after the end-of-stream envelope"
                    )
                return frames
        if position < size:
            self._buffer += data[position:] if position else data
            self._needed = _PREFIX.size
            if size - position >= _PREFIX.size:
                self._needed += self._check_prefix(self._buffer, 0)[1]
        return frames

    def close(self) -> None:
        """Declare the input finished; raises if it stopped inside an envelope."""
        if self._buffer:
            have = len(self._buffer)
            if have >= _PREFIX.size:
                have -= _PREFIX.size
            want = self._needed - _PREFIX.size if self._needed > _PREFIX.size else _PREFIX.size
            raise ProtocolError(
                f"truncated envelope: the stream ended after {have} of {want} bytes"
            )

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
                code=Code.RESOURCE_EXHAUSTED,
            )
        return flags, length

    def _decode(self, flags: int, payload: bytes) -> Frame:
        body = _loads_object(payload) if payload or not flags & FLAG_END_STREAM else {}
        if not flags & FLAG_END_STREAM:
            return DataFrame(body, len(payload))
        self._ended = True
        metadata = body.get("metadata")
        error = body.get("error")
        return EndStream(
            error=None if error is None else error_from_json(error),
            metadata=metadata if isinstance(metadata, dict) else {},
        )


def error_from_json(error: object, *, http_status: int | None = None) -> RpcError:
    """The RpcError described by a connect error object ``{"code", "message", "details"}``.

    Missing pieces are tolerated: WIRE.md §3 shows agy answering ``{"error":{"message"}}``
    without a code.
    """
    if not isinstance(error, dict):
        return RpcError(Code.UNKNOWN, f"malformed error: {error!r}"[:200], http_status=http_status)
    message = error.get("message")
    details = error.get("details")
    return RpcError(
        Code.parse(error.get("code")),
        message if isinstance(message, str) else "",
        http_status=http_status,
        details=details if isinstance(details, list) else (),
    )


# json's own C scanner. `json.loads` wraps it in several Python calls per payload (encoding
# detection, whitespace checks) that cost as much as a small frame's mapping; an object
# payload that scans whole from its first byte needs none of them (see `_loads_object`).
_SCAN: Final = json.scanner.make_scanner(json.JSONDecoder())  # type: ignore[arg-type]


def _loads_object(payload: bytes) -> dict[str, Any]:
    # Fast path: a UTF-8 JSON object from byte 0 to the end (what agy sends, WIRE.md §2),
    # decoded as json.loads decodes UTF-8. Anything else (whitespace around it, another
    # encoding, an error) takes json.loads, for the same value or the same error.
    if payload[:1] == b"{" and payload[1:2] != b"\x00":  # a NUL second byte: UTF-16
        try:
            text = payload.decode("utf-8", "surrogatepass")
            value, end = _SCAN(text, 0)
        except (UnicodeDecodeError, StopIteration, ValueError):
            pass
        else:
            if end == len(text):
                return value  # type: ignore[no-any-return] # "{" scans to a dict
    try:
        value = json.loads(payload)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"envelope payload is not valid JSON: {exc}") from exc
    if not isinstance(value, dict):
        raise ProtocolError(f"envelope payload is JSON {type(value).__name__}, not an object")
    return value
