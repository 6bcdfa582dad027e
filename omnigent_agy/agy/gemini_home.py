"""The private ``--gemini_dir`` seeded from the person's own ``~/.gemini`` (WIRE.md §1b).

agy reads *everything* from its gemini dir: with a private one that is empty it is not the
person's agy (signed out, onboarding again, a trust dialog blocking the TUI, no ``gcp``
settings, none of their skills, plugins, hooks or MCP servers). :func:`seed_gemini_dir`
fills the conversation's private folder from the person's, part by part; each part's
comment names the WIRE.md §1b fact it follows.

Safety (DESIGN-NOTES §9): what is copied lands with mode 0600 in 0700 directories inside the
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
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.statedir import write_private_file
from omnigent_agy.rpc.errors import AgyError

__all__ = [
    "CREDENTIAL_FILES",
    "GEMINI_HOME_ENV",
    "INSTRUCTIONS_FILE",
    "MCP_CONFIG",
    "ONBOARDING_FILE",
    "ONBOARDING_FLAGS",
    "SETTINGS_FILE",
    "GeminiSeed",
    "McpSelection",
    "SeedError",
    "SeedReport",
    "person_gemini_dir",
    "seed_gemini_dir",
]

_log = logging.getLogger(__name__)

#: The person's gemini dir to seed from, when it is not ``~/.gemini`` (tests, unusual homes).
GEMINI_HOME_ENV: Final = "OMNIGENT_AGY_GEMINI_HOME"

# §1b Sign-in: the Linux token file (tokens nested under `token`), the older flat
# `oauth_creds.json`, the account list and the installation ids. Copied at every seed: a
# token renewed by the person's own agy reaches a running conversation at its re-attach.
CREDENTIAL_FILES: Final = (
    Path("antigravity-cli") / "antigravity-oauth-token",
    Path("oauth_creds.json"),
)
_SIGN_IN_FILES: Final = (
    *CREDENTIAL_FILES,
    Path("google_accounts.json"),
    Path("installation_id"),
    Path("antigravity-cli") / "installation_id",
)
# §1b Onboarding: without these three flags agy walks through onboarding in its TUI.
ONBOARDING_FILE: Final = Path("antigravity-cli") / "cache" / "onboarding.json"
ONBOARDING_FLAGS: Final = (
    "onboardingComplete",
    "consumerOnboardingComplete",
    "enterpriseOnboardingComplete",
)
_MIGRATED: Final = Path("config") / ".migrated"
# §1b Settings: the person's file (its `gcp` block), survey off (§1), workspace trusted.
SETTINGS_FILE: Final = Path("antigravity-cli") / "settings.json"
# §1b Extensions: skill trees and the plugins folder are linked (a skill written or a
# plugin installed meanwhile stays visible, and nothing large is copied); the manifest
# naming the imported plugins and the hooks are copied.
_LINKED_DIRS: Final = (
    Path("antigravity-cli") / "skills",
    Path("skills"),
    Path("config") / "plugins",
)
_IMPORT_MANIFEST: Final = Path("config") / "import_manifest.json"
_HOOKS: Final = Path("config") / "hooks.json"
# §1b MCP: agy reads MCP servers only from here; there is no --mcp-config flag.
MCP_CONFIG: Final = Path("config") / "mcp_config.json"
# Not in WIRE.md: third-party Antigravity docs say global rules live in
# `~/.gemini/GEMINI.md` (a guess for agy; docs/configuration.md says so).
INSTRUCTIONS_FILE: Final = Path("GEMINI.md")
_INSTRUCTIONS_HEADING: Final = "# Instructions from omnigent (this conversation's agent)"


class SeedError(AgyError):
    """A file of the person's gemini dir cannot be used as it is (e.g. not JSON)."""

    code = "agy_settings_invalid"

    def __init__(self, message: str, *, path: Path) -> None:
        super().__init__(message)
        self.path = path
        self.remediation = (
            f"Fix or remove {path} (agy reads it too: `agy` in a terminal shows what it makes "
            "of it); then run `omnigent-agy doctor`."
        )


@dataclass(frozen=True, slots=True)
class McpSelection:
    """Which of the person's MCP servers one agent's agy gets: all (the default), only an
    allow-list, or all but a deny-list."""

    allow: tuple[str, ...] | None = None
    deny: tuple[str, ...] = ()

    def admits(self, name: str) -> bool:
        if name in self.deny:
            return False
        return self.allow is None or name in self.allow

    @classmethod
    def parse(cls, raw: object, *, key: str) -> McpSelection:
        """``{allow: [names]}`` or ``{deny: [names]}``; ValueError naming ``key`` otherwise."""
        if raw is None:
            return cls()
        if not isinstance(raw, Mapping):
            # ValueError, not TypeError: every caller reports it as a configuration error.
            raise ValueError(f"{key} must be a mapping with 'allow' or 'deny' (a list of names)")  # noqa: TRY004
        unknown = sorted(str(name) for name in raw if name not in ("allow", "deny"))
        if unknown:
            raise ValueError(f"{key}.{unknown[0]} is not a setting; use 'allow' or 'deny'")
        if "allow" in raw and "deny" in raw:
            raise ValueError(f"{key} takes 'allow' or 'deny', not both")
        lists: dict[str, tuple[str, ...]] = {}
        for which in ("allow", "deny"):
            names = raw.get(which)
            if which not in raw:
                continue
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise ValueError(f"{key}.{which} must be a list of MCP server names")
            lists[which] = tuple(names)
        if "allow" in lists:
            return cls(allow=lists["allow"])
        return cls(deny=lists.get("deny", ()))

    def describe(self) -> str:
        if self.allow is not None:
            return f"only {', '.join(self.allow) or 'none'}"
        return f"all but {', '.join(self.deny)}" if self.deny else "all"


