"""The catalogue of failures a person sees, and the mapping from every error we raise.

Everything that reaches omnigent as a failure is an ``ExecutorError`` with a stable ``code``,
a short ``title`` and a ``remediation`` that names the command to run (DESIGN-NOTES §8).
This module builds the host-agnostic :class:`Failure`; the omnigent adapter turns it into
``ExecutorError`` (``omnigent.community.harness.agy.failures.to_executor_error``).

:func:`failure_for` never raises and never lets a secret through: messages are scrubbed of
the CSRF token (agy's command line and its environment carry it, WIRE.md §1) and of any
long random-looking string, since an error message may quote a command line or a header.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from omnigent_agy.agy.launcher import LaunchError
from omnigent_agy.agy.statedir import StateDirError
from omnigent_agy.agy.terminal import TerminalError
from omnigent_agy.interactions.hooks import PluginLoadError
from omnigent_agy.interactions.policy import InvalidRuleError
from omnigent_agy.onboarding.catalog import InvalidEffortError, UnknownModelError
from omnigent_agy.onboarding.config import (
    ENV_PATH,
    INSTALL_HINT,
    KEY,
    AgyNotFoundError,
    ConfigError,
)
from omnigent_agy.rpc.discovery import (
    AgyExitedError,
    ConversationNotFoundError,
    CsrfRejectedError,
    DiscoveryError,
    ForeignListenerError,
    PortNeverOpenedError,
)
from omnigent_agy.rpc.errors import Code, CsrfError, ProtocolError, RpcError, StreamStalled

__all__ = [
    "CATALOGUE",
    "MIN_AGY_VERSION",
    "Failure",
    "FailureKind",
    "failure_for",
    "kind_for_code",
    "scrub",
    "signed_out_failure",
    "too_old_failure",
]

# agy learned --csrf_token in 1.2.2 (WIRE.md §1); an older agy answers every port to anyone.
MIN_AGY_VERSION = (1, 2, 2)
_DOCTOR = "`omnigent-agy doctor`"
_MAX_MESSAGE = 1500
_MAX_DEPTH = 8  # exception groups and causes followed this deep


@dataclass(frozen=True, slots=True)
class Failure:
    """One failure as a person sees it; the fields of omnigent's ``ExecutorError``."""

    code: str
    title: str
    message: str
    remediation: str
    retryable: bool = False


@dataclass(frozen=True, slots=True)
class FailureKind:
    """A catalogue entry: the stable code, its title and the default remediation."""

    code: str
    title: str
    remediation: str
    retryable: bool = False

    def failure(self, message: str, *, remediation: str | None = None) -> Failure:
        """This kind of failure with ``message`` (scrubbed) and an optional better remedy."""
        return Failure(
            code=self.code,
            title=self.title,
            message=_clip(scrub(message)) or self.title,
            remediation=scrub(remediation) if remediation else self.remediation,
            retryable=self.retryable,
        )


