"""Entry point of the ``omnigent.community.harness`` group.

omnigent calls ``get_contribution()`` once per process (server and host) and catches and
logs anything it raises as a plugin load error (``plugin_state().load_errors``). So a
broken configuration raises a ``ConfigError`` naming the key: the harness is then absent
and the reason is in omnigent's log and in ``omnigent-agy doctor``, rather than the
harness appearing and failing on every turn.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import pluggy
from omnigent.harness_capabilities import (
    AuthModel,
    EffortFamily,
    Elicitation,
    ForkHistory,
    HarnessCapabilities,
    InstructionDelivery,
    IntegrationMode,
    ModelFamily,
    Resume,
)
from omnigent.harness_install_spec import HarnessInstallSpec
from omnigent.harness_plugins import HarnessContribution

from omnigent_agy import (
    DEFAULT_EXECUTABLE,
    HARNESS_ID,
    HARNESS_LABEL,
    INSTALL_HINT,
    AgyConfig,
    installer_bin,
    load_config,
    resolve_executable,
)
from omnigent_agy.errors import AgyNotFoundError, ContributionError
from omnigent_agy.plugins import HarnessRegistration, get_plugin_manager, harness_registrations

from .hostenv import forward_to_runners
from .spawn_env import MODEL_ENV_KEY
from .tool_rows import SHELL_TOOL

CONTRIBUTION_NAME = "omnigent-agy"
PACKAGE = "omnigent-agy"
# Every import path must start with omnigent.community.harness. (docs/host.md).
APP_MODULE = "omnigent.community.harness.agy.app"
SPAWN_ENV_BUILDER = "omnigent.community.harness.agy.spawn_env:build_spawn_env"
# Our own install key. omnigent's host reports a plugin harness ready when the install spec's
# binary resolves (onboarding/harness_readiness.py: PATH and common install dirs only) and
# refuses a session otherwise (HTTP 412 harness_not_configured). The core "gemini" spec names
# plain `agy`, so an agy reachable only through OMNIGENT_AGY_CLI_PATH or
# harness.agy-cli.command read as missing although every turn would find it. Our spec's binary
# is the agy the harness will run, resolved exactly as the harness resolves it. (Defining
# install_specs["gemini"] instead would replace omnigent's own spec for its own harness.)
INSTALL_KEY = HARNESS_ID

DEFAULT_CAPABILITIES = HarnessCapabilities(
    # agy hosts its language server in a runner-owned process; turns go over RPC.
    integration_mode=IntegrationMode.NATIVE_SERVER,
    # Approvals and questions reach the web as elicitation events over SSE.
    elicitation=Elicitation.SSE_PERMISSION,
    # A respawned harness re-attaches to the running agy and the same cascade.
    resume=Resume.WARM_REATTACH,
    effort=EffortFamily.GEMINI,
    # agy serves Gemini, Claude and GPT-OSS models under its own names; the only reader
    # of this field (sub-agent model inheritance, runner/tool_dispatch.py) must not hand
    # an SDK harness's Gemini id to agy or agy's names to the SDK harness.
    model_family=ModelFamily.MULTI,
    auth=AuthModel.OWN_AUTH,
    subagents=False,
    interrupt=True,
    streaming=True,
    steering=True,
    fork_history=ForkHistory.NONE,
    # The name agy's commands are shown under in the transcript (tool_rows), which the
    # bench looks for; the prompt names the tool as agy knows it.
    shell_tool_name=SHELL_TOOL,
    shell_tool_prompt="Use your run_command tool to run this exact command: echo omnigent-bench-ok",
    instruction_delivery=InstructionDelivery.FIRST_USER_PREFIX,
)


def get_contribution() -> HarnessContribution:
    """The harness contribution, or an empty one unless the enable flag is on.

    Enabled, it also passes the plugin's variables on to the runners this process spawns
    (:func:`hostenv.forward_to_runners`): in ``omnigent host`` that makes the harness read
    the settings the host's readiness was decided with."""
    config = load_config()
    if not config.enabled:
        return HarnessContribution(name=CONTRIBUTION_NAME)
    forward_to_runners()
    return build_contribution(get_plugin_manager(), install=install_spec(config))


