"""What the hooks pass (``hookspecs`` names the hooks, ``hooks`` calls them): the harness's
registration, an onboarding check, a turn as the host asks it, and the turn driver the
built-in turn hooks delegate to.

A module of its own so that the specification and the caller both import it and neither the
other (no import circle)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

__all__ = ["CheckResult", "HarnessRegistration", "OnboardingCheck", "TurnCall", "TurnDriver"]


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
