"""omnigent-agy: Google's Antigravity CLI (agy) as an omnigent harness.

This package is the host-agnostic core. It speaks agy's local connect-RPC language
server (wire codec, client, discovery), turns agy's trajectory into events (mapper,
reader), bridges agy's approvals and questions (interactions, policy) and drives agy in
tmux (terminal, executor core). The thin omnigent adapter is shipped separately as
``omnigent.community.harness.agy``. See docs/architecture.md.

The core's face: every name the omnigent adapter (or another host's) needs is importable from
here (``from omnigent_agy import AgySession``), besides the top-level ``errors``,
``hookspecs`` and ``plugins``. Each is loaded from its module on first use, so ``import
omnigent_agy`` stays cheap (the constants only) and the relay, which must stay standard-library
only until it runs, is not affected; tests/adapter/test_core_face.py holds the adapter to it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from omnigent_agy.constants import (
    ENV_PATH,
    HARNESS_ALIASES,
    HARNESS_ID,
    HARNESS_LABEL,
    INSTALL_HINT,
    KEY,
    MIN_AGY_VERSION,
    TMUX_SOCKET,
    TMUX_SOCKET_ENV,
    TMUX_TMPDIR_ENV,
    __version__,
)

if TYPE_CHECKING:
    from omnigent_agy.agy.conversation_store import read_conversations
    from omnigent_agy.agy.deletion_watch import arm_deletion_watch
    from omnigent_agy.agy.mcp_selection import McpSelection
    from omnigent_agy.agy.retention import record_deletion_marker
    from omnigent_agy.agy.shown import visible
    from omnigent_agy.agy.statedir import XDG_STATE_ENV, SessionStateDir, write_private_file
    from omnigent_agy.config.executable import DEFAULT_EXECUTABLE, installer_bin, resolve_executable
    from omnigent_agy.config.settings import AgyConfig, load_config
    from omnigent_agy.doctor.checkup import preflight, read_agy_version
    from omnigent_agy.doctor.gemini_checks import gemini_seed, workspace_trust
    from omnigent_agy.interactions.policy import PermissionRequest, RequestKind
    from omnigent_agy.interactions.prompts import (
        ElicitationAction,
        ElicitationAnswer,
        ElicitationCard,
        PermissionAnswer,
        PermissionCard,
        PolicyAction,
        PolicyVerdict,
        QuestionAnswer,
        QuestionAnswers,
        QuestionForm,
        TrustAnswer,
        TrustCard,
    )
    from omnigent_agy.models.catalog import ModelCatalog
    from omnigent_agy.models.model_facts import facts_for, turn_cost, window_for
    from omnigent_agy.reading import events
    from omnigent_agy.reading.mapper import DEFAULT_OUTPUT_CAP
    from omnigent_agy.reading.reader import DEFAULT_IDLE_TIMEOUT, ReaderSettings
    from omnigent_agy.reading.steps import ModelUsage, Question, StepKey
    from omnigent_agy.reading.steps import text as step_text
    from omnigent_agy.relay.channel import RELAY_SERVER
    from omnigent_agy.session.agy_session import AgySession, PreflightError, SessionSettings
    from omnigent_agy.session.history import answered, carry_history, mark_delivered
    from omnigent_agy.session.messages import newest_user_message, user_message
    from omnigent_agy.session.shown_ledger import ShownLedger
    from omnigent_agy.session.subagents import subagent_title
    from omnigent_agy.session.turn import Turn
    from omnigent_agy.session.turn_results import AgyRestarted, ConversationLost, TurnResult

__all__ = [
    "DEFAULT_EXECUTABLE",
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_OUTPUT_CAP",
    "ENV_PATH",
    "HARNESS_ALIASES",
    "HARNESS_ID",
    "HARNESS_LABEL",
    "INSTALL_HINT",
    "KEY",
    "MIN_AGY_VERSION",
    "RELAY_SERVER",
    "TMUX_SOCKET",
    "TMUX_SOCKET_ENV",
    "TMUX_TMPDIR_ENV",
    "XDG_STATE_ENV",
    "AgyConfig",
    "AgyRestarted",
    "AgySession",
    "ConversationLost",
    "ElicitationAction",
    "ElicitationAnswer",
    "ElicitationCard",
    "McpSelection",
    "ModelCatalog",
    "ModelUsage",
    "PermissionAnswer",
    "PermissionCard",
    "PermissionRequest",
    "PolicyAction",
    "PolicyVerdict",
    "PreflightError",
    "Question",
    "QuestionAnswer",
    "QuestionAnswers",
    "QuestionForm",
    "ReaderSettings",
    "RequestKind",
    "SessionSettings",
    "SessionStateDir",
    "ShownLedger",
    "StepKey",
    "TrustAnswer",
    "TrustCard",
    "Turn",
    "TurnResult",
    "__version__",
    "answered",
    "arm_deletion_watch",
    "carry_history",
    "events",
    "facts_for",
    "gemini_seed",
    "installer_bin",
    "load_config",
    "mark_delivered",
    "newest_user_message",
    "preflight",
    "read_agy_version",
    "read_conversations",
    "record_deletion_marker",
    "resolve_executable",
    "step_text",
    "subagent_title",
    "turn_cost",
    "user_message",
    "visible",
    "window_for",
    "workspace_trust",
    "write_private_file",
]

# name → (its module, the attribute there; None: the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "AgyConfig": ("omnigent_agy.config.settings", "AgyConfig"),
    "AgyRestarted": ("omnigent_agy.session.turn_results", "AgyRestarted"),
    "AgySession": ("omnigent_agy.session.agy_session", "AgySession"),
    "ConversationLost": ("omnigent_agy.session.turn_results", "ConversationLost"),
    "DEFAULT_EXECUTABLE": ("omnigent_agy.config.executable", "DEFAULT_EXECUTABLE"),
    "DEFAULT_IDLE_TIMEOUT": ("omnigent_agy.reading.reader", "DEFAULT_IDLE_TIMEOUT"),
    "DEFAULT_OUTPUT_CAP": ("omnigent_agy.reading.mapper", "DEFAULT_OUTPUT_CAP"),
    "ElicitationAction": ("omnigent_agy.interactions.prompts", "ElicitationAction"),
    "ElicitationAnswer": ("omnigent_agy.interactions.prompts", "ElicitationAnswer"),
    "ElicitationCard": ("omnigent_agy.interactions.prompts", "ElicitationCard"),
    "McpSelection": ("omnigent_agy.agy.mcp_selection", "McpSelection"),
    "ModelCatalog": ("omnigent_agy.models.catalog", "ModelCatalog"),
    "ModelUsage": ("omnigent_agy.reading.steps", "ModelUsage"),
    "PermissionAnswer": ("omnigent_agy.interactions.prompts", "PermissionAnswer"),
    "PermissionCard": ("omnigent_agy.interactions.prompts", "PermissionCard"),
    "PermissionRequest": ("omnigent_agy.interactions.policy", "PermissionRequest"),
    "PolicyAction": ("omnigent_agy.interactions.prompts", "PolicyAction"),
    "PolicyVerdict": ("omnigent_agy.interactions.prompts", "PolicyVerdict"),
    "PreflightError": ("omnigent_agy.session.agy_session", "PreflightError"),
    "Question": ("omnigent_agy.reading.steps", "Question"),
    "QuestionAnswer": ("omnigent_agy.interactions.prompts", "QuestionAnswer"),
    "QuestionAnswers": ("omnigent_agy.interactions.prompts", "QuestionAnswers"),
    "QuestionForm": ("omnigent_agy.interactions.prompts", "QuestionForm"),
    "RELAY_SERVER": ("omnigent_agy.relay.channel", "RELAY_SERVER"),
    "ReaderSettings": ("omnigent_agy.reading.reader", "ReaderSettings"),
    "RequestKind": ("omnigent_agy.interactions.policy", "RequestKind"),
    "SessionSettings": ("omnigent_agy.session.agy_session", "SessionSettings"),
    "SessionStateDir": ("omnigent_agy.agy.statedir", "SessionStateDir"),
    "ShownLedger": ("omnigent_agy.session.shown_ledger", "ShownLedger"),
    "StepKey": ("omnigent_agy.reading.steps", "StepKey"),
    "TrustAnswer": ("omnigent_agy.interactions.prompts", "TrustAnswer"),
    "TrustCard": ("omnigent_agy.interactions.prompts", "TrustCard"),
    "Turn": ("omnigent_agy.session.turn", "Turn"),
    "TurnResult": ("omnigent_agy.session.turn_results", "TurnResult"),
    "XDG_STATE_ENV": ("omnigent_agy.agy.statedir", "XDG_STATE_ENV"),
    "answered": ("omnigent_agy.session.history", "answered"),
    "arm_deletion_watch": ("omnigent_agy.agy.deletion_watch", "arm_deletion_watch"),
    "carry_history": ("omnigent_agy.session.history", "carry_history"),
    "events": ("omnigent_agy.reading.events", None),
    "facts_for": ("omnigent_agy.models.model_facts", "facts_for"),
    "gemini_seed": ("omnigent_agy.doctor.gemini_checks", "gemini_seed"),
    "installer_bin": ("omnigent_agy.config.executable", "installer_bin"),
    "load_config": ("omnigent_agy.config.settings", "load_config"),
    "mark_delivered": ("omnigent_agy.session.history", "mark_delivered"),
    "newest_user_message": ("omnigent_agy.session.messages", "newest_user_message"),
    "preflight": ("omnigent_agy.doctor.checkup", "preflight"),
    "read_agy_version": ("omnigent_agy.doctor.checkup", "read_agy_version"),
    "read_conversations": ("omnigent_agy.agy.conversation_store", "read_conversations"),
    "record_deletion_marker": ("omnigent_agy.agy.retention", "record_deletion_marker"),
    "resolve_executable": ("omnigent_agy.config.executable", "resolve_executable"),
    "step_text": ("omnigent_agy.reading.steps", "text"),
    "subagent_title": ("omnigent_agy.session.subagents", "subagent_title"),
    "turn_cost": ("omnigent_agy.models.model_facts", "turn_cost"),
    "user_message": ("omnigent_agy.session.messages", "user_message"),
    "visible": ("omnigent_agy.agy.shown", "visible"),
    "window_for": ("omnigent_agy.models.model_facts", "window_for"),
    "workspace_trust": ("omnigent_agy.doctor.gemini_checks", "workspace_trust"),
    "write_private_file": ("omnigent_agy.agy.statedir", "write_private_file"),
}


def __getattr__(name: str) -> object:
    """Load a name of the face from its module on first use (PEP 562)."""
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    loaded: object = importlib.import_module(module)
    if attribute is not None:
        loaded = getattr(loaded, attribute)
    globals()[name] = loaded
    return loaded


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