AGY_NOT_INSTALLED = FailureKind(
    "agy_not_installed",
    "Antigravity CLI not found",
    f"Install the Antigravity CLI (`{INSTALL_HINT}`) or set {ENV_PATH} / {KEY}.command to "
    f"its path; then run {_DOCTOR}.",
)
AGY_SIGNED_OUT = FailureKind(
    "agy_signed_out",
    "agy is not signed in",
    "Run `agy` in a terminal and sign in with your Google account (`agy models` works once "
    f"you are signed in); then retry or run {_DOCTOR}.",
)
AGY_TOO_OLD = FailureKind(
    "agy_too_old",
    "agy is too old",
    f"Install the current Antigravity CLI (`{INSTALL_HINT}`); omnigent-agy needs agy "
    f">= {'.'.join(map(str, MIN_AGY_VERSION))}, which protects its port with a CSRF token. "
    f"Check with {_DOCTOR}.",
)
AGY_PORT_NEVER_OPENED = FailureKind(
    "agy_port_never_opened",
    "agy did not start its language server",
    f"Run `agy` in a terminal to see whether it starts and is signed in; then run {_DOCTOR}.",
)
AGY_EXITED = FailureKind(
    "agy_exited",
    "agy exited during start-up",
    f"Run `agy` in a terminal: it prints what is wrong (sign-in, version); then run {_DOCTOR}.",
)
AGY_CSRF_REJECTED = FailureKind(
    "agy_csrf_rejected",
    "agy refused the session's token",
    "Stop the agy of this conversation (tmux socket `omnigent-agy`) so the next turn starts "
    f"a fresh one; run {_DOCTOR} if it persists.",
)
AGY_FOREIGN_LISTENER = FailureKind(
    "agy_foreign_listener",
    "Another program holds agy's port",
    "Stop the program that listens on the port agy announced, then retry.",
)
AGY_MODEL_UNKNOWN = FailureKind(
    "agy_model_unknown",
    "Unknown model",
    "Pick one of the models agy offers (`agy models` lists them) with `/model <name>`.",
)
AGY_EFFORT_INVALID = FailureKind(
    "agy_effort_invalid",
    "Unknown reasoning effort",
    "Use a reasoning effort of low, medium or high.",
)
AGY_MESSAGE_UNSUPPORTED = FailureKind(
    "agy_message_unsupported",
    "This message cannot be handed to agy",
    "Send text, or attach files with their content (not links); files can also be put in the "
    "workspace and named in the message.",
)
AGY_CONFIG_INVALID = FailureKind(
    "agy_config_invalid",
    "omnigent-agy configuration error",
    f"Fix the key named in the message in ~/.omnigent/config.yaml ({KEY}); "
    "`omnigent-agy config` shows what is in effect.",
)
AGY_PLUGIN_FAILED = FailureKind(
    "agy_plugin_failed",
    "An omnigent-agy plugin failed",
    "Fix or uninstall the plugin named in the message; `omnigent-agy config` lists plugins.",
)
AGY_UNREACHABLE = FailureKind(
    "agy_unreachable",
    "agy is not answering",
    f"Retry the message; if it keeps failing, stop this conversation's agy and run {_DOCTOR}.",
    retryable=True,
)
AGY_RATE_LIMITED = FailureKind(
    "agy_rate_limited",
    "agy's quota is exhausted",
    "Wait a moment and retry, or pick another model with `/model <name>`.",
    retryable=True,
)
AGY_PROTOCOL_ERROR = FailureKind(
    "agy_protocol_error",
    "agy answered something unexpected",
    f"This agy version may speak a protocol omnigent-agy does not know yet: run {_DOCTOR} "
    "and report the agy version.",
)
AGY_RPC_FAILED = FailureKind(
    "agy_rpc_failed",
    "agy refused the request",
    f"Retry the message; if it keeps failing, run {_DOCTOR}.",
)
AGY_CONVERSATION_LOST = FailureKind(
    "agy_conversation_lost",
    "agy lost this conversation",
    "Start a new conversation, or stop this conversation's agy so the next turn starts "
    "a fresh one.",
)
AGY_LAUNCH_FAILED = FailureKind(
    "agy_launch_failed",
    "agy could not be started",
    f"Run {_DOCTOR}.",
)
AGY_TMUX_FAILED = FailureKind(
    "agy_tmux_failed",
    "tmux could not run agy",
    f"Install tmux (3.2a or newer) and check it with {_DOCTOR}.",
)
AGY_STATE_DIR_INVALID = FailureKind(
    "agy_state_dir_invalid",
    "omnigent-agy's state directory is unsafe",
    "Fix the owner or permissions named in the message (it must be yours, mode 0700).",
)
AGY_ONBOARDING_INCOMPLETE = FailureKind(
    "agy_onboarding_incomplete",
    "agy's onboarding is not finished",
    "Run `agy` in a terminal once and finish its onboarding (omnigent-agy copies "
    f"~/.gemini/antigravity-cli/cache/onboarding.json); then run {_DOCTOR}.",
)
AGY_WORKSPACE_UNTRUSTED = FailureKind(
    "agy_workspace_untrusted",
    "agy does not trust this workspace",
    "omnigent-agy adds the workspace to trustedWorkspaces in agy's private settings; stop "
    f"this conversation's agy so the next turn seeds it again, and run {_DOCTOR}.",
)
AGY_SETTINGS_INVALID = FailureKind(
    "agy_settings_invalid",
    "agy's settings cannot be used",
    f"Fix or remove the file named in the message (it must be a JSON object); run {_DOCTOR}.",
)
AGY_INTERNAL = FailureKind(
    "agy_internal",
    "omnigent-agy failed unexpectedly",
    f"Retry the message; run {_DOCTOR}, and report the error if it persists.",
)

