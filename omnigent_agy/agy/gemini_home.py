"""The private ``--gemini_dir`` seeded from the person's own ``~/.gemini`` (docs/wire.md §1b).

agy reads *everything* from its gemini dir: with a private one that is empty it is not the
person's agy (signed out, onboarding again, a trust dialog blocking the TUI, no ``gcp``
settings, none of their skills, plugins, hooks or MCP servers). :func:`seed_gemini_dir`
fills the conversation's private folder from the person's, part by part; each part's
comment names the docs/wire.md §1b fact it follows.

Safety (docs/decisions.md §9): what is copied lands with mode 0600 in 0700 directories inside the
conversation's state directory; file contents are never logged (only the parts' names);
nothing is read through a symlink that leads out of the person's gemini dir.

At launch everything is seeded (``fresh=True``); at a re-attach only what can change while
agy runs and agy does not own (a renewed sign-in token, onboarding state, hooks, the plugin
manifest, the MCP servers, the instructions) is refreshed: the settings file then belongs
to the running agy, which may have written to it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.gemini_source import GeminiSource, SeedReport
from omnigent_agy.agy.mcp_selection import McpSelection
from omnigent_agy.agy.statedir import write_private_file
from omnigent_agy.errors import SeedError

__all__ = [
    "AGY_DIR",
    "CREDENTIAL_FILES",
    "GEMINI_HOME_ENV",
    "INSTRUCTIONS_FILE",
    "MCP_CONFIG",
    "ONBOARDING_FILE",
    "ONBOARDING_FLAGS",
    "SETTINGS_FILE",
    "GeminiSeed",
    "person_gemini_dir",
    "seed_gemini_dir",
    "sync_sign_in",
]

_log = logging.getLogger(__name__)

#: agy's own folder inside a gemini dir (its sign-in, settings, onboarding flags, skills).
AGY_DIR: Final = Path("antigravity-cli")
#: The person's gemini dir to seed from, when it is not ``~/.gemini`` (tests, unusual homes).
GEMINI_HOME_ENV: Final = "OMNIGENT_AGY_GEMINI_HOME"

# §1b Sign-in: the Linux token file (tokens nested under `token`), the older flat
# `oauth_creds.json`, the account list and the installation ids. Copied at every seed: a
# token renewed by the person's own agy reaches a running conversation at its re-attach.
CREDENTIAL_FILES: Final = (
    AGY_DIR / "antigravity-oauth-token",
    Path("oauth_creds.json"),
)
_SIGN_IN_FILES: Final = (
    *CREDENTIAL_FILES,
    Path("google_accounts.json"),
    Path("installation_id"),
    AGY_DIR / "installation_id",
)
# §1b Onboarding: without these three flags agy walks through onboarding in its TUI.
ONBOARDING_FILE: Final = AGY_DIR / "cache" / "onboarding.json"
ONBOARDING_FLAGS: Final = (
    "onboardingComplete",
    "consumerOnboardingComplete",
    "enterpriseOnboardingComplete",
)
_MIGRATED: Final = Path("config") / ".migrated"
# §1b Settings: the person's file (its `gcp` block), survey off (§1), workspace trusted once the
# person trusts it (§9).
SETTINGS_FILE: Final = AGY_DIR / "settings.json"
# §1b Extensions: skill trees and the plugins folder are linked (a skill written or a
# plugin installed meanwhile stays visible, and nothing large is copied); the manifest
# naming the imported plugins and the hooks are copied.
_LINKED_DIRS: Final = (
    AGY_DIR / "skills",
    Path("skills"),
    Path("config") / "plugins",
)
_IMPORT_MANIFEST: Final = Path("config") / "import_manifest.json"
_HOOKS: Final = Path("config") / "hooks.json"
# §1b MCP: agy reads MCP servers only from here; there is no --mcp-config flag.
MCP_CONFIG: Final = Path("config") / "mcp_config.json"
# Global rules live in `GEMINI.md` at the top of the gemini dir: one user report
# (docs/wire.md §9) and third-party Antigravity docs (docs/configuration.md).
INSTRUCTIONS_FILE: Final = Path("GEMINI.md")
_INSTRUCTIONS_HEADING: Final = "# Instructions from omnigent (this conversation's agent)"


@dataclass(frozen=True, slots=True)
class GeminiSeed:
    """What goes into one conversation's private gemini dir."""

    source: Path
    """The person's gemini dir (``~/.gemini``)."""
    trusted_workspace: Path | None = None
    """The path agy is started in, written to ``trustedWorkspaces`` exactly as agy compares
    it (docs/wire.md §9): set only once the person trusts the workspace (``agy.trust_store``)."""
    mcp_selection: McpSelection = field(default_factory=McpSelection)
    extra_mcp_servers: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Servers of the plugin's own (omnigent's tool relay), added beside the person's."""
    instructions: str | None = None
    """The agent's prompt, delivered as agy's own instructions (GEMINI.md)."""
    api_key: bool = False
    """GEMINI_API_KEY is set: §1b's other way in needs `"modelProvider": "gemini"`."""


