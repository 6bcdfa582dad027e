"""A turn's usage in omnigent's keys: tokens, the context meter's figure, the model, the cost.

What omnigent 0.19.1 does with them (docs/in-omnigent.md, "Context meter and cost"):

- ``context_tokens`` is the meter's numerator. It is agy's own estimate of the context in
  use (docs/wire.md §9), else the prompt of the turn's largest model call.
- ``model`` is looked up in omnigent's model catalog for the meter's window and, without a
  ``cost_usd``, for the price (``server/routes/_sessions/orchestration.py``,
  ``_context_labels_from_turn_usage`` and ``_accumulate_session_usage``). No usage key
  carries a window (``runtime/harnesses/_scaffold.py`` copies only these keys), so the
  plugin names the model by the id omnigent's catalog knows it by (`model_facts`), and by
  agy's display name where it knows none.
- ``cost_usd`` is taken as the turn's price as it is. It is sent only when every model call
  of the turn has a known price (`model_facts.turn_cost`) and the calls this process saw
  add up to agy's total; otherwise it is left out, and the turn is unpriced: omnigent's web
  then shows no cost rather than $0.00.
"""

from __future__ import annotations

import logging
from typing import Any

from omnigent_agy import ModelCatalog, ModelUsage, TurnResult, facts_for, turn_cost, window_for

__all__ = ["usage_dict"]

_logger = logging.getLogger(__name__)
_windows_logged: set[tuple[str, int]] = set()


def usage_dict(
    result: TurnResult,
    *,
    catalog: ModelCatalog | None = None,
    model: str | None = None,
) -> dict[str, Any] | None:
    """agy's summed ``modelUsage`` of the turn in omnigent's usage keys; `model` is agy's enum
    of the turn's model, looked up in agy's `catalog`."""
    usage = result.usage
    if usage is None:
        return None
    reported: dict[str, Any] = {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }
    if result.context_used is not None:
        reported["context_tokens"] = result.context_used
    elif result.last_call is not None:
        reported["context_tokens"] = (
            result.last_call.input_tokens + result.last_call.cache_read_tokens
        )
    entry = catalog.entry(model) if catalog is not None and model else None
    if entry is not None:
        row = facts_for(entry.display_name)
        reported["model"] = row.omnigent_id if row and row.omnigent_id else entry.display_name
        _log_window(catalog, model, reported["model"])
    cost = turn_cost(result.calls, catalog) if _complete(result.calls, usage) else None
    if cost is not None:
        reported["cost_usd"] = round(cost, 8)
    return reported


def _complete(calls: tuple[ModelUsage, ...], total: ModelUsage) -> bool:
    """Whether the calls this process saw are the whole turn (a harness process that took
    over mid-turn saw only its part, while agy's total counts every call)."""
    if not calls:
        return False
    seen = calls[0]
    for call in calls[1:]:
        seen = seen + call
    return (seen.input_tokens, seen.output_tokens, seen.cache_read_tokens) == (
        total.input_tokens,
        total.output_tokens,
        total.cache_read_tokens,
    )


def _log_window(catalog: ModelCatalog | None, enum: str | None, reported: str) -> None:
    """Say once per model what its window is and where that came from, so a meter sized
    otherwise by omnigent's catalog can be told apart from agy's window in the log."""
    known = window_for(catalog, enum)
    if known is None or (reported, known[0]) in _windows_logged:
        return
    _windows_logged.add((reported, known[0]))
    _logger.info(
        "agy's model %s has a context window of %s tokens (%s); omnigent sizes its context "
        "meter by looking up %r in its own model catalog",
        reported,
        f"{known[0]:,}",
        known[1],
        reported,
    )
