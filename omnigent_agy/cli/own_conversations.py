"""``omnigent-agy conversations``: the person's own agy conversations, and going on with one
in omnigent (docs/wire.md §9; README, "Go on with a conversation you started in agy").

``list_conversations`` prints agy's own list (`agy.conversation_store`). ``open_conversation``
makes an omnigent session on omnigent's server (its REST API, `omnigent_api`) that goes on
with one: a private copy of the conversation is put in that session's state (one
conversation, one agy: docs/decisions.md §4; the person's store is only read), with the record
of an agy stopped on it, so the session's first turn starts agy with ``--conversation <id>``
on the copy exactly as after any stop (`agy.launcher`), through the same workspace trust gate
and hidden-folder link as any turn (docs/decisions.md §11, `agy.workspace`). What agy's list
says of the conversation is added to the session as an item that starts no turn, so the
person sees where they are; agy keeps the history itself, and only the newest message of a
turn is ever sent (docs/decisions.md §3), so nothing reaches agy twice.

Each function returns the exit status and the lines to print; a failure is a coded `Failure`
(errors.py) with what to do.
"""

from __future__ import annotations

import contextlib
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from omnigent_agy.agy.conversation_store import (
    ConversationSummary,
    copy_conversation,
    find_conversation,
    read_conversations,
)
from omnigent_agy.agy.gemini_home import person_gemini_dir
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.running_agys import list_running
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.cli.omnigent_api import OmnigentApi
from omnigent_agy.config.settings import AgyConfig
from omnigent_agy.constants import TMUX_SOCKET, TMUX_SOCKET_ENV
from omnigent_agy.doctor.gemini_checks import workspace_trust
from omnigent_agy.errors import (
    AGY_CONVERSATION_UNKNOWN,
    AGY_CONVERSATIONS_UNREADABLE,
    AGY_OMNIGENT_UNREACHABLE,
    AGY_STATE_DIR_INVALID,
    ConversationStoreError,
    ConversationUnknownError,
    Failure,
    OmnigentApiError,
    StateDirError,
    TrustFileError,
)

__all__ = ["OpenRequest", "history_note", "list_conversations", "open_conversation"]

_OK = 0
_FAILED = 1
OPENED_REASON = "opened from your agy conversations (omnigent-agy conversations open)"


def list_conversations(
    config: AgyConfig, env: Mapping[str, str], *, limit: int = 30
) -> tuple[int, list[str]]:
    """agy's list of the person's conversations, newest first."""
    gemini = person_gemini_dir(config.gemini_home, env)
    try:
        stored = read_conversations(gemini)
    except ConversationStoreError as exc:
        return _FAILED, _failure_lines(_unreadable(exc))
    if not stored.exists:
        return _OK, [
            f"no agy conversations: {stored.path} does not exist (agy 1.2 writes it once you "
            "talk to it; set OMNIGENT_AGY_GEMINI_HOME or harness.agy-cli.gemini_home if your "
            "agy keeps its folder elsewhere)"
        ]
    opened: dict[str, list[str]] = {}
    for kept in list_running():
        if kept.cascade_id:
            opened.setdefault(kept.cascade_id, []).append(kept.key)
    lines = [f"{'ID':36}  {'LAST CHANGE':17}  {'STEPS':>5}  TITLE / WORKSPACE"]
    for summary in stored.conversations[:limit]:
        steps = "?" if summary.step_count is None else str(summary.step_count)
        lines.append(
            f"{summary.conversation_id:36}  {_when(summary.last_modified):17}  {steps:>5}  "
            f"{summary.title or '(untitled)'}"
        )
        lines.append(f"{'':36}  {'':17}  {'':5}  {summary.workspace or '(no workspace named)'}")
        if summary.conversation_id in opened:
            lines.append(f"{'':62}open in omnigent: {', '.join(opened[summary.conversation_id])}")
    shown = min(limit, len(stored.conversations))
    if not stored.conversations:
        lines = [f"no agy conversations listed in {stored.path}"]
    elif shown < len(stored.conversations):
        lines.append(f"({shown} of {len(stored.conversations)}; --limit N shows more)")
    if stored.unreadable_rows:
        lines.append(f"({stored.unreadable_rows} rows of {stored.path} could not be read)")
    if stored.conversations:
        lines.append("Go on with one in omnigent: omnigent-agy conversations open ID")
    return _OK, lines


