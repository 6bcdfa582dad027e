"""Which failure a person sees for an error: :func:`failure_for`.

Errors of the layers below name no failure: a table maps their types (most specific first),
``RpcError`` by its connect code. Any other error can name a catalogue code itself, on its
class or per instance (``code = "agy_exited"``), or carry a ready ``failure``. An exception
group stands for its first member we know; an unknown error raised ``from`` a known one, for
that cause. :func:`failure_for` never raises and never lets a secret through (``scrub``).
"""

from __future__ import annotations

from collections.abc import Iterable

from omnigent_agy.agy.process import LaunchError
from omnigent_agy.agy.statedir import StateDirError
from omnigent_agy.agy.terminal import TerminalError
from omnigent_agy.interactions.hooks import PluginLoadError
from omnigent_agy.interactions.policy import InvalidRuleError
from omnigent_agy.onboarding.catalog import InvalidEffortError, UnknownModelError
from omnigent_agy.onboarding.config import AgyNotFoundError, ConfigError
from omnigent_agy.onboarding.failures import (
    AGY_CONFIG_INVALID,
    AGY_CONVERSATION_LOST,
    AGY_CSRF_REJECTED,
    AGY_EFFORT_INVALID,
    AGY_EXITED,
    AGY_FOREIGN_LISTENER,
    AGY_INTERNAL,
    AGY_LAUNCH_FAILED,
    AGY_MODEL_UNKNOWN,
    AGY_NOT_INSTALLED,
    AGY_PLUGIN_FAILED,
    AGY_PORT_NEVER_OPENED,
    AGY_PROTOCOL_ERROR,
    AGY_RATE_LIMITED,
    AGY_RPC_FAILED,
    AGY_SIGNED_OUT,
    AGY_STATE_DIR_INVALID,
    AGY_TMUX_FAILED,
    AGY_UNREACHABLE,
    Failure,
    FailureKind,
    kind_for_code,
)
from omnigent_agy.onboarding.scrub import clip, scrub
from omnigent_agy.rpc.discovery import (
    AgyExitedError,
    AgySignedOutError,
    ConversationNotFoundError,
    CsrfRejectedError,
    DiscoveryError,
    ForeignListenerError,
    PortNeverOpenedError,
)
from omnigent_agy.rpc.errors import Code, CsrfError, ProtocolError, RpcError, StreamStalled

__all__ = ["failure_for"]

_MAX_DEPTH = 8  # exception groups and causes followed this deep


def _remediation(exc: BaseException) -> str | None:
    try:
        remedy = getattr(exc, "remediation", None)
    except Exception:  # noqa: BLE001 - a broken property must not break the error path
        return None
    return remedy if isinstance(remedy, str) and remedy.strip() else None


