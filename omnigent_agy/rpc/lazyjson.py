"""A large frame decoded without its whole tree: one array's elements decoded when read.

The first frame of a stream replays every step asked for (docs/wire.md §4): 13 MB at 10,000
steps, and `json.loads` of it builds about 60 MB of objects at once. Freed, they leave the
allocator's heap and obmalloc's arenas grown, and whatever the reader allocated meanwhile (its
state, the events it published) pins pages and arenas the hand-back cannot return
(docs/performance.md). Decoded here, the frame is its text plus, at any moment, the one step
being read: the array at ``path`` is a `LazyArray` of where its elements start, each element
decoded by the JSON scanner when it is read and garbage once the reader has mapped it.

Finding where the elements start decodes each of them once, and reading decodes it again: a
large frame costs about twice `json.loads`'s CPU (``loads_lazily`` is only for large frames).
Everything else in the frame is decoded as `json.loads` would, with the same errors.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Sequence
from json.scanner import make_scanner
from typing import Any, Final, cast, overload

__all__ = ["SCANNER", "LazyArray", "loads_lazily"]

# json's own scanner (the C one), as `json.loads` uses it: (text, index) → (value, end);
# StopIteration(index) on bad input. (typeshed types its argument as the scanner itself.)
SCANNER: Final = make_scanner(cast("make_scanner", json.JSONDecoder()))
_SPACE: Final = frozenset(" \t\n\r")


class LazyArray(Sequence[Any]):
    """A JSON array of a large frame: its elements, decoded again each time one is read."""

    __slots__ = ("__weakref__", "_starts", "_text")

    def __init__(self, text: str, starts: array[int]) -> None:
        self._text = text
        self._starts = starts

    def __len__(self) -> int:
        return len(self._starts)

    @overload
    def __getitem__(self, index: int) -> Any: ...
    @overload
    def __getitem__(self, index: slice) -> list[Any]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return [self._element(start) for start in self._starts[index]]
        return self._element(self._starts[index])

    def __iter__(self) -> Iterator[Any]:
        for start in self._starts:
            yield self._element(start)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} elements)"

    def _element(self, start: int) -> Any:
        return SCANNER(self._text, start)[0]


def loads_lazily(payload: bytes | bytearray | memoryview, path: Sequence[str]) -> Any:
    """`json.loads(payload)`, except that an array found at ``path`` (keys of nested objects)
    is a `LazyArray` when it has more than one element. Raises `json.JSONDecodeError` (or
    `UnicodeDecodeError`) where `json.loads` would."""
    data = bytes(payload[:4])
    text = str(payload, json.detect_encoding(data), "surrogatepass")
    del payload  # the caller's buffer may go once the text exists
    index = _skip(text, 0)
    value, index = _value(text, index, tuple(path))
    index = _skip(text, index)
    if index != len(text):
        raise json.JSONDecodeError("Extra data", text, index)
    return value


def _value(text: str, index: int, path: tuple[str, ...]) -> tuple[Any, int]:
    opening = text[index : index + 1]
    if path and opening == "{":
        return _object(text, index + 1, path)
    if not path and opening == "[":
        return _array(text, index + 1)
    return _decoded(text, index)


def _object(text: str, index: int, path: tuple[str, ...]) -> tuple[dict[str, Any], int]:
    result: dict[str, Any] = {}
    index = _skip(text, index)
    if text.startswith("}", index):
        return result, index + 1
    while True:
        if not text.startswith('"', index):
            raise json.JSONDecodeError(
                "Expecting property name enclosed in double quotes", text, index
            )
        key, index = _decoded(text, index)
        index = _skip(text, index)
        if not text.startswith(":", index):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, index)
        index = _skip(text, index + 1)
        if key == path[0]:
            result[key], index = _value(text, index, path[1:])
        else:
            result[key], index = _decoded(text, index)
        index = _skip(text, index)
        if text.startswith("}", index):
            return result, index + 1
        if not text.startswith(",", index):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, index)
        index = _skip(text, index + 1)


def _array(text: str, index: int) -> tuple[list[Any] | LazyArray, int]:
    starts: array[int] = array("q")
    first: Any = None
    index = _skip(text, index)
    if text.startswith("]", index):
        return [], index + 1
    while True:
        starts.append(index)
        # Decoded only to find where it ends, then dropped (the first one is kept: an array
        # of one element, a growth frame's, is returned decoded, not decoded twice).
        element, index = _decoded(text, index)
        first = element if len(starts) == 1 else None
        del element
        index = _skip(text, index)
        if text.startswith("]", index):
            return ([first] if len(starts) == 1 else LazyArray(text, starts)), index + 1
        if not text.startswith(",", index):
            raise json.JSONDecodeError("Expecting ',' delimiter", text, index)
        index = _skip(text, index + 1)


def _decoded(text: str, index: int) -> tuple[Any, int]:
    try:
        value, end = SCANNER(text, index)
    except StopIteration as exc:
        raise json.JSONDecodeError("Expecting value", text, exc.value) from None
    return value, end


def _skip(text: str, index: int) -> int:
    """The index of the first character at or after ``index`` that is not JSON whitespace."""
    while index < len(text) and text[index] in _SPACE:
        index += 1
    return index
