"""The hooks omnigent-agy offers plugins, published under the entry-point group ``omnigent_agy``.

A plugin is a module or object with ``@hookimpl`` functions named as below, taking only the
arguments it uses. Registration hooks get a ``register`` callback; a ``firstresult`` hook stops
at the first answer that is not None. The data types are in ``hooktypes``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from omnigent_agy.interactions.hooktypes import (
        HarnessRegistration,
        OnboardingCheck,
        TurnCall,
        TurnDriver,
    )
    from omnigent_agy.interactions.policy import PermissionDecision, PermissionRequest

PROJECT = "omnigent_agy"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


@hookspec
def agy_register_harness(register: Callable[[HarnessRegistration], None]) -> None:
    """Register the harness id, its aliases, label and capabilities."""


@hookspec
def agy_register_models(register: Callable[[str, str], None]) -> None:
    """Register model aliases: ``register(alias, display name or enum)``."""


@hookspec
def agy_onboarding_checks(register: Callable[[OnboardingCheck], None]) -> None:
    """Register extra checks that ``omnigent-agy doctor`` runs."""


@hookspec(firstresult=True)
def agy_run_turn(executor: TurnDriver, call: TurnCall) -> AsyncIterator[object] | None:
    """Run one turn (``call``: what the host asked, ``call.session_key`` among it): return the
    async iterator of executor events, or None to pass (``executor.builtin_run_turn(call)``
    runs it as omnigent-agy does)."""


@hookspec(firstresult=True)
def agy_interrupt_session(executor: TurnDriver, session_key: str) -> Awaitable[bool] | None:
    """Interrupt the running turn: return an awaitable of success, or None to pass."""


@hookspec(firstresult=True)
def agy_permission_decision(request: PermissionRequest) -> PermissionDecision | None:
    """Decide a permission request, or return None to leave it to the rules and mode."""
