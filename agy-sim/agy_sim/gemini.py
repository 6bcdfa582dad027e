"""What agy-sim reads from its ``--gemini_dir`` (docs/wire.md §1b), as a real agy would.

- **Sign-in** [R]: a token file (``antigravity-cli/antigravity-oauth-token`` with the tokens
  under ``token``, or the older flat ``oauth_creds.json``), or ``GEMINI_API_KEY`` with
  ``"modelProvider": "gemini"``; and onboarding finished (the three flags of
  ``antigravity-cli/cache/onboarding.json``). Without them the simulator is signed out;
  *how* a signed-out agy behaves is not recorded (a **guess**: turns refused naming sign-in).
- **Trust** [R]: the workspace's absolute path, exactly as spelled (one public report,
  docs/wire.md §9: a trusted parent covers no child, a link is its own spelling), in
  ``trustedWorkspaces`` of ``antigravity-cli/settings.json``, else the "Do you trust the
  contents of this project?" dialog blocks the TUI. Answering it "yes" records the path
  there (a **guess** of where agy keeps the answer).
- **Skills** [R]: the folders under ``antigravity-cli/skills`` and ``skills``.
- **MCP servers** [R]: ``config/mcp_config.json`` (``mcpServers``: command, args, env,
  enabledTools = auto-approved tools).
- **Rules**: ``GEMINI.md`` at the top of the gemini dir, re-read at every turn (the file from one
  user report, docs/wire.md §9; when agy re-reads it is a **guess**).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

SETTINGS: Final = Path("antigravity-cli") / "settings.json"
ONBOARDING: Final = Path("antigravity-cli") / "cache" / "onboarding.json"
ONBOARDING_FLAGS: Final = (
    "onboardingComplete",
    "consumerOnboardingComplete",
    "enterpriseOnboardingComplete",
)
TOKEN_FILES: Final = (Path("antigravity-cli") / "antigravity-oauth-token", Path("oauth_creds.json"))
SKILL_DIRS: Final = (Path("antigravity-cli") / "skills", Path("skills"))
MCP_CONFIG: Final = Path("config") / "mcp_config.json"
RULES: Final = Path("GEMINI.md")
_TOKEN_KEYS: Final = ("access_token", "refresh_token", "accessToken", "refreshToken")


def _json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class GeminiDir:
    """The simulator's view of its gemini dir, read once at start-up."""

    path: Path
    signed_in: bool
    why_signed_out: str
    trusted: bool
    skills: tuple[str, ...]
    mcp_servers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path, workspace: Path, environ: Mapping[str, str]) -> GeminiDir:
        settings = _json(path / SETTINGS)
        why = _why_signed_out(path, settings, environ)
        trusted = settings.get("trustedWorkspaces")
        skills = sorted(
            entry.name
            for relative in SKILL_DIRS
            if (path / relative).is_dir()
            for entry in (path / relative).iterdir()
            if entry.is_dir()
        )
        servers = _json(path / MCP_CONFIG).get("mcpServers")
        return cls(
            path=path,
            signed_in=not why,
            why_signed_out=why,
            trusted=isinstance(trusted, list) and str(workspace) in trusted,
            skills=tuple(skills),
            mcp_servers=servers if isinstance(servers, dict) else {},
        )

    def rules(self) -> str:
        """GEMINI.md's text (re-read each turn), or "" without one."""
        try:
            return (self.path / RULES).read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""


def _why_signed_out(path: Path, settings: Mapping[str, Any], environ: Mapping[str, str]) -> str:
    onboarding = _json(path / ONBOARDING)
    if not all(onboarding.get(flag) is True for flag in ONBOARDING_FLAGS):
        return "onboarding is not finished"
    if environ.get("GEMINI_API_KEY") and settings.get("modelProvider") == "gemini":
        return ""
    for relative in TOKEN_FILES:
        data = _json(path / relative)
        nested = data.get("token")
        tokens = nested if isinstance(nested, dict) else data
        if any(isinstance(tokens.get(key), str) and tokens[key] for key in _TOKEN_KEYS):
            return ""
    return "no sign-in in the gemini dir"


def trust_workspace(path: Path, workspace: Path) -> None:
    """Record "yes, trust this folder" in the settings (kept: other keys, mode 0600)."""
    file = path / SETTINGS
    settings = _json(file)
    trusted = settings.get("trustedWorkspaces")
    listed = list(trusted) if isinstance(trusted, list) else []
    listed.append(str(workspace))
    settings["trustedWorkspaces"] = listed
    file.parent.mkdir(parents=True, exist_ok=True)
    tmp = file.with_name(f".{file.name}.{os.getpid()}")
    tmp.write_text(json.dumps(settings, indent=2), encoding="utf-8")
    tmp.chmod(0o600)
    tmp.replace(file)
