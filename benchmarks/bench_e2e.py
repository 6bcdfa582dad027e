"""End to end over real TLS on loopback: per growth frame, frame → event latency.

Run: `.venv/bin/python benchmarks/bench_e2e.py [--quick]`. benchmarks/frameserver.py runs
in a process of its own (agy-sim's TLS server, named like agy) and streams a long answer.
Each client reads it in this process and the figures are this process's CPU only:

- **per growth frame**: CPU per frame for the whole path (TLS, HTTP, decode, map, publish):
  this plugin's `RpcClient` stream (HTTP/1.1, and forced to HTTP/2 for comparison) feeding
  its `Follower`, and omnigent's built-in `stream_agent_state_updates` feeding its reader
  (benchmarks/readers.py; its event posts stubbed);
- **frame → event**: from the server handing a frame over (`benchSentNs`, the monotonic
  clock loopback shares) to the reader having published its events, p50/p99, at a steady
  200 frames/s and in bursts of 50 frames back to back; the two readers in turn within each
  run, and the ratio of their p99s per run (wall clock: the load moves both, less their ratio).

Unary calls are benchmarks/bench_unary.py's.

Medians of 3 runs. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from common import FrameServer, frame_server, median_of, options, percentile, spec, table
from omnigent.harnesses.antigravity_native import rpc as builtin_rpc
from readers import BuiltinReader, ListSink, builtin_stub_sink

from omnigent_agy.reading.reader import Follower
from omnigent_agy.rpc.client import RpcClient


class Run:
    """What one client measured over one stream."""

    def __init__(self) -> None:
        self.frames = 0
        self.latencies: list[float] = []  # ms

    def stamp(self, update: dict[str, Any]) -> None:
        self.frames += 1
        sent = update.get("benchSentNs")
        if sent is not None:
            self.latencies.append((time.monotonic_ns() - int(sent)) / 1e6)


async def plugin_stream(server: FrameServer, conversation: str, *, http2: bool) -> Run:
    run = Run()
    follower = Follower(cascade_id=conversation, sink=ListSink(), cursor=None, model_names={})
    async with RpcClient(port=server.port, csrf_token=server.token) as client:
        client._stream_http2 = http2  # the benchmark's switch: HTTP/2 as some agy builds insist
        updates = client.stream_agent_state_updates(conversation, idle_timeout=60)
        async with contextlib.aclosing(updates):
            async for message in updates:
                follower.apply_frame(message)
                run.stamp(message["update"])
        assert client.stream_http_version == ("HTTP/2" if http2 else "HTTP/1.1")
    return run


async def builtin_stream(server: FrameServer, conversation: str) -> Run:
    run = Run()
    reader = BuiltinReader(conversation)
    with builtin_stub_sink():
        async for update in builtin_rpc.stream_agent_state_updates(server.port, conversation):
            for step in _steps(update):
                await reader.feed_step(step)
            run.stamp(update)
    await reader.aclose()
    return run


def _steps(update: dict[str, Any]) -> list[dict[str, Any]]:
    from omnigent.harnesses.antigravity_native import reader  # noqa: PLC0415

    return reader._frame_steps(update)


def cpu_per_frame(read: Callable[[], Awaitable[Run]]) -> float:
    async def main() -> float:
        started = time.process_time()
        run = await read()
        return (time.process_time() - started) / run.frames

    return asyncio.run(main())


def latencies(read: Callable[[], Awaitable[Run]]) -> tuple[float, float]:
    run = asyncio.run(read())
    values = run.latencies[1:]  # the first frame is the history snapshot
    return statistics.median(values), percentile(values, 0.99)


def main() -> None:
    args = options(__doc__ or "")
    frames, runs = (40, 1) if args.quick else (500, 3)
    with frame_server() as server:
        flat = spec(100, frames)
        rows = []
        for name, read in (
            ("plugin, HTTP/1.1 stream", lambda: plugin_stream(server, flat, http2=False)),
            ("plugin, HTTP/2 stream", lambda: plugin_stream(server, flat, http2=True)),
            ("built-in (HTTP/1.1)", lambda: builtin_stream(server, flat)),
        ):
            rows.append([name, median_of(runs, lambda read=read: cpu_per_frame(read)) * 1e6])
        table(
            f"CPU per growth frame end to end over TLS on loopback ({frames} frames, H=100)",
            ["reader", "µs per frame"],
            rows,
        )
        rows = []
        for shape, conversation in (
            ("steady 200/s", spec(100, frames, interval_us=5000)),
            ("bursts of 50", spec(100, frames, interval_us=5000, burst=50)),
        ):
            # The two readers in turn within each run, so that a change in the machine's load
            # falls on both; the ratio is the median of each run's plugin p99 / built-in p99.
            measured: dict[str, list[tuple[float, float]]] = {"plugin": [], "built-in": []}
            for _ in range(runs):
                measured["plugin"].append(
                    latencies(lambda c=conversation: plugin_stream(server, c, http2=False))
                )
                measured["built-in"].append(
                    latencies(lambda c=conversation: builtin_stream(server, c))
                )
            ratio = statistics.median(
                ours[1] / theirs[1]
                for ours, theirs in zip(measured["plugin"], measured["built-in"], strict=True)
            )
            for name, values in measured.items():
                p50 = statistics.median(v[0] for v in values)
                p99 = statistics.median(v[1] for v in values)
                rows.append([shape, name, p50, p99, f"{ratio:.2f}x" if name == "plugin" else ""])
        table(
            f"Frame → event latency (ms; medians of {runs} runs, the readers in turn)",
            ["load", "reader", "p50", "p99", "plugin p99 / built-in p99"],
            rows,
        )


if __name__ == "__main__":
    main()
