"""The doctor's "omnigent host readiness" line: omnigent's own verdict on the harness.

`omnigent host` refuses a session (HTTP 412 ``harness_not_configured``) when its readiness
check fails for agy-cli, whatever else works; so ``omnigent-agy doctor`` must not say "All
checks passed" then. This asks the same function the host asks
(``omnigent.onboarding.harness_readiness.harness_is_configured``), in this process, with this
process's environment and config: run the doctor where the host runs, as the host's user.

Registered as an ``omnigent_agy`` plugin (entry point ``omnigent-readiness``), the way any
plugin adds a doctor check.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from omnigent_agy import ENV_PATH, HARNESS_ID, KEY
from omnigent_agy.plugins import CheckResult, OnboardingCheck, hookimpl

__all__ = ["NAME", "agy_onboarding_checks", "host_readiness"]

NAME: Final = "omnigent host readiness"


def host_readiness() -> CheckResult:
    from omnigent.harness_plugins import plugin_state  # noqa: PLC0415 - omnigent loads plugins
    from omnigent.onboarding.harness_install import required_cli_for_harness  # noqa: PLC0415
    from omnigent.onboarding.harness_readiness import harness_is_configured  # noqa: PLC0415

    state = plugin_state()
    if HARNESS_ID not in {h for c in state.contributions for h in c.valid_harnesses}:
        why = state.load_errors.get(HARNESS_ID) or "the plugin is not enabled in this process"
        return CheckResult(
            ok=False,
            detail=f"omnigent does not offer {HARNESS_ID}: {why}",
            remediation="Run `omnigent-agy enable`, then restart `omnigent server` and "
            "`omnigent host`",
        )
    spec = required_cli_for_harness(HARNESS_ID)
    looked_for = spec.binary if spec is not None else "agy"
    if harness_is_configured(HARNESS_ID):
        return CheckResult(ok=True, detail=f"{HARNESS_ID} ready (agy: {looked_for})")
    hint = f"Install it with `{spec.install_hint}`, or s" if spec and spec.install_hint else "S"
    return CheckResult(
        ok=False,
        detail=f"omnigent host would refuse {HARNESS_ID} (harness_not_configured): "
        f"{looked_for} is not an executable agy",
        remediation=f"{hint}et {ENV_PATH} or {KEY}.command to agy's path "
        "where `omnigent host` runs; then restart `omnigent host`",
    )


@hookimpl
def agy_onboarding_checks(register: Callable[[OnboardingCheck], None]) -> None:
    """This module is the plugin: it adds `host_readiness` to ``omnigent-agy doctor``."""
    register(OnboardingCheck(NAME, host_readiness))
