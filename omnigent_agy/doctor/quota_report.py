"""The account's plan and quota for people: ``omnigent-agy doctor`` and ``omnigent-agy ps``.

Quota belongs to the signed-in account, not to one conversation, so it is asked of whichever
agy of omnigent-agy is running (the same one ``ps`` lists; a stranger on its port never gets
the token, as in the sweep). Without a running agy the quota is unknown: the doctor says so
rather than start one. Times are shown in local time with how far away they are
("17:00 (in 2 h 10 min)"); a failure card, read in a browser whose time zone the harness does
not know, names UTC instead (``failures.quota_exhausted_failure``).

What agy answered is read by :mod:`omnigent_agy.models.quota`; nothing here raises on a bad
answer: the line says "unknown" and why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Final

from omnigent_agy.agy.running_agys import RunningAgy, list_running
from omnigent_agy.doctor.checks import DoctorLine, Status
from omnigent_agy.errors import AgyError, Failure, quota_exhausted_failure, scrub
from omnigent_agy.models.quota import (
    AccountQuota,
    QuotaGroup,
    QuotaWindow,
    quota_exhaustion,
    read_account_quota,
)
from omnigent_agy.rpc.client import RetryPolicy, RpcClient
from omnigent_agy.rpc.discovery import pin_if_ours
from omnigent_agy.rpc.listeners import is_port_owned_by

__all__ = [
    "AskedQuota",
    "ask_running_agy",
    "check_quota",
    "describe_group",
    "describe_window",
    "format_relative",
    "format_reset",
    "format_reset_utc",
    "quota_failure",
    "quota_lines",
]

logger = logging.getLogger(__name__)

_ASK_TIMEOUT: Final = 5.0
_WINDOW_NAMES: Final = {"5h": "5 h", "weekly": "weekly"}
_WINDOW_ORDER: Final = ("5h", "weekly")
NO_AGY: Final = (
    "quota unknown: no agy of omnigent-agy is running to ask (quota is asked of a running agy; "
    "it shows here and in `omnigent-agy ps` while a conversation's agy runs)"
)


@dataclass(frozen=True, slots=True)
class AskedQuota:
    """The account's quota and the agy it was asked of."""

    agy: RunningAgy
    quota: AccountQuota


# -- words -----------------------------------------------------------------------------------


def format_relative(delta: timedelta) -> str:
    """``in 2 h 10 min``, ``in 4 d 18 h``, ``in 45 min``; a moment past is ``… ago``."""
    seconds = int(delta.total_seconds())
    ahead = seconds >= 0
    seconds = abs(seconds)
    if seconds < 60:
        return "in less than a minute" if ahead else "less than a minute ago"
    minutes = seconds // 60
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        parts = [f"{days} d"] + ([f"{hours} h"] if hours else [])
    elif hours:
        parts = [f"{hours} h"] + ([f"{minutes} min"] if minutes else [])
    else:
        parts = [f"{minutes} min"]
    text = " ".join(parts)
    return f"in {text}" if ahead else f"{text} ago"


def format_reset(moment: datetime, now: datetime, tz: tzinfo | None = None) -> str:
    """``17:00 (in 2 h 10 min)`` in local time; the day too when it is not today's."""
    local = moment.astimezone(tz)
    today = now.astimezone(tz).date()
    clock = local.strftime("%H:%M")
    if local.date() != today:
        clock = f"{local.strftime('%a')} {local.day} {local.strftime('%b')} {clock}"
    return f"{clock} ({format_relative(moment - now)})"


def format_reset_utc(moment: datetime, now: datetime) -> str:
    """``at 17:00 UTC on Wed 2 Dec (in 2 h 10 min)``: for a reader whose zone is not known."""
    utc = moment.astimezone(UTC)
    day = f"{utc.strftime('%a')} {utc.day} {utc.strftime('%b')}"
    return f"at {utc.strftime('%H:%M')} UTC on {day} ({format_relative(moment - now)})"


def _percent(fraction: float) -> str:
    shown = round(fraction * 100)
    if shown == 0 and fraction > 0:
        return "<1%"
    if shown == 100 and fraction < 1:
        return ">99%"
    return f"{shown}%"


def describe_window(window: QuotaWindow, now: datetime, tz: tzinfo | None = None) -> str:
    """``5 h: 62% left, resets 17:00 (in 2 h 10 min)``."""
    name = _WINDOW_NAMES.get(window.window, window.window)
    if window.remaining is None:
        left = "share left unknown"
    elif window.used_up:
        left = "used up"
    else:
        left = f"{_percent(window.remaining)} left"
    if window.resets_at is None:
        return f"{name}: {left}"
    return f"{name}: {left}, resets {format_reset(window.resets_at, now, tz)}"


def describe_group(group: QuotaGroup, now: datetime, tz: tzinfo | None = None) -> str:
    """One group on one line: its 5-hour window, its weekly one, then any other."""
    order = {name: i for i, name in enumerate(_WINDOW_ORDER)}
    windows = sorted(group.windows, key=lambda w: order.get(w.window, len(order)))
    return f"{group.name}: " + "; ".join(describe_window(w, now, tz) for w in windows)


