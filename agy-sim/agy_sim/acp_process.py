"""``agy-sim acp`` as a process: ACP on stdin/stdout until the client closes stdin.

stdout carries only the protocol's lines: the log goes to ``--log-file`` when given, else to
stderr (which ACP clients read for diagnostics), and anything else printed by mistake goes
to stderr too. SIGTERM, SIGINT and SIGHUP stop it; every session's turn is stopped first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
import sys
from typing import IO, Final

from agy_sim.acp_agent import AcpAgent
from agy_sim.acp_wire import LINE_LIMIT, JsonRpcPeer
from agy_sim.glog import GlogFormatter
from agy_sim.options import SimOptions
from agy_sim.process import engine_settings, resolve_tui_model
from agy_sim.versions import ACP

_log = logging.getLogger("agy-sim.acp")

#: How long the prompts of stopped turns get to answer before the process ends.
DRAIN_SECONDS: Final = 2.0


def run_acp(options: SimOptions) -> int:
    """Serve ACP on this process's stdio; the exit status.

    A ``--sim-version`` older than 1.4.12 has no ``acp`` command, as that agy had none (what
    it printed is not recorded).
    """
    if not options.at_least(ACP):
        sys.stderr.write(
            f"agy-sim: agy {options.version} has no acp command (agy acp arrived in 1.4.12)\n"
        )
        return 2
    try:
        resolve_tui_model(options.model, options.effort)
    except ValueError as exc:
        sys.stderr.write(f"agy-sim: {exc}\n")
        return 2
    _configure_logging(options)
    protocol_out = sys.stdout
    sys.stdout = sys.stderr  # a stray print must not corrupt the protocol
    try:
        return asyncio.run(_serve(options, protocol_out))
    finally:
        sys.stdout = protocol_out


def _configure_logging(options: SimOptions) -> None:
    if options.log_file is not None:
        options.log_file.parent.mkdir(parents=True, exist_ok=True)
        handler: logging.Handler = logging.FileHandler(options.log_file, encoding="utf-8")
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(GlogFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


async def _serve(options: SimOptions, out: IO[str]) -> int:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out)
    writer = asyncio.StreamWriter(transport, protocol, None, loop)

    async def write(data: bytes) -> None:
        writer.write(data)
        await writer.drain()

    # An ACP session is not the TUI's: it starts with no history and no stored conversation.
    settings = dataclasses.replace(
        engine_settings(options), history_steps=0, resume_conversation=""
    )
    agent = AcpAgent(
        settings, version=options.version, gemini_dir=options.gemini_dir, quota=options.quota
    )
    peer = JsonRpcPeer(
        reader, write, requests=agent.requests(), notifications=agent.notifications()
    )
    agent.bind(peer.notify, peer.request)
    serving = asyncio.ensure_future(peer.serve())
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(signum, serving.cancel)
    _log.info("agy-sim %s: ACP on stdio", options.version)
    try:
        await serving
    except asyncio.CancelledError:
        _log.info("stopped by a signal")
    finally:
        # Every turn stopped first, so each open prompt answers (if the client still reads).
        await agent.aclose()
        await peer.drain(DRAIN_SECONDS)
        writer.close()
        _log.info("agy-sim acp stopped")
    return 0