@dataclass(frozen=True, slots=True)
class OpenRequest:
    """What `conversations open` was asked: the conversation, and where to open it."""

    wanted: str
    server: str
    host: str | None = None
    workspace: Path | None = None
    agent: str = "Antigravity-CLI"
    state_base: Path | None = None
    again: bool = False
    """Open another session even when one already goes on with this conversation."""


def open_conversation(
    config: AgyConfig, env: Mapping[str, str], request: OpenRequest
) -> tuple[int, list[str]]:
    """Open the conversation in a new omnigent session (see the module doc)."""
    gemini = person_gemini_dir(config.gemini_home, env)
    found = _conversation(gemini, request)
    if isinstance(found, Failure):
        return _FAILED, _failure_lines(found)
    summary, workspace = found
    api = OmnigentApi(request.server)
    try:
        host_id, agent_id = _host(api, request.host), api.agent_id(request.agent)
        earlier = None if request.again else _already_open(api, summary, request.state_base)
    except OmnigentApiError as exc:
        return _FAILED, _failure_lines(_server_failure(exc, request.server))
    if earlier is not None:
        return _OK, [
            f"agy conversation {summary.conversation_id} is already open in omnigent:",
            f"  {api.session_url(earlier)}",
            "(--again opens another session, on a copy of your agy's conversation as it is now)",
        ]
    notes = _trust_note(config, env, workspace)
    session_id = ""
    try:
        session_id = api.create_session(
            agent_id=agent_id, host_id=host_id, workspace=str(workspace), title=summary.title
        )
        socket = env.get(TMUX_SOCKET_ENV, "").strip() or config.tmux_socket or TMUX_SOCKET
        copied = _prepare(session_id, gemini, summary, workspace, socket, request.state_base)
        api.add_items(session_id, [history_note(summary, workspace, request.agent)])
    except (OmnigentApiError, ConversationStoreError, StateDirError, OSError) as exc:
        _take_back(api, session_id, request.state_base)
        return _FAILED, _failure_lines(_open_failure(exc, request.server))
    return _OK, [
        f"opened agy conversation {summary.conversation_id} "
        f"({summary.title or 'untitled'}) in omnigent:",
        f"  {api.session_url(session_id)}",
        f"workspace {workspace}; a private copy of the conversation ({', '.join(copied)}) "
        "that agy starts on with the session's first message; your own agy's copy is not "
        "touched.",
        *notes,
    ]


def _conversation(gemini: Path, request: OpenRequest) -> tuple[ConversationSummary, Path] | Failure:
    """The conversation asked for and the folder to work in, or why not."""
    try:
        summary = find_conversation(read_conversations(gemini), request.wanted)
    except ConversationStoreError as exc:
        return _unreadable(exc)
    except ConversationUnknownError as exc:
        return AGY_CONVERSATION_UNKNOWN.failure(str(exc))
    workspace = request.workspace or summary.workspace
    if workspace is not None and workspace.is_dir():
        return summary, workspace
    what = (
        f"its workspace {workspace} is not a folder here"
        if workspace
        else "agy's list names no workspace for it"
    )
    return AGY_CONVERSATION_UNKNOWN.failure(
        f"conversation {summary.conversation_id}: {what}",
        remediation="Name the folder to work in: omnigent-agy conversations open ID "
        "--workspace FOLDER.",
    )


def history_note(summary: ConversationSummary, workspace: Path, agent: str) -> dict[str, object]:
    """The session's first item: what agy's list says of the conversation (no turn starts)."""
    steps = f"{summary.step_count} steps" if summary.step_count is not None else "its steps"
    text = (
        f"Continued from your agy conversation “{summary.title or 'untitled'}” "
        f"({summary.conversation_id}), last changed {_when(summary.last_modified)} in "
        f"{workspace}. agy keeps its whole history ({steps}), which its own screen shows (the "
        "Terminal view, “Shell (agy)”); your next message here goes on from it."
    )
    if summary.preview:
        text += f"\n\nWhere it stopped: {summary.preview}"
    return {
        "item_type": "message",
        "item_data": {
            "role": "assistant",
            "agent": agent,
            "content": [{"type": "output_text", "text": text}],
        },
        "source_id": f"agy-conversation:{summary.conversation_id}",
    }


# -- the steps of opening ------------------------------------------------------------------


