"""How the plan and quota read for a person (doctor, ps): times, shares, unknowns."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from omnigent_agy.doctor.checks import Status
from omnigent_agy.doctor.quota_report import (
    NO_AGY,
    check_quota,
    describe_group,
    describe_window,
    format_relative,
    format_reset,
    format_reset_utc,
    quota_failure,
    quota_lines,
)
from omnigent_agy.models.quota import AccountQuota, Plan, QuotaGroup, QuotaSummary, QuotaWindow

NOW = datetime(2026, 12, 2, 14, 50, tzinfo=UTC)
BERLIN = timezone(timedelta(hours=1))


@pytest.mark.parametrize(
    ("delta", "words"),
    [
        (timedelta(hours=2, minutes=10), "in 2 h 10 min"),
        (timedelta(hours=2, minutes=10, seconds=59), "in 2 h 10 min"),
        (timedelta(hours=5), "in 5 h"),
        (timedelta(minutes=45), "in 45 min"),
        (timedelta(seconds=59), "in less than a minute"),
        (timedelta(0), "in less than a minute"),
        (timedelta(days=4, hours=18, minutes=5), "in 4 d 18 h"),
        (timedelta(days=1), "in 1 d"),
        (-timedelta(minutes=3), "3 min ago"),
        (-timedelta(seconds=5), "less than a minute ago"),
    ],
)
def test_relative(delta: timedelta, words: str) -> None:
    assert format_relative(delta) == words


@pytest.mark.parametrize(
    ("moment", "tz", "words"),
    [
        (datetime(2026, 12, 2, 17, 0, tzinfo=UTC), UTC, "17:00 (in 2 h 10 min)"),
        (datetime(2026, 12, 2, 17, 0, tzinfo=UTC), BERLIN, "18:00 (in 2 h 10 min)"),
        (datetime(2026, 12, 7, 9, 0, tzinfo=UTC), UTC, "Mon 7 Dec 09:00 (in 4 d 18 h)"),
        # Today in UTC, tomorrow where the person is.
        (datetime(2026, 12, 2, 23, 30, tzinfo=UTC), BERLIN, "Thu 3 Dec 00:30 (in 8 h 40 min)"),
    ],
)
def test_reset(moment: datetime, tz: timezone, words: str) -> None:
    assert format_reset(moment, NOW, tz) == words


RESET = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("window", "words"),
    [
        (QuotaWindow("5h", 0.62, RESET), "5 h: 62% left, resets 17:00 (in 2 h 10 min)"),
        (QuotaWindow("5h", 0.0, RESET), "5 h: used up, resets 17:00 (in 2 h 10 min)"),
        (QuotaWindow("5h", 0.001, None), "5 h: <1% left"),
        (QuotaWindow("weekly", 0.999, None), "weekly: >99% left"),
        (QuotaWindow("weekly", 1.0, None), "weekly: 100% left"),
        (
            QuotaWindow("daily", None, RESET),
            "daily: share left unknown, resets 17:00 (in 2 h 10 min)",
        ),
    ],
)
def test_window(window: QuotaWindow, words: str) -> None:
    assert describe_window(window, NOW, UTC) == words


def test_group_puts_five_hours_first() -> None:
    group = QuotaGroup("Gemini", (QuotaWindow("weekly", 0.9, None), QuotaWindow("5h", 0.5, None)))
    assert describe_group(group, NOW, UTC) == "Gemini: 5 h: 50% left; weekly: 90% left"


def test_lines() -> None:
    quota = AccountQuota(
        Plan("Pro"),
        QuotaSummary(
            (
                QuotaGroup("Gemini", (QuotaWindow("5h", 0.62, RESET),)),
                QuotaGroup("Other models", (QuotaWindow("5h", 0.0, RESET),)),
            ),
            ("group 3 is not an object",),
        ),
    )
    assert quota_lines(quota, NOW, UTC) == [
        "plan: Pro",
        "Gemini: 5 h: 62% left, resets 17:00 (in 2 h 10 min)",
        "Other models: 5 h: used up, resets 17:00 (in 2 h 10 min)",
        "(not shown: group 3 is not an object)",
    ]


def test_lines_when_unknown() -> None:
    quota = AccountQuota(
        None,
        QuotaSummary((), ("agy reported no quota group",)),
        plan_unknown="this agy does not answer GetUserStatus (older than the reports of it)",
        quota_unknown="agy reported no quota group",
    )
    assert quota_lines(quota, NOW, UTC) == [
        "plan: unknown (this agy does not answer GetUserStatus (older than the reports of it))",
        "quota unknown: agy reported no quota group",
    ]


def test_no_running_agy_is_unknown_not_a_failure(tmp_path: Path) -> None:
    result = check_quota(tmp_path / "none")
    assert result.status is Status.SKIP
    assert result.summary == NO_AGY


# -- a turn refused for quota ----------------------------------------------------------------

REFUSED = "You have exhausted your capacity on this model. Your quota will reset after 1h0m0s."


def _quota(*groups: QuotaGroup) -> AccountQuota:
    return AccountQuota(Plan("Pro"), QuotaSummary(groups))


GEMINI_UP = QuotaGroup("Gemini", (QuotaWindow("5h", 0.0, RESET), QuotaWindow("weekly", 0.4, None)))
OTHERS_UP = QuotaGroup("Other models", (QuotaWindow("5h", 0.0, NOW + timedelta(minutes=30)),))
GEMINI_OK = QuotaGroup("Gemini", (QuotaWindow("5h", 0.5, RESET),))


@pytest.mark.parametrize(
    ("quota", "model", "group", "resets"),
    [
        pytest.param(
            _quota(GEMINI_UP, QuotaGroup("Other models", GEMINI_OK.windows)),
            "Gemini 3.1 Pro (High)",
            "Gemini",
            "at 17:00 UTC on Wed 2 Dec (in 2 h 10 min)",
            id="the-used-up-group-and-its-reset",
        ),
        pytest.param(
            _quota(GEMINI_UP, OTHERS_UP),
            "Claude Sonnet 4.6 (Thinking)",
            None,
            "at 15:50 UTC on Wed 2 Dec (in 1 h)",
            id="two-used-up-none-named-the-error-s-own-delay",
        ),
        pytest.param(
            _quota(GEMINI_UP, OTHERS_UP),
            "Gemini 3 Flash",
            "Gemini",
            "at 17:00 UTC on Wed 2 Dec (in 2 h 10 min)",
            id="two-used-up-one-named-like-the-model",
        ),
        pytest.param(
            None, "Gemini 3 Flash", None, "at 15:50 UTC on Wed 2 Dec (in 1 h)", id="quota-unknown"
        ),
        pytest.param(
            AccountQuota(None, QuotaSummary((), ("no response",)), quota_unknown="no response"),
            None,
            None,
            "at 15:50 UTC on Wed 2 Dec (in 1 h)",
            id="quota-answer-malformed",
        ),
    ],
)
def test_a_quota_refusal_says_when_it_resets(
    quota: AccountQuota | None, model: str | None, group: str | None, resets: str
) -> None:
    failure = quota_failure(REFUSED, None, quota, model=model, now=NOW)
    assert failure is not None
    assert failure.code == "agy_quota_exhausted"
    assert failure.title == "agy's quota for this model is used up"
    assert failure.remediation.startswith(f"It resets {resets}. Pick a model of another group")
    which = f"the quota of {group}" if group else "the model's quota"
    assert failure.message == f"agy's model call was refused: {which} is used up ({REFUSED})"


def test_no_reset_time_known() -> None:
    failure = quota_failure("RESOURCE_EXHAUSTED", None, None, model=None, now=NOW)
    assert failure is not None
    assert failure.remediation.startswith("Pick a model of another group")


def test_quota_left_everywhere_is_not_called_quota() -> None:
    """The provider out of capacity while agy shows quota left (antigravity-cli #962)."""
    assert quota_failure(REFUSED, None, _quota(GEMINI_OK), model=None, now=NOW) is None


def test_other_errors_are_not_quota() -> None:
    assert quota_failure("network issue", "doRequest failed", None, model=None, now=NOW) is None


def test_reset_in_utc() -> None:
    assert format_reset_utc(datetime(2026, 12, 7, 9, 0, tzinfo=BERLIN), NOW) == (
        "at 08:00 UTC on Mon 7 Dec (in 4 d 17 h)"
    )