def quota_lines(quota: AccountQuota, now: datetime, tz: tzinfo | None = None) -> list[str]:
    """The plan, then one line per model group (or why the quota is unknown)."""
    plan = quota.plan.name if quota.plan is not None else None
    lines = [f"plan: {plan}" if plan else f"plan: unknown ({quota.plan_unknown})"]
    summary = quota.summary
    if summary is None or not summary.groups:
        lines.append(f"quota unknown: {quota.quota_unknown}")
        return [scrub(line) for line in lines]
    lines += [describe_group(group, now, tz) for group in summary.groups]
    if summary.problems:
        unread = "; ".join(summary.problems[:3]) + ("; …" if len(summary.problems) > 3 else "")
        lines.append(f"(not shown: {unread})")
    return [scrub(line) for line in lines]


# -- asking a running agy --------------------------------------------------------------------


async def _ask(agy: RunningAgy) -> AccountQuota | None:
    port = agy.port
    if port is None or not await asyncio.to_thread(is_port_owned_by, port, agy.pid):
        return None
    pin = await pin_if_ours(port, pid=agy.pid, log_file=None)
    if pin is None:
        return None
    try:
        async with RpcClient(
            port=port,
            csrf_token=agy.record.csrf_token,
            timeout=_ASK_TIMEOUT,
            retry=RetryPolicy(attempts=1, deadline=_ASK_TIMEOUT),
            certificate=pin.certificate,
        ) as client:
            return await read_account_quota(client)
    except AgyError as exc:
        logger.debug("could not ask the agy of %s for quota: %s", agy.key, exc)
        return None


async def ask_running_agy(base: Path | None = None) -> AskedQuota | None:
    """The quota as the first running agy of omnigent-agy that answers reports it."""
    agys = sorted(
        (agy for agy in list_running(base) if agy.alive and agy.port is not None),
        key=lambda agy: agy.started or 0.0,
        reverse=True,
    )
    for agy in agys:
        quota = await _ask(agy)
        if quota is not None:
            return AskedQuota(agy, quota)
    return None


def check_quota(
    base: Path | None = None, *, now: datetime | None = None, tz: tzinfo | None = None
) -> DoctorLine:
    """The doctor's line: the plan and each group's quota, warning when one is used up."""
    name = "agy quota"
    asked = asyncio.run(ask_running_agy(base))
    if asked is None:
        return DoctorLine(name, Status.SKIP, NO_AGY)
    moment = now or datetime.now().astimezone()
    lines = quota_lines(asked.quota, moment, tz)
    summary = asked.quota.summary
    groups: Sequence[QuotaGroup] = summary.groups if summary is not None else ()
    source = f"asked the agy of {asked.agy.key}"
    details = tuple(lines[1:])
    if not groups:
        return DoctorLine(name, Status.SKIP, f"{lines[0]}; {source}", details=details)
    empty = [g for g in groups if g.used_up]
    if not empty:
        return DoctorLine(name, Status.OK, f"{lines[0]}; {source}", details=details)
    when = [
        f"{g.name} until {format_reset(g.usable_again_at, moment, tz)}"
        if g.usable_again_at is not None
        else f"{g.name} until its quota resets"
        for g in empty
    ]
    return DoctorLine(
        name,
        Status.WARN,
        f"{lines[0]}; quota used up for {', '.join(g.name for g in empty)}; {source}",
        "Turns on these models fail: " + "; ".join(when) + ". Pick a model of another group "
        "with `/model`, or wait.",
        details=details,
    )


# -- a turn refused for quota ----------------------------------------------------------------


def _group_of(model: str | None, used_up: Sequence[QuotaGroup]) -> QuotaGroup | None:
    """The used-up group ``model`` (its display name or id) belongs to, as far as names tell."""
    if len(used_up) == 1:
        return used_up[0]
    name = (model or "").casefold()
    named = [g for g in used_up if any(w in name for w in g.name.casefold().split() if len(w) > 2)]
    return named[0] if len(named) == 1 else None


def quota_failure(
    message: str,
    detail: str | None,
    quota: AccountQuota | None,
    *,
    model: str | None,
    now: datetime,
) -> Failure | None:
    """The failure of a turn agy ended with error ``message``/``detail``, when that error is a
    quota refusal (``models.quota.quota_exhaustion``); else None.

    ``quota`` is what agy reported right after (None, or unknown: the error's own words are all
    there is). Also None when agy's figures show quota left in every group: the provider was
    out of capacity, and calling that the person's quota would mislead.
    """
    refusal = quota_exhaustion(message, detail)
    if refusal is None:
        return None
    groups = quota.summary.groups if quota is not None and quota.summary is not None else ()
    used_up = [g for g in groups if g.used_up]
    if groups and not used_up:
        return None
    group = _group_of(model, used_up)
    resets_at = group.usable_again_at if group is not None else None
    if resets_at is None:
        resets_at = refusal.resets_at
    if resets_at is None and refusal.reset_after is not None:
        resets_at = now + refusal.reset_after
    return quota_exhausted_failure(
        message,
        group=group.name if group is not None else None,
        resets=format_reset_utc(resets_at, now) if resets_at is not None else None,
    )
