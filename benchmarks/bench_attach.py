"""Reconnect, poll and restart cost as the conversation grows; memory kept.

Run: `.venv/bin/python benchmarks/bench_attach.py [--quick]`. Against benchmarks/frameserver.py
(its own process, real TLS) with a history of H steps (≈ 1.5 KB each):

- **reconnect**: a reader with a durable cursor opens the stream again and has the first
  frame applied (the plugin asks from its cursor, `initialStepsPageBounds`; the built-in
  has no cursor: agy replays all H steps and its `seen` set drops them);
- **poll**: one catch-up poll (the plugin from its first uncommitted step; the built-in's
  `get_trajectory_steps` reads the whole trajectory);
- **restart**: items published again by a restarted reader fed the same first frame as a
  fresh process (the plugin restores its cursor; the built-in starts with an empty state);
- **RSS kept** (each in a fresh process): after a 10,000-step snapshot frame and after a
  1 MB answer streamed in 1,000 growth frames, the frames themselves dropped. The floor
  decodes each frame and drops it, then hands freed memory back as the plugin does after a
  large frame (without that, glibc keeps ~25 MB after the snapshot's decode alone).

Wall-clock milliseconds, medians of 3. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from common import FrameServer, frame_server, median_of, options, spec, table
from frameserver import Script
from omnigent.harnesses.antigravity_native import rpc as builtin_rpc
from readers import BuiltinReader, PluginReader, builtin_stub_sink

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.follower import Follower
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.connection import return_freed_memory
from omnigent_agy.rpc.wire import encode_envelope

RUNNING = "CASCADE_RUN_STATUS_RUNNING"


def cursor_after_history(conversation: str, history: int, directory: Path) -> None:
    """A durable cursor that has seen the whole history (what a running reader leaves)."""
    plan = Script(conversation)
    first = plan.update(list(range(history)), plan.shaped, RUNNING)
    reader = PluginReader(conversation, directory)
    reader.follower.apply_frame(first)
    reader.follower.save_cursor()


def plugin_reconnect(server: FrameServer, conversation: str, directory: Path) -> float:
    async def main() -> float:
        follower = Follower(
            cascade_id=conversation,
            sink=_Null(),
            cursor=CursorStore(directory),
            model_names={},
        )
        async with RpcClient(port=server.port, csrf_token=server.token) as client:
            await client.heartbeat()
            started = time.perf_counter()
            start = follower.follow.first_uncommitted() or None
            updates = client.stream_agent_state_updates(conversation, start_index=start)
            async with contextlib.aclosing(updates):
                follower.apply_frame(await anext(updates))
            return time.perf_counter() - started

    return asyncio.run(main())


def builtin_reconnect(server: FrameServer, conversation: str, history: int) -> float:
    async def main() -> float:
        reader = BuiltinReader(conversation)
        with builtin_stub_sink():
            plan = Script(conversation)
            await reader.feed(
                encode_envelope(plan.update(list(range(history)), plan.shaped, RUNNING))
            )
            started = time.perf_counter()
            updates = builtin_rpc.stream_agent_state_updates(server.port, conversation)
            async with contextlib.aclosing(updates):
                update = await anext(updates)
                for step in update["mainTrajectoryUpdate"]["stepsUpdate"]["steps"]:
                    await reader.feed_step(step)
            elapsed = time.perf_counter() - started
        await reader.aclose()
        return elapsed

    return asyncio.run(main())


def plugin_poll(server: FrameServer, conversation: str, history: int) -> float:
    async def main() -> float:
        async with RpcClient(port=server.port, csrf_token=server.token) as client:
            await client.heartbeat()
            started = time.perf_counter()
            await client.get_cascade_trajectory_steps(conversation, step_offset=history)
            await client.get_all_cascade_trajectories()
            return time.perf_counter() - started

    return asyncio.run(main())


def builtin_poll(server: FrameServer, conversation: str) -> float:
    started = time.perf_counter()
    builtin_rpc.get_trajectory_steps(server.port, conversation)
    return time.perf_counter() - started


def republished(conversation: str, history: int, directory: Path) -> tuple[int, int]:
    plan = Script(conversation)
    first = encode_envelope(plan.update(list(range(history)), plan.shaped, RUNNING))
    restarted = PluginReader(conversation, directory)
    restarted.feed(first)

    async def theirs() -> int:
        reader = BuiltinReader(conversation)
        with builtin_stub_sink() as posted:
            await reader.feed(first)
        await reader.aclose()
        return len(posted)

    return restarted.published, asyncio.run(theirs())


class _Null:
    def publish(self, event: Any) -> None:
        del event


# --- RSS, each case in a fresh process --------------------------------------------------------


def rss_case(reader: str, case: str, scale: int) -> float:
    """MB of RSS a reader keeps after `case`, measured in this (fresh) process."""
    history, frames, chars = (10_000, 0, 0) if case == "snapshot" else (0, 100, 10_000)
    history, chars = history // scale, chars // scale
    conversation = spec(history, frames, chars=chars)
    plan = Script(conversation)
    snapshot = encode_envelope(plan.update(list(range(history)), plan.shaped, RUNNING))
    plan.cascade.steps.clear()
    plan.shaped.clear()

    def envelopes() -> Iterator[bytes]:  # made one at a time: the frames are not counted
        yield snapshot
        for n in range(1, frames + 1):
            yield encode_envelope(plan.update([history], [plan.growing(n)], RUNNING))
        if frames:
            yield encode_envelope(plan.update([history], [plan.done()], RUNNING))

    return_freed_memory()  # also loads what the hand-back needs, before the baseline
    process = psutil.Process()
    before = process.memory_info().rss
    with tempfile.TemporaryDirectory() as directory:
        if reader == "floor":  # decode and drop, then the same hand-back as the plugin's
            for envelope in envelopes():
                json.loads(envelope[5:])
            keep: object = None
        elif reader == "plugin":
            ours = PluginReader(conversation, Path(directory))
            for envelope in envelopes():
                ours.feed(envelope)
            ours.sink.events.clear()  # what the consumer took is not the reader's
            keep = ours
        else:

            async def feed() -> BuiltinReader:
                theirs = BuiltinReader(conversation)
                with builtin_stub_sink() as posted:
                    for envelope in envelopes():
                        await theirs.feed(envelope)
                    posted.clear()
                await theirs.aclose()
                return theirs

            keep = asyncio.run(feed())
        if reader == "floor":
            return_freed_memory()
        gc.collect()
        after = process.memory_info().rss
        del keep
    return (after - before) / 1e6


def plan_id(history: int, answer_frames: int) -> str:
    return spec(history, answer_frames, chars=1_000)


def rss(reader: str, case: str, scale: int) -> float:
    output = subprocess.run(
        [sys.executable, __file__, "--rss", reader, case, str(scale)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return float(json.loads(output.splitlines()[-1])["mb"])


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--rss":
        print(json.dumps({"mb": rss_case(sys.argv[2], sys.argv[3], int(sys.argv[4]))}))
        return
    args = options(__doc__ or "")
    sizes, runs = ((100, 1_000), 1) if args.quick else ((100, 1_000, 10_000, 20_000), 3)
    scale = 20 if args.quick else 1  # the quick run's RSS cases: 500 steps, a 50 KB answer
    rows = []
    with frame_server() as server, tempfile.TemporaryDirectory() as root:
        for history in sizes:
            conversation = spec(history, 0)
            directory = Path(root) / str(history)
            cursor_after_history(conversation, history, directory)
            again, theirs_again = republished(conversation, history, directory)
            builtin_poll(server, conversation)  # warm-up: the server builds the history once
            measures = [
                partial(plugin_reconnect, server, conversation, directory),
                partial(builtin_reconnect, server, conversation, history),
                partial(plugin_poll, server, conversation, history),
                partial(builtin_poll, server, conversation),
            ]
            figures = [median_of(runs, measure) * 1e3 for measure in measures]
            rows.append([history, *figures, again, theirs_again])
    table(
        f"Reconnect, poll and restart by conversation length (ms, medians of {runs})",
        [
            "steps",
            "reconnect plugin",
            "reconnect built-in",
            "poll plugin",
            "poll built-in",
            "re-published plugin",
            "re-published built-in",
        ],
        rows,
    )
    rows = [
        [case, *(rss(reader, case, scale) for reader in ("floor", "plugin", "builtin"))]
        for case in ("snapshot", "answer")
    ]
    table(
        f"RSS kept (MB) after a {10_000 // scale:,}-step snapshot, after a "
        f"{1_000 // scale:,} KB answer (each in a fresh process)",
        ["case", "json.loads floor", "plugin", "built-in"],
        rows,
    )


if __name__ == "__main__":
    main()