def person_gemini_dir(configured: str | None, env: Mapping[str, str]) -> Path:
    """``$OMNIGENT_AGY_GEMINI_HOME``, else the configured folder, else ``~/.gemini``."""
    chosen = env.get(GEMINI_HOME_ENV, "").strip() or configured
    return Path(chosen).expanduser() if chosen else Path.home() / ".gemini"


def _write(target: Path, relative: Path, content: str | bytes) -> None:
    path = target / relative
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    write_private_file(path, content)


def _write_json(target: Path, relative: Path, value: object) -> None:
    _write(target, relative, json.dumps(value, indent=2, sort_keys=True) + "\n")


def seed_gemini_dir(target: Path, seed: GeminiSeed, *, fresh: bool) -> SeedReport:
    """Fill ``target`` (the conversation's private gemini dir) from ``seed.source``.

    Raises SeedError when a JSON file of the person's cannot be read as JSON; a missing
    file is simply not seeded (the pre-flight then says what that means).
    """
    report = SeedReport()
    source = GeminiSource(seed.source, report)
    target.mkdir(mode=0o700, parents=True, exist_ok=True)
    _seed_sign_in(target, source)
    _seed_onboarding(target, source)
    if fresh:
        _seed_settings(target, source, seed)
    _seed_extensions(target, source)
    report.mcp_servers = _seed_mcp(target, source, seed)
    _seed_instructions(target, source, seed.instructions)
    _log.info(
        "seeded agy's gemini dir from %s: copied %s; linked %s; MCP servers %s",
        seed.source,
        ", ".join(report.copied) or "nothing",
        ", ".join(report.linked) or "nothing",
        ", ".join(report.mcp_servers) or "none",
    )
    return report


def sync_sign_in(target: Path, source: Path) -> bool:
    """The person's sign-in, as it is now, in a conversation's private gemini dir: a file
    renewed is copied again, a file the person no longer has (signed out, revoked, another
    way in) is removed from the copy too; True when anything changed."""
    return _seed_sign_in(target, GeminiSource(source, SeedReport()))


def _seed_sign_in(target: Path, source: GeminiSource) -> bool:
    # §1b Sign-in (see CREDENTIAL_FILES): secrets, so 0600 like every file written here. No
    # copy outlives the person's own: signed out there, signed out here.
    changed = False
    for relative in _SIGN_IN_FILES:
        data = source.read(relative)
        path = target / relative
        if data is None:
            if path.is_file() or path.is_symlink():
                path.unlink()
                changed = True
            continue
        try:
            current: bytes | None = path.read_bytes()
        except OSError:
            current = None
        # The same sign-in with a fresher access token (agy renews its own copy, the
        # person's agy theirs) is no change: agy keeps its copy and renews it itself.
        if current is None or _sign_in_identity(current) != _sign_in_identity(data):
            _write(target, relative, data)
            changed = True
        source.report.copied.append(str(relative))
    return changed


def _sign_in_identity(data: bytes) -> object:
    """What names a sign-in in one of its files: the refresh token and the active account of
    a JSON file (at the top or under ``token``, §1b), else the bytes."""
    try:
        value = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return data
    if not isinstance(value, dict):
        return data
    nested = value.get("token")
    token = nested if isinstance(nested, dict) else value
    refresh, active = token.get("refresh_token"), value.get("active")
    return (refresh, active) if refresh is not None or active is not None else data


def _seed_onboarding(target: Path, source: GeminiSource) -> None:
    # §1b Onboarding: the person's state (it may carry more than the flags) with the three
    # flags set, and `config/.migrated` present.
    state = source.json_object(ONBOARDING_FILE) or {}
    state.update(dict.fromkeys(ONBOARDING_FLAGS, True))
    _write_json(target, ONBOARDING_FILE, state)
    if not (target / _MIGRATED).exists():
        _write(target, _MIGRATED, "")
    source.report.copied.append(str(ONBOARDING_FILE))


def _seed_settings(target: Path, source: GeminiSource, seed: GeminiSeed) -> None:
    # §1b Settings: the person's file is the base (its `gcp` block, else turns fail with
    # `invalid location: ""`); survey off (§1: it swallows input); the workspace trusted once
    # the person trusts it (else "Do you trust the contents of this project?" blocks the TUI,
    # §9), never on their behalf: trust admits the workspace's own MCP servers (§9,
    # docs/decisions.md §11).
    settings = source.json_object(SETTINGS_FILE) or {}
    settings["showFeedbackSurvey"] = False
    trusted = settings.get("trustedWorkspaces")
    workspaces = [str(w) for w in trusted] if isinstance(trusted, list) else []
    if seed.trusted_workspace is not None and str(seed.trusted_workspace) not in workspaces:
        # Exactly as agy is started in it: agy compares the spelling, not the folder (§9).
        workspaces.append(str(seed.trusted_workspace))
    settings["trustedWorkspaces"] = workspaces
    if seed.api_key and "modelProvider" not in settings:
        # §1b: GEMINI_API_KEY is the other way in, with this setting.
        settings["modelProvider"] = "gemini"
    _write_json(target, SETTINGS_FILE, settings)
    source.report.copied.append(str(SETTINGS_FILE))


