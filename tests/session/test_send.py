"""`still_on`: whether a turn that comes again is the message agy is still working on.

A turn its host lost (omnigent's runner went away while a card waited) is left to agy, and
omnigent may run it once more with the same message: that message must not reach agy twice.
Against agy-sim as a process: a cascade parked on an approval is still on its message, on
no other; an idle cascade is on none, so the same words again are a new message.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from simproc import FAST, Sim, plan_model, sim_launcher

from omnigent_agy.rpc.endpoint import AgyEndpoint, FollowingClient
from omnigent_agy.session.send import cascade_summaries, still_on

pytestmark = pytest.mark.tmux

WAITS = "run: echo still on it"
PLAIN = "hello there"


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[Sim]:
    with sim_launcher(tmp_path, "agy-send") as launcher:
        yield launcher.launch(*FAST)


async def _on(sim: Sim, text: str, *, then: list[str]) -> list[bool]:
    """Send `text` on a new cascade, wait until it waits on a card (or is idle), and ask
    `still_on` for each of `then`."""
    link = FollowingClient(AgyEndpoint(port=sim.port, csrf_token=sim.token or ""))
    try:
        client = await link.client()
        cascade = await client.start_cascade()
        await client.send_user_cascade_message(cascade, text, plan_model=await plan_model(client))
        summary: dict[str, Any] = {}
        for _ in range(200):
            summary = (await cascade_summaries(link)).get(cascade) or {}
            if summary.get("waitingSteps") or summary.get("status") == "CASCADE_RUN_STATUS_IDLE":
                break
            await asyncio.sleep(0.05)
        return [await still_on(link, cascade, each, summary) for each in then]
    finally:
        await link.aclose()


@pytest.mark.timeout(120)
def test_a_cascade_waiting_on_a_card_is_still_on_its_message_only(sim: Sim) -> None:
    assert asyncio.run(_on(sim, WAITS, then=[WAITS, PLAIN])) == [True, False]


@pytest.mark.timeout(120)
def test_an_idle_cascade_is_on_no_message(sim: Sim) -> None:
    assert asyncio.run(_on(sim, PLAIN, then=[PLAIN])) == [False]
