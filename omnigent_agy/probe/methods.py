"""The methods of docs/wire.md §3 that cost no turn, asked the way the plugin asks them.

Heartbeat; the model catalog (the plan model of the probe's turns comes from it, as every
turn's does, docs/decisions.md §7); the conversation list and the TUI's own empty conversation
the plugin binds (§7); a conversation's metadata, known and unknown; StartCascade and
ForceStopCascadeTree on a cascade of the probe's own; the retired methods; the quota (§9).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass

from omnigent_agy.errors import AgyError, RpcError
from omnigent_agy.models.catalog import ModelCatalog, ResolvedModel
from omnigent_agy.models.quota import (
    QUOTA_METHOD,
    USER_STATUS_METHOD,
    parse_quota_summary,
    parse_user_status,
)
from omnigent_agy.probe.facts import FactVerdict, Finding, Seen
from omnigent_agy.probe.observations import Observations
from omnigent_agy.probe.transport import raw_call
from omnigent_agy.reading.rotation import root_cascades, tui_cascade
from omnigent_agy.reading.steps import obj
from omnigent_agy.rpc.client import RpcClient

__all__ = [
    "Catalog",
    "check_catalog",
    "check_heartbeat",
    "check_listing",
    "check_metadata",
    "check_quota",
    "check_retired",
    "check_start_and_stop",
]


def _error(fact: str, expected: str, exc: RpcError, section: str) -> Finding:
    return Finding(fact, FactVerdict.FAIL, expected, str(exc), section)


async def check_heartbeat(client: RpcClient) -> Finding:
    expected = "200 with our token"
    try:
        await client.heartbeat()
    except RpcError as exc:
        return _error("Heartbeat", expected, exc, "§3")
    return Finding("Heartbeat", FactVerdict.PASS, expected, f"200 over {client.http_version}", "§3")


@dataclass(frozen=True, slots=True)
class Catalog:
    catalog: ModelCatalog
    plan: ResolvedModel | None


async def check_catalog(
    client: RpcClient, observations: Observations, model: str | None
) -> tuple[Finding, Catalog | None]:
    """GetAvailableModels, read by the plugin's catalog; the turns' plan model from it."""
    expected = "models, each with its enum and display name"
    try:
        answer = await client.get_available_models()
    except RpcError as exc:
        return _error("GetAvailableModels", expected, exc, "§3"), None
    observations.add(Seen.MODELS, "GetAvailableModels", answer)
    catalog = ModelCatalog.from_response(answer)
    try:
        plan: ResolvedModel | None = catalog.resolve_plan_model(model)
    except AgyError as exc:
        seen = f"{len(catalog.entries)} models; no plan model: {exc}"
        return Finding("GetAvailableModels", FactVerdict.FAIL, expected, seen, "§3"), None
    assert plan is not None
    seen = f"{len(catalog.entries)} models; turns use {plan.display_name} ({plan.enum})"
    verdict = FactVerdict.PASS if catalog.entries else FactVerdict.FAIL
    return Finding("GetAvailableModels", verdict, expected, seen, "§3"), Catalog(catalog, plan)


async def check_listing(client: RpcClient) -> tuple[Finding, str | None]:
    """A fresh agy lists the empty conversation its TUI opened (the plugin binds it, so a
    person attached to agy's terminal watches the same conversation; §7, a guess)."""
    expected = "one root conversation, empty: the TUI's"
    try:
        listing = await client.get_all_cascade_trajectories()
    except RpcError as exc:
        return _error("the TUI's conversation", expected, exc, "§3, §7"), None
    summaries = obj(listing.get("trajectorySummaries"))
    tui = tui_cascade(summaries)
    roots = root_cascades(summaries)
    if tui is not None:
        seen = f"{tui[:8]}…, empty"
        return Finding("the TUI's conversation", FactVerdict.PASS, expected, seen, "§7"), tui
    seen = f"{len(roots)} root conversation(s): the plugin starts one over RPC instead"
    return Finding("the TUI's conversation", FactVerdict.INFO, expected, seen, "§7"), None


async def check_metadata(
    client: RpcClient,
    cascade_id: str,
    observations: Observations,
    *,
    port: int,
    certificate: bytes | None,
    token: str,
) -> list[Finding]:
    """A known conversation answers 200; an unknown one an error (the sweep stops an agy whose
    conversation is gone, agy/sweep.py), with a connect error body."""
    findings = []
    expected = "200 for the conversation in use"
    try:
        await client.get_conversation_metadata(cascade_id)
        findings.append(Finding("GetConversationMetadata", FactVerdict.PASS, expected, "200", "§3"))
    except RpcError as exc:
        findings.append(_error("GetConversationMetadata", expected, exc, "§3"))
    unknown = str(uuid.uuid4())
    expected = "an error (500 `trajectory not found`) for an unknown id"
    try:
        answer = await raw_call(
            port, certificate, "GetConversationMetadata", {"conversationId": unknown}, token=token
        )
    except Exception as exc:  # noqa: BLE001 - any transport failure is the finding
        seen = f"no answer: {type(exc).__name__}"
        return [
            *findings,
            Finding("an unknown conversation", FactVerdict.FAIL, expected, seen, "§3"),
        ]
    body = answer.json()
    if answer.status != 200 and isinstance(body, dict):
        observations.add(Seen.ERROR, "GetConversationMetadata, unknown id", body)
    message = body.get("message") if isinstance(body, dict) else None
    seen = f"{answer.status}" + (f" {message!r}" if isinstance(message, str) else "")
    verdict = FactVerdict.FAIL if answer.status == 200 else FactVerdict.PASS
    findings.append(Finding("an unknown conversation", verdict, expected, seen, "§3"))
    return findings


async def check_start_and_stop(client: RpcClient, observations: Observations) -> list[Finding]:
    """StartCascade (the plugin's fallback when the TUI shows no conversation) and
    ForceStopCascadeTree on that idle cascade."""
    try:
        started = await client.call("StartCascade", {"source": "CORTEX_TRAJECTORY_SOURCE_CLI"})
    except RpcError as exc:
        return [_error("StartCascade", "a new cascadeId", exc, "§3")]
    observations.add(Seen.START, "StartCascade", started)
    cascade = started.get("cascadeId")
    ok = isinstance(cascade, str) and bool(cascade)
    findings = [
        Finding(
            "StartCascade",
            FactVerdict.PASS if ok else FactVerdict.FAIL,
            "a new cascadeId",
            f"{cascade[:8]}…" if isinstance(cascade, str) and cascade else "none",
            "§3",
        )
    ]
    if not ok:
        return findings
    expected = "{} or stoppedConversationIds for an idle cascade"
    try:
        stopped = await client.call("ForceStopCascadeTree", {"conversationId": cascade})
    except RpcError as exc:
        return [*findings, _error("ForceStopCascadeTree", expected, exc, "§3")]
    observations.add(Seen.FORCE_STOP, "ForceStopCascadeTree", stopped)
    findings.append(Finding("ForceStopCascadeTree", FactVerdict.PASS, expected, "answered", "§3"))
    return findings


async def check_retired(client: RpcClient) -> Finding:
    """StreamCascadeReactiveUpdates is retired and GetCascadeId does not exist (§3): whether
    the person's agy still says so."""
    seen = []
    try:
        async with contextlib.aclosing(
            client.stream("StreamCascadeReactiveUpdates", {}, idle_timeout=10.0)
        ) as frames:
            async for _ in frames:
                break
        seen.append("StreamCascadeReactiveUpdates: answers")
    except RpcError as exc:
        seen.append(f"StreamCascadeReactiveUpdates: {exc.message[:60]!r}")
    try:
        await client.call("GetCascadeId", {})
        seen.append("GetCascadeId: answers")
    except RpcError as exc:
        seen.append(f"GetCascadeId: {exc.http_status or exc.connect_code.value}")
    retired = all(not line.endswith(": answers") for line in seen)
    return Finding(
        "retired methods",
        FactVerdict.PASS if retired else FactVerdict.INFO,
        "StreamCascadeReactiveUpdates ends with an error, GetCascadeId is not found",
        "; ".join(seen),
        "§3",
    )


async def check_quota(client: RpcClient, observations: Observations) -> list[Finding]:
    """RetrieveUserQuotaSummary and GetUserStatus (§9, public reports), read by the plugin's
    own parsers (`models.quota`: doctor and ps show them); absent, the plugin says quota unknown."""
    findings = []
    expected = "groups with a 5h and a weekly window each (§9)"
    fact = f"quota: {QUOTA_METHOD}"
    try:
        answer = await client.retrieve_user_quota_summary()
    except RpcError as exc:
        seen = f"{exc.http_status or exc.connect_code.value}: the plugin shows quota unknown"
        findings.append(Finding(fact, FactVerdict.FAIL, expected, seen, "§9"))
    else:
        observations.add(Seen.QUOTA, QUOTA_METHOD, answer)
        summary = parse_quota_summary(answer)
        groups = ", ".join(
            f"{g.name} ({'/'.join(w.window for w in g.windows)})" for g in summary.groups
        )
        seen = groups or "no group"
        if summary.problems:
            seen += "; could not read: " + "; ".join(summary.problems)
        ok = bool(summary.groups) and not summary.problems
        findings.append(
            Finding(fact, FactVerdict.PASS if ok else FactVerdict.FAIL, expected, seen, "§9")
        )
    expected = "the plan's name (userStatus.planStatus.planInfo.planName)"
    fact = f"quota: {USER_STATUS_METHOD}"
    try:
        status = await client.get_user_status()
    except RpcError as exc:
        seen = f"{exc.http_status or exc.connect_code.value}: the plugin shows the plan unknown"
        findings.append(Finding(fact, FactVerdict.FAIL, expected, seen, "§9"))
        return findings
    observations.add(Seen.USER_STATUS, USER_STATUS_METHOD, status)
    plan = parse_user_status(status)
    seen = f"plan {plan.name}" if plan.name else "; ".join(plan.problems)
    findings.append(
        Finding(fact, FactVerdict.PASS if plan.name else FactVerdict.FAIL, expected, seen, "§9")
    )
    return findings