def _seed_extensions(target: Path, source: GeminiSource) -> None:
    # §1b The person's extensions: skills and plugins live in the gemini dir.
    for relative in _LINKED_DIRS:
        _link(target, source, relative)
    manifest = source.read(_IMPORT_MANIFEST)
    if manifest is not None:
        _write(target, _IMPORT_MANIFEST, manifest)
        source.report.copied.append(str(_IMPORT_MANIFEST))
    hooks = source.json_object(_HOOKS)
    if hooks is None:
        (target / _HOOKS).unlink(missing_ok=True)  # removed by the person since the launch
        return
    # §1b: hook commands assume the real config dir as their cwd; agy would run them in
    # the private one, so each command first changes there.
    real_config = source.real_root / "config"
    _write_json(target, _HOOKS, _in_dir(hooks, real_config))
    source.report.copied.append(str(_HOOKS))


def _in_dir(value: Any, directory: Path) -> Any:
    if isinstance(value, list):
        return [_in_dir(item, directory) for item in value]
    if not isinstance(value, dict):
        return value
    walked = {key: _in_dir(item, directory) for key, item in value.items()}
    command = walked.get("command")
    if isinstance(command, str) and command and walked.get("type", "command") == "command":
        walked["command"] = f"cd {shlex.quote(str(directory))} && exec sh -c {shlex.quote(command)}"
    return walked


def _link(target: Path, source: GeminiSource, relative: Path) -> None:
    real = source.inside(relative)
    link = target / relative
    if real is None or not real.is_dir():
        if link.is_symlink():
            link.unlink(missing_ok=True)  # the person removed it (another seeder may have too)
        return
    if link.is_symlink() and link.resolve() == real:
        source.report.linked.append(str(relative))
        return
    if link.exists() and not link.is_symlink():
        # agy made a folder of its own there: it is agy's now, leave it.
        source.report.skipped.append(f"{relative} (agy's own folder)")
        return
    link.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Made beside it under a name of its own and renamed over it: with two seeders of one
    # folder at once (a turn's and the doctor's), neither fails on the other's link and the
    # link is never missing. A rename cannot replace agy's own folder.
    temporary = link.with_name(f".{link.name}.{secrets.token_hex(6)}")
    temporary.symlink_to(real, target_is_directory=True)
    try:
        os.replace(temporary, link)
    except OSError:
        temporary.unlink(missing_ok=True)
        if not link.is_symlink():
            source.report.skipped.append(f"{relative} (agy's own folder)")
            return
        raise
    source.report.linked.append(str(relative))


def _seed_mcp(target: Path, source: GeminiSource, seed: GeminiSeed) -> tuple[str, ...]:
    # §1b MCP servers: the person's, as this agent's selection admits, and the plugin's own.
    config = source.json_object(MCP_CONFIG) or {}
    servers = config.get("mcpServers") or {}
    if not isinstance(servers, dict):
        raise SeedError(
            f"{seed.source / MCP_CONFIG}: mcpServers is not an object",
            path=seed.source / MCP_CONFIG,
        )
    chosen = {name: spec for name, spec in servers.items() if seed.mcp_selection.admits(name)}
    for name, spec in seed.extra_mcp_servers.items():
        if name in chosen:
            _log.warning("the person's MCP server %r is replaced by omnigent-agy's own", name)
        chosen[name] = dict(spec)
    # env blocks may hold API keys: the file is 0600 like the rest.
    _write_json(target, MCP_CONFIG, {**config, "mcpServers": chosen})
    return tuple(chosen)


def _seed_instructions(target: Path, source: GeminiSource, instructions: str | None) -> None:
    # The person's global rules stay first; the agent's prompt follows under its heading.
    own = source.read(INSTRUCTIONS_FILE)
    parts = [own.decode("utf-8", errors="replace").rstrip()] if own else []
    if instructions and instructions.strip():
        parts.append(f"{_INSTRUCTIONS_HEADING}\n\n{instructions.strip()}")
    if not parts:
        with contextlib.suppress(FileNotFoundError):
            (target / INSTRUCTIONS_FILE).unlink()
        return
    _write(target, INSTRUCTIONS_FILE, "\n\n".join(parts) + "\n")
