"""How much of each step's text the harness has handed to its host, kept where a killed harness
process leaves it (docs/reliability.md, "The harness process killed mid-turn").

The reader's durable cursor holds settled steps only (reading/reader.py): a harness process
killed while a step still generates leaves no word of how much of that step the host shows, and
the process that replaces it re-streams the step from offset 0. It could then only show the
shown part again or drop the rest. So the harness records every piece it hands over in this
ledger, a small memory-mapped file in the conversation's private state: a store into a shared
mapping costs no system call, and the kernel keeps it when the process dies, by SIGKILL too.
The next process starts from what the ledger says.

The file has two slots, written in turn, each ``[sequence u64][length u32][crc32 u32][JSON]``:
a kill in the middle of a write leaves the other slot valid, one piece behind (that piece is
then shown again; nothing is lost).
"""

from __future__ import annotations

import contextlib
import json
import logging
import mmap
import os
import struct
import zlib
from pathlib import Path
from typing import Final

__all__ = ["ShownLedger"]

_logger = logging.getLogger(__name__)

_SLOT: Final = 32 * 1024
_HEADER: Final = struct.Struct("<QII")
_MAX_PAYLOAD: Final = _SLOT - _HEADER.size


class ShownLedger:
    """Offsets shown per text stream (a string key), durable across a killed process."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._map: mmap.mmap | None = None
        self._sequence = 0
        self._offsets: dict[str, int] = {}

    def _mapping(self) -> mmap.mmap:
        if self._map is None:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            try:
                if os.fstat(fd).st_size != 2 * _SLOT:
                    os.ftruncate(fd, 2 * _SLOT)
                self._map = mmap.mmap(fd, 2 * _SLOT)
            finally:
                os.close(fd)  # the mapping keeps the file
        return self._map

    def load(self) -> dict[str, int]:
        """What the last writer (this process or a dead one) recorded; empty if unreadable."""
        try:
            mapping = self._mapping()
        except OSError as exc:
            _logger.warning("cannot open the shown-text ledger %s: %s", self.path, exc)
            return {}
        best: tuple[int, dict[str, int]] = (0, {})
        for slot in (0, 1):
            sequence, length, crc = _HEADER.unpack_from(mapping, slot * _SLOT)
            start = slot * _SLOT + _HEADER.size
            payload = bytes(mapping[start : start + min(length, _MAX_PAYLOAD)])
            if sequence <= best[0] or length > _MAX_PAYLOAD or zlib.crc32(payload) != crc:
                continue
            try:
                data = json.loads(payload)
            except ValueError:
                continue
            if isinstance(data, dict):
                offsets = {str(k): v for k, v in data.items() if isinstance(v, int) and v >= 0}
                best = (sequence, offsets)
        self._sequence, self._offsets = best[0], dict(best[1])
        return dict(self._offsets)

    def record(self, key: str, offset: int) -> None:
        """`offset` characters of stream `key` have been handed to the host."""
        self._offsets[key] = offset
        self._write()

    def clear(self) -> None:
        """Nothing is open any more (a turn ended): start the next one empty."""
        if self._offsets:
            self._offsets = {}
            self._write()

    def _write(self) -> None:
        payload = json.dumps(self._offsets, separators=(",", ":")).encode()
        while len(payload) > _MAX_PAYLOAD and self._offsets:
            # The oldest streams settled long ago; the ledger matters for the open ones.
            del self._offsets[next(iter(self._offsets))]
            payload = json.dumps(self._offsets, separators=(",", ":")).encode()
        try:
            mapping = self._mapping()
        except OSError as exc:
            _logger.warning("cannot write the shown-text ledger %s: %s", self.path, exc)
            return
        self._sequence += 1
        start = (self._sequence % 2) * _SLOT
        mapping[start + _HEADER.size : start + _HEADER.size + len(payload)] = payload
        _HEADER.pack_into(mapping, start, self._sequence, len(payload), zlib.crc32(payload))

    def close(self) -> None:
        if self._map is not None:
            with contextlib.suppress(BufferError, OSError):
                self._map.close()
            self._map = None
