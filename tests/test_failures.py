"""The failure catalogue: every error the package raises maps to a coded, actionable failure."""

from __future__ import annotations

import asyncio
import importlib
import pkgutil
import random
import string
from collections.abc import Callable
from pathlib import Path

import pytest
from omnigent.community.harness.agy.executor_errors import executor_error_for, to_executor_error
from omnigent.inner.executor import ExecutorError

import omnigent_agy
from omnigent_agy import MIN_AGY_VERSION
from omnigent_agy.errors import (
    AGY_CONVERSATION_LOST,
    AGY_EXITED,
    AGY_INTERNAL,
    CATALOGUE,
    REDACTED,
    AgyError,
    AgyExitedError,
    AgyNotFoundError,
    Code,
    ConfigError,
    ConversationNotFoundError,
    CsrfError,
    CsrfRejectedError,
    DiscoveryError,
    Failure,
    ForeignListenerError,
    InvalidEffortError,
    InvalidRuleError,
    LaunchError,
    NonLoopbackHostError,
    PluginLoadError,
    PortNeverOpenedError,
    ProtocolError,
    RpcError,
    StateDirError,
    StreamStalled,
    TerminalError,
    UnknownModelError,
    failure_for,
    gave_up_waiting_failure,
    kind_for_code,
    model_error_failure,
    scrub,
    signed_out_failure,
    too_old_failure,
)

# A token as the launcher makes them (secrets.token_urlsafe(32)), fixed so a failure replays.
TOKEN = "Zq3xP-8LwR2vT_k9mNcY4bH7sJdF1gA6eU0oIiXyVtQ"
LOG = Path("/tmp/agy-state/agy.log")

# (id, build(text) -> exception, expected code); ``text`` is woven into the message.
Build = Callable[[str], BaseException]
CASES: list[tuple[str, Build, str]] = [
    (
        "agy-not-on-path",
        lambda t: AgyNotFoundError(f"agy is not on PATH ({t})", remediation="install it"),
        "agy_not_installed",
    ),
    ("config", lambda t: ConfigError(f"harness.agy-cli.mode {t}", key="x"), "agy_config_invalid"),
    ("rule", lambda t: InvalidRuleError(f"rule {t} is not kind(pattern)"), "agy_config_invalid"),
    ("plugin", lambda t: PluginLoadError(f"plugin corp failed: {t}"), "agy_plugin_failed"),
    (
        "model",
        lambda t: UnknownModelError(f"agy has no model {t!r}", valid_names=("gemini-3-pro",)),
        "agy_model_unknown",
    ),
    ("effort", lambda t: InvalidEffortError(f"effort {t}"), "agy_effort_invalid"),
    ("exited", lambda t: AgyExitedError(f"agy exited: {t}", pid=1, log_file=LOG), "agy_exited"),
    (
        "port-never-opened",
        lambda t: PortNeverOpenedError(f"no port ({t})", pid=1, log_file=None),
        "agy_port_never_opened",
    ),
    (
        "foreign-listener",
        lambda t: ForeignListenerError(f"port held by {t}", pid=1, log_file=LOG),
        "agy_foreign_listener",
    ),
    (
        "csrf-rejected",
        lambda t: CsrfRejectedError(f"403 with {t}", pid=1, log_file=LOG),
        "agy_csrf_rejected",
    ),
    (
        "conversation-not-found",
        lambda t: ConversationNotFoundError(f"unknown {t}", pid=1, log_file=None),
        "agy_conversation_lost",
    ),
    (
        "discovery",
        lambda t: DiscoveryError(f"discovery {t}", pid=1, log_file=None),
        "agy_port_never_opened",
    ),
    (
        "csrf-401",
        lambda t: CsrfError(Code.UNAUTHENTICATED, f"missing {t}", http_status=401),
        "agy_csrf_rejected",
    ),
    (
        "csrf-403",
        lambda t: CsrfError(Code.PERMISSION_DENIED, f"invalid {t}", http_status=403),
        "agy_csrf_rejected",
    ),
    ("protocol", lambda t: ProtocolError(f"bad envelope {t}"), "agy_protocol_error"),
    ("stalled", lambda t: StreamStalled(30.0, method=f"Stream{t}"), "agy_unreachable"),
    (
        "unavailable",
        lambda t: RpcError(Code.UNAVAILABLE, f"connect failed {t}", method="Heartbeat"),
        "agy_unreachable",
    ),
    ("deadline", lambda t: RpcError(Code.DEADLINE_EXCEEDED, f"timeout {t}"), "agy_unreachable"),
    ("unauthenticated", lambda t: RpcError(Code.UNAUTHENTICATED, t), "agy_signed_out"),
    ("exhausted", lambda t: RpcError(Code.RESOURCE_EXHAUSTED, f"quota {t}"), "agy_rate_limited"),
    ("not-found", lambda t: RpcError(Code.NOT_FOUND, f"no cascade {t}"), "agy_rpc_failed"),
    (
        "internal-200",
        lambda t: RpcError(Code.INTERNAL, f"odd {t}", http_status=200),
        "agy_protocol_error",
    ),
    (
        "internal-500",
        lambda t: RpcError(Code.INTERNAL, f"boom {t}", http_status=500),
        "agy_rpc_failed",
    ),
    ("tmux", lambda t: TerminalError(f"tmux could not start {t}"), "agy_tmux_failed"),
    (
        "state-dir",
        lambda t: StateDirError(f"not 0700: {t}", path=LOG.parent, remediation="chmod 700 it"),
        "agy_state_dir_invalid",
    ),
    ("launch", lambda t: LaunchError(f"record {t} is not this agy's"), "agy_launch_failed"),
    ("non-loopback", lambda t: NonLoopbackHostError(f"host {t}"), "agy_internal"),
    ("root", lambda t: AgyError(f"something {t}"), "agy_internal"),
    ("foreign", lambda t: ValueError(f"unexpected {t}"), "agy_internal"),
    ("cancelled", asyncio.CancelledError, "agy_internal"),
    (
        "task-group",
        lambda t: ExceptionGroup(
            "unhandled errors", [ValueError("noise"), PortNeverOpenedError(t, pid=1, log_file=None)]
        ),
        "agy_port_never_opened",
    ),
]
RETRYABLE = {"agy_unreachable", "agy_rate_limited"}


