"""The failures a person sees: each stable code, its title and what to do; and redaction.

Everything that reaches omnigent as a failure is an ``ExecutorError`` with a stable ``code``,
a short ``title`` and a ``remediation`` that names the command to run (docs/decisions.md §8).
This module holds the host-agnostic :class:`Failure`, every :class:`FailureKind` (the
catalogue) and what makes a text fit to be shown: :func:`scrub` takes secrets out (agy's
command line and environment carry the CSRF token, docs/wire.md §1), :func:`clip` cuts it to
an error card. Each error of ``omnigent_agy.errors`` carries its entry as ``kind``;
``errors.failure_for`` says which failure an error is, and the omnigent adapter turns a
``Failure`` into an ``ExecutorError`` (``omnigent.community.harness.agy.failures``).

A new failure is one ``FailureKind`` here and its row in docs/onboarding.md's table;
tests/onboarding/test_failure_codes.py fails until both exist, and until no module but this
one spells a code. Like ``errors``, this module sits on the ground floor: it imports the
standard library and the package root only.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import dataclass

from omnigent_agy import ENV_PATH, INSTALL_HINT, KEY, MIN_AGY_VERSION, TMUX_SOCKET

__all__ = [
    "CATALOGUE",
    "REDACTED",
    "Failure",
    "FailureKind",
    "clip",
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
