"""A minimal HTTP/2 server for the unary benchmark: what a call costs a cheaper server.

    <python> benchmarks/rawserver.py --csrf_token=TOKEN

TLS HTTP/2 on 127.0.0.1 framed by h2 on asyncio (tests/_raw_h2.py), no ASGI server and no
app: every POST with the right CSRF token gets one canned JSON answer, so the client's share
of a unary call can be seen beside a server far cheaper than agy-sim's hypercorn (real agy
is a Go binary). Prints ``{"port": N}`` when ready and serves until its stdin closes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from _raw_h2 import RawCall, RawH2Server  # tests/ is on PYTHONPATH (common.frame_server)

ANSWER = json.dumps({"trajectorySummaries": {}}).encode()


async def serve(token: bytes) -> None:
    def answer(call: RawCall) -> None:
        if call.headers.get(b"x-codeium-csrf-token") != token:
            call.answer(403, b"Invalid CSRF token", b"text/plain")
        else:
            call.answer(200, ANSWER)

    async with RawH2Server(answer) as server:
        print(json.dumps({"port": server.port}), flush=True)
        await asyncio.to_thread(sys.stdin.read)  # until the benchmark closes our stdin


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csrf_token", required=True)
    asyncio.run(serve(parser.parse_args().csrf_token.encode()))


if __name__ == "__main__":
    main()
