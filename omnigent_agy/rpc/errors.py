"""Errors raised by omnigent-agy: the root of the tree, and the connect errors of the wire.

Every error the plugin raises derives from ``AgyError``. The whole tree, each class with the
module that defines it (under ``omnigent_agy``; ``adapter`` is ``omnigent.community.harness.agy``)::

    AgyError                          rpc.errors
    ├── NonLoopbackHostError          rpc.errors              also a ValueError
    ├── RpcError                      rpc.errors
    │   ├── CsrfError                 rpc.errors
    │   ├── ProtocolError             rpc.errors
    │   └── StreamStalled             rpc.errors
    ├── NeverSentError                rpc.channel             also a ConnectionError
    ├── DiscoveryError                rpc.discovery
    │   ├── AgyExitedError            rpc.discovery
    │   ├── AgySignedOutError         rpc.discovery
    │   ├── PortNeverOpenedError      rpc.discovery
    │   ├── ForeignListenerError      rpc.discovery
    │   ├── CsrfRejectedError         rpc.discovery
    │   └── ConversationNotFoundError rpc.discovery
    ├── TerminalError                 agy.terminal
    ├── StateDirError                 agy.statedir
    ├── LaunchError                   agy.process
    ├── SeedError                     agy.gemini_source
    ├── WorkspaceHiddenError          agy.workspace
    ├── WorkspaceUnreachableError     agy.workspace
    ├── WorkspaceNotTrustedError      agy.trust
    ├── TrustFileError                agy.trust
    ├── ConversationStoreError        agy.conversations
    ├── ConversationUnknownError      agy.conversations
    ├── InvalidRuleError              interactions.policy
    ├── PluginLoadError               interactions.hooks
    ├── PromptUnavailableError        interactions.prompts
    ├── InteractionDeliveryError      interactions.delivery
    ├── ConfigError                   onboarding.config
    ├── AgyNotFoundError              onboarding.config
    ├── UnknownModelError             onboarding.catalog
    ├── InvalidEffortError            onboarding.catalog
    ├── OmnigentApiError              onboarding.omnigent_api
    ├── RelayError                    relay.harness_client
    ├── ProbeError                    probe.facts
    │   └── RecordingLeakError        probe.recording
    ├── SessionError                  session.binding
    │   └── PreflightError            session.binding
    ├── WorkspaceIgnoredError         session.workspace_check
    ├── MessageError                  session.messages        also a ValueError
    └── ContributionError             adapter.plugin

Not errors, so outside the tree: control-flow signals that never leave the layer raising them
(``Refused`` in rpc.unary_connection, ``_RefusedHttp1`` in rpc.connection, ``_Interrupted`` in
interactions.bridge). tests/test_error_tree.py holds this drawing to the classes.

What a person sees for each error is a coded failure (``omnigent_agy.onboarding.explain``).

``RpcError.code`` is always a :class:`Code`, whose values are the connect wire strings
(docs/wire.md §1-§2), so a caller can branch on ``err.code is Code.UNAVAILABLE`` whatever
happened underneath: transport failures are UNAVAILABLE, timeouts DEADLINE_EXCEEDED.
Foreign errors (httpx, h2, ssl) are translated at one boundary in ``omnigent_agy.rpc.translate``.

No message here ever contains the CSRF token (docs/decisions.md §9).
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any

__all__ = [
    "AgyError",
    "Code",
    "CsrfError",
    "NonLoopbackHostError",
    "ProtocolError",
    "RpcError",
    "StreamStalled",
    "code_from_http_status",
    "redact_secret",
]

REDACTED = "[redacted]"
# A secret's head this long at the end of a text is taken for the secret cut short (an
# error text clipped to 200 characters may end inside it).
_MIN_CUT_SECRET = 4


class AgyError(Exception):
    """Root of every error omnigent-agy raises."""


class NonLoopbackHostError(AgyError, ValueError):
    """The RPC client was asked to talk to a host that is not loopback.

    The client does not verify agy's self-signed certificate, which is only safe on loopback.
    """


class Code(StrEnum):
    """Connect error codes; each value is the string that travels on the wire."""

    CANCELED = "canceled"
    UNKNOWN = "unknown"
    INVALID_ARGUMENT = "invalid_argument"
    DEADLINE_EXCEEDED = "deadline_exceeded"
    NOT_FOUND = "not_found"
    ALREADY_EXISTS = "already_exists"
    PERMISSION_DENIED = "permission_denied"
    RESOURCE_EXHAUSTED = "resource_exhausted"
    FAILED_PRECONDITION = "failed_precondition"
    ABORTED = "aborted"
    OUT_OF_RANGE = "out_of_range"
    UNIMPLEMENTED = "unimplemented"
    INTERNAL = "internal"
    UNAVAILABLE = "unavailable"
    DATA_LOSS = "data_loss"
    UNAUTHENTICATED = "unauthenticated"

    @classmethod
    def parse(cls, value: object) -> Code:
        """The code a wire value names; anything unrecognised is UNKNOWN (never trust the wire)."""
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                return cls.UNKNOWN
        return cls.UNKNOWN

    @property
    def http_status(self) -> int:
        """The HTTP status a connect server answers a unary call failing with this code."""
        return _CODE_TO_HTTP[self]


_CODE_TO_HTTP: dict[Code, int] = {
    Code.CANCELED: 499,
    Code.UNKNOWN: 500,
    Code.INVALID_ARGUMENT: 400,
    Code.DEADLINE_EXCEEDED: 504,
    Code.NOT_FOUND: 404,
    Code.ALREADY_EXISTS: 409,
    Code.PERMISSION_DENIED: 403,
    Code.RESOURCE_EXHAUSTED: 429,
    Code.FAILED_PRECONDITION: 400,
    Code.ABORTED: 409,
    Code.OUT_OF_RANGE: 400,
    Code.UNIMPLEMENTED: 501,
    Code.INTERNAL: 500,
    Code.UNAVAILABLE: 503,
    Code.DATA_LOSS: 500,
    Code.UNAUTHENTICATED: 401,
}

# The connect protocol's table for an error answer whose body carries no code
# (e.g. agy's plain-text "403 Invalid CSRF token", docs/wire.md §1, or a proxy's 502).
_HTTP_TO_CODE: dict[int, Code] = {
    400: Code.INTERNAL,
    401: Code.UNAUTHENTICATED,
    403: Code.PERMISSION_DENIED,
    404: Code.UNIMPLEMENTED,
    429: Code.UNAVAILABLE,
    502: Code.UNAVAILABLE,
    503: Code.UNAVAILABLE,
    504: Code.UNAVAILABLE,
}


def code_from_http_status(status: int) -> Code:
    """The connect code for an HTTP error status when the body names none."""
    return _HTTP_TO_CODE.get(status, Code.UNKNOWN)


def redact_secret(text: str, secret: str) -> str:
    """``text`` without ``secret``, also where a clipped text ends inside it."""
    if not secret:
        return text
    text = text.replace(secret, REDACTED)
    for length in range(min(len(secret) - 1, len(text)), _MIN_CUT_SECRET - 1, -1):
        if text.endswith(secret[:length]):
            return text[:-length] + REDACTED
    return text


def _redact_value(value: Any, secret: str) -> Any:
    if isinstance(value, str):
        redacted = redact_secret(value, secret)
        return value if redacted == value else redacted  # a Code stays a Code
    if isinstance(value, list | tuple):
        return [_redact_value(item, secret) for item in value]
    if isinstance(value, dict):
        return {
            redact_secret(str(key), secret): _redact_value(item, secret)
            for key, item in value.items()
        }
    return value


class RpcError(AgyError):
    """A connect call that failed.

    ``http_status`` is None when no HTTP answer arrived (transport failure, timeout) or the
    error came in a stream's end-of-stream envelope; ``method`` is the RPC method name when
    known; ``details`` are the connect error details exactly as received.
    """

    def __init__(
        self,
        code: Code,
        message: str,
        *,
        http_status: int | None = None,
        method: str | None = None,
        details: Sequence[Any] = (),
    ) -> None:
        self.code = code
        self.message = message
        self.http_status = http_status
        self.method = method
        self.details: tuple[Any, ...] = tuple(details)
        super().__init__(code, message)

    @property
    def remediation(self) -> str | None:
        """What a person can do about it, when there is something to do."""
        return None

    def redact(self, secret: str) -> None:
        """Take ``secret`` out of everything the server's answer put in this error."""
        self.message = redact_secret(self.message, secret)
        self.details = tuple(_redact_value(list(self.details), secret))
        self.args = tuple(_redact_value(list(self.args), secret))

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        status = f" (HTTP {self.http_status})" if self.http_status is not None else ""
        return f"{where}[{self.code.value}] {self.message}{status}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code.value!r}, message={self.message!r}, "
            f"http_status={self.http_status!r}, method={self.method!r})"
        )


