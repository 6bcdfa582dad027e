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
  1 MB answer streamed in 100 growth frames, read over TLS from the frame server as from agy,
  once each reader has read a tiny conversation of the same shape (its one-time costs out of
  the window), with a consumer that holds every event until the stream ends or takes each as
  published. The floor reads the same stream, `json.loads` each payload and drops it, then
  hands freed memory back once (without that, glibc keeps ~25 MB after the snapshot's
  decode alone).

Wall-clock milliseconds, medians of 3. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import os
import ssl
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import psutil
from common import FrameServer, frame_server, median_of, options, spec, table
from frameserver import Script
from omnigent.harnesses.antigravity_native import reader as builtin
from omnigent.harnesses.antigravity_native import rpc as builtin_rpc
from readers import BuiltinReader, ListSink, PluginReader, builtin_stub_sink

from omnigent_agy.reading.cursor import CursorStore
from omnigent_agy.reading.reader import Follower
from omnigent_agy.reading.sink import release
from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.connection import CSRF_HEADER, SERVICE
from omnigent_agy.rpc.heap import return_freed_memory
from omnigent_agy.rpc.wire import encode_envelope

RUNNING = "CASCADE_RUN_STATUS_RUNNING"
READERS = ("floor", "plugin", "builtin")
_SERVER_ENV = "BENCH_FRAME_SERVER"  # the RSS child's way to the parent's frame server


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


def rss_case(reader: str, case: str, consumer: str, scale: int, server: FrameServer) -> float:
    """MB of RSS a reader keeps after reading `case` from the frame server, in this (fresh)
    process: the frames come over TLS as from agy, so the process holds only what the
    reader's transport and decoder make of them. `consumer` "holds" every event published
    until the stream has ended (as the plugin's sink holds them between turns), or "takes"
    each as it is published and drops it (as during a turn; the built-in posts each inline)."""
    history, frames, chars = (10_000, 0, 0) if case == "snapshot" else (0, 100, 10_000)
    history, chars = history // scale, chars // scale
    # One-time costs out of the window, alike for all three: the same reader first reads a
    # tiny conversation of the same shape over the same path (imports, caches, TLS and HTTP
    # machinery, the built-in's CA store, the hand-back's libc lookup), and is dropped.
    warm_up = spec(history and 2, frames and 2, chars=chars)
    asyncio.run(read_with(reader, server, warm_up, consumer))
    gc.collect()
    return_freed_memory()
    process = psutil.Process()
    before = process.memory_info().rss
    keep = asyncio.run(read_with(reader, server, spec(history, frames, chars=chars), consumer))
    gc.collect()
    after = process.memory_info().rss
    del keep
    return (after - before) / 1e6


async def read_with(reader: str, server: FrameServer, conversation: str, consumer: str) -> object:
    """Read the whole stream with `reader`; what it keeps afterwards (the events published
    were the consumer's, and it has dropped them)."""
    holds = consumer == "holds"
    if reader == "floor":
        await floor_stream(server, conversation)
        return None
    if reader == "plugin":
        with tempfile.TemporaryDirectory() as directory:
            sink = ListSink() if holds else _Null()
            follower = Follower(
                cascade_id=conversation,
                sink=sink,
                cursor=CursorStore(Path(directory)),
                model_names={},
            )
            async with RpcClient(port=server.port, csrf_token=server.token) as client:
                updates = client.stream_agent_state_updates(conversation, idle_timeout=60)
                async with contextlib.aclosing(updates):
                    async for message in updates:
                        follower.apply_frame(message)
                        del message
            if isinstance(sink, ListSink):
                # What the consumer took is not the reader's; the session drops events held
                # between turns as here, at the next turn's start.
                release(sink.events)
            return follower
    theirs = BuiltinReader(conversation)
    with builtin_stub_sink() as posted:
        async for update in builtin_rpc.stream_agent_state_updates(server.port, conversation):
            for step in builtin._frame_steps(update):
                await theirs.feed_step(step)
                if not holds:
                    posted.clear()
            del update
        posted.clear()
    await theirs.aclose()
    return theirs


async def floor_stream(server: FrameServer, conversation: str) -> None:
    """The floor: the stream's bytes over the same TLS, each payload `json.loads`-ed and
    dropped, then freed memory handed back once as the plugin does after large frames."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the frame server's certificate is self-signed
    headers = {
        "Content-Type": "application/connect+json",
        "Connect-Protocol-Version": "1",
        CSRF_HEADER: server.token,
    }
    async with httpx.AsyncClient(verify=context) as http:
        request = http.stream(
            "POST",
            f"https://127.0.0.1:{server.port}/{SERVICE}/StreamAgentStateUpdates",
            content=encode_envelope({"conversationId": conversation}),
            headers=headers,
            timeout=60,
        )
        async with request as response:
            buffer = bytearray()
            async for chunk in response.aiter_raw():
                buffer += chunk
                while len(buffer) >= 5:
                    end = 5 + int.from_bytes(buffer[1:5])
                    if len(buffer) < end:
                        break
                    if buffer[0] == 0:
                        json.loads(buffer[5:end])
                    del buffer[:end]
    return_freed_memory()


def plan_id(history: int, answer_frames: int) -> str:
    return spec(history, answer_frames, chars=1_000)


def rss(reader: str, case: str, consumer: str, scale: int, server: FrameServer) -> float:
    env = {**os.environ, _SERVER_ENV: json.dumps({"port": server.port, "token": server.token})}
    output = subprocess.run(
        [sys.executable, __file__, "--rss", reader, case, consumer, str(scale)],
        capture_output=True,
        text=True,
        check=True,
        env=env,  # not on the command line: the token is a credential
    ).stdout
    return float(json.loads(output.splitlines()[-1])["mb"])


def main() -> None:
    if len(sys.argv) == 6 and sys.argv[1] == "--rss":
        address = json.loads(os.environ[_SERVER_ENV])
        server = FrameServer(address["port"], address["token"], None)
        reader, case, consumer, scale = sys.argv[2:]
        print(json.dumps({"mb": rss_case(reader, case, consumer, int(scale), server)}))
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
        memory = [
            [
                case,
                f"{consumer} the events",
                *(rss(reader, case, consumer, scale, server) for reader in READERS),
            ]
            for case in ("snapshot", "answer")
            for consumer in ("holds", "takes")
        ]
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
    table(
        f"RSS kept (MB) after a {10_000 // scale:,}-step snapshot, after a "
        f"{1_000 // scale:,} KB answer (each in a fresh process)",
        ["case", "consumer", "json.loads floor", "plugin", "built-in"],
        memory,
    )


if __name__ == "__main__":
    main()
