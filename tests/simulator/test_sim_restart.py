"""agy-sim's restart on a new port is not held up by what its clients leave open.

A restart stops the old server before it logs the new port, and the old server waited for
every connection to go. A client can leave one that never goes by itself: httpx abandons a
connection whose TLS handshake it was making when its task was cancelled (a deadline fired)
without closing it, and the server then waited for hypercorn's 60 s handshake timeout; a
client that never reads again leaves the server's TLS close waiting for close_notify. The
fault suite saw such restarts about once in 200 trials (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Iterator
from pathlib import Path

import pytest
from simproc import FAST, SimLauncher, plan_model, sim_launcher
from waiting import wait_until

from agy_sim.cascade import IDLE
from omnigent_agy.rpc.client import RpcClient

pytestmark = pytest.mark.tmux

# Far above a restart's own time (its grace is 0.5 s), far below the 60 s it took before.
RESTART_DEADLINE = 20.0


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def _client_context() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # agy's certificate is self-signed (docs/wire.md §1)
    context.set_alpn_protocols(["h2"])
    return context


@contextlib.contextmanager
def handshake_begun_never_finished(port: int) -> Iterator[socket.socket]:
    """The ClientHello sent, the server's answer never read: what httpx leaves behind."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = _client_context().wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(outgoing.read())
        yield sock


@contextlib.contextmanager
def connected_never_read(port: int) -> Iterator[ssl.SSLSocket]:
    """A finished TLS handshake, then silence: the server's close_notify is never answered."""
    with _client_context().wrap_socket(socket.create_connection(("127.0.0.1", port))) as tls:
        yield tls


def test_restart_ends_the_connections_clients_left_open(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    old = sim.port

    async def converse(client: RpcClient) -> str:
        cascade_id = await client.start_cascade()
        model = await plan_model(client)
        await client.send_user_cascade_message(cascade_id, "hello", plan_model=model)
        return cascade_id

    cascade_id = sim.rpc(converse)
    with contextlib.ExitStack() as left_open:
        left_open.enter_context(socket.create_connection(("127.0.0.1", old)))  # TLS never begun
        left_open.enter_context(handshake_begun_never_finished(old))
        left_open.enter_context(connected_never_read(old))
        left_open.enter_context(socket.create_connection(("127.0.0.1", old + 1)))  # plain port
        sim.set_faults(restart=1)
        wait_until(
            lambda: len(sim.ports_logged()) == 2,
            timeout=RESTART_DEADLINE,
            what="agy-sim to listen on a new port",
        )
    assert sim.port != old
    for port in (old, old + 1):
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", port)) != 0, f"port {port} still answers"

    async def status(client: RpcClient) -> str:
        summaries = (await client.get_all_cascade_trajectories())["trajectorySummaries"]
        return str(summaries[cascade_id]["status"])

    # The conversation is kept, and its turn ran on.
    wait_until(lambda: sim.rpc(status) == IDLE, timeout=20, what="the conversation's turn to end")


def test_a_restart_with_a_pause_answers_on_the_new_port_only_after_it(sims: SimLauncher) -> None:
    """`restart_pause`: the old port closes at once, the new one is logged and answers only
    after the pause (a language server slow to come back)."""
    sim = sims.launch(*FAST)
    old = sim.port
    sim.set_faults(restart=1, restart_pause=5.0)

    def old_closed() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", old)) != 0

    wait_until(old_closed, timeout=RESTART_DEADLINE, what="the old port to close")
    assert len(sim.ports_logged()) == 1, "the new port was logged before the pause ended"
    wait_until(
        lambda: len(sim.ports_logged()) == 2,
        timeout=RESTART_DEADLINE,
        what="agy-sim to listen on a new port after the pause",
    )
    assert sim.port != old
    assert sim.rpc(lambda client: client.heartbeat()) is not None
