"""The account's plan and model quota, as agy's language server reports them (docs/wire.md §9).

Two methods, each wanting the CSRF header like any call (only public reports describe them,
no recording):

- ``RetrieveUserQuotaSummary {}`` → ``{response: {groups: [{displayName, buckets: [{window:
  "5h" | "weekly", remainingFraction, resetTime}]}]}}``: one group per family of models;
- ``GetUserStatus {}`` → the account; the plan's name is reported at
  ``userStatus.planStatus.planInfo.planName`` (the same server in Antigravity's editor). The
  account's e-mail and name travel there too and are never read.

The parsers never raise and lose nothing: a group, window or value they cannot read is left
out of the figures and named in ``problems``, so a caller shows what it could read and says
what it could not. :func:`read_account_quota` asks a running agy for both and turns any
failure (a transport error, an agy too old to have the methods, a malformed answer) into
"quota unknown" with the reason, never an exception.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Final

from omnigent_agy.errors import AgyError, Code, RpcError

if TYPE_CHECKING:
    from omnigent_agy.rpc.client import RpcClient

__all__ = [
    "QUOTA_METHOD",
    "USER_STATUS_METHOD",
    "AccountQuota",
    "Plan",
    "QuotaExhaustion",
    "QuotaGroup",
    "QuotaSummary",
    "QuotaWindow",
    "parse_quota_summary",
    "parse_rfc3339",
    "parse_user_status",
    "quota_exhaustion",
    "read_account_quota",
]

QUOTA_METHOD: Final = "RetrieveUserQuotaSummary"
USER_STATUS_METHOD: Final = "GetUserStatus"
_MAX_PROBLEMS: Final = 20
_NAME_LIMIT: Final = 80


@dataclass(frozen=True, slots=True)
class QuotaWindow:
    """One bucket: the share of a window's quota left and when the window starts again.

    ``remaining`` is None when agy's value could not be read; ``resets_at`` is aware (UTC).
    """

    window: str
    remaining: float | None
    resets_at: datetime | None

    @property
    def used_up(self) -> bool:
        return self.remaining is not None and self.remaining <= 0.0


@dataclass(frozen=True, slots=True)
class QuotaGroup:
    """One family of models sharing a quota (e.g. Gemini, or the others)."""

    name: str
    windows: tuple[QuotaWindow, ...]

    def window(self, name: str) -> QuotaWindow | None:
        """The bucket of window ``name`` (``"5h"``, ``"weekly"``), if agy reported one."""
        return next((w for w in self.windows if w.window == name), None)

    @property
    def used_up(self) -> bool:
        """Some window of the group has nothing left: its models fail until it resets."""
        return any(w.used_up for w in self.windows)

    @property
    def usable_again_at(self) -> datetime | None:
        """When every used-up window has reset (the latest of their resets), if known."""
        resets = [w.resets_at for w in self.windows if w.used_up]
        if not resets or any(r is None for r in resets):
            return None
        return max(r for r in resets if r is not None)


@dataclass(frozen=True, slots=True)
class QuotaSummary:
    """What ``RetrieveUserQuotaSummary`` said that could be read, and what could not."""

    groups: tuple[QuotaGroup, ...]
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Plan:
    """The account's plan as ``GetUserStatus`` names it (None: not named or not readable)."""

    name: str | None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AccountQuota:
    """Plan and quota of the signed-in account, each None with a reason when unknown."""

    plan: Plan | None
    summary: QuotaSummary | None
    plan_unknown: str | None = None
    quota_unknown: str | None = None


# -- parsing ---------------------------------------------------------------------------------


