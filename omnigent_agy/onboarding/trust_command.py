"""``omnigent-agy trust``: see which folders agy may work in, trust one, or change your mind.

Trust is the person's (docs/decisions.md §11, `agy.trust`): a folder is trusted by their own
agy settings, the operator's ``harness.agy-cli.trusted_workspaces``, or their answer on the
card, which is remembered until they take it back here. Each function returns the exit status
and the lines to print; nothing here prints a secret or a file's content.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from omnigent_agy.agy.gemini_home import SETTINGS_FILE
from omnigent_agy.agy.running import list_running
from omnigent_agy.agy.trust import TrustFileError, same_folder, workspace_servers
from omnigent_agy.onboarding.agy_home import workspace_trust
from omnigent_agy.onboarding.config import ENV_TRUSTED_WORKSPACES, KEY, AgyConfig

__all__ = ["forget_folder", "list_trusted", "trust_folder"]

_OK = 0
_FAILED = 1


def list_trusted(config: AgyConfig, env: Mapping[str, str]) -> tuple[int, list[str]]:
    """Every source of trust and what it lists."""
    trust = workspace_trust(config, env)
    assert trust.store is not None
    lines = [f"trusted by the operator ({KEY}.trusted_workspaces, {ENV_TRUSTED_WORKSPACES}):"]
    lines += [f"  {pattern.text}" for pattern in trust.operator] or ["  (none)"]
    lines.append(f"trusted on a card (remembered in {trust.store.path}):")
    try:
        answers = trust.store.entries()
    except TrustFileError as exc:
        return _FAILED, [*lines, f"  cannot be read: {exc}", f"  -> {exc.remediation}"]
    lines += [
        f"  {folder}  (since {entry.get('trusted_at', '?')}, {entry.get('by', '?')})"
        for folder, entry in sorted(answers.items())
    ] or ["  (none)"]
    if trust.gemini_home is not None:
        lines.append(
            f"also trusted: every folder your own agy trusts ({trust.gemini_home / SETTINGS_FILE}"
            ", trustedWorkspaces)"
        )
    lines.append("Any other folder is asked about on a card before agy starts in it.")
    return _OK, lines


def trust_folder(
    config: AgyConfig, folder: Path, env: Mapping[str, str], *, by: str
) -> tuple[int, list[str]]:
    """Remember ``folder`` as trusted, as the card's "Yes, I trust this folder" does."""
    folder = Path(os.path.abspath(folder.expanduser()))
    if not folder.is_dir():
        return _FAILED, [f"omnigent-agy: {folder} is not a folder"]
    trust = workspace_trust(config, env)
    assert trust.store is not None
    lines = []
    servers = workspace_servers(folder)
    if servers:
        lines.append(f"note: agy will start this folder's own MCP servers: {'; '.join(servers)}")
    try:
        already = trust.trusted_by(folder)
        trust.store.remember(folder, by=by)
    except TrustFileError as exc:
        return _FAILED, [f"omnigent-agy: {exc}", f"  -> {exc.remediation}"]
    if already is not None:
        lines.append(f"(it was already trusted by {already.describe()})")
    where = trust.store.path
    lines.append(f"trusted {folder}: agy starts there without asking (stored in {where})")
    return _OK, lines


def forget_folder(config: AgyConfig, folder: Path, env: Mapping[str, str]) -> tuple[int, list[str]]:
    """Forget a remembered answer: the next session there asks again."""
    folder = Path(os.path.abspath(folder.expanduser()))
    trust = workspace_trust(config, env)
    assert trust.store is not None
    try:
        gone = trust.store.forget(folder)
        still = trust.trusted_by(folder)
    except TrustFileError as exc:
        return _FAILED, [f"omnigent-agy: {exc}", f"  -> {exc.remediation}"]
    lines = [f"forgot {entry}" for entry in gone] or [f"{folder} was not trusted on a card"]
    if still is not None:
        lines.append(f"it is still trusted by {still.describe()}: change that there")
    elif gone:
        lines.append("the next session there asks you again before agy starts")
    running = [
        agy.key
        for agy in list_running()
        if agy.alive and agy.record.workspace and same_folder(agy.record.workspace, folder)
    ]
    if running and still is None:
        keys = " ".join(running)
        lines.append(
            f"agys already running there keep the trust they started with: "
            f"`omnigent-agy stop {keys}` ends them (their next turn asks)"
        )
    return _OK, lines