class CsrfError(RpcError):
    """agy refused our CSRF token: 401 = none was sent, 403 = it is not the one agy has."""

    @property
    def remediation(self) -> str:
        if self.http_status == 401:
            return (
                "agy wants a CSRF token and none was sent. omnigent-agy starts agy with a fresh "
                "token and sends it on every call; run `omnigent-agy doctor` to check the setup."
            )
        return (
            "agy rejected the CSRF token: another agy or another process answers on that port, "
            "or agy was restarted with a new token. Re-discover agy's port; run "
            "`omnigent-agy doctor` if it persists."
        )

    def __str__(self) -> str:
        return f"{super().__str__()}. {self.remediation}"


class ProtocolError(RpcError):
    """The server's answer breaks the connect protocol.

    Wrong content type, truncated envelope, invalid JSON, a compressed or oversized frame,
    data after end of stream, or a stream that ends without its end-of-stream envelope.
    """

    def __init__(
        self,
        message: str,
        *,
        code: Code = Code.INTERNAL,
        http_status: int | None = None,
        method: str | None = None,
    ) -> None:
        super().__init__(code, message, http_status=http_status, method=method)


# The name is the interface other modules code against; it reads as a condition, not a class.
class StreamStalled(RpcError):  # noqa: N818
    """No frame arrived on a stream within its liveness deadline (docs/wire.md §4: after `/clear`
    a stream can hang with neither frame nor trailer). Re-check with GetAllCascadeTrajectories."""

    def __init__(self, idle_timeout: float, *, method: str | None = None) -> None:
        self.idle_timeout = idle_timeout
        super().__init__(
            Code.DEADLINE_EXCEEDED,
            f"no stream frame within {idle_timeout:g} s",
            method=method,
        )