def _secretive(text: str) -> str:
    return f"agy --csrf_token={TOKEN} said {text} (x-codeium-csrf-token: {TOKEN[:12]})"


@pytest.mark.parametrize(("build", "code"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_error_maps_to_a_coded_failure(build: Build, code: str) -> None:
    failure = failure_for(build("the-detail"))
    assert failure.code == code
    assert failure.title.strip()
    assert failure.message.strip()
    assert failure.remediation.strip()
    assert failure.retryable is (code in RETRYABLE)
    assert failure.title == kind_for_code(code).title


@pytest.mark.parametrize("build", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_no_token_in_any_field(build: Build) -> None:
    failure = failure_for(build(_secretive("hello")))
    for text in (failure.code, failure.title, failure.message, failure.remediation):
        assert TOKEN not in text
        assert TOKEN[:12] not in text


def test_remediations_name_a_command() -> None:
    for kind in CATALOGUE:
        assert "`" in kind.remediation or kind.code in {
            "agy_foreign_listener",
            "agy_conversation_lost",
            "agy_effort_invalid",
            "agy_message_unsupported",
            "agy_state_dir_invalid",
            "agy_interaction_timed_out",  # the remedy is on the card: answer it in time
        }, kind.code
    assert len({kind.code for kind in CATALOGUE}) == len(CATALOGUE)


# Errors whose class keeps the root's ``agy_internal`` on purpose: they set their entry per
# error or carry a ``failure``, or never reach a person as a failure.
MAPPED_PER_ERROR_OR_NEVER_SHOWN = {
    "omnigent_agy.errors.SessionError",  # given its ``kind`` where it is known what went wrong
    "omnigent_agy.errors.PreflightError",  # carries the pre-flight's Failure
    # answered to agy as a refusal, never raised
    "omnigent_agy.errors.PromptUnavailableError",
    # answered to agy as the MCP tool's error, in the relay process agy starts
    "omnigent_agy.errors.RelayError",
    # becomes RpcError(UNAVAILABLE) at rpc.error_boundary, the one boundary of the wire layer
    "omnigent_agy.errors.NeverSentError",
    # `omnigent-agy probe`'s own errors, printed by that command; no turn runs the probe
    "omnigent_agy.errors.ProbeError",
    "omnigent_agy.errors.RecordingLeakError",
    # the adapter's, raised while omnigent loads the plugin: no turn runs then
    "omnigent_agy.errors.ContributionError",
}


def test_every_agy_error_class_in_the_package_is_in_the_table() -> None:
    # A new error type must be given a deliberate row (and so a code) here.
    for module in pkgutil.walk_packages(omnigent_agy.__path__, "omnigent_agy."):
        importlib.import_module(module.name)
    covered = {type(build("x")) for _, build, _ in CASES}
    missing: list[str] = []
    pending: list[type[BaseException]] = [AgyError]
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        name = f"{cls.__module__}.{cls.__qualname__}"
        if not cls.__module__.startswith("omnigent_agy") or cls in covered:
            continue
        if cls.kind is AGY_INTERNAL:
            missing.append(name)
    assert sorted(set(missing) - MAPPED_PER_ERROR_OR_NEVER_SHOWN) == []


def test_the_exception_remediation_wins_and_the_message_does_not_repeat_it() -> None:
    error = PortNeverOpenedError("no port of agy answered", pid=7, log_file=LOG)
    failure = failure_for(error)
    assert failure.message == "no port of agy answered"
    assert failure.remediation == error.remediation
    assert str(LOG) in failure.remediation


def test_unknown_model_lists_the_valid_names() -> None:
    bare = UnknownModelError("agy has no model 'gpt-9'", valid_names=("gemini-3-pro", "gpt-oss"))
    assert failure_for(bare).message.endswith("valid models: gemini-3-pro, gpt-oss")
    listed = UnknownModelError("agy has no model 'x'; valid names: a, b", valid_names=("a", "b"))
    assert failure_for(listed).message == "agy has no model 'x'; valid names: a, b"


def test_a_kind_on_an_error_opts_in() -> None:
    class SessionGoneError(AgyError):
        kind = AGY_EXITED

    error = AgyError("agy exited during the turn")
    error.kind = AGY_CONVERSATION_LOST
    assert failure_for(SessionGoneError("gone")).code == "agy_exited"
    assert (error.code, failure_for(error).code) == ("agy_conversation_lost",) * 2


def _heartbeat() -> None:
    raise RpcError(Code.UNAVAILABLE, "connection refused", method="Heartbeat")


def _reader_stopped() -> None:
    try:
        _heartbeat()
    except RpcError as exc:
        raise AgyError("the agy reader stopped") from exc


def test_an_unknown_error_raised_from_a_known_one_is_described_by_the_cause() -> None:
    with pytest.raises(AgyError) as caught:
        _reader_stopped()
    failure = failure_for(caught.value)
    assert failure.code == "agy_unreachable"
    assert failure.message == "the agy reader stopped: Heartbeat: [unavailable] connection refused"


def test_an_error_carrying_a_failure_is_that_failure_scrubbed() -> None:
    class CarriesError(AgyError):
        def __init__(self, failure: Failure) -> None:
            super().__init__(failure.message)
            self.failure = failure

    carried = too_old_failure(f"1.2.1 --csrf_token={TOKEN}")
    failure = failure_for(CarriesError(carried))
    assert (failure.code, failure.title, failure.remediation) == (
        carried.code,
        carried.title,
        carried.remediation,
    )
    assert TOKEN not in failure.message
    assert "1.2.1" in failure.message


def test_the_fallback_names_the_type_and_survives_hostile_errors() -> None:
    class HostileError(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

        @property
        def remediation(self) -> str:
            raise RuntimeError("no")

    failure = failure_for(HostileError())
    assert failure.code == "agy_internal"
    assert "HostileError" in failure.message
    assert failure.remediation == kind_for_code("agy_internal").remediation
    assert failure_for(KeyError("k")).message == "KeyError: 'k'"


def test_known_secrets_are_removed_verbatim() -> None:
    short = "abc"  # too short for any heuristic: only the explicit list catches it
    failure = failure_for(RpcError(Code.INTERNAL, f"echoed {short}!"), secrets=[short])
    assert failure.message == f"[internal] echoed {REDACTED}!"


def test_messages_are_clipped() -> None:
    failure = failure_for(LaunchError("word " * 1000))
    assert len(failure.message) <= 1500
    assert failure.message.endswith("…")


def test_signed_out_and_too_old_helpers() -> None:
    signed_out = signed_out_failure("`agy models` exited with status 1")
    assert signed_out.code == "agy_signed_out"
    assert "`agy`" in signed_out.remediation
    assert signed_out.message.endswith("`agy models` exited with status 1")
    assert signed_out_failure().message == "agy is not signed in to a Google account"
    old = too_old_failure("1.2.1")
    assert old.code == "agy_too_old"
    assert "1.2.1" in old.message
    assert ".".join(map(str, MIN_AGY_VERSION)) in old.message
    assert "install.sh" in old.remediation


def test_the_turn_failures_agy_ends_a_turn_with() -> None:
    waited = gave_up_waiting_failure(f"permission timed out (x-codeium-csrf-token: {TOKEN})")
    assert waited.code == "agy_interaction_timed_out"
    assert waited.title == "agy gave up waiting for your answer"
    assert waited.message.startswith("agy stopped waiting for an answer: permission timed out")
    assert TOKEN not in waited.message
    assert "answer the card while it is shown" in waited.remediation
    assert waited.retryable is True
    # agy's own verdict decides whether a retry can help a model error.
    for retryable in (True, False):
        failed = model_error_failure("Encountered retryable error 503", retryable=retryable)
        assert (failed.code, failed.message) == (
            "agy_model_error",
            "Encountered retryable error 503",
        )
        assert failed.title == "agy's model call failed"
        assert "/model" in failed.remediation
        assert "`omnigent-agy doctor`" in failed.remediation
        assert failed.retryable is retryable


# -- scrub -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "agy rejected the CSRF token: another agy or another process answers on that port",
        "missing CSRF token",
        "MODEL_PLACEHOLDER_M26 CORTEX_STEP_TYPE_RUN_COMMAND",
        "MESSAGE_DELIVERY_STRATEGY_NEXT_INVOCATION",
        "SendUserCascadeMessage GetAllCascadeTrajectories HTTPServerConnectionPool",
        "cascade 3f2a1b4c-1234-4abc-8def-0123456789ab",
        "gemini-2-5-flash-lite-preview-09-2025 claude-sonnet-4-5-thinking x86_64-linux-gnu",
        "/home/me/.local/state/omnigent-agy/conv-abc/agy.log",
    ],
)
def test_scrub_keeps_ordinary_text(text: str) -> None:
    assert scrub(text) == text


def test_scrub_keeps_every_remediation_we_write() -> None:
    texts: list[object] = [kind.remediation for kind in CATALOGUE]
    texts += [getattr(build("x"), "remediation", None) for _, build, _ in CASES]
    for text in texts:
        if isinstance(text, str):
            assert scrub(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"agy --csrf_token={TOKEN} --log-file x", f"agy --csrf_token={REDACTED} --log-file x"),
        ("ANTIGRAVITY_CSRF_TOKEN=short", f"ANTIGRAVITY_CSRF_TOKEN={REDACTED}"),
        ("x-codeium-csrf-token: abc", f"x-codeium-csrf-token: {REDACTED}"),
        ('{"csrf_token": "abc"}', f'{{"csrf_token": "{REDACTED}"}}'),
        ("Authorization: Bearer abc.def", f"Authorization: Bearer {REDACTED}"),
        ("password=hunter2", f"password={REDACTED}"),
        (f"token {TOKEN} leaked", f"token {REDACTED} leaked"),
        ("sha 9f86d081884c7d659a2feaa0c55ad015", f"sha {REDACTED}"),
    ],
)
def test_scrub_removes_secrets(text: str, expected: str) -> None:
    assert scrub(text) == expected


