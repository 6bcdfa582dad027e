"""A tiny fake ``agy`` for discovery and launcher tests (the full simulator is ``agy-sim``).

    python tests/_fake_agy.py --csrf_token=T --log-file PATH [--gemini_dir DIR] [--model M]
        [--fake-conversation ID]... [--fake-no-log] [--fake-never-listen]
        [--fake-exit CODE] [--fake-starting-seconds S]

Like agy (docs/wire.md §1): logs ``Starting language server process with pid <pid>``, serves TLS
HTTP/2 connect on 127.0.0.1:N (plain HTTP on N+1) checking the CSRF token, and once ready
logs ``Language server listening on random port at <N> for HTTPS (gRPC)``. Until
``--fake-starting-seconds`` have passed every call answers 503 "starting". Heartbeat
answers ``{}``; GetConversationMetadata knows only the ``--fake-conversation`` ids.
SIGTERM/SIGINT/SIGHUP stop it. It prints a short status to its terminal, never the token.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agy_sim.connect_app import ConnectApp, ConnectHandlerError
from agy_sim.server import TlsConnectServer


def _log(path: Path | None, line: str) -> None:
    if path is None:
        return
    with path.open("a", encoding="utf-8") as log:
        log.write(time.strftime("%Y/%m/%d %H:%M:%S ") + line + "\n")


async def _serve(args: argparse.Namespace) -> int:
    ready_at = time.monotonic() + args.fake_starting_seconds
    known = set(args.fake_conversation)

    def check_ready() -> None:
        if time.monotonic() < ready_at:
            raise ConnectHandlerError("unavailable", "language server is starting", 503)

    async def heartbeat(_body: dict[str, Any]) -> dict[str, Any]:
        check_ready()
        return {}

    async def metadata(body: dict[str, Any]) -> dict[str, Any]:
        check_ready()
        conversation = body.get("conversationId")
        if conversation not in known:
            raise ConnectHandlerError("unknown", "trajectory not found", 500)
        return {"metadata": {"rootConversationId": conversation}}

    app = ConnectApp(
        csrf_token=args.csrf_token,
        unary={"Heartbeat": heartbeat, "GetConversationMetadata": metadata},
        streams={},
    )
    server = TlsConnectServer(app).bind()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    serving = asyncio.create_task(server.serve(stop))
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), max(0.0, ready_at - time.monotonic()))
    if not args.fake_no_log:
        _log(
            args.log_file,
            f"Language server listening on random port at {server.port} for HTTPS (gRPC)",
        )
    print(f"fake agy ready (port {server.port})", flush=True)
    await serving
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--csrf_token")
    parser.add_argument("--log-file", type=Path)
    parser.add_argument("--gemini_dir", type=Path)
    parser.add_argument("--model")
    parser.add_argument("--fake-conversation", action="append", default=[])
    parser.add_argument("--fake-no-log", action="store_true")
    parser.add_argument("--fake-never-listen", action="store_true")
    parser.add_argument("--fake-exit", type=int)
    parser.add_argument("--fake-starting-seconds", type=float, default=0.0)
    args, unknown = parser.parse_known_args()
    settings: dict[str, Any] = {}
    if args.gemini_dir is not None:
        settings_file = args.gemini_dir / "antigravity-cli" / "settings.json"
        if settings_file.exists():
            settings = json.loads(settings_file.read_text())
    print(
        f"fake agy pid {os.getpid()} model={args.model} extra={unknown} "
        f"survey={settings.get('showFeedbackSurvey')}",
        flush=True,
    )
    if args.fake_exit is not None:
        print("fake agy: not signed in, run agy", flush=True)
        return args.fake_exit
    if not args.fake_no_log:
        _log(args.log_file, f"Starting language server process with pid {os.getpid()}")
    if args.fake_never_listen:
        signal.sigwait({signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
        return 0
    return asyncio.run(_serve(args))


if __name__ == "__main__":
    if sys.platform != "win32":
        # sigwait needs the signals blocked; asyncio's handlers work either way.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP})
        if "--fake-never-listen" not in sys.argv:
            signal.pthread_sigmask(
                signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
            )
    sys.exit(main())