def parse_rfc3339(value: object) -> datetime | None:
    """An aware datetime from protojson's RFC 3339 text (nanoseconds allowed), else None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    head, dot, rest = text.partition(".")
    if dot:
        # Python reads at most six digits of a fraction; agy writes up to nine.
        digits = len(rest) - len(rest.lstrip("0123456789"))
        rest = rest[: min(digits, 6)] + rest[digits:]
        text = f"{head}.{rest}" if rest[:1].isdigit() else head + rest
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    return moment.astimezone(UTC) if moment.tzinfo is not None else None


def _fraction(value: object) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):  # protojson spells some doubles as strings
        try:
            value = float(value)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


def _name(value: object) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return None
    text = " ".join(value.split())
    return text if len(text) <= _NAME_LIMIT else text[: _NAME_LIMIT - 1] + "…"


def _window(raw: object, where: str, problems: list[str]) -> QuotaWindow | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where} is not an object")
        return None
    name = _name(raw.get("window"))
    if name is None:
        problems.append(f"{where} names no window")
        return None
    # protojson leaves a zero value out (docs/wire.md §3): no remainingFraction is 0, nothing
    # left. A value that is there but not a share between 0 and 1 is unknown, not zero.
    raw_fraction = raw.get("remainingFraction", 0.0)
    remaining = _fraction(raw_fraction)
    if remaining is None:
        problems.append(f"{where} ({name}): remainingFraction {raw_fraction!r} is not 0..1")
    resets_at = parse_rfc3339(raw.get("resetTime"))
    if resets_at is None and raw.get("resetTime") is not None:
        problems.append(f"{where} ({name}): resetTime {raw.get('resetTime')!r} is not a time")
    return QuotaWindow(name, remaining, resets_at)


def _group(raw: object, index: int, problems: list[str]) -> QuotaGroup | None:
    where = f"group {index + 1}"
    if not isinstance(raw, Mapping):
        problems.append(f"{where} is not an object")
        return None
    name = _name(raw.get("displayName"))
    if name is None:
        problems.append(f"{where} has no displayName")
        name = f"group {index + 1}"
    buckets = raw.get("buckets", [])
    if not isinstance(buckets, list):
        problems.append(f"{name}: buckets is not a list")
        buckets = []
    windows = [_window(b, f"{name} bucket {i + 1}", problems) for i, b in enumerate(buckets)]
    kept = tuple(w for w in windows if w is not None)
    if not kept:
        problems.append(f"{name}: no window could be read")
        return None
    return QuotaGroup(name, kept)


def parse_quota_summary(answer: object) -> QuotaSummary:
    """``RetrieveUserQuotaSummary``'s answer as groups; never raises (module docstring)."""
    problems: list[str] = []
    response = answer.get("response") if isinstance(answer, Mapping) else None
    groups_raw = response.get("groups") if isinstance(response, Mapping) else None
    if not isinstance(groups_raw, list):
        what = "response.groups is not a list" if isinstance(response, Mapping) else "no response"
        return QuotaSummary((), (f"agy's quota answer has {what}",))
    groups = [_group(raw, i, problems) for i, raw in enumerate(groups_raw)]
    kept = tuple(g for g in groups if g is not None)
    if not groups_raw:
        problems.append("agy reported no quota group")
    return QuotaSummary(kept, tuple(problems[:_MAX_PROBLEMS]))


_TIER_PREFIXES: Final = ("TEAMS_TIER_", "USER_TIER_", "TIER_")


def parse_user_status(answer: object) -> Plan:
    """The plan's name from ``GetUserStatus``'s answer; never raises, reads nothing else."""
    status = answer.get("userStatus") if isinstance(answer, Mapping) else None
    if not isinstance(status, Mapping):
        return Plan(None, ("agy's account answer has no userStatus",))
    plan_status = status.get("planStatus")
    info = plan_status.get("planInfo") if isinstance(plan_status, Mapping) else None
    if not isinstance(info, Mapping):
        return Plan(None, ("agy's account answer names no plan (userStatus.planStatus.planInfo)",))
    name = _name(info.get("planName"))
    if name is not None:
        return Plan(name)
    tier = _name(info.get("teamsTier"))
    if tier is not None:
        for prefix in _TIER_PREFIXES:
            tier = tier.removeprefix(prefix)
        return Plan(tier.replace("_", " ").title())
    return Plan(None, ("agy's plan has no planName",))