def install_spec(config: AgyConfig, env: Mapping[str, str] | None = None) -> HarnessInstallSpec:
    """What omnigent checks before it starts the harness: the configured agy
    (``OMNIGENT_AGY_CLI_PATH``, then ``harness.agy-cli.command``, then ``agy`` on PATH or in
    ``~/.local/bin``), and what to install when it is missing.

    omnigent reads plugins once per process, so the host checks the agy its own environment
    and config name, as the harness it spawns will (the variables reach it: hostenv). The
    binary is always an absolute path, the one the harness will run or the one it would have
    looked at last: given a bare name, omnigent searches its own list of folders, and could
    call ready an agy the harness never finds.
    """
    env = os.environ if env is None else env
    try:
        binary = str(resolve_executable(config, env))
    except AgyNotFoundError as missing:
        # Readiness fails on it and the host's refusal names it.
        binary = str(missing.looked_last or installer_bin(env) / DEFAULT_EXECUTABLE)
    return HarnessInstallSpec(
        display=HARNESS_LABEL,
        binary=binary,
        package=None,  # installed by agy's own installer, not a package manager
        status_args=("models",),  # `agy models` exits 0 only when signed in (docs/wire.md §1)
        install_hint=INSTALL_HINT,
        auth_hint="run `agy` and complete the browser sign-in",
    )


def merge_registrations(registrations: Sequence[HarnessRegistration]) -> HarnessRegistration:
    """One description of agy-cli from every plugin's registration.

    Registrations arrive in hook call order, installed plugins before the built-in one:
    the first label and capabilities win, aliases add up.
    """
    ours = [r for r in registrations if r.harness_id == HARNESS_ID]
    foreign = sorted({r.harness_id for r in registrations} - {HARNESS_ID})
    if foreign:
        raise ContributionError(
            f"an omnigent_agy plugin registered harness {foreign[0]!r}; omnigent-agy serves "
            f"only {HARNESS_ID!r} (register aliases for it instead)"
        )
    if not ours:
        raise ContributionError(f"no plugin registered {HARNESS_ID!r} (is 'builtin' blocked?)")
    capabilities = next((r.capabilities for r in ours if r.capabilities is not None), None)
    if capabilities is not None and not isinstance(capabilities, HarnessCapabilities):
        raise ContributionError(
            f"capabilities registered for {HARNESS_ID!r} must be omnigent's "
            f"HarnessCapabilities, not {type(capabilities).__name__}"
        )
    aliases = tuple(dict.fromkeys(a for r in ours for a in r.aliases if a != HARNESS_ID))
    return HarnessRegistration(HARNESS_ID, ours[0].label, aliases, capabilities)


def build_contribution(
    manager: pluggy.PluginManager, *, install: HarnessInstallSpec
) -> HarnessContribution:
    harness = merge_registrations(harness_registrations(manager))
    spellings = (HARNESS_ID, *harness.aliases)
    capabilities = harness.capabilities
    assert capabilities is None or isinstance(capabilities, HarnessCapabilities)
    return HarnessContribution(
        name=CONTRIBUTION_NAME,
        valid_harnesses=frozenset({HARNESS_ID}),
        harness_modules={HARNESS_ID: APP_MODULE},
        aliases=dict.fromkeys(harness.aliases, HARNESS_ID),
        harness_install_keys=dict.fromkeys(spellings, INSTALL_KEY),
        install_specs={INSTALL_KEY: install},
        model_env_keys={HARNESS_ID: MODEL_ENV_KEY},
        spawn_env_builders={HARNESS_ID: SPAWN_ENV_BUILDER},
        missing_install_package=dict.fromkeys(spellings, PACKAGE),
        harness_labels={HARNESS_ID: harness.label},
        capabilities={HARNESS_ID: capabilities or DEFAULT_CAPABILITIES},
    )
