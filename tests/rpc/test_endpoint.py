"""AgyEndpoint / FollowingClient: one owner of agy's port, followed by every caller."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from simproc import FAST, Sim, sim_launcher
from waiting import wait_until

from omnigent_agy.errors import Code, RpcError
from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient, never_sent


def test_concurrent_failures_look_for_agy_once_and_all_follow() -> None:
    looked: list[int] = []

    async def main() -> list[int]:
        release = asyncio.Event()

        async def locate() -> int:
            looked.append(1)
            await release.wait()
            return 4242

        endpoint = AgyEndpoint(port=4141, csrf_token="t", locate=locate)
        first = asyncio.create_task(endpoint.relocate(4141))
        await asyncio.sleep(0)  # the first lookup is under way
        release.set()
        found = [await first]
        # Later failures on the old port learn the new one without asking again.
        found += await asyncio.gather(*(endpoint.relocate(4141) for _ in range(5)))
        assert endpoint.moves == 1
        return found

    assert asyncio.run(main()) == [4242] * 6
    assert looked == [1]


def test_the_same_port_back_is_no_move_and_callbacks_hear_of_moves() -> None:
    ports = iter([4141, 4343])
    heard: list[int] = []

    async def locate() -> int:
        return next(ports)

    async def main() -> None:
        endpoint = AgyEndpoint(port=4141, csrf_token="t", locate=locate)
        endpoint.on_move(heard.append)
        assert await endpoint.relocate(4141) == 4141
        assert await endpoint.relocate(4141) == 4343
        assert endpoint.port == 4343

    asyncio.run(main())
    assert heard == [4343]


def test_repr_hides_the_token() -> None:
    assert "secret-token" not in repr(AgyEndpoint(port=4141, csrf_token="secret-token"))


@pytest.mark.parametrize(
    ("cause", "expected"),
    [
        (httpx.ConnectError("All connection attempts failed"), True),
        (httpx.WriteError(""), True),
        (httpx.ReadError(""), False),
        (httpx.RemoteProtocolError("closed"), False),
        (None, False),
    ],
    ids=["connect", "write", "read", "protocol", "server-said-so"],
)
def test_never_sent_only_when_agy_cannot_have_acted(
    cause: Exception | None, expected: bool
) -> None:
    error = RpcError(Code.UNAVAILABLE, "x")
    error.__cause__ = cause
    assert never_sent(error) is expected


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with sim_launcher(tmp_path, "agy-endpoint") as launcher:
        yield launcher.launch(*FAST)


@pytest.mark.tmux
def test_a_following_client_answers_from_the_new_port_after_agy_moved(sim: Sim) -> None:
    old = sim.port

    async def locate() -> int:
        return sim.port

    async def main() -> tuple[int, int]:
        endpoint = AgyEndpoint(port=old, csrf_token=sim.token or "", locate=locate)
        link = FollowingClient(endpoint)
        try:
            await link.run(lambda c: c.heartbeat())
            sim.set_faults(restart=1)
            await asyncio.to_thread(
                wait_until, lambda: sim.port != old, timeout=20, what="a new port"
            )
            # Not idempotent and not resend-safe, but a refused connection never reached agy.
            await link.run(lambda c: c.start_cascade(), resend_safe=False)
            client = await link.client()
            assert client.http_version == "HTTP/2"
            return client.port, endpoint.moves
        finally:
            await link.aclose()

    port, moves = asyncio.run(main())
    assert (port, moves) == (sim.port, 1)
    assert port != old