def _message(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the error path
        text = ""
    text = text or type(exc).__name__
    # Several errors append their remediation to str(); the card shows it separately.
    remedy = _remediation(exc)
    if remedy and text.endswith(remedy) and len(text) > len(remedy):
        text = text[: -len(remedy)].rstrip(" .")
    return text


def _rpc_kind(exc: RpcError) -> FailureKind:
    if isinstance(exc, CsrfError):
        return AGY_CSRF_REJECTED
    if isinstance(exc, StreamStalled):
        return AGY_UNREACHABLE
    if isinstance(exc, ProtocolError):
        return AGY_PROTOCOL_ERROR
    return {
        Code.UNAVAILABLE: AGY_UNREACHABLE,
        Code.DEADLINE_EXCEEDED: AGY_UNREACHABLE,
        Code.UNAUTHENTICATED: AGY_SIGNED_OUT,
        Code.RESOURCE_EXHAUSTED: AGY_RATE_LIMITED,
        Code.INTERNAL: AGY_PROTOCOL_ERROR if exc.http_status == 200 else AGY_RPC_FAILED,
    }.get(exc.code, AGY_RPC_FAILED)


# Most specific first: DiscoveryError subclasses before DiscoveryError itself.
_KINDS: tuple[tuple[type[BaseException], FailureKind], ...] = (
    (AgyNotFoundError, AGY_NOT_INSTALLED),
    (ConfigError, AGY_CONFIG_INVALID),
    (InvalidRuleError, AGY_CONFIG_INVALID),
    (PluginLoadError, AGY_PLUGIN_FAILED),
    (UnknownModelError, AGY_MODEL_UNKNOWN),
    (InvalidEffortError, AGY_EFFORT_INVALID),
    (AgySignedOutError, AGY_SIGNED_OUT),
    (AgyExitedError, AGY_EXITED),
    (PortNeverOpenedError, AGY_PORT_NEVER_OPENED),
    (ForeignListenerError, AGY_FOREIGN_LISTENER),
    (CsrfRejectedError, AGY_CSRF_REJECTED),
    (ConversationNotFoundError, AGY_CONVERSATION_LOST),
    (DiscoveryError, AGY_PORT_NEVER_OPENED),
    (TerminalError, AGY_TMUX_FAILED),
    (StateDirError, AGY_STATE_DIR_INVALID),
    (LaunchError, AGY_LAUNCH_FAILED),
)


def _kind(exc: BaseException) -> FailureKind:
    if isinstance(exc, RpcError):
        return _rpc_kind(exc)
    for error_type, kind in _KINDS:
        if isinstance(exc, error_type):
            return kind
    # Any error can opt in by naming a catalogue code, on its class or per instance
    # (``code = "agy_exited"``): new error types need no change here.
    code = getattr(exc, "code", None)
    return kind_for_code(code) if isinstance(code, str) else AGY_INTERNAL


def _known(exc: BaseException, depth: int = 0) -> tuple[BaseException, str | None]:
    """The error to describe ``exc`` by, and the outer context to prefix its message with.

    An exception group (asyncio TaskGroup) stands for its first member we know; an unknown
    error raised ``from`` a known one stands for that cause, with its own text as context.
    """
    if depth > _MAX_DEPTH:
        return exc, None
    if isinstance(exc, BaseExceptionGroup):
        members = [_known(inner, depth + 1) for inner in exc.exceptions]
        known = [member for member in members if _kind(member[0]) is not AGY_INTERNAL]
        return (known or members or [(exc, None)])[0]
    if _kind(exc) is AGY_INTERNAL and exc.__cause__ is not None:
        cause, context = _known(exc.__cause__, depth + 1)
        if _kind(cause) is not AGY_INTERNAL:
            outer = _message(exc)
            return cause, f"{outer}: {context}" if context else outer
    return exc, None


def failure_for(exc: BaseException, *, secrets: Iterable[str] = ()) -> Failure:
    """The :class:`Failure` a person sees for ``exc``; never raises, never leaks a secret.

    ``secrets`` are strings known to be secret (the session's CSRF token) that are removed
    verbatim before the heuristics run.
    """
    secrets = tuple(secrets)
    try:
        carried = getattr(exc, "failure", None)
        if isinstance(carried, Failure):  # e.g. a pre-flight error: already a catalogue entry
            return Failure(
                carried.code,
                carried.title,
                clip(scrub(carried.message, secrets)),
                scrub(carried.remediation, secrets),
                carried.retryable,
            )
        known, context = _known(exc)
        kind = _kind(known)
        message = _message(known)
        if kind is AGY_INTERNAL:
            message = f"{type(known).__name__}: {message}"
        if context:
            message = f"{context}: {message}"
        if (
            isinstance(known, UnknownModelError)
            and known.valid_names
            and "valid names" not in message
        ):
            message = f"{message}; valid models: {', '.join(known.valid_names)}"
        remedy = _remediation(known)
        return kind.failure(
            scrub(message, secrets), remediation=scrub(remedy, secrets) if remedy else None
        )
    except Exception:  # noqa: BLE001 - the error path itself must never crash the turn
        return AGY_INTERNAL.failure(f"{type(exc).__name__} (details could not be shown)")
