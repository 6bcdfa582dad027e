"""Reading agy's plan and quota answers (docs/wire.md §9): well-formed, odd and malformed
answers as table rows; none raises, each keeps what it could read and names the rest."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from omnigent_agy.errors import Code, ProtocolError, RpcError
from omnigent_agy.models.quota import (
    AccountQuota,
    Plan,
    QuotaExhaustion,
    QuotaGroup,
    QuotaSummary,
    QuotaWindow,
    parse_quota_summary,
    parse_rfc3339,
    parse_user_status,
    quota_exhaustion,
    read_account_quota,
)

RESET = "2026-12-02T17:00:00Z"
RESET_AT = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
WEEK_AT = datetime(2026, 12, 7, 9, 0, tzinfo=UTC)


def bucket(window: str = "5h", fraction: object = 0.62, reset: object = RESET) -> dict[str, Any]:
    return {"window": window, "remainingFraction": fraction, "resetTime": reset}


def answer(*groups: object) -> dict[str, Any]:
    return {"response": {"groups": list(groups)}}


GEMINI = {
    "displayName": "Gemini",
    "buckets": [bucket(), bucket("weekly", 0.9, "2026-12-07T09:00:00.123456789Z")],
}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            answer(GEMINI),
            QuotaSummary(
                (
                    QuotaGroup(
                        "Gemini",
                        (
                            QuotaWindow("5h", 0.62, RESET_AT),
                            QuotaWindow("weekly", 0.9, WEEK_AT.replace(microsecond=123456)),
                        ),
                    ),
                )
            ),
            id="as-reported",
        ),
        pytest.param(
            answer({"displayName": "Other models", "buckets": [{"window": "5h"}]}),
            QuotaSummary((QuotaGroup("Other models", (QuotaWindow("5h", 0.0, None),)),)),
            id="zero-left-out-by-protojson-is-used-up",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [bucket(fraction="0.25")]}),
            QuotaSummary((QuotaGroup("G", (QuotaWindow("5h", 0.25, RESET_AT),)),)),
            id="fraction-as-a-string",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [bucket(window="daily", fraction=1)]}),
            QuotaSummary((QuotaGroup("G", (QuotaWindow("daily", 1.0, RESET_AT),)),)),
            id="unknown-window-kept-as-named",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [bucket(fraction=1.5), bucket("weekly")]}),
            QuotaSummary(
                (
                    QuotaGroup(
                        "G",
                        (QuotaWindow("5h", None, RESET_AT), QuotaWindow("weekly", 0.62, RESET_AT)),
                    ),
                ),
                ("G bucket 1 (5h): remainingFraction 1.5 is not 0..1",),
            ),
            id="fraction-out-of-range-is-unknown-not-zero",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [bucket(fraction=True, reset="soon")]}),
            QuotaSummary(
                (QuotaGroup("G", (QuotaWindow("5h", None, None),)),),
                (
                    "G bucket 1 (5h): remainingFraction True is not 0..1",
                    "G bucket 1 (5h): resetTime 'soon' is not a time",
                ),
            ),
            id="bool-fraction-and-bad-time",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [bucket(fraction="NaN")]}),
            QuotaSummary(
                (QuotaGroup("G", (QuotaWindow("5h", None, RESET_AT),)),),
                ("G bucket 1 (5h): remainingFraction 'NaN' is not 0..1",),
            ),
            id="nan",
        ),
        pytest.param(
            answer({"buckets": [bucket()]}, "junk", {"displayName": "E", "buckets": "x"}),
            QuotaSummary(
                (QuotaGroup("group 1", (QuotaWindow("5h", 0.62, RESET_AT),)),),
                (
                    "group 1 has no displayName",
                    "group 2 is not an object",
                    "E: buckets is not a list",
                    "E: no window could be read",
                ),
            ),
            id="bad-groups-dropped-good-kept",
        ),
        pytest.param(
            answer({"displayName": "G", "buckets": [7, {"remainingFraction": 1}, bucket()]}),
            QuotaSummary(
                (QuotaGroup("G", (QuotaWindow("5h", 0.62, RESET_AT),)),),
                ("G bucket 1 is not an object", "G bucket 2 names no window"),
            ),
            id="bad-buckets-dropped",
        ),
        pytest.param(
            answer(),
            QuotaSummary((), ("agy reported no quota group",)),
            id="no-groups",
        ),
        pytest.param(
            {"response": {"groups": {"a": 1}}},
            QuotaSummary((), ("agy's quota answer has response.groups is not a list",)),
            id="groups-not-a-list",
        ),
        pytest.param({}, QuotaSummary((), ("agy's quota answer has no response",)), id="empty"),
        pytest.param([], QuotaSummary((), ("agy's quota answer has no response",)), id="a-list"),
        pytest.param(None, QuotaSummary((), ("agy's quota answer has no response",)), id="null"),
    ],
)
def test_quota_summary(raw: object, expected: QuotaSummary) -> None:
    assert parse_quota_summary(raw) == expected


def test_group_helpers() -> None:
    group = QuotaGroup(
        "G",
        (QuotaWindow("5h", 0.0, RESET_AT), QuotaWindow("weekly", 0.0, WEEK_AT)),
    )
    assert group.used_up
    assert group.usable_again_at == WEEK_AT  # both windows must reset
    assert group.window("weekly") == QuotaWindow("weekly", 0.0, WEEK_AT)
    assert group.window("daily") is None
    unknown = QuotaGroup("G", (QuotaWindow("5h", 0.0, None),))
    assert unknown.used_up
    assert unknown.usable_again_at is None
    fine = QuotaGroup("G", (QuotaWindow("5h", None, RESET_AT), QuotaWindow("weekly", 0.5, None)))
    assert not fine.used_up
    assert fine.usable_again_at is None


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param(
            {"userStatus": {"planStatus": {"planInfo": {"planName": "Pro"}}, "email": "a@b.c"}},
            Plan("Pro"),
            id="plan-name",
        ),
        pytest.param(
            {
                "userStatus": {
                    "planStatus": {"planInfo": {"teamsTier": "TEAMS_TIER_ULTRA_BUSINESS"}}
                }
            },
            Plan("Ultra Business"),
            id="tier-only",
        ),
        pytest.param(
            {"userStatus": {"planStatus": {"planInfo": {}}}},
            Plan(None, ("agy's plan has no planName",)),
            id="no-name",
        ),
        pytest.param(
            {"userStatus": {"planStatus": "Pro"}},
            Plan(None, ("agy's account answer names no plan (userStatus.planStatus.planInfo)",)),
            id="plan-status-not-an-object",
        ),
        pytest.param(
            {"userStatus": []},
            Plan(None, ("agy's account answer has no userStatus",)),
            id="status-not-an-object",
        ),
        pytest.param({}, Plan(None, ("agy's account answer has no userStatus",)), id="empty"),
        pytest.param("x", Plan(None, ("agy's account answer has no userStatus",)), id="a-string"),
    ],
)
def test_user_status(raw: object, expected: Plan) -> None:
    assert parse_user_status(raw) == expected


def test_the_account_is_never_read() -> None:
    plan = parse_user_status(
        {"userStatus": {"email": "me@example.com", "name": "Me", "planStatus": {"planInfo": {}}}}
    )
    assert "me@example.com" not in repr(plan)
    assert "Me" not in repr(plan).replace("Plan", "")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-12-02T17:00:00Z", RESET_AT),
        ("2026-12-02T17:00:00.000000001Z", RESET_AT),
        ("2026-12-02T18:00:00+01:00", RESET_AT),
        ("2026-12-02T17:00:00.5z", RESET_AT.replace(microsecond=500000)),
        ("2026-12-02T17:00:00", None),  # no zone: not RFC 3339
        ("tomorrow", None),
        ("", None),
        (17, None),
    ],
)
def test_rfc3339(text: object, expected: datetime | None) -> None:
    assert parse_rfc3339(text) == expected


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Client:
    """Stands in for RpcClient where only a malformed server could answer this way."""

    def __init__(self, quota: object, status: object) -> None:
        self._quota, self._status = quota, status

    @staticmethod
    async def _answer(value: object) -> Any:
        if isinstance(value, BaseException):
            raise value
        return value

    async def retrieve_user_quota_summary(self) -> Any:
        return await self._answer(self._quota)

    async def get_user_status(self) -> Any:
        return await self._answer(self._status)


PRO = {"userStatus": {"planStatus": {"planInfo": {"planName": "Pro"}}}}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("quota", "status", "plan_unknown", "quota_unknown"),
    [
        pytest.param(answer(GEMINI), PRO, None, None, id="both"),
        pytest.param(
            RpcError(Code.UNIMPLEMENTED, "no such method", http_status=404),
            RpcError(Code.UNIMPLEMENTED, "no such method", http_status=404),
            "this agy does not answer GetUserStatus (older than the reports of it)",
            "this agy does not answer RetrieveUserQuotaSummary (older than the reports of it)",
            id="an-agy-without-the-methods",
        ),
        pytest.param(
            ProtocolError("not JSON", method="RetrieveUserQuotaSummary"),
            {},
            "agy's account answer has no userStatus",
            "RetrieveUserQuotaSummary failed (internal): not JSON",
            id="garbage-and-empty",
        ),
        pytest.param(
            answer(),
            PRO,
            None,
            "agy reported no quota group",
            id="no-groups",
        ),
    ],
)
async def test_read_account_quota_degrades(
    quota: object, status: object, plan_unknown: str | None, quota_unknown: str | None
) -> None:
    result = await read_account_quota(_Client(quota, status))  # type: ignore[arg-type]
    assert isinstance(result, AccountQuota)
    assert result.plan_unknown == plan_unknown
    assert result.quota_unknown is not None if quota_unknown else result.quota_unknown is None
    if quota_unknown:
        assert quota_unknown in str(result.quota_unknown)


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        pytest.param(
            (
                "You have exhausted your capacity on this model. Your quota will reset after "
                "25h20m26.5s.",
            ),
            QuotaExhaustion(None, timedelta(hours=25, minutes=20, seconds=26.5)),
            id="provider-words",
        ),
        pytest.param(
            (
                "Individual quota reached.",
                '[429]: {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": '
                '[{"metadata": {"quotaResetDelay": "2h10m0s", '
                '"quotaResetTimeStamp": "2026-12-02T17:00:00Z"}}]}}',
            ),
            QuotaExhaustion(RESET_AT, None),
            id="provider-json-in-the-detail",
        ),
        pytest.param(
            ('{\\"quotaResetTimeStamp\\": \\"2026-12-02T17:00:00Z\\"} QUOTA_EXHAUSTED',),
            QuotaExhaustion(RESET_AT, None),
            id="escaped-json",
        ),
        pytest.param(
            ("RESOURCE_EXHAUSTED (code 429): resets in 45m",),
            QuotaExhaustion(None, timedelta(minutes=45)),
            id="minutes-only",
        ),
        pytest.param(("quota exceeded", None), QuotaExhaustion(), id="no-time"),
        pytest.param(
            ("Encountered retryable error from model provider: network issue",), None, id="other"
        ),
        pytest.param(("HTTP 429 Too Many Requests",), None, id="a-bare-429-is-not-quota"),
        pytest.param((None, None), None, id="nothing"),
    ],
)
def test_quota_refusal(texts: tuple[str | None, ...], expected: QuotaExhaustion | None) -> None:
    assert quota_exhaustion(*texts) == expected
