"""Unary calls over real TLS on loopback: where the time of one call goes.

Run: `.venv/bin/python benchmarks/bench_unary.py [--quick]`. The call is
GetAllCascadeTrajectories, repeated on one persistent connection, and each row reports

- **wall**: the median time of one call, what a caller waits;
- **client CPU**: this process's CPU time per call, what the client costs;
- **server CPU**: the server process's CPU time per call (``/proc/<pid>/stat``).

On two shared cores the wall clock is client + server + the scheduler's wake-ups, and the
scheduler's share grows with the machine's load (printed with the table); the CPU columns
are steadier. Servers, each a process of its own:

- **agy-sim**: benchmarks/frameserver.py, agy-sim's own TLS server (hypercorn) and connect
  app, as the tests and the demo use it;
- **minimal**: benchmarks/rawserver.py, h2 on asyncio answering one canned JSON, no ASGI
  server: closer to what a call costs a cheap server (real agy is a Go binary).

Clients: the plugin as its parts call agy (`FollowingClient.run` → `RpcClient` → its
`UnaryChannel`), httpx's `AsyncClient(http2=True)` on one connection (how the plugin called
before, for comparison), HTTP/1.1 keep-alive framed by h11 on asyncio (the option not taken,
docs/performance.md), and the built-in harness (a new client and a process-table lookup
per call). Medians of 3 runs. Asserts nothing about time.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import h11
import httpx
from common import FrameServer, cpu_seconds, frame_server, load_average, options, table
from omnigent.harnesses.antigravity_native import rpc as builtin_rpc

from omnigent_agy.rpc.connection import CSRF_HEADER, SERVICE
from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient
from omnigent_agy.rpc.pinning import fetch_certificate

METHOD = "GetAllCascadeTrajectories"

type Figures = tuple[float, float, float]  # wall ms (median), client CPU ms, server CPU ms


async def measure(server: FrameServer, calls: int, call: Callable[[], Awaitable[Any]]) -> Figures:
    await call()  # the connection is made once, outside the measurement
    times = []
    server_cpu, client_cpu = cpu_seconds(server.process.pid), time.process_time()
    for _ in range(calls):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    client_cpu = time.process_time() - client_cpu
    server_cpu = cpu_seconds(server.process.pid) - server_cpu
    return statistics.median(times) * 1e3, client_cpu / calls * 1e3, server_cpu / calls * 1e3


async def plugin(server: FrameServer, calls: int) -> Figures:
    # Pinned to the server's certificate, as discovery pins agy's (rpc/pinning.py).
    certificate = await fetch_certificate(server.port)
    endpoint = AgyEndpoint(port=server.port, csrf_token=server.token, certificate=certificate)
    client = FollowingClient(endpoint)
    try:
        return await measure(server, calls, lambda: client.run(_trajectories))
    finally:
        await client.aclose()


async def _trajectories(client: Any) -> dict[str, Any]:
    result: dict[str, Any] = await client.get_all_cascade_trajectories()
    return result


async def httpx_http2(server: FrameServer, calls: int) -> Figures:
    headers = {"Connect-Protocol-Version": "1", CSRF_HEADER: server.token}
    url = f"https://127.0.0.1:{server.port}/{SERVICE}/{METHOD}"
    async with httpx.AsyncClient(http2=True, verify=False, headers=headers) as http:

        async def call() -> None:
            response = await http.post(url, json={})
            response.raise_for_status()
            response.json()

        return await measure(server, calls, call)


async def h11_keep_alive(server: FrameServer, calls: int) -> Figures:
    """The option not taken: HTTP/1.1 keep-alive (h11 on asyncio's TLS), no httpx."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.set_alpn_protocols(["http/1.1"])
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=context)
    connection = h11.Connection(h11.CLIENT)
    request = h11.Request(
        method="POST",
        target=f"/{SERVICE}/{METHOD}",
        headers=[
            ("host", f"127.0.0.1:{server.port}"),
            ("connect-protocol-version", "1"),
            (CSRF_HEADER, server.token),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ],
    )

    async def call() -> None:
        writer.write(
            b"".join(
                connection.send(e) for e in (request, h11.Data(data=b"{}"), h11.EndOfMessage())
            )
        )
        body = bytearray()
        while not isinstance(event := connection.next_event(), h11.EndOfMessage):
            if event is h11.NEED_DATA:
                connection.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.Response) and event.status_code != 200:
                raise RuntimeError(f"HTTP {event.status_code}")
        connection.start_next_cycle()
        json.loads(body)

    try:
        return await measure(server, calls, call)
    finally:
        writer.close()
        await writer.wait_closed()


async def builtin(server: FrameServer, calls: int) -> Figures:
    async def call() -> None:
        builtin_rpc.get_all_cascade_trajectories(server.port)  # its own sync client

    return await measure(server, calls, call)


def median_figures(runs: int, measure_once: Callable[[], Figures]) -> list[float]:
    results = [measure_once() for _ in range(runs)]
    return [statistics.median(column) for column in zip(*results, strict=True)]


def main() -> None:
    args = options(__doc__ or "")
    calls, runs = (5, 1) if args.quick else (200, 3)
    rows: list[list[object]] = []
    with frame_server() as sim, frame_server("rawserver.py") as minimal:
        for client, server_name, server, run in (
            ("plugin", "agy-sim", sim, plugin),
            ("plugin", "minimal", minimal, plugin),
            ("httpx AsyncClient, HTTP/2", "agy-sim", sim, httpx_http2),
            ("httpx AsyncClient, HTTP/2", "minimal", minimal, httpx_http2),
            ("HTTP/1.1 keep-alive (h11, no httpx)", "agy-sim", sim, h11_keep_alive),
            ("built-in (new client per call)", "agy-sim", sim, builtin),
        ):
            figures = median_figures(
                runs,
                lambda s=server, r=run: asyncio.run(r(s, calls)),
            )
            rows.append([client, server_name, *figures])
    table(
        f"Unary call ({METHOD}) on one connection, {calls} calls, medians of {runs}; "
        + load_average(),
        ["client", "server", "wall ms", "client CPU ms", "server CPU ms"],
        rows,
    )


if __name__ == "__main__":
    main()
