"""Checks of the private gemini dir the plugin's agy will really run with (docs/wire.md §1b).

`agy models` (``checks.check_signed_in``) reads the person's real ``~/.gemini``; the agy the
plugin starts reads only its own seeded folder. So the doctor and the pre-flight also look
at that folder: signed in as seen from there, onboarding finished, this workspace trusted,
settings a JSON object with the survey off, an MCP config agy can read. Each failure carries
the code a turn would stop with. Nothing here prints a file's content.

:func:`gemini_seed` builds the seed (the person's folder, the agent's MCP selection and extra
servers, the instructions) from the configuration, for the session and the doctor alike;
:func:`workspace_trust` says who may trust a workspace (docs/decisions.md §11);
:func:`doctor_checks` reports the workspace as agy gets it (a link for a hidden folder) and who
trusts it, then seeds a scratch folder and checks it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from omnigent_agy.agy.gemini_home import (
    CREDENTIAL_FILES,
    MCP_CONFIG,
    ONBOARDING_FILE,
    ONBOARDING_FLAGS,
    SETTINGS_FILE,
    GeminiSeed,
    person_gemini_dir,
    seed_gemini_dir,
)
from omnigent_agy.agy.mcp_selection import McpSelection
from omnigent_agy.agy.statedir import SessionStateDir, default_state_base
from omnigent_agy.agy.trust_store import TrustStore, WorkspaceTrust
from omnigent_agy.agy.workspace import AgyWorkspace, prepare_workspace, remove_link
from omnigent_agy.agy.workspace_runs import workspace_runs
from omnigent_agy.config.settings import AgyConfig
from omnigent_agy.constants import KEY
from omnigent_agy.doctor.checks import DoctorLine, Status
from omnigent_agy.errors import (
    AGY_ONBOARDING_INCOMPLETE,
    AGY_SETTINGS_INVALID,
    AGY_SIGNED_OUT,
    AGY_STATE_DIR_INVALID,
    AGY_WORKSPACE_UNTRUSTED,
    Failure,
    FailureKind,
    SeedError,
    TrustFileError,
    WorkspaceHiddenError,
    kind_for_code,
)

__all__ = [
    "API_KEY_ENV",
    "check_gemini_dir",
    "doctor_checks",
    "first_failure",
    "gemini_seed",
    "workspace_trust",
]

API_KEY_ENV = "GEMINI_API_KEY"


def gemini_seed(
    config: AgyConfig,
    env: Mapping[str, str],
    *,
    selection: McpSelection | None = None,
    extra_mcp_servers: Mapping[str, Mapping[str, object]] | None = None,
    instructions: str | None = None,
) -> GeminiSeed:
    """What one conversation's gemini dir is seeded with; ``selection`` (the agent's own)
    wins over the config block's. The trusted workspace is added once it is trusted."""
    return GeminiSeed(
        source=person_gemini_dir(config.gemini_home, env),
        mcp_selection=selection if selection is not None else config.mcp_servers,
        extra_mcp_servers=dict(extra_mcp_servers or {}),
        instructions=instructions,
        api_key=bool(env.get(API_KEY_ENV, "").strip()),
    )


def workspace_trust(
    config: AgyConfig, env: Mapping[str, str], state_base: Path | None = None
) -> WorkspaceTrust:
    """Who may trust a workspace for this configuration (docs/decisions.md §11): the person's
    own agy settings, the operator's list, the answers remembered in the state base."""
    return WorkspaceTrust(
        gemini_home=person_gemini_dir(config.gemini_home, env),
        operator=config.trusted_workspaces,
        store=TrustStore(state_base or default_state_base()),
    )


def _failed(name: str, summary: str, kind: FailureKind) -> DoctorLine:
    return DoctorLine(name, Status.FAIL, summary, kind.remediation, kind.code)