def test_scrub_removes_launcher_style_tokens() -> None:
    # token_urlsafe(32) is 43 characters of this alphabet; seeded, so a miss replays.
    alphabet = string.ascii_letters + string.digits + "-_"
    rng = random.Random(20260101)
    for _ in range(2000):
        token = "".join(rng.choices(alphabet, k=43))
        assert token not in scrub(f"started agy with {token} now"), token
        hex_token = "".join(rng.choices("0123456789abcdef", k=32))
        assert hex_token not in scrub(f"id {hex_token}"), hex_token


# -- the omnigent side -----------------------------------------------------------------------


def test_to_executor_error_carries_every_field() -> None:
    failure = Failure("agy_unreachable", "agy is not answering", "gone", "retry", retryable=True)
    event = to_executor_error(failure, preserve_session=True, undelivered=True)
    assert isinstance(event, ExecutorError)
    assert (event.code, event.title, event.message, event.remediation) == (
        "agy_unreachable",
        "agy is not answering",
        "gone",
        "retry",
    )
    assert event.retryable is True
    assert event.preserve_session is True
    assert event.undelivered is True
    assert event.usage is None


def test_executor_error_for_an_exception_hides_the_token() -> None:
    event = executor_error_for(CsrfRejectedError(_secretive("no"), pid=1, log_file=None))
    assert event.code == "agy_csrf_rejected"
    assert TOKEN not in event.message
    assert event.remediation is not None
    assert "omnigent-agy doctor" in event.remediation
