"""``omnigent-agy trust``: see which folders agy may work in, trust one, or change your mind.

Trust is the person's (docs/decisions.md §11, `agy.trust_store`): a folder is trusted by their own
agy settings, the operator's ``harness.agy-cli.trusted_workspaces``, or their answer on the
card, which is remembered until they take it back here. Each function returns the exit status
and the lines to print; nothing here prints a secret or a file's content.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from omnigent_agy.agy.gemini_home import SETTINGS_FILE
from omnigent_agy.agy.running_agys import list_running
from omnigent_agy.agy.shown import visible
from omnigent_agy.agy.trust_store import same_folder
from omnigent_agy.agy.workspace_runs import WorkspaceRuns, workspace_runs
from omnigent_agy.config.settings import ENV_TRUSTED_WORKSPACES, AgyConfig
from omnigent_agy.constants import KEY
from omnigent_agy.doctor.gemini_checks import workspace_trust
from omnigent_agy.errors import TrustFileError

__all__ = ["forget_folder", "list_trusted", "runs_lines", "trust_folder"]

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
        f"  {visible(folder)}  (since {entry.get('trusted_at', '?')}, "
        f"{visible(str(entry.get('by', '?')))}){_still(folder, entry)}"
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
    runs = workspace_runs(folder)
    lines = runs_lines(runs, "trusting it lets agy run, when agy starts there:")
    try:
        already = trust.trusted_by(folder, runs)
        trust.store.remember(folder, by=by, runs=runs)
    except TrustFileError as exc:
        return _FAILED, [f"omnigent-agy: {exc}", f"  -> {exc.remediation}"]
    if already is not None:
        lines.append(f"(it was already trusted by {already.describe()})")
    where = trust.store.path
    lines.append(
        f"trusted {visible(str(folder))}: agy starts there without asking while these files stay "
        f"as they are (stored in {where})"
    )
    return _OK, lines


def runs_lines(runs: WorkspaceRuns, heading: str) -> list[str]:
    """What a folder would make agy run, a line each under ``heading`` (none: no lines)."""
    listed = runs.lines()
    if not listed:
        return []
    return [heading, *(f"  ({number}) {line}" for number, line in enumerate(listed, 1))]


def _still(folder: str, entry: dict[str, object]) -> str:
    """Whether a remembered yes still covers what ``folder`` holds."""
    if not isinstance(entry.get("digest"), str):
        return " — asks again: kept without a record of what it covered"
    if workspace_runs(Path(folder)).digest != entry["digest"]:
        return " — asks again: what it makes agy run changed since"
    return ""


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
