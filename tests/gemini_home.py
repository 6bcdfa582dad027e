"""A person's ``~/.gemini`` for the tests (docs/wire.md §1b): signed in, onboarded, with whatever
skills, MCP servers and settings a test asks for. Every secret in it is a fresh random
value, so a test can grep for it."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ONBOARDED = {
    "onboardingComplete": True,
    "consumerOnboardingComplete": True,
    "enterpriseOnboardingComplete": True,
}


@dataclass(frozen=True)
class PersonGemini:
    path: Path
    access_token: str
    refresh_token: str

    @property
    def secrets(self) -> tuple[str, str]:
        return self.access_token, self.refresh_token


def _write(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value if isinstance(value, str) else json.dumps(value), encoding="utf-8")


def make_person_gemini(
    path: Path,
    *,
    signed_in: bool = True,
    onboarded: bool = True,
    settings: Mapping[str, Any] | None = None,
    skills: tuple[str, ...] = (),
    mcp_servers: Mapping[str, Any] | None = None,
    rules: str | None = None,
    hooks: Mapping[str, Any] | None = None,
) -> PersonGemini:
    person = PersonGemini(path, f"ya29.{secrets.token_hex(24)}", f"1//{secrets.token_hex(24)}")
    path.mkdir(parents=True, exist_ok=True)
    if signed_in:
        token = {
            "token": {"access_token": person.access_token, "refresh_token": person.refresh_token}
        }
        _write(path / "antigravity-cli" / "antigravity-oauth-token", token)
        _write(path / "google_accounts.json", {"active": "person@example.com", "old": []})
        _write(path / "installation_id", "0f6a-installation\n")
    if onboarded:
        _write(path / "antigravity-cli" / "cache" / "onboarding.json", ONBOARDED)
    _write(path / "antigravity-cli" / "settings.json", dict(settings or {}))
    for skill in skills:
        _write(path / "skills" / skill / "SKILL.md", f"---\nname: {skill}\n---\nDo {skill}.\n")
    if mcp_servers is not None:
        _write(path / "config" / "mcp_config.json", {"mcpServers": dict(mcp_servers)})
    if rules is not None:
        _write(path / "GEMINI.md", rules)
    if hooks is not None:
        _write(path / "config" / "hooks.json", dict(hooks))
    return person


def seeded_sim_gemini(path: Path, workspace: Path, **kwargs: Any) -> PersonGemini:
    """A gemini dir an agy-sim can be started with directly: signed in, survey off and
    ``workspace`` trusted (what the plugin's seeding produces)."""
    settings = {"showFeedbackSurvey": False, "trustedWorkspaces": [str(workspace)]}
    settings.update(kwargs.pop("settings", None) or {})
    return make_person_gemini(path, settings=settings, **kwargs)
