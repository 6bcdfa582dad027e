"""Every error omnigent-agy raises, and the failure each one is for a person.

Every error derives from ``AgyError`` and carries its entry of the failure catalogue
(the catalogue below) as ``kind``: the stable code, a title and what to do;
``err.code`` is that entry's code, the only meaning ``code`` has on an error. The whole tree,
each class with the code of its entry::

    AgyError                          agy_internal
    ├── NonLoopbackHostError          agy_internal               also a ValueError
    ├── RpcError                      agy_rpc_failed
    │   ├── CsrfError                 agy_csrf_rejected
    │   ├── ProtocolError             agy_protocol_error
    │   └── StreamStalled             agy_unreachable
    ├── NeverSentError                agy_internal               also a ConnectionError
    ├── DiscoveryError                agy_port_never_opened
    │   ├── AgyExitedError            agy_exited
    │   ├── AgySignedOutError         agy_signed_out
    │   ├── PortNeverOpenedError      agy_port_never_opened
    │   ├── ForeignListenerError      agy_foreign_listener
    │   ├── CsrfRejectedError         agy_csrf_rejected
    │   └── ConversationNotFoundError agy_conversation_lost
    ├── TerminalError                 agy_tmux_failed
    ├── StateDirError                 agy_state_dir_invalid
    ├── LaunchError                   agy_launch_failed
    ├── SeedError                     agy_settings_invalid
    ├── WorkspaceHiddenError          agy_workspace_hidden
    ├── WorkspaceUnreachableError     agy_workspace_unreachable
    ├── WorkspaceNotTrustedError      agy_workspace_not_trusted
    ├── TrustFileError                agy_trust_file_invalid
    ├── ConversationStoreError        agy_conversations_unreadable
    ├── ConversationUnknownError      agy_conversation_unknown
    ├── InvalidRuleError              agy_config_invalid
    ├── PluginLoadError               agy_plugin_failed
    ├── PromptUnavailableError        agy_internal
    ├── InteractionDeliveryError      agy_protocol_error
    ├── ConfigError                   agy_config_invalid
    ├── AgyNotFoundError              agy_not_installed
    ├── UnknownModelError             agy_model_unknown
    ├── InvalidEffortError            agy_effort_invalid
    ├── OmnigentApiError              agy_omnigent_unreachable
    ├── RelayError                    agy_internal
    ├── ProbeError                    agy_internal
    │   └── RecordingLeakError        agy_internal
    ├── SessionError                  agy_internal
    │   └── PreflightError            agy_internal
    ├── WorkspaceIgnoredError         agy_workspace_ignored
    ├── MessageError                  agy_message_unsupported    also a ValueError
    └── ContributionError             agy_internal

Three set their entry per error: a plain ``RpcError`` by its connect code (UNAVAILABLE and
DEADLINE_EXCEEDED are ``agy_unreachable``, UNAUTHENTICATED ``agy_signed_out``,
RESOURCE_EXHAUSTED ``agy_rate_limited``), a ``SessionError`` by the ``kind`` it is raised
with, a ``PreflightError`` by the :class:`Failure` it carries. ``ContributionError`` is the
omnigent adapter's (a plugin contributed something it cannot use), drawn here with the rest.

Not errors, so outside the tree: control-flow signals that never leave the layer raising them
(``Refused`` in rpc.unary_connection, ``_RefusedHttp1`` in rpc.connection, ``_Interrupted`` in
interactions.bridge). tests/test_error_tree.py holds this drawing to the classes.

What a person sees for an error is :func:`failure_for`'s ``Failure``, scrubbed of secrets; the
omnigent adapter turns it into an ``ExecutorError``. A new error is a class here with its
``kind``, drawn above; no other module defines one (tests/test_error_tree.py).

``RpcError.connect_code`` is a :class:`Code`, whose values are the connect wire strings
(docs/wire.md §1-§2): transport failures are UNAVAILABLE, timeouts DEADLINE_EXCEEDED. Foreign
errors (httpx, h2, ssl) are translated at one boundary, ``omnigent_agy.rpc.error_boundary``.

No message here ever contains the CSRF token (docs/decisions.md §9: ``RpcError.redact``).

The catalogue of failures a person sees is here too. Everything that reaches omnigent as a
failure is an ``ExecutorError`` with a stable ``code``, a short ``title`` and a
``remediation`` that names the command to run (docs/decisions.md §8): the host-agnostic
:class:`Failure`, every :class:`FailureKind` (``CATALOGUE``), and what makes a text fit to be
shown: :func:`scrub` takes secrets out (agy's command line and environment carry the CSRF
token, docs/wire.md §1), :func:`clip` cuts it to an error card. The omnigent adapter turns a
``Failure`` into an ``ExecutorError`` (``omnigent.community.harness.agy.executor_errors``). A new
failure is one ``FailureKind`` here and its row in docs/onboarding.md's table;
tests/test_failure_codes.py fails until both exist, and until no module but this
one spells a code.

This module sits on the ground floor: it imports the standard library and the package root's
constants only, so every layer may raise its errors (the relay's MCP server, standard library
only, among them). It is longer than other modules because it is the whole tree in one place.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from omnigent_agy.constants import ENV_PATH, INSTALL_HINT, KEY, MIN_AGY_VERSION, TMUX_SOCKET

__all__ = [
    "AGY_CONFIG_INVALID",
    "AGY_CONVERSATIONS_UNREADABLE",
    "AGY_CONVERSATION_LOST",
    "AGY_CONVERSATION_UNKNOWN",
    "AGY_CSRF_REJECTED",
    "AGY_EFFORT_INVALID",
    "AGY_EXITED",
    "AGY_FOREIGN_LISTENER",
    "AGY_INTERACTION_TIMED_OUT",
    "AGY_INTERNAL",
    "AGY_LAUNCH_FAILED",
    "AGY_MESSAGE_UNSUPPORTED",
    "AGY_MODEL_ERROR",
    "AGY_MODEL_UNKNOWN",
    "AGY_NOT_INSTALLED",
    "AGY_OMNIGENT_UNREACHABLE",
    "AGY_ONBOARDING_INCOMPLETE",
    "AGY_PLUGIN_FAILED",
    "AGY_PORT_NEVER_OPENED",
    "AGY_PROTOCOL_ERROR",
    "AGY_QUOTA_EXHAUSTED",
    "AGY_RATE_LIMITED",
    "AGY_RPC_FAILED",
    "AGY_SETTINGS_INVALID",
    "AGY_SIGNED_OUT",
    "AGY_STATE_DIR_INVALID",
    "AGY_TMUX_FAILED",
    "AGY_TOO_OLD",
    "AGY_TRUST_FILE_INVALID",
    "AGY_UNREACHABLE",
    "AGY_WORKSPACE_HIDDEN",
    "AGY_WORKSPACE_IGNORED",
    "AGY_WORKSPACE_NOT_TRUSTED",
    "AGY_WORKSPACE_UNREACHABLE",
    "AGY_WORKSPACE_UNTRUSTED",
    "CATALOGUE",
    "REDACTED",
    "AgyError",
    "AgyExitedError",
    "AgyNotFoundError",
    "AgySignedOutError",
    "Code",
    "ConfigError",
    "ContributionError",
    "ConversationNotFoundError",
    "ConversationStoreError",
    "ConversationUnknownError",
    "CsrfError",
    "CsrfRejectedError",
    "DiscoveryError",
    "Failure",
    "FailureKind",
    "ForeignListenerError",
    "InteractionDeliveryError",
    "InvalidEffortError",
    "InvalidRuleError",
    "LaunchError",
    "MessageError",
    "NeverSentError",
    "NonLoopbackHostError",
    "OmnigentApiError",
    "PluginLoadError",
    "PortNeverOpenedError",
    "PreflightError",
    "ProbeError",
    "PromptUnavailableError",
    "ProtocolError",
    "RecordingLeakError",
    "RelayError",
    "RpcError",
    "SeedError",
    "SessionError",
    "StateDirError",
    "StreamStalled",
    "TerminalError",
    "TrustFileError",
    "UnknownModelError",
    "WorkspaceHiddenError",
    "WorkspaceIgnoredError",
    "WorkspaceNotTrustedError",
    "WorkspaceUnreachableError",
    "clip",
    "code_from_http_status",
    "failure_for",
    "gave_up_waiting_failure",
    "kind_for_code",
    "model_error_failure",
    "quota_exhausted_failure",
    "redact_secret",
    "scrub",
    "signed_out_failure",
    "too_old_failure",
]

# -- redaction -------------------------------------------------------------------------------

REDACTED = "[redacted]"
# A secret's head this long at the end of a text is taken for the secret cut short (an
# error text clipped to 200 characters may end inside it).
_MIN_CUT_SECRET = 4
_MAX_MESSAGE = 1500
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


def redact_secret(text: str, secret: str) -> str:
    """``text`` without ``secret``, also where a clipped text ends inside it."""
    if not secret:
        return text
    text = text.replace(secret, REDACTED)
    for length in range(min(len(secret) - 1, len(text)), _MIN_CUT_SECRET - 1, -1):
        if text.endswith(secret[:length]):
            return text[:-length] + REDACTED
    return text


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
    """``text`` without ``secrets``, values of secret-named settings or random-looking strings.

    An error message may quote a command line or a header, and agy's command line and its
    environment carry the CSRF token (docs/wire.md §1); conversation ids (UUIDs), model names
    and paths stay.
    """
    for secret in secrets:
        if secret:
            text = text.replace(secret, REDACTED)
    text = _ASSIGNED.sub(_redact_assignment, text)
    text = _BEARER.sub(lambda m: f"{m[1]}{REDACTED}", text)
    return _CANDIDATE.sub(lambda m: REDACTED if _looks_random(m[0]) else m[0], text)


def clip(text: str) -> str:
    """``text`` on one line, cut to what an error card shows."""
    text = " ".join(text.split())
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 1] + "…"


# -- the failure catalogue (docs/decisions.md §8, docs/onboarding.md's table) ------------------

_DOCTOR = "`omnigent-agy doctor`"


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

    def failure(
        self, message: str, *, remediation: str | None = None, retryable: bool | None = None
    ) -> Failure:
        """This kind of failure with ``message`` (scrubbed), an optional better remedy and,
        where the one failing knows better (agy's own verdict), whether a retry can help."""
        return Failure(
            code=self.code,
            title=self.title,
            message=clip(scrub(message)) or self.title,
            remediation=scrub(remediation) if remediation else self.remediation,
            retryable=self.retryable if retryable is None else retryable,
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
    f"Stop the agy of this conversation (tmux socket `{TMUX_SOCKET}`) so the next turn starts "
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
AGY_QUOTA_EXHAUSTED = FailureKind(
    "agy_quota_exhausted",
    "agy's quota for this model is used up",
    "Pick a model of another group with `/model`, or wait until the quota resets; "
    "`omnigent-agy ps` shows each group's quota and when it resets.",
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
AGY_LAUNCH_FAILED = FailureKind("agy_launch_failed", "agy could not be started", f"Run {_DOCTOR}.")
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
    "omnigent-agy adds a workspace you trust to trustedWorkspaces in agy's private settings; "
    "stop this conversation's agy (`omnigent-agy stop`) so the next turn seeds it again, and "
    f"run {_DOCTOR}.",
)
AGY_WORKSPACE_NOT_TRUSTED = FailureKind(
    "agy_workspace_not_trusted",
    "Antigravity CLI did not start: this folder is not trusted",
    "Send a message again and choose “Yes, I trust this folder” if you trust what is in it, or "
    "trust it on the host with `omnigent-agy trust PATH` (or list it under "
    "harness.agy-cli.trusted_workspaces).",
)
AGY_WORKSPACE_HIDDEN = FailureKind(
    "agy_workspace_hidden",
    "agy cannot work in this hidden folder",
    "Run the session on a folder whose path has no hidden folder in it, or let omnigent-agy "
    "link to it: set TMPDIR for `omnigent host` to a private folder of yours (mode 0700) "
    f"whose path has no '/.'; then run {_DOCTOR}.",
)
AGY_WORKSPACE_IGNORED = FailureKind(
    "agy_workspace_ignored",
    "agy ignored this workspace",
    "Open the session on a folder whose path has no folder starting with a dot in it; "
    f"then run {_DOCTOR}.",
)
AGY_WORKSPACE_UNREACHABLE = FailureKind(
    "agy_workspace_unreachable",
    "agy cannot enter the workspace folder",
    "Check that the folder named in the message exists, is a folder and that you can enter it "
    "(`ls -ld` on it), or start the session on another folder; then send your message again.",
)
AGY_TRUST_FILE_INVALID = FailureKind(
    "agy_trust_file_invalid",
    "omnigent-agy cannot read the folders you trusted",
    "Fix or remove the file named in the message; `omnigent-agy trust` lists what is trusted.",
)
AGY_CONVERSATIONS_UNREADABLE = FailureKind(
    "agy_conversations_unreadable",
    "Your agy conversations cannot be read",
    "agy's list of conversations (antigravity-cli/conversation_summaries.db in your gemini "
    "folder) or the conversation's files cannot be read or copied; it is never changed. Run "
    "`agy` once so it writes its list again, then `omnigent-agy conversations`.",
)
AGY_CONVERSATION_UNKNOWN = FailureKind(
    "agy_conversation_unknown",
    "No such agy conversation",
    "`omnigent-agy conversations` lists your agy conversations with their ids; open one with "
    "`omnigent-agy conversations open ID`.",
)
AGY_OMNIGENT_UNREACHABLE = FailureKind(
    "agy_omnigent_unreachable",
    "omnigent's server cannot open the session",
    "Start omnigent (`omnigent server` and `omnigent host`, or `omnigent start`), or name its "
    "server with --server URL (default: the `server` key of omnigent's config, else "
    "http://127.0.0.1:6767); nothing was opened.",
)
AGY_SETTINGS_INVALID = FailureKind(
    "agy_settings_invalid",
    "agy's settings cannot be used",
    f"Fix or remove the file named in the message (it must be a JSON object); run {_DOCTOR}.",
)
AGY_INTERACTION_TIMED_OUT = FailureKind(
    "agy_interaction_timed_out",
    "agy gave up waiting for your answer",
    "agy asked for an approval or an answer and timed out before one came; an answer given "
    "now is refused. Send the message again and answer the card while it is shown.",
    retryable=True,
)
AGY_MODEL_ERROR = FailureKind(
    "agy_model_error",
    "agy's model call failed",
    "Send the message again; if it keeps failing, pick another model with /model or check "
    f"agy's status with {_DOCTOR}.",
)
AGY_INTERNAL = FailureKind(
    "agy_internal",
    "omnigent-agy failed unexpectedly",
    f"Retry the message; run {_DOCTOR}, and report the error if it persists.",
)

# Every entry above, in the order written (a new one needs no second line here).
CATALOGUE: tuple[FailureKind, ...] = tuple(
    kind
    for name, kind in globals().items()
    if name.startswith("AGY_") and isinstance(kind, FailureKind)
)
_BY_CODE = {kind.code: kind for kind in CATALOGUE}


def kind_for_code(code: str) -> FailureKind:
    """The catalogue entry of ``code``; an unknown code is ``agy_internal``."""
    return _BY_CODE.get(code, AGY_INTERNAL)


# -- failures of a kind, as the code that meets them words them ----------------------------


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


def gave_up_waiting_failure(detail: str) -> Failure:
    """agy timed a permission or question card out and ended the turn (``detail``: its
    error); a late answer is refused, so the person sends the message again."""
    return AGY_INTERACTION_TIMED_OUT.failure(f"agy stopped waiting for an answer: {detail}")


def model_error_failure(message: str, *, retryable: bool) -> Failure:
    """agy ended the turn on an error of its model call; ``retryable`` is agy's own verdict."""
    return AGY_MODEL_ERROR.failure(message, retryable=retryable)


def quota_exhausted_failure(detail: str, *, group: str | None, resets: str | None) -> Failure:
    """agy's model call was refused for quota (``detail``: agy's words); ``group`` is the model
    group whose quota is used up and ``resets`` when it comes back, in words, when known."""
    which = f"the quota of {group}" if group else "the model's quota"
    when = f"It resets {resets}. " if resets else ""
    return AGY_QUOTA_EXHAUSTED.failure(
        f"agy's model call was refused: {which} is used up ({detail})",
        remediation=f"{when}{AGY_QUOTA_EXHAUSTED.remediation}",
    )


_DOCTOR = "`omnigent-agy doctor`"


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


# -- connect codes ---------------------------------------------------------------------------


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


# The entry of a plain RpcError, by its connect code (INTERNAL: see RpcError.__init__).
_CONNECT_KINDS: dict[Code, FailureKind] = {
    Code.UNAVAILABLE: AGY_UNREACHABLE,
    Code.DEADLINE_EXCEEDED: AGY_UNREACHABLE,
    Code.UNAUTHENTICATED: AGY_SIGNED_OUT,
    Code.RESOURCE_EXHAUSTED: AGY_RATE_LIMITED,
}


# -- the tree --------------------------------------------------------------------------------


class AgyError(Exception):
    """Root of every error omnigent-agy raises; ``kind`` is its entry of the"""

    kind: FailureKind = AGY_INTERNAL

    @property
    def code(self) -> str:
        """The failure code (``kind.code``) a person and omnigent see."""
        return self.kind.code


class NonLoopbackHostError(AgyError, ValueError):
    """The RPC client was asked to talk to a host that is not loopback.

    The client does not verify agy's self-signed certificate, which is only safe on loopback.
    """


class RpcError(AgyError):
    """A connect call that failed.

    ``http_status`` is None when no HTTP answer arrived (transport failure, timeout) or the
    error came in a stream's end-of-stream envelope; ``method`` is the RPC method name when
    known; ``details`` are the connect error details exactly as received. A plain RpcError's
    ``kind`` follows its connect code when it is made (none is changed after).
    """

    kind = AGY_RPC_FAILED

    def __init__(
        self,
        connect_code: Code,
        message: str,
        *,
        http_status: int | None = None,
        method: str | None = None,
        details: Sequence[Any] = (),
    ) -> None:
        self.connect_code = connect_code
        self.message = message
        self.http_status = http_status
        self.method = method
        self.details: tuple[Any, ...] = tuple(details)
        super().__init__(connect_code, message)
        if type(self) is RpcError:  # a subclass names its own entry
            # INTERNAL on a 200 answer is a broken stream, not a refusal.
            broken = connect_code is Code.INTERNAL and http_status == 200
            self.kind = (
                AGY_PROTOCOL_ERROR if broken else _CONNECT_KINDS.get(connect_code, self.kind)
            )

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
        return f"{where}[{self.connect_code.value}] {self.message}{status}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(connect_code={self.connect_code.value!r}, "
            f"message={self.message!r}, http_status={self.http_status!r}, "
            f"method={self.method!r})"
        )


class CsrfError(RpcError):
    """agy refused our CSRF token: 401 = none was sent, 403 = it is not the one agy has."""

    kind = AGY_CSRF_REJECTED

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

    kind = AGY_PROTOCOL_ERROR

    def __init__(
        self,
        message: str,
        *,
        connect_code: Code = Code.INTERNAL,
        http_status: int | None = None,
        method: str | None = None,
    ) -> None:
        super().__init__(connect_code, message, http_status=http_status, method=method)


# The name is the interface other modules code against; it reads as a condition, not a class.
class StreamStalled(RpcError):  # noqa: N818
    """No frame arrived on a stream within its liveness deadline (docs/wire.md §4: after `/clear`
    a stream can hang with neither frame nor trailer). Re-check with GetAllCascadeTrajectories."""

    kind = AGY_UNREACHABLE

    def __init__(self, idle_timeout: float, *, method: str | None = None) -> None:
        self.idle_timeout = idle_timeout
        super().__init__(
            Code.DEADLINE_EXCEEDED, f"no stream frame within {idle_timeout:g} s", method=method
        )


class NeverSentError(AgyError, ConnectionError):
    """The call cannot have reached agy: no connection to it could be made."""


class DiscoveryError(AgyError):
    """agy's language server could not be found or trusted."""

    kind = AGY_PORT_NEVER_OPENED
    remediation_text = f"Run {_DOCTOR}."

    def __init__(self, message: str, *, pid: int, log_file: Path | None) -> None:
        self.pid = pid
        self.log_file = log_file
        super().__init__(message)

    @property
    def remediation(self) -> str:
        """What a person can do about it."""
        log = f" agy's log: {self.log_file}." if self.log_file is not None else ""
        return self.remediation_text + log

    def __str__(self) -> str:
        return f"{self.args[0]}. {self.remediation}"


class AgyExitedError(DiscoveryError):
    """agy exited before its language server answered."""

    kind = AGY_EXITED
    remediation_text = (
        "Run `agy` in a terminal: it must start and be signed in (it prints what is wrong); "
        f"then {_DOCTOR}."
    )


class AgySignedOutError(DiscoveryError):
    """agy never served, and its log says it is not signed in (docs/wire.md §9)."""

    kind = AGY_SIGNED_OUT
    remediation_text = (
        "Run `agy` in a terminal and sign in with your Google account; then retry or run "
        f"{_DOCTOR}."
    )


class PortNeverOpenedError(DiscoveryError):
    """No port of agy's process tree answered Heartbeat before the deadline."""

    kind = AGY_PORT_NEVER_OPENED
    remediation_text = (
        "agy is running but its language server never answered. Run `agy` in a terminal to "
        f"see whether it starts and is signed in, check the version (>= 1.2.2) with {_DOCTOR}."
    )


class ForeignListenerError(DiscoveryError):
    """The only port in sight (e.g. the one agy's log names) is held by another process."""

    kind = AGY_FOREIGN_LISTENER
    remediation_text = (
        "omnigent-agy never talks to a port that the agy it started does not own. Another "
        "program (or user) holds it: stop that program, then retry."
    )


class CsrfRejectedError(DiscoveryError):
    """agy's own port refused our CSRF token (401/403)."""

    kind = AGY_CSRF_REJECTED
    remediation_text = (
        "agy refused the CSRF token it was started with: it may predate --csrf_token (agy "
        "< 1.2.2) or have been restarted by hand. Stop that agy (its session on the tmux "
        f"socket `{TMUX_SOCKET}`) and retry; {_DOCTOR}."
    )


class ConversationNotFoundError(DiscoveryError):
    """agy answers, but does not know the conversation it should hold."""

    kind = AGY_CONVERSATION_LOST
    remediation_text = (
        "agy answered but does not know this conversation (its state may have been reset). "
        "Start a new conversation, or stop this agy so the next turn starts a fresh one."
    )


class TerminalError(AgyError):
    """tmux could not start, find or stop an agy session."""

    kind = AGY_TMUX_FAILED

    @property
    def remediation(self) -> str:
        """What a person can do about it."""
        return "Check that tmux is installed (`omnigent-agy doctor`) and that the session exists."


class StateDirError(AgyError):
    """A state directory or record cannot be used safely (owner, permissions, format)."""

    kind = AGY_STATE_DIR_INVALID

    def __init__(self, message: str, *, path: Path, remediation: str) -> None:
        self.path = path
        self._remediation = remediation
        super().__init__(message)

    @property
    def remediation(self) -> str:
        """What a person can do about it."""
        return self._remediation

    def __str__(self) -> str:
        return f"{self.args[0]} ({self.path}). {self._remediation}"


class LaunchError(AgyError):
    """agy could not be started for a conversation."""

    kind = AGY_LAUNCH_FAILED

    @property
    def remediation(self) -> str:
        """What a person can do about it."""
        return f"Run {_DOCTOR}."


class SeedError(AgyError):
    """A file of the person's gemini dir cannot be used as it is (e.g. not JSON)."""

    kind = AGY_SETTINGS_INVALID

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path
        self.remediation = (
            f"Fix or remove {path} (agy reads it too: `agy` in a terminal shows what it makes "
            f"of it); then run {_DOCTOR}."
        )


class WorkspaceHiddenError(AgyError):
    """The workspace is in a hidden folder and no safe dot-free link to it can be made."""

    kind = AGY_WORKSPACE_HIDDEN

    def __init__(self, message: str, *, workspace: Path) -> None:
        super().__init__(message)
        self.workspace = workspace
        self.remediation = (
            "Run the session on a folder whose path has no hidden folder in it, or give "
            "omnigent-agy a private folder for its links: set TMPDIR (where `omnigent host` "
            "runs; omnigent passes no XDG_RUNTIME_DIR to a harness) to a folder of yours, mode "
            f"0700, whose path has no '/.' in it; then run {_DOCTOR}."
        )


class WorkspaceUnreachableError(AgyError):
    """The folder agy works in cannot be entered: nothing was started there."""

    kind = AGY_WORKSPACE_UNREACHABLE

    def __init__(self, message: str, *, folder: Path | str) -> None:
        super().__init__(message)
        self.folder = folder
        self.remediation = (
            "Check that the folder exists, is a folder and that you can enter it (`ls -ld` "
            "on it); or start the session on another folder. Then send your message again."
        )


class WorkspaceNotTrustedError(AgyError):
    """agy may not start in this workspace: nobody trusts it and the person did not say yes."""

    kind = AGY_WORKSPACE_NOT_TRUSTED

    def __init__(self, message: str, *, workspace: Path) -> None:
        super().__init__(message)
        self.workspace = workspace
        self.remediation = (
            "Send a message again and choose “Yes, I trust this folder” if you trust what is in "
            f"{workspace}, or trust it on the host with `omnigent-agy trust "
            f"{shlex.quote(str(workspace))}` (or list it under harness.agy-cli.trusted_workspaces)."
        )


class TrustFileError(AgyError):
    """The file of remembered answers cannot be read or written as it is."""

    kind = AGY_TRUST_FILE_INVALID

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path
        self.remediation = (
            f"Fix or remove {path} (a JSON object; removing it forgets every folder you trusted "
            "on a card); `omnigent-agy trust` lists what is trusted and why."
        )


class ConversationStoreError(AgyError):
    """agy's list of conversations cannot be read (or a conversation cannot be copied)."""

    kind = AGY_CONVERSATIONS_UNREADABLE

    def __init__(self, message: str, *, path: Path, remediation: str) -> None:
        self.path = path
        self.remediation = remediation
        super().__init__(message)


class ConversationUnknownError(AgyError):
    """No conversation of agy's list has that id (or the prefix names several)."""

    kind = AGY_CONVERSATION_UNKNOWN

    def __init__(self, message: str, *, wanted: str) -> None:
        self.wanted = wanted
        super().__init__(message)


class InvalidRuleError(AgyError):
    """A permission rule that does not parse; the message names the rule and the fix."""

    kind = AGY_CONFIG_INVALID


class PluginLoadError(AgyError):
    """An ``omnigent_agy`` plugin failed to import or implements an unknown hook."""

    kind = AGY_PLUGIN_FAILED


class PromptUnavailableError(AgyError):
    """The host cannot show this prompt (no UI bridge, an unsupported form, …); the message
    says why, the bridge logs it and answers agy with a refusal."""


class InteractionDeliveryError(AgyError):
    """agy refused an answer while its step was still waiting: the answer's shape is wrong.

    `cause` is agy's error. This is a bug in the plugin (or a changed agy), never something
    the person did; the step stays WAITING until agy times it out.
    """

    kind = AGY_PROTOCOL_ERROR

    def __init__(self, message: str, *, cause: RpcError | None = None) -> None:
        super().__init__(message)
        self.cause = cause


class ConfigError(AgyError):
    """The user's configuration cannot be used; the message names the key and the fix."""

    kind = AGY_CONFIG_INVALID

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class AgyNotFoundError(AgyError):
    """The agy executable cannot be found; ``remediation`` says how to provide it."""

    kind = AGY_NOT_INSTALLED

    def __init__(self, message: str, *, remediation: str, looked_last: Path | None = None) -> None:
        super().__init__(f"{message}. {remediation}")
        self.remediation = remediation
        self.looked_last = looked_last
        """The absolute path checked last (for a name: where agy's installer would put it)."""


class UnknownModelError(AgyError):
    """The requested model is not one agy offers; the message lists the valid names."""

    kind = AGY_MODEL_UNKNOWN

    def __init__(self, message: str, *, valid_names: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.valid_names = valid_names


class InvalidEffortError(AgyError):
    """A reasoning effort agy does not know."""

    kind = AGY_EFFORT_INVALID


class OmnigentApiError(AgyError):
    """omnigent's server cannot be reached, or refused a call; ``down`` when unreachable."""

    kind = AGY_OMNIGENT_UNREACHABLE

    def __init__(self, message: str, *, down: bool = False) -> None:
        self.down = down
        super().__init__(message)


class RelayError(AgyError):
    """The harness refused the request, or could not be reached."""


class ProbeError(AgyError):
    """The probe cannot go on (no scratch folder, agy never answered, a recording that would
    leak); the message says what to do."""


class RecordingLeakError(ProbeError):
    """The written recording still held something private; it was removed."""


class SessionError(AgyError):
    """A turn cannot run: agy is gone, the conversation is lost, … (``kind`` says which)."""

    def __init__(self, message: str, *, kind: FailureKind = AGY_INTERNAL) -> None:
        super().__init__(message)
        self.kind = kind


class PreflightError(SessionError):
    """agy cannot be started as it is (missing, too old, signed out): says what to do."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.message, kind=kind_for_code(failure.code))
        self.failure = failure


class WorkspaceIgnoredError(AgyError):
    """agy works somewhere other than the workspace it was given (the log names another)."""

    kind = AGY_WORKSPACE_IGNORED

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.remediation = (
            "Nothing was sent to agy, and this conversation's agy was stopped. Open the session "
            "on a folder whose path has no folder starting with a dot in it (move or clone the "
            "project there, e.g. outside `.worktrees`); `omnigent-agy doctor` shows agy's "
            "version, and `omnigent-agy probe` checks whether it takes a linked hidden folder."
        )


class MessageError(AgyError, ValueError):
    """The user message cannot be sent as it is (told to the person, nothing is lost)."""

    kind = AGY_MESSAGE_UNSUPPORTED


class ContributionError(AgyError):
    """A plugin registered something omnigent-agy cannot contribute."""


# -- what a person sees ----------------------------------------------------------------------

_MAX_DEPTH = 8  # exception groups and causes followed this deep


def _kind(exc: BaseException) -> FailureKind:
    return exc.kind if isinstance(exc, AgyError) else AGY_INTERNAL


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

    The failure is the error's ``kind`` (any other exception is ``agy_internal``), or the
    ``failure`` it carries ready (a pre-flight error). An exception group stands for its first
    member we know; an unknown error raised ``from`` a known one, for that cause. ``secrets``
    are strings known to be secret (the session's CSRF token), removed verbatim first.
    """
    secrets = tuple(secrets)
    try:
        carried = getattr(exc, "failure", None)
        if isinstance(carried, Failure):
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
        valid = known.valid_names if isinstance(known, UnknownModelError) else ()
        if valid and "valid names" not in message:
            message = f"{message}; valid models: {', '.join(valid)}"
        remedy = _remediation(known)
        return kind.failure(
            scrub(message, secrets), remediation=scrub(remedy, secrets) if remedy else None
        )
    except Exception:  # noqa: BLE001 - the error path itself must never crash the turn
        return AGY_INTERNAL.failure(f"{type(exc).__name__} (details could not be shown)")
