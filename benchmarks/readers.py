"""The two readers the benchmarks compare, each fed through its own functions.

- `PluginReader`: this plugin's path for one stream frame, `EnvelopeDecoder.feed` then
  `Follower.apply_frame` (map, publish, durable cursor), publishing to a list, and after a
  large frame the memory hand-back `RpcConnection.stream` does (its decoder reads a large
  frame's steps lazily, as the client's does).
- `BuiltinReader`: omnigent's built-in `antigravity-native` reader (in site-packages),
  driven as its own tests drive it: its `_frame_steps` and `_process_stream_step` with a
  fresh `_ReaderState`, and its `_post_event` swapped for a stub that appends to a list (the
  built-in posts every event to omnigent's server; the stub leaves that cost out, which
  favours the built-in). Its own stream decoding is `json.loads` of each payload, then the
  `update` unwrapped, as its `rpc.stream_agent_state_updates` does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from omnigent.harnesses.antigravity_native import reader as builtin

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.reader import Follower
from omnigent_agy.rpc.client import STEPS_PATH
from omnigent_agy.rpc.heap import LARGE_FRAME_BYTES, return_freed_memory
from omnigent_agy.rpc.wire import LAZY_FRAME_BYTES, DataFrame, EnvelopeDecoder


class ListSink:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def publish(self, event: Any) -> None:
        self.events.append(event)


class PluginReader:
    def __init__(self, cascade_id: str, cursor_dir: Path | None) -> None:
        self.sink = ListSink()
        cursor = CursorStore(cursor_dir) if cursor_dir is not None else None
        self.follower = Follower(
            cascade_id=cascade_id, sink=self.sink, cursor=cursor, model_names={}
        )
        self.decoder = EnvelopeDecoder(1 << 30, lazy_array=STEPS_PATH)  # as the client's
        self.decoded = 0

    def feed(self, envelope: bytes) -> None:
        frames = self.decoder.feed(envelope)
        while frames:
            frame = frames.pop(0)
            large = False
            if isinstance(frame, DataFrame):
                self.follower.apply_frame(frame.message)
                self.decoded += frame.size
                large = frame.size >= LAZY_FRAME_BYTES
            del frame
            if self.decoded >= LARGE_FRAME_BYTES or large:  # as RpcConnection.stream does
                self.decoded = 0
                return_freed_memory()

    @property
    def published(self) -> int:
        return len(self.sink.events)


class BuiltinReader:
    def __init__(self, cascade_id: str) -> None:
        self.cascade_id = cascade_id
        # The catalog pre-filled: the built-in would otherwise ask agy for it on a model change.
        self.state = builtin._ReaderState(seen=set(), interacted=set(), model_catalog={})
        self.client = httpx.AsyncClient()  # never used: _post_event is stubbed

    async def feed(self, envelope: bytes) -> None:
        parsed = json.loads(envelope[5:])
        update = parsed.get("update")
        update = update if isinstance(update, dict) else parsed
        for step in builtin._frame_steps(update):
            await self.feed_step(step)

    async def feed_step(self, step: dict[str, Any]) -> None:
        await builtin._process_stream_step(
            step,
            client=self.client,
            session_id="bench",
            cascade_id=self.cascade_id,
            state=self.state,
            on_pending_interaction=_no_interaction,
        )

    async def aclose(self) -> None:
        await self.client.aclose()


async def _no_interaction(*args: Any, **kwargs: Any) -> None:
    del args, kwargs


@contextlib.contextmanager
def builtin_stub_sink() -> Iterator[list[Any]]:
    """The built-in's every `_post_event` appends to the returned list instead of posting."""
    posted: list[Any] = []

    async def stub(client: Any, session_id: str, event: Any) -> None:
        del client, session_id
        posted.append(event)

    original = builtin._post_event
    builtin._post_event = stub  # type: ignore[assignment]
    try:
        yield posted
    finally:
        builtin._post_event = original  # type: ignore[assignment]
