"""Handing freed heap back to the OS once a large frame's objects are garbage.

The stream (`connection.RpcConnection.stream`) calls `return_freed_memory` after large frames
and when it ends; `reading.sink.release` calls it after dropping a large batch of events.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable
from typing import Final

__all__ = ["LARGE_FRAME_BYTES", "return_freed_memory"]

# Freed memory is handed back to the OS right after a frame of `LAZY_FRAME_BYTES` or more (a
# snapshot of thousands of steps, docs/wire.md §4: 13 MB at 10,000), after every this many payload
# bytes of smaller frames (the growth frames of a long answer), and when the stream ends.
LARGE_FRAME_BYTES: Final = 4 * 1024 * 1024


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim  # glibc only
    except (OSError, AttributeError, TypeError):
        return None
    return trim


def return_freed_memory() -> None:
    """Hand the heap a large frame's objects grew back to the OS (glibc's ``malloc_trim``).

    glibc keeps freed heap pages for reuse, so after a 10,000-step snapshot was decoded and
    mapped the process would keep ~25 MB it no longer uses (docs/performance.md); the growth
    frames of a 1 MB answer leave ~10 MB. Elsewhere (no ``malloc_trim``) nothing happens.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
