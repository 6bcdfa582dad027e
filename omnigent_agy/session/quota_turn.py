"""A turn agy ended because the model's quota is used up: say when it resets.

agy ends such a turn with an error in the model provider's words (``models.quota.quota_exhaustion``
recognises them; how agy words it is a guess, docs/wire.md §9). Right then the session asks agy
for the account's quota, so the failure can name the model group that is used up and when it
resets (``doctor.quota_report.quota_failure``); when agy's figures show quota left everywhere, the
error is left as it is (a model error: calling it quota would mislead).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace
from datetime import UTC, datetime

from omnigent_agy.doctor.quota_report import quota_failure
from omnigent_agy.errors import AgyError
from omnigent_agy.models.quota import AccountQuota, quota_exhaustion, read_account_quota
from omnigent_agy.rpc.endpoint import FollowingClient
from omnigent_agy.session.turn_results import TurnResult

__all__ = ["explain_quota"]

_logger = logging.getLogger(__name__)


async def explain_quota(
    result: TurnResult, rpc: Callable[[], Awaitable[FollowingClient]], *, model: str | None
) -> TurnResult:
    """``result`` with its quota failure when agy refused the turn for quota; else as it is."""
    error = result.error
    if result.status != "failed" or error is None:
        return result
    if quota_exhaustion(error.message, error.detail) is None:
        return result
    quota: AccountQuota | None = None
    try:
        quota = await (await rpc()).run(read_account_quota)
    except AgyError as exc:  # the error's own words are all there is
        _logger.info("could not ask agy for the quota after a quota error: %s", exc)
    failure = quota_failure(error.message, error.detail, quota, model=model, now=datetime.now(UTC))
    return result if failure is None else replace(result, failure=failure)