CATALOGUE: tuple[FailureKind, ...] = (
    AGY_NOT_INSTALLED,
    AGY_SIGNED_OUT,
    AGY_TOO_OLD,
    AGY_PORT_NEVER_OPENED,
    AGY_EXITED,
    AGY_CSRF_REJECTED,
    AGY_FOREIGN_LISTENER,
    AGY_MODEL_UNKNOWN,
    AGY_EFFORT_INVALID,
    AGY_MESSAGE_UNSUPPORTED,
    AGY_CONFIG_INVALID,
    AGY_PLUGIN_FAILED,
    AGY_UNREACHABLE,
    AGY_RATE_LIMITED,
    AGY_PROTOCOL_ERROR,
    AGY_RPC_FAILED,
    AGY_CONVERSATION_LOST,
    AGY_LAUNCH_FAILED,
    AGY_TMUX_FAILED,
    AGY_STATE_DIR_INVALID,
    AGY_ONBOARDING_INCOMPLETE,
    AGY_WORKSPACE_UNTRUSTED,
    AGY_SETTINGS_INVALID,
    AGY_INTERNAL,
)
_BY_CODE = {kind.code: kind for kind in CATALOGUE}


def kind_for_code(code: str) -> FailureKind:
    """The catalogue entry of ``code``; an unknown code is ``agy_internal``."""
    return _BY_CODE.get(code, AGY_INTERNAL)


# -- scrubbing -------------------------------------------------------------------------------

# ``--csrf_token=T``, ``ANTIGRAVITY_CSRF_TOKEN=T``, ``x-codeium-csrf-token: T``, JSON keys.
# With a colon the name must be compound (``-``/``_``): "the CSRF token: another agy…" is prose.
_ASSIGNED = re.compile(
    r"""(?ix)
    (?P<name>[\w.-]*(?:csrf|token|secret|password|passwd|api[_-]?key)[\w.-]*)
    (?P<sep>['"]?\s*(?P<op>[=:])\s*['"]?)
    (?P<value>[^\s'",;)}\]]+)
    """
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s'\",;)}\]]+")
_CANDIDATE = re.compile(r"[A-Za-z0-9_\-]{20,}")
_PART = re.compile(r"[A-Za-z0-9]{10,}")
# Words as code spells them: UPPER, lower, camelCase, CamelCase with short acronyms, and a
# short number. Random mixed case almost never fits (it needs two lower-case letters after
# every capital run); hex and base32 fail the letter/digit test instead.
_WORDLIKE = re.compile(r"[A-Z0-9]+|[a-z0-9]+|[a-z]*(?:[A-Z]{1,6}[a-z]{2,})*[A-Z]{0,6}[0-9]{0,4}")
# Cascade and conversation ids are UUIDs: useful in a report, and not secrets.
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_MIN_SWITCHES = 4  # letter/digit alternations that identifiers and slugs rarely reach
REDACTED = "[redacted]"


def _looks_random(text: str) -> bool:
    """A token (``secrets.token_urlsafe``/``token_hex``), not an identifier, slug or UUID."""
    if _UUID.fullmatch(text):
        return False
    if all(any(test(c) for c in text) for test in (str.isupper, str.islower, str.isdigit)):
        return True
    kinds = [c.isdigit() for c in text if c.isalnum()]
    if sum(a != b for a, b in itertools.pairwise(kinds)) >= _MIN_SWITCHES:
        return True
    return any(not _WORDLIKE.fullmatch(part) for part in _PART.findall(text))


def _redact_assignment(match: re.Match[str]) -> str:
    name, value = match["name"], match["value"]
    if value == REDACTED or (match["op"] == ":" and not any(c in name for c in "-_")):
        return match[0]
    return f"{name}{match['sep']}{REDACTED}"


def scrub(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` without ``secrets``, values of secret-named settings or random-looking strings."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _ASSIGNED.sub(_redact_assignment, text)
    text = _BEARER.sub(lambda m: f"{m[1]}{REDACTED}", text)
    return _CANDIDATE.sub(lambda m: REDACTED if _looks_random(m[0]) else m[0], text)


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


# -- mapping ---------------------------------------------------------------------------------


def signed_out_failure(detail: str | None = None) -> Failure:
    """agy is installed but not signed in (``agy models`` failed)."""
    message = "agy is not signed in to a Google account"
    return AGY_SIGNED_OUT.failure(f"{message}: {detail}" if detail else message)


def too_old_failure(version: str) -> Failure:
    """agy ``version`` predates CSRF tokens (``MIN_AGY_VERSION``)."""
    minimum = ".".join(map(str, MIN_AGY_VERSION))
    return AGY_TOO_OLD.failure(
        f"agy {version} is older than {minimum}: it cannot be started with a CSRF token, so "
        "any local program could drive it"
    )


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
    return _BY_CODE.get(code, AGY_INTERNAL) if isinstance(code, str) else AGY_INTERNAL


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
                _clip(scrub(carried.message, secrets)),
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
