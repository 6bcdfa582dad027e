"""The hooks omnigent-agy offers plugins, published under the entry-point group ``omnigent_agy``.

A plugin is a module or object with ``@hookimpl`` functions named as below, taking only the
arguments it uses. Registration hooks get a ``register`` callback; a ``firstresult`` hook stops
at the first answer that is not None. ``plugins`` loads the plugins and calls the hooks.

What the hooks pass is defined here too: the harness's registration, an onboarding
check, a turn as the host asks it, and the turn driver the built-in turn hooks delegate
to; ``plugins`` imports them from here, and this module imports nothing of it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pluggy

if TYPE_CHECKING:
    from omnigent_agy.interactions.policy import PermissionDecision, PermissionRequest

__all__ = [
    "PROJECT",
    "CheckResult",
    "HarnessRegistration",
    "OnboardingCheck",
    "TurnCall",
    "TurnDriver",
    "agy_interrupt_session",
    "agy_onboarding_checks",
    "agy_permission_decision",
    "agy_register_harness",
    "agy_register_models",
    "agy_run_turn",
    "hookimpl",
    "hookspec",
]


@dataclass(frozen=True, slots=True)
class HarnessRegistration:
    """The harness omnigent-agy contributes; ``capabilities`` is omnigent's record or None."""

    harness_id: str
    label: str
    aliases: tuple[str, ...] = ()
    capabilities: object | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    ok: bool
    detail: str
    remediation: str | None = None


@dataclass(frozen=True, slots=True)
class OnboardingCheck:
    """One line of ``omnigent-agy doctor``: a name and a function that runs the check."""

    name: str
    run: Callable[[], CheckResult]


@dataclass(frozen=True, slots=True)
class TurnCall:
    """One turn as the host asks it (omnigent's ``Executor.run_turn``), written once: the
    ``agy_run_turn`` hook, the built-in plugin and the executor all take it whole."""

    session_key: str
    messages: list[dict[str, object]]
    """The whole conversation as the host resends it; only the newest user message is sent."""
    tools: list[dict[str, object]]
    system_prompt: str
    config: object
    """omnigent's ``ExecutorConfig`` of the turn (model, effort), or None."""


class TurnDriver(Protocol):
    """What the built-in ``agy_run_turn`` / ``agy_interrupt_session`` delegate to."""

    def builtin_run_turn(self, call: TurnCall) -> AsyncIterator[object]: ...

    def builtin_interrupt_session(self, session_key: str) -> Awaitable[bool]: ...


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