def _json(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The JSON object at ``path`` (None when absent), or the reason it is not one."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return None, f"{path} cannot be read as JSON ({type(exc).__name__})"
    if not isinstance(value, dict):
        return None, f"{path} is not a JSON object"
    return value, None


def _has_token(gemini_dir: Path) -> Path | None:
    # §1b: the Linux file nests the tokens under `token`; older builds keep them flat.
    for relative in CREDENTIAL_FILES:
        value, _ = _json(gemini_dir / relative)
        if value is None:
            continue
        nested = value.get("token")
        tokens: dict[str, Any] = nested if isinstance(nested, dict) else value
        if any(isinstance(tokens.get(k), str) and tokens[k] for k in _TOKEN_KEYS):
            return relative
    return None


_TOKEN_KEYS = ("access_token", "refresh_token", "accessToken", "refreshToken")


def _signed_in(
    gemini_dir: Path, settings: Mapping[str, object], env: Mapping[str, str]
) -> DoctorLine:
    name = "agy's folder: signed in"
    found = _has_token(gemini_dir)
    if found is not None:
        return DoctorLine(name, Status.OK, f"sign-in copied ({found})")
    if env.get(API_KEY_ENV, "").strip() and settings.get("modelProvider") == "gemini":
        return DoctorLine(name, Status.OK, f"{API_KEY_ENV} with modelProvider gemini")
    if sys.platform == "darwin":
        # §1b: on macOS >= 1.1.7 the token is in the Keychain of the real HOME, which stays
        # real; no file shows it, `agy models` checks it.
        return DoctorLine(name, Status.OK, "the macOS Keychain (HOME stays real)")
    return DoctorLine(
        name,
        Status.FAIL,
        f"agy's private folder {gemini_dir} holds no sign-in: no "
        f"{' or '.join(map(str, CREDENTIAL_FILES))} with a token, and {API_KEY_ENV} is not set",
        "Run `agy` in a terminal and sign in: omnigent-agy copies the sign-in from ~/.gemini "
        "(or harness.agy-cli.gemini_home); or set "
        f"{API_KEY_ENV}. Then retry, or run `omnigent-agy doctor`.",
        AGY_SIGNED_OUT.code,
    )


def check_gemini_dir(gemini_dir: Path, workspace: Path, env: Mapping[str, str]) -> list[DoctorLine]:
    """The seeded folder as the agy started with ``--gemini_dir gemini_dir`` sees it."""
    settings, broken = _json(gemini_dir / SETTINGS_FILE)
    if broken is not None:
        return [_failed("agy's folder: settings", broken, AGY_SETTINGS_INVALID)]
    settings = settings or {}
    results = [_signed_in(gemini_dir, settings, env), _onboarding(gemini_dir)]
    results.append(_trusted(settings, workspace))
    results.append(_settings(settings, gemini_dir))
    results.append(_mcp(gemini_dir))
    return results


def _onboarding(gemini_dir: Path) -> DoctorLine:
    name = "agy's folder: onboarding"
    state, broken = _json(gemini_dir / ONBOARDING_FILE)
    missing = [flag for flag in ONBOARDING_FLAGS if not (state or {}).get(flag)]
    if broken is None and not missing:
        return DoctorLine(name, Status.OK, "finished")
    detail = broken or f"{gemini_dir / ONBOARDING_FILE} lacks {', '.join(missing)}"
    return _failed(
        name,
        f"agy would walk through onboarding in its terminal: {detail}",
        AGY_ONBOARDING_INCOMPLETE,
    )


def _trusted(settings: Mapping[str, object], workspace: Path) -> DoctorLine:
    name = "agy's folder: workspace trusted"
    trusted = settings.get("trustedWorkspaces")
    # Exactly the path agy is started in: agy compares the spelling (docs/wire.md §9).
    wanted = str(workspace)
    if isinstance(trusted, list) and wanted in trusted:
        return DoctorLine(name, Status.OK, wanted)
    return _failed(
        name,
        f"{wanted} is not in trustedWorkspaces: agy's trust dialog would block its terminal",
        AGY_WORKSPACE_UNTRUSTED,
    )


def _settings(settings: Mapping[str, object], gemini_dir: Path) -> DoctorLine:
    name = "agy's folder: settings"
    if settings.get("showFeedbackSurvey") is not False:
        return _failed(
            name,
            f"{gemini_dir / SETTINGS_FILE} leaves the feedback survey on (it swallows input)",
            AGY_SETTINGS_INVALID,
        )
    extras = " (with the gcp block)" if isinstance(settings.get("gcp"), dict) else ""
    return DoctorLine(name, Status.OK, f"survey off{extras}")


def _mcp(gemini_dir: Path) -> DoctorLine:
    name = "agy's folder: MCP servers"
    config, broken = _json(gemini_dir / MCP_CONFIG)
    servers = (config or {}).get("mcpServers", {})
    if broken is not None or not isinstance(servers, dict):
        return _failed(
            name,
            broken or f"{gemini_dir / MCP_CONFIG}: mcpServers is not an object",
            AGY_SETTINGS_INVALID,
        )
    return DoctorLine(name, Status.OK, ", ".join(servers) or "none")


def first_failure(results: list[DoctorLine]) -> Failure | None:
    """The first failed check as the failure a turn stops with."""
    for result in results:
        if result.status is Status.FAIL and result.code is not None:
            return kind_for_code(result.code).failure(
                result.summary, remediation=result.remediation
            )
    return None


def doctor_checks(config: AgyConfig, workspace: Path, env: Mapping[str, str]) -> list[DoctorLine]:
    """The workspace as agy will be given it and who trusts it; then a scratch folder seeded as
    a conversation's would be once the workspace is trusted, checked, and removed."""
    try:
        base = SessionStateDir.open("doctor").path
    except Exception as exc:  # noqa: BLE001 - reported as a line of the report
        return [DoctorLine("agy's folder", Status.FAIL, str(exc), None, AGY_STATE_DIR_INVALID.code)]
    scratch = Path(tempfile.mkdtemp(prefix="gemini-", dir=base))
    try:
        where, results = _workspace_check(workspace, base, env)
        results.append(_trust_check(config, env, where.person))
        seed = replace(gemini_seed(config, env), trusted_workspace=where.agy)
        try:
            report = seed_gemini_dir(scratch, seed, fresh=True)
        except SeedError as exc:
            failed = DoctorLine("agy's folder", Status.FAIL, str(exc), exc.remediation, exc.code)
            return [*results, failed]
        source = DoctorLine(
            "agy's folder",
            Status.OK,
            f"seeded from {seed.source}: MCP servers {seed.mcp_selection.describe()}; "
            f"linked {', '.join(report.linked) or 'no skills or plugins'}",
        )
        return [*results, source, *check_gemini_dir(scratch, where.agy, env)]
    finally:
        remove_link(base)
        shutil.rmtree(scratch, ignore_errors=True)


def _workspace_check(
    workspace: Path, base: Path, env: Mapping[str, str]
) -> tuple[AgyWorkspace, list[DoctorLine]]:
    """The path agy gets for ``workspace`` (a link is made and removed again, to prove it can)."""
    name = "workspace"
    try:
        where = prepare_workspace(workspace, "doctor", base, env)
    except WorkspaceHiddenError as exc:
        failed = DoctorLine(name, Status.FAIL, str(exc), exc.remediation, exc.code)
        return AgyWorkspace(workspace, workspace), [failed]
    if not where.linked:
        return where, [DoctorLine(name, Status.OK, f"{where.person}")]
    summary = (
        f"{where.person} is inside a hidden folder, which agy would ignore (docs/wire.md §9): "
        f"agy is given a private link to it, like {where.agy}"
    )
    return where, [DoctorLine(name, Status.OK, summary)]


def _trust_check(config: AgyConfig, env: Mapping[str, str], workspace: Path) -> DoctorLine:
    name = "workspace trusted"
    try:
        trust = workspace_trust(config, env)
        trusted = trust.trusted_by(workspace)
        earlier = trust.earlier_answer(workspace)
    except TrustFileError as exc:
        return DoctorLine(name, Status.FAIL, str(exc), exc.remediation, exc.code)
    if trusted is not None:
        return DoctorLine(name, Status.OK, f"by {trusted.describe()}")
    # Not a fault: a session's first message asks the person (a card) before agy starts.
    state = "not yet" if earlier is None else "not for what it holds now (changed since your yes)"
    summary = (
        f"{state}: a session's first message here asks you on a card before agy starts "
        f"(to trust it now: `omnigent-agy trust {shlex.quote(str(workspace))}`, or list it "
        f"under {KEY}.trusted_workspaces)"
    )
    listed = workspace_runs(workspace).lines()
    if listed:
        runs = "; ".join(f"({number}) {line}" for number, line in enumerate(listed, 1))
        summary += f"; trusting it lets this project make agy run: {runs}"
    return DoctorLine(name, Status.OK, summary)
