"""``omnigent-agy doctor``: run every onboarding check, render the report, and pre-flight.

The checks themselves live in :mod:`omnigent_agy.doctor.checks` (agy, tmux, Python and
omnigent, the enable flag) and :mod:`omnigent_agy.doctor.instructions` (AGENTS.md); they
are re-exported here so callers have one place to import from. Plugins add checks through the
``agy_onboarding_checks`` hook and return the simpler
:class:`omnigent_agy.plugins.CheckResult` (``ok``, ``detail``, ``remediation``),
converted here to a report line.

:func:`preflight` is what the executor runs before its first turn: the subset of checks
without which no turn can work, the first failure returned as a
:class:`~omnigent_agy.errors.Failure` with the same code the doctor shows.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import pluggy

from omnigent_agy.config.executable import resolve_executable
from omnigent_agy.config.settings import AgyConfig, load_config
from omnigent_agy.doctor.checks import (
    DoctorLine,
    Status,
    check_agy_on_path,
    check_agy_version,
    check_enabled,
    check_python_and_omnigent,
    check_signed_in,
    check_tmux,
    judge_runtime,
    parse_version,
    read_agy_version,
)
from omnigent_agy.doctor.gemini_checks import doctor_checks
from omnigent_agy.doctor.instructions import check_instructions_file
from omnigent_agy.doctor.quota_report import check_quota
from omnigent_agy.errors import (
    AGY_CONFIG_INVALID,
    AGY_LAUNCH_FAILED,
    AGY_PLUGIN_FAILED,
    ConfigError,
    Failure,
    PluginLoadError,
    kind_for_code,
    scrub,
)
from omnigent_agy.plugins import get_plugin_manager, onboarding_checks

__all__ = [
    "DoctorLine",
    "Status",
    "check_agy_on_path",
    "check_agy_version",
    "check_enabled",
    "check_instructions_file",
    "check_python_and_omnigent",
    "check_quota",
    "check_signed_in",
    "check_tmux",
    "doctor_report",
    "exit_code",
    "judge_runtime",
    "parse_version",
    "plugin_checks",
    "preflight",
    "read_agy_version",
    "render",
    "render_json",
    "run_doctor",
]


def plugin_checks(manager: pluggy.PluginManager | None = None) -> list[DoctorLine]:
    """The checks plugins registered through ``agy_onboarding_checks``, run one by one."""
    try:
        manager = manager or get_plugin_manager()
    except PluginLoadError as exc:
        return [
            DoctorLine(
                "plugins",
                Status.FAIL,
                str(exc),
                AGY_PLUGIN_FAILED.remediation,
                AGY_PLUGIN_FAILED.code,
            )
        ]
    results = []
    for check in onboarding_checks(manager):
        try:
            outcome = check.run()
        except Exception as exc:  # noqa: BLE001 - a plugin's bug is reported, not raised
            results.append(
                DoctorLine(
                    check.name,
                    Status.FAIL,
                    scrub(f"the check raised {type(exc).__name__}: {exc}"),
                    "Report it to the plugin's authors",
                )
            )
            continue
        status = Status.OK if outcome.ok else Status.FAIL
        remedy = scrub(outcome.remediation) if outcome.remediation else None
        results.append(DoctorLine(check.name, status, scrub(outcome.detail), remedy))
    return results


# -- the whole report ------------------------------------------------------------------------


def _skipped(name: str, why: str) -> DoctorLine:
    return DoctorLine(name, Status.SKIP, why)


def run_doctor(
    config: AgyConfig,
    workspace: Path,
    *,
    fix_instructions: bool = False,
    env: Mapping[str, str] | None = None,
    manager: pluggy.PluginManager | None = None,
) -> list[DoctorLine]:
    """Every check, in the order a person fixes things; plugin checks last."""
    results = [check_python_and_omnigent(), check_enabled(config, env)]
    on_path = check_agy_on_path(config, env)
    results.append(on_path)
    if on_path.status is Status.FAIL:
        results += [_skipped(n, "skipped: agy not found") for n in ("agy version", "agy signed in")]
    else:
        executable = resolve_executable(config, env)
        version = check_agy_version(executable, env=env)
        results.append(version)
        if version.code == AGY_LAUNCH_FAILED.code:
            results.append(_skipped("agy signed in", "skipped: agy does not run"))
        else:
            results.append(check_signed_in(executable, env=env))
    # The account's plan and quota, from a running agy of ours (none is started for it).
    results.append(check_quota())
    results.append(check_tmux())
    results.append(check_instructions_file(workspace, fix=fix_instructions))
    # The folder the plugin's agy reads everything from (docs/wire.md §1b), seeded as for a turn.
    results += doctor_checks(config, workspace, os.environ if env is None else env)
    results += plugin_checks(manager)
    return results


def doctor_report(
    config_path: Path,
    workspace: Path,
    *,
    fix_instructions: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[DoctorLine]:
    """:func:`run_doctor` for the config file at ``config_path``, reporting it if it is invalid.

    With an invalid file the other checks still run, on the defaults and the environment.
    """
    try:
        config = load_config(config_path, env=env)
    except ConfigError as exc:
        broken = DoctorLine(
            "configuration",
            Status.FAIL,
            str(exc),
            AGY_CONFIG_INVALID.remediation,
            AGY_CONFIG_INVALID.code,
        )
        rest = run_doctor(
            AgyConfig(path=config_path), workspace, fix_instructions=fix_instructions, env=env
        )
        return [broken, *(r for r in rest if r.name != "enabled")]
    return run_doctor(config, workspace, fix_instructions=fix_instructions, env=env)


def preflight(config: AgyConfig, env: Mapping[str, str] | None = None) -> Failure | None:
    """The first failure that would stop a turn (agy, its version, its sign-in, tmux), or None.

    Blocking (it runs agy twice): call it in a thread, once per harness process.
    """
    on_path = check_agy_on_path(config, env)
    checks = [on_path]
    if on_path.status is not Status.FAIL:
        executable = resolve_executable(config, env)
        checks.append(check_agy_version(executable, env=env))
        if checks[-1].status is not Status.FAIL:
            checks.append(check_signed_in(executable, env=env))
    checks.append(check_tmux())
    for result in checks:
        if result.status is Status.FAIL and result.code is not None:
            return kind_for_code(result.code).failure(
                result.summary, remediation=result.remediation
            )
    return None


# -- rendering -------------------------------------------------------------------------------

_MARKS = {Status.OK: "✓", Status.WARN: "!", Status.FAIL: "✗", Status.SKIP: "-"}
_ASCII_MARKS = {Status.OK: "ok", Status.WARN: "!!", Status.FAIL: "XX", Status.SKIP: "--"}


def exit_code(results: Sequence[DoctorLine]) -> int:
    """0 when no check failed (warnings are fine), 1 otherwise."""
    return 1 if any(r.status is Status.FAIL for r in results) else 0


def render(results: Sequence[DoctorLine], *, unicode: bool = True) -> str:
    """One line per check, the remediation under each failure and warning, then a tally."""
    marks = _MARKS if unicode else _ASCII_MARKS
    width = max((len(r.name) for r in results), default=0)
    lines = []
    for result in results:
        lines.append(f"{marks[result.status]} {result.name.ljust(width)}  {result.summary}")
        # Under the summary, one more step in.
        indent = " " * (len(marks[result.status]) + width + 5)
        lines += [f"{indent}{detail}" for detail in result.details]
        if result.remediation and result.status in (Status.FAIL, Status.WARN):
            lines.append(f"    -> {result.remediation}")
    failed = sum(r.status is Status.FAIL for r in results)
    warned = sum(r.status is Status.WARN for r in results)
    if failed or warned:
        warnings = f"{warned} warning" + ("" if warned == 1 else "s")
        lines.append(f"\n{failed} failed, {warnings}.")
    else:
        lines.append("\nAll checks passed.")
    return "\n".join(lines)


def render_json(results: Sequence[DoctorLine]) -> str:
    """The report as JSON: ``{"ok": bool, "checks": [{name, status, summary, ...}]}``."""
    checks = [{**asdict(r), "status": r.status.value} for r in results]
    return json.dumps({"ok": exit_code(results) == 0, "checks": checks}, indent=2)
