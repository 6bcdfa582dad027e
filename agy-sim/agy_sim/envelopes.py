"""Connect envelopes as agy's language server writes and reads them (docs/wire.md §2).

An envelope is ``[flags: 1 byte][length: 4 bytes big-endian][JSON payload]``. Flag 0x00 is a
data message; flag 0x02 ends a stream, its payload ``{}`` or ``{"error": {"code",
"message"}}``; flag 0x01 (compressed) is never negotiated, so it is refused. A server stream's
request is exactly one data envelope.

agy-sim's own, on purpose: it does not import the plugin's codec (``omnigent_agy.rpc.wire``).
A simulator that frames with the client's code agrees with the client's mistakes, so a wrong
flag or length there would pass every test against agy-sim and fail against agy; written twice
from the protocol, a mistake on either side fails the tests. It also keeps agy-sim free of the
plugin, so it installs before it (docs/simulator.md, "What agy-sim shares with the plugin").
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["FLAG_END_STREAM", "decode_request", "encode_envelope"]

FLAG_END_STREAM: Final = 0x02
_PREFIX: Final = struct.Struct(">BI")


def encode_envelope(message: Mapping[str, Any], *, end_stream: bool = False) -> bytes:
    """One envelope holding ``message`` as compact UTF-8 JSON."""
    payload = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode()
    return _PREFIX.pack(FLAG_END_STREAM if end_stream else 0, len(payload)) + payload


def decode_request(body: bytes) -> dict[str, Any] | None:
    """The JSON object of a stream request's one data envelope, or None when ``body`` is
    anything else: cut short, more than one envelope, flags set, or not a JSON object."""
    if len(body) < _PREFIX.size:
        return None
    flags, length = _PREFIX.unpack_from(body)
    if flags or len(body) != _PREFIX.size + length:
        return None
    try:
        message = json.loads(body[_PREFIX.size :])
    except ValueError:  # not JSON, or not UTF-8
        return None
    return message if isinstance(message, dict) else None
