"""agy-sim's plan and quota (docs/simulator.md "Quota", modelled from docs/wire.md §9's public
reports): each scenario as a separate process over real TLS HTTP/2, read with the plugin's own
parsers, and a turn on a used-up model group failing as agy-sim fails it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from simproc import FAST, TOKEN, Sim, SimLauncher, sim_launcher
from waiting import await_until

from omnigent_agy.errors import Code, RpcError
from omnigent_agy.models.quota import (
    AccountQuota,
    parse_quota_summary,
    parse_user_status,
    quota_exhaustion,
    read_account_quota,
)
from omnigent_agy.rpc.client import SERVICE, RpcClient

pytestmark = pytest.mark.tmux


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimLauncher]:
    with sim_launcher(tmp_path) as launcher:
        yield launcher


def _account(sim: Sim) -> AccountQuota:
    return sim.rpc(read_account_quota)


def test_quota_and_plan_as_reported(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    started = datetime.now(UTC)

    async def both(client: RpcClient) -> tuple[dict[str, Any], dict[str, Any], str | None]:
        summary = await client.retrieve_user_quota_summary()
        status = await client.get_user_status()
        return summary, status, client.http_version

    summary_answer, status_answer, version = sim.rpc(both)
    assert version == "HTTP/2"
    summary = parse_quota_summary(summary_answer)
    assert summary.problems == ()
    assert [g.name for g in summary.groups] == ["Gemini", "Other models"]
    gemini = summary.groups[0]
    five = gemini.window("5h")
    assert five is not None
    assert five.remaining == 0.62
    assert five.resets_at is not None
    assert timedelta(hours=2) < five.resets_at - started < timedelta(hours=2, minutes=11)
    weekly = gemini.window("weekly")
    assert weekly is not None
    assert weekly.remaining == 0.9
    assert parse_user_status(status_answer).name == "Pro"


def test_both_methods_want_the_csrf_header(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    for method in ("RetrieveUserQuotaSummary", "GetUserStatus"):
        refused = httpx.post(
            f"https://127.0.0.1:{sim.port}/{SERVICE}/{method}", json={}, verify=False
        )
        assert refused.status_code == 401, method
        wrong = httpx.post(
            f"https://127.0.0.1:{sim.port}/{SERVICE}/{method}",
            json={},
            headers={"x-codeium-csrf-token": TOKEN + "x"},
            verify=False,
        )
        assert wrong.status_code == 403, method


def test_nearly_used_up(sims: SimLauncher) -> None:
    quota = _account(sims.launch(*FAST, "--sim-quota", "low"))
    assert quota.summary is not None
    five = quota.summary.groups[0].window("5h")
    assert five is not None
    assert five.remaining == 0.04
    assert not quota.summary.groups[0].used_up


def test_used_up_leaves_the_share_out_and_fails_the_turn(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, env={"AGY_SIM_QUOTA": "exhausted"})

    async def turn(client: RpcClient) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        summary = await client.retrieve_user_quota_summary()
        cascade = await client.start_cascade()
        models = (await client.get_available_models())["response"]["models"]
        gemini = models["gemini-3-pro-high"]["model"]
        await client.send_user_cascade_message(cascade, "hello", plan_model=gemini)
        steps = await await_until(
            lambda: client.get_cascade_trajectory_steps(cascade),
            until=lambda steps: any(s["type"] == "CORTEX_STEP_TYPE_ERROR_MESSAGE" for s in steps),
            timeout=20,
            what="the turn to fail",
        )
        return summary, steps

    summary_answer, steps = sim.rpc(turn)
    bucket = summary_answer["response"]["groups"][0]["buckets"][0]
    assert bucket["window"] == "5h"
    assert "remainingFraction" not in bucket  # zero, left out as protojson does
    assert parse_quota_summary(summary_answer).groups[0].used_up
    error = next(s for s in steps if s["type"] == "CORTEX_STEP_TYPE_ERROR_MESSAGE")
    fields = error["errorMessage"]["error"]
    assert fields["errorCode"] == 429
    refusal = quota_exhaustion(fields["userErrorMessage"], fields["fullError"])
    assert refusal is not None
    assert refusal.resets_at == parse_quota_summary(summary_answer).groups[0].usable_again_at
    # The other group still answers.
    others = sim.rpc(_turn_on("claude-sonnet-4-5", "Say hello."))
    assert not any(s["type"] == "CORTEX_STEP_TYPE_ERROR_MESSAGE" for s in others)


def test_a_turn_asking_to_use_up_the_quota_does(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST)
    steps = sim.rpc(_turn_on("gemini-3-flash", "Please use up my quota."))
    assert steps[-1]["type"] == "CORTEX_STEP_TYPE_ERROR_MESSAGE"
    assert _account(sim).summary.groups[0].used_up  # type: ignore[union-attr]


def _turn_on(key: str, text: str) -> Any:
    async def turn(client: RpcClient) -> list[dict[str, Any]]:
        cascade = await client.start_cascade()
        model = (await client.get_available_models())["response"]["models"][key]["model"]
        await client.send_user_cascade_message(cascade, text, plan_model=model)

        async def ended() -> list[dict[str, Any]] | None:
            summaries = (await client.get_all_cascade_trajectories())["trajectorySummaries"]
            if summaries[cascade]["status"] != "CASCADE_RUN_STATUS_IDLE":
                return None
            steps = await client.get_cascade_trajectory_steps(cascade)
            return steps if len(steps) > 2 else None

        return await await_until(ended, timeout=20, what="the turn to end")

    return turn


def test_malformed_answers_are_quota_unknown(sims: SimLauncher) -> None:
    quota = _account(sims.launch(*FAST, "--sim-quota", "malformed"))
    assert quota.summary is not None
    assert quota.summary.groups == ()
    assert quota.quota_unknown == "agy's quota answer has response.groups is not a list"
    assert quota.plan is not None
    assert quota.plan.name is None
    assert quota.plan_unknown == "agy's account answer has no userStatus"


def test_missing_methods_are_quota_unknown(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-quota", "missing")

    async def call(client: RpcClient) -> RpcError:
        with pytest.raises(RpcError) as info:
            await client.retrieve_user_quota_summary()
        return info.value

    assert sim.rpc(call).http_status == 404
    quota = _account(sim)
    assert quota.summary is None
    assert quota.plan is None
    assert quota.quota_unknown is not None
    assert "does not answer" in quota.quota_unknown


def test_garbage_from_a_fault_is_quota_unknown(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-fault", "garbage:method=RetrieveUserQuotaSummary")
    quota = _account(sim)
    assert quota.summary is None
    assert quota.quota_unknown is not None
    assert quota.quota_unknown.startswith("RetrieveUserQuotaSummary failed")
    assert quota.plan is not None
    assert quota.plan.name == "Pro"


def test_signed_out_refuses_them(sims: SimLauncher) -> None:
    sim = sims.launch(*FAST, "--sim-signed-out")

    async def call(client: RpcClient) -> RpcError:
        with pytest.raises(RpcError) as info:
            await client.get_user_status()
        return info.value

    assert sim.rpc(call).connect_code is Code.UNAUTHENTICATED