def _host(api: OmnigentApi, wanted: str | None) -> str:
    hosts = api.hosts()
    if wanted:
        for host in hosts:
            if wanted in (host.get("id"), host.get("host_id"), host.get("name")):
                return str(host.get("id") or host.get("host_id"))
        raise OmnigentApiError(f"omnigent's server has no host {wanted!r}")
    online = [h for h in hosts if _online(h)] or hosts
    if len(online) == 1:
        return str(online[0].get("id") or online[0].get("host_id"))
    if not online:
        raise OmnigentApiError(
            "omnigent's server has no host: run `omnigent host` on this machine first"
        )
    names = ", ".join(str(h.get("name") or h.get("id")) for h in online)
    raise OmnigentApiError(
        f"omnigent's server has several hosts ({names}); name this machine's with --host"
    )


def _online(host: Mapping[str, object]) -> bool:
    status = str(host.get("status") or host.get("state") or "").lower()
    return (
        host.get("connected") is True
        or host.get("online") is True
        or status
        in (
            "online",
            "connected",
            "ready",
        )
    )


def _prepare(  # noqa: PLR0917 - one call site, each argument a different thing
    session_id: str,
    gemini: Path,
    summary: ConversationSummary,
    workspace: Path,
    socket: str,
    base: Path | None,
) -> list[str]:
    """The session's state: the private copy, and an agy record stopped on it."""
    state = SessionStateDir.open(session_id, base=base)
    copied = copy_conversation(gemini, summary, state.gemini_dir)
    record = AgyRecord(
        pid=0,
        pid_create_time=0.0,
        port=None,
        csrf_token="",
        tmux_socket=socket,  # the harness's own: a record naming another is not re-attached
        tmux_session=session_name(session_id),
        log_file=str(state.log_file),
        cascade_id=summary.conversation_id,
        follows_tui=True,  # agy's TUI opens on the conversation --conversation names
        workspace=str(workspace),
        stopped_at=time.time(),
        stopped_reason=OPENED_REASON,
    )
    state.write_record(record)
    return copied


def _already_open(api: OmnigentApi, summary: ConversationSummary, base: Path | None) -> str | None:
    """The session an earlier `open` made for this conversation, if the server still has it
    (its state names the conversation; a session deleted since does not count)."""
    for kept in list_running(base):
        if kept.cascade_id == summary.conversation_id and api.has_session(kept.key):
            return kept.key
    return None


def _take_back(api: OmnigentApi, session_id: str, base: Path | None) -> None:
    if not session_id:
        return
    with contextlib.suppress(OmnigentApiError):
        api.delete_session(session_id)
    with contextlib.suppress(StateDirError, OSError):
        shutil.rmtree(SessionStateDir.open(session_id, base=base).path, ignore_errors=True)


def _trust_note(config: AgyConfig, env: Mapping[str, str], workspace: Path) -> list[str]:
    try:
        trusted = workspace_trust(config, env).trusted_by(workspace)
    except TrustFileError as exc:
        return [f"note: {exc}"]
    if trusted is not None:
        return [f"agy may work in {workspace}: trusted by {trusted.describe()}"]
    return [
        f"note: nobody has trusted {workspace} yet: the first message asks you on a card "
        "(agy's own question), or trust it now with `omnigent-agy trust FOLDER`"
    ]


# -- failures ------------------------------------------------------------------------------


def _unreadable(exc: ConversationStoreError) -> Failure:
    return AGY_CONVERSATIONS_UNREADABLE.failure(f"{exc} ({exc.path})", remediation=exc.remediation)


def _server_failure(exc: OmnigentApiError, server: str) -> Failure:
    if exc.down:
        return AGY_OMNIGENT_UNREACHABLE.failure(str(exc))
    return AGY_OMNIGENT_UNREACHABLE.failure(
        str(exc),
        remediation=f"Check the server at {server} (`omnigent host` running, the agent "
        "registered), or name another with --server URL / --host HOST.",
    )


def _open_failure(exc: Exception, server: str) -> Failure:
    if isinstance(exc, OmnigentApiError):
        return _server_failure(exc, server)
    if isinstance(exc, ConversationStoreError):
        return _unreadable(exc)
    if isinstance(exc, StateDirError):
        return AGY_STATE_DIR_INVALID.failure(str(exc), remediation=exc.remediation)
    return AGY_CONVERSATIONS_UNREADABLE.failure(
        f"the conversation could not be copied: {exc}",
        remediation="Check the folder named (space, permissions) and try again.",
    )


def _failure_lines(failure: Failure) -> list[str]:
    return [
        f"omnigent-agy: {failure.title} [{failure.code}]",
        f"  {failure.message}",
        f"  -> {failure.remediation}",
    ]


def _when(moment: datetime | None) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M") + "Z" if moment else "unknown"
