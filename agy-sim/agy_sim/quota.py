"""The account's plan and model quota: ``GetUserStatus`` and ``RetrieveUserQuotaSummary``.

Modelled from public reports, not a recording (docs/wire.md §9, docs/simulator.md "Quota"):

- ``RetrieveUserQuotaSummary {}`` → ``{response: {groups: [{displayName, buckets: [{window:
  "5h" | "weekly", remainingFraction, resetTime}]}]}}``, one group per family of models. agy-sim
  has two: ``Gemini`` (its Gemini models) and ``Other models`` (the rest); the names are a
  **guess**. A share of zero is left out, as protojson leaves zero values out.
- ``GetUserStatus {}`` → the account, its plan at ``userStatus.planStatus.planInfo.planName``
  (the same language server in Antigravity's editor, as tools built on it read it). agy-sim's
  account has an e-mail and a name, so a client that shows them can be caught.

A scenario (``--sim-quota`` / ``AGY_SIM_QUOTA``) sets the figures: ``normal``, ``low`` (Gemini's
5-hour window nearly used up), ``exhausted`` (Gemini's used up), ``malformed`` (answers of the
wrong shape) and ``missing`` (neither method: 404, as an agy older than the reports). A turn
typed "use up my quota" uses up its model's group (for tests through a shared stack).

A turn on a model whose group is used up fails before it starts, with an ERROR_MESSAGE step in
the words of the model provider behind agy (429 ``RESOURCE_EXHAUSTED``, ErrorInfo reason
``QUOTA_EXHAUSTED`` with ``quotaResetDelay`` and ``quotaResetTimeStamp``, as public reports of
that backend show it); that agy passes them on so is a **guess**.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from agy_sim.catalog import CatalogModel

__all__ = [
    "QUOTA_SCENARIOS",
    "QUOTA_TRIGGER",
    "QuotaAccount",
    "QuotaRefusal",
]

QUOTA_SCENARIOS: Final = ("normal", "low", "exhausted", "malformed", "missing")
QUOTA_TRIGGER: Final = re.compile(r"use up (?:my|the) quota", re.IGNORECASE)
GEMINI: Final = "Gemini"
OTHERS: Final = "Other models"
# When each window starts again, from the process's start: fixed, so answers agree.
FIVE_HOURS_RESET: Final = timedelta(hours=2, minutes=10)
WEEK_RESET: Final = timedelta(days=4, hours=18)

type Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


@dataclass(frozen=True, slots=True)
class QuotaRefusal:
    """The ERROR_MESSAGE of a turn refused for quota: agy's fields (a guess, module doc)."""

    user_message: str
    short_error: str
    full_error: str
    error_code: int = 429


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _delay(delta: timedelta) -> str:
    """Go's duration text: ``2h10m0s``."""
    seconds = max(0, int(delta.total_seconds()))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}h{minutes}m{seconds}s"


@dataclass(slots=True)
class QuotaAccount:
    """One signed-in account's plan and quota, as one agy-sim process serves them."""

    scenario: str = "normal"
    plan: str = "Pro"
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    used_up: set[str] = field(default_factory=set)
    _remaining: dict[tuple[str, str], float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.scenario not in QUOTA_SCENARIOS:
            raise ValueError(f"unknown quota scenario {self.scenario!r}")
        self.started = self.started.replace(microsecond=0)
        self._remaining = {
            (GEMINI, "5h"): 0.62,
            (GEMINI, "weekly"): 0.9,
            (OTHERS, "5h"): 1.0,
            (OTHERS, "weekly"): 0.75,
        }
        if self.scenario == "low":
            self._remaining[GEMINI, "5h"] = 0.04
        if self.scenario == "exhausted":
            self.used_up.add(GEMINI)

    @staticmethod
    def group_of(model: CatalogModel) -> str:
        return GEMINI if model.display_name.startswith("Gemini") else OTHERS

    def resets(self, window: str) -> datetime:
        return self.started + (FIVE_HOURS_RESET if window == "5h" else WEEK_RESET)

    def use_up(self, model: CatalogModel) -> None:
        """Nothing left in the 5-hour window of ``model``'s group."""
        self.used_up.add(self.group_of(model))

    def remaining(self, group: str, window: str) -> float:
        if window == "5h" and group in self.used_up:
            return 0.0
        return self._remaining[group, window]

    # -- the wire --------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """RetrieveUserQuotaSummary's answer (protojson: a zero share is left out)."""
        if self.scenario == "malformed":
            return {"response": {"groups": "all of them"}}
        groups = []
        for group in (GEMINI, OTHERS):
            buckets = []
            for window in ("5h", "weekly"):
                bucket: dict[str, Any] = {"window": window}
                share = self.remaining(group, window)
                if share:
                    bucket["remainingFraction"] = share
                bucket["resetTime"] = _rfc3339(self.resets(window))
                buckets.append(bucket)
            groups.append({"displayName": group, "buckets": buckets})
        return {"response": {"groups": groups}}

    def user_status(self) -> dict[str, Any]:
        """GetUserStatus's answer: the account (never to be shown) and its plan."""
        if self.scenario == "malformed":
            return {"userStatus": ["Pro"]}
        return {
            "userStatus": {
                "name": "Sim Person",
                "email": "sim.person@example.com",
                "planStatus": {
                    "planInfo": {"planName": self.plan, "teamsTier": "TEAMS_TIER_PRO"},
                    "availablePromptCredits": 500,
                },
            }
        }

    def handlers(self) -> dict[str, Handler]:
        """The two methods, or none (an agy older than the reports answers 404)."""
        if self.scenario == "missing":
            return {}

        async def summary(_request: dict[str, Any]) -> dict[str, Any]:
            return self.summary()

        async def user_status(_request: dict[str, Any]) -> dict[str, Any]:
            return self.user_status()

        return {"RetrieveUserQuotaSummary": summary, "GetUserStatus": user_status}

    # -- turns -----------------------------------------------------------------------------

    def refusal(self, model: CatalogModel, now: float | None = None) -> QuotaRefusal | None:
        """Why a turn on ``model`` fails now, or None when its group has quota left."""
        group = self.group_of(model)
        if group not in self.used_up:
            return None
        at = self.resets("5h")
        moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
        delay = _delay(at - moment)
        message = (
            f"You have exhausted your capacity on this model. Your quota will reset after {delay}."
        )
        body = {
            "error": {
                "code": 429,
                "message": message,
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "QUOTA_EXHAUSTED",
                        "domain": "cloudcode-pa.googleapis.com",
                        "metadata": {
                            "model": model.key,
                            "quotaResetDelay": delay,
                            "quotaResetTimeStamp": _rfc3339(at),
                        },
                    }
                ],
            }
        }
        return QuotaRefusal(
            user_message=message,
            short_error=f"RESOURCE_EXHAUSTED (code 429): {message}",
            full_error=json.dumps(body),
        )