# -- a model call refused for quota ---------------------------------------------------------

# How agy words a model call refused for quota is not recorded. The model provider behind it
# answers 429 RESOURCE_EXHAUSTED, e.g. "You have exhausted your capacity on this model. Your
# quota will reset after 25h20m26s." with an ErrorInfo of reason QUOTA_EXHAUSTED whose
# metadata holds the model, quotaResetDelay and quotaResetTimeStamp (public reports of the
# same backend); agy passes its model errors on in the ERROR_MESSAGE step (docs/wire.md §5).
# So any of these words, wherever agy puts them, means quota: a **guess** at agy's shape.
_QUOTA_WORDS = re.compile(
    r"RESOURCE[_ ]EXHAUSTED|QUOTA[_ ]EXHAUSTED|exhausted your (?:capacity|quota)"
    r"|quota (?:reached|exceeded|exhausted|is used up)",
    re.IGNORECASE,
)
_RESET_AFTER = re.compile(
    r"reset(?:s)?\s+(?:after|in)\s+(?P<delay>(?:\d+h)?(?:\d+m(?!s))?(?:\d+(?:\.\d+)?s)?)",
    re.IGNORECASE,
)
_RESET_AT = re.compile(
    r"quotaResetTimeStamp\W{1,8}(?P<at>\d{4}-\d\d-\d\dT[\d:.]+(?:Z|[+-]\d\d:\d\d))"
)
_DELAY_PART = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>[hms])")
_UNIT_SECONDS: Final = {"h": 3600.0, "m": 60.0, "s": 1.0}


@dataclass(frozen=True, slots=True)
class QuotaExhaustion:
    """A model call agy reported as refused for quota, with what its text says of the reset."""

    resets_at: datetime | None = None
    reset_after: timedelta | None = None


def quota_exhaustion(*texts: str | None) -> QuotaExhaustion | None:
    """The quota refusal ``texts`` (an error's message and detail) report, or None."""
    joined = "\n".join(text for text in texts if text)
    if not _QUOTA_WORDS.search(joined):
        return None
    at = _RESET_AT.search(joined)
    after = _RESET_AFTER.search(joined)
    delay = None
    if after and after["delay"]:
        seconds = sum(
            float(part["n"]) * _UNIT_SECONDS[part["unit"]]
            for part in _DELAY_PART.finditer(after["delay"])
        )
        delay = timedelta(seconds=seconds)
    return QuotaExhaustion(parse_rfc3339(at["at"]) if at else None, delay)


# -- asking agy ------------------------------------------------------------------------------


def _why(method: str, exc: AgyError) -> str:
    if isinstance(exc, RpcError) and (
        exc.http_status == 404 or exc.connect_code is Code.UNIMPLEMENTED
    ):
        return f"this agy does not answer {method} (older than the reports of it)"
    if isinstance(exc, RpcError):
        return f"{method} failed ({exc.connect_code}): {exc.message}"
    return f"{method} failed: {exc}"


async def read_account_quota(client: RpcClient) -> AccountQuota:
    """Ask agy for the plan and the quota; anything that goes wrong is "unknown", with why."""
    plan: Plan | None = None
    summary: QuotaSummary | None = None
    plan_unknown = quota_unknown = None
    try:
        summary = parse_quota_summary(await client.retrieve_user_quota_summary())
    except AgyError as exc:
        quota_unknown = _why(QUOTA_METHOD, exc)
    else:
        if not summary.groups:
            quota_unknown = "; ".join(summary.problems) or "agy reported no quota group"
    try:
        plan = parse_user_status(await client.get_user_status())
    except AgyError as exc:
        plan_unknown = _why(USER_STATUS_METHOD, exc)
    else:
        if plan.name is None:
            plan_unknown = "; ".join(plan.problems)
    return AccountQuota(plan, summary, plan_unknown, quota_unknown)
