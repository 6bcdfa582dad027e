"""agy's certificate pinned per port: a stranger on a port agy left gets no request.

agy-sim runs as a separate process and moves to a new port (its fault control file's
restart); at once a stranger, a TLS server with a certificate of its own run as another user
(``nobody``, where the tests may switch uid; else as this user: the pinning does not depend on
who the stranger is), binds the old port and records what reaches it. The next new
connection, the unary channel's after its connection ended and a stream's, must reach the
stranger no further than the TLS handshake, and the call is answered from agy's new port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from foreign import AS_USER, other_user
from simproc import FAST, Sim, end_process, sim_launcher
from waiting import await_until, wait_until

from omnigent_agy.rpc.client import RpcClient
from omnigent_agy.rpc.discovery import discover_pin
from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient
from omnigent_agy.rpc.pinning import Pin, client_context, fetch_certificate

pytestmark = pytest.mark.tmux

TESTS = Path(__file__).resolve().parents[1]
STRANGER = TESTS / "_stranger_tls.py"


@dataclass
class Stranger:
    """The stranger's TLS server on a port agy left, and what reached it."""

    folder: Path
    uid: int

    def connections(self) -> list[dict[str, Any]]:
        path = self.folder / "connections"
        text = path.read_text(encoding="utf-8") if path.exists() else ""
        return [json.loads(line) for line in text.splitlines()]

    def received(self) -> bytes:
        return (self.folder / "received").read_bytes()


@contextlib.contextmanager
def stranger_on(port: int) -> Iterator[Stranger]:
    """The stranger, bound to ``port`` (it takes the port the moment it is free)."""
    other, _ = other_user()  # pinning does not depend on the uid: as this user where none
    folder = Path(tempfile.mkdtemp(prefix="omnigent-agy-stranger-", dir="/tmp"))
    if other is None:
        argv = [sys.executable, str(STRANGER), str(port), str(folder)]
        uid = os.getuid()
    else:
        uid, gid = other
        os.chown(folder, uid, gid)
        argv = [sys.executable, str(AS_USER), str(uid), str(gid), str(folder), "stranger"]
        argv += [str(port), str(folder)]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        wait_until(
            lambda: proc.poll() is not None or (folder / "bound").exists(),
            timeout=20,
            what="the stranger to bind",
        )
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        yield Stranger(folder, uid)
    finally:
        end_process(proc)
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with sim_launcher(tmp_path, "agy-pinning") as launcher:
        yield launcher.launch(*FAST)


def _pinned_link(sim: Sim, pin: Pin) -> FollowingClient:
    async def locate() -> Pin:
        return await discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=sim.token or "", deadline=10.0
        )

    endpoint = AgyEndpoint(
        port=pin.port, csrf_token=sim.token or "", locate=locate, certificate=pin.certificate
    )
    return FollowingClient(endpoint)


def _move(sim: Sim) -> int:
    old = sim.port
    sim.set_faults(restart=len(sim.ports_logged()))
    return wait_until(
        lambda: (port := sim.port) != old and port, timeout=20, what="agy-sim on a new port"
    )


def _reached_only_the_handshake(stranger: Stranger) -> None:
    seen = wait_until(
        stranger.connections, timeout=20, what="the stranger to see the connection end"
    )
    assert len(seen) == 1, seen  # the one new connection; discovery never asked it
    assert stranger.received() == b"", "request bytes reached the stranger"
    assert all(c["bytes"] == 0 for c in seen), seen
    assert all(c["handshake"] != "ok" for c in seen), f"a handshake with the stranger: {seen}"


def test_the_unary_channel_reconnecting_to_a_port_agy_left_sends_nothing_there(sim: Sim) -> None:
    async def main() -> tuple[Stranger, int, str]:
        old = await discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=sim.token or "", deadline=10.0
        )
        link = _pinned_link(sim, old)
        try:
            client = await link.client()
            await link.run(lambda c: c.heartbeat())
            new = await asyncio.to_thread(_move, sim)
            with stranger_on(old.port) as stranger:
                # The old server closed the channel's connection when it stopped.
                await await_until(
                    lambda: _channel_closed(client), timeout=20, what="the unary connection to end"
                )
                # Not resend-safe: it may only be sent again because it never left.
                cascade = await link.run(lambda c: c.start_cascade(), resend_safe=False)
                _reached_only_the_handshake(stranger)
            assert (await link.client()).port == new
            return stranger, new, cascade
        finally:
            await link.aclose()

    _, new, cascade = asyncio.run(main())
    assert cascade
    assert sim.rpc(lambda c: c.get_conversation_metadata(cascade))  # agy has it, at `new`
    assert sim.port == new


def test_a_stream_opened_after_agy_left_its_port_sends_nothing_there(sim: Sim) -> None:
    cascade = sim.rpc(lambda c: c.start_cascade())

    async def first_update(client: RpcClient) -> dict[str, Any]:
        async with contextlib.aclosing(client.stream_agent_state_updates(cascade)) as updates:
            async for update in updates:
                return update
        raise AssertionError("the stream ended without an update")

    async def main() -> tuple[dict[str, Any], int]:
        old = await discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=sim.token or "", deadline=10.0
        )
        link = _pinned_link(sim, old)
        try:
            await link.run(first_update)
            new = await asyncio.to_thread(_move, sim)
            with stranger_on(old.port) as stranger:
                update = await link.run(first_update)
                _reached_only_the_handshake(stranger)
            return update, new
        finally:
            await link.aclose()

    update, new = asyncio.run(main())
    assert "update" in update
    assert sim.port == new


def test_the_pinned_certificate_is_the_one_agy_serves_and_no_other(sim: Sim) -> None:
    async def main() -> None:
        pin = await discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=sim.token or "", deadline=10.0
        )
        assert pin.certificate == await fetch_certificate(pin.port)
        assert "certificate=" in repr(pin)
        assert pin.certificate is not None
        assert pin.certificate.hex() not in repr(pin)
        # agy-sim's listeners get a fresh self-signed certificate on every start (docs/wire.md §1
        # says only "self-signed"): after a move, discovery pins the new one.
        new = await asyncio.to_thread(_move, sim)
        moved = await discover_pin(
            pid=sim.pid, log_file=sim.log, csrf_token=sim.token or "", deadline=10.0
        )
        assert moved.port == new
        assert moved.certificate not in (None, pin.certificate)
        # The context trusting the old one refuses the new one in the handshake.
        trusting_the_old = client_context(pin.certificate)
        with pytest.raises(OSError, match="certificate verify failed"):
            await asyncio.open_connection(
                "127.0.0.1", new, ssl=trusting_the_old, server_hostname=""
            )

    asyncio.run(main())


def _channel_closed(client: RpcClient) -> bool:
    channel = client._channel
    connection = channel._connection if channel is not None else None
    return connection is None or connection.closed