@dataclass(frozen=True, slots=True)
class GeminiSeed:
    """What goes into one conversation's private gemini dir."""

    source: Path
    """The person's gemini dir (``~/.gemini``)."""
    workspace: Path
    mcp_selection: McpSelection = field(default_factory=McpSelection)
    extra_mcp_servers: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    """Servers of the plugin's own (omnigent's tool relay), added beside the person's."""
    instructions: str | None = None
    """The agent's prompt, delivered as agy's own instructions (GEMINI.md)."""
    api_key: bool = False
    """GEMINI_API_KEY is set: §1b's other way in needs `"modelProvider": "gemini"`."""


@dataclass(slots=True)
class SeedReport:
    """What a seed did, by part name (never a file's content)."""

    copied: list[str] = field(default_factory=list)
    linked: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    mcp_servers: tuple[str, ...] = ()


def person_gemini_dir(configured: str | None, env: Mapping[str, str]) -> Path:
    """``$OMNIGENT_AGY_GEMINI_HOME``, else the configured folder, else ``~/.gemini``."""
    chosen = env.get(GEMINI_HOME_ENV, "").strip() or configured
    return Path(chosen).expanduser() if chosen else Path.home() / ".gemini"


class _Source:
    """Reads from the person's gemini dir without following a link out of it."""

    def __init__(self, root: Path, report: SeedReport) -> None:
        self.root = root
        self.real_root = root.resolve()
        self.report = report

    def inside(self, relative: Path) -> Path | None:
        """The resolved path of ``relative`` when it exists inside the root, else None."""
        path = self.root / relative
        if not path.exists():
            return None
        resolved = path.resolve()
        if not resolved.is_relative_to(self.real_root):
            # A link out of ~/.gemini (dotfiles, or something planted): never read it.
            _log.warning("not seeding %s: it links outside %s", relative, self.root)
            self.report.skipped.append(f"{relative} (links outside {self.root})")
            return None
        return resolved

    def read(self, relative: Path) -> bytes | None:
        resolved = self.inside(relative)
        if resolved is None or not resolved.is_file():
            return None
        fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def json_object(self, relative: Path) -> dict[str, Any] | None:
        data = self.read(relative)
        if data is None:
            return None
        try:
            value = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise SeedError(
                f"{self.root / relative} is not valid JSON ({type(exc).__name__})",
                path=self.root / relative,
            ) from None
        if not isinstance(value, dict):
            raise SeedError(
                f"{self.root / relative} is not a JSON object", path=self.root / relative
            )
        return value


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
    source = _Source(seed.source, report)
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


def _seed_sign_in(target: Path, source: _Source) -> None:
    # §1b Sign-in (see CREDENTIAL_FILES): secrets, so 0600 like every file written here.
    for relative in _SIGN_IN_FILES:
        data = source.read(relative)
        if data is not None:
            _write(target, relative, data)
            source.report.copied.append(str(relative))


def _seed_onboarding(target: Path, source: _Source) -> None:
    # §1b Onboarding: the person's state (it may carry more than the flags) with the three
    # flags set, and `config/.migrated` present.
    state = source.json_object(ONBOARDING_FILE) or {}
    state.update(dict.fromkeys(ONBOARDING_FLAGS, True))
    _write_json(target, ONBOARDING_FILE, state)
    if not (target / _MIGRATED).exists():
        _write(target, _MIGRATED, "")
    source.report.copied.append(str(ONBOARDING_FILE))


def _seed_settings(target: Path, source: _Source, seed: GeminiSeed) -> None:
    # §1b Settings: the person's file is the base (its `gcp` block, else turns fail with
    # `invalid location: ""`); survey off (§1: it swallows input); this workspace trusted
    # (else "Do you trust this project?" blocks the TUI before any turn).
    settings = source.json_object(SETTINGS_FILE) or {}
    settings["showFeedbackSurvey"] = False
    trusted = settings.get("trustedWorkspaces")
    workspaces = [str(w) for w in trusted] if isinstance(trusted, list) else []
    workspace = str(seed.workspace.resolve())
    if workspace not in workspaces:
        workspaces.append(workspace)
    settings["trustedWorkspaces"] = workspaces
    if seed.api_key and "modelProvider" not in settings:
        # §1b: GEMINI_API_KEY is the other way in, with this setting.
        settings["modelProvider"] = "gemini"
    _write_json(target, SETTINGS_FILE, settings)
    source.report.copied.append(str(SETTINGS_FILE))


def _seed_extensions(target: Path, source: _Source) -> None:
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


def _link(target: Path, source: _Source, relative: Path) -> None:
    real = source.inside(relative)
    link = target / relative
    if real is None or not real.is_dir():
        if link.is_symlink():
            link.unlink()  # the person removed it
        return
    if link.is_symlink():
        if link.resolve() == real:
            source.report.linked.append(str(relative))
            return
        link.unlink()
    elif link.exists():
        # agy made a folder of its own there: it is agy's now, leave it.
        source.report.skipped.append(f"{relative} (agy's own folder)")
        return
    link.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    link.symlink_to(real, target_is_directory=True)
    source.report.linked.append(str(relative))


def _seed_mcp(target: Path, source: _Source, seed: GeminiSeed) -> tuple[str, ...]:
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


def _seed_instructions(target: Path, source: _Source, instructions: str | None) -> None:
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
