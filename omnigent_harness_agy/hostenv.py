"""The host's settings in the harness process: the plugin's variables reach omnigent's runners.

``omnigent host`` decides whether agy-cli is ready with its own environment and config (the
plugin's install spec, read once per process), but the harness process that runs the turns is
two spawns away, and each spawn filters: the host gives a runner only an allow-list of its
environment — PATH, HOME, ``OMNIGENT_CONFIG_HOME``, the providers' credentials such as
``GEMINI_API_KEY``, ... (omnigent/host/connect.py, ``_build_runner_env``) — plus the names
listed in ``OMNIGENT_RUNNER_ENV_PASSTHROUGH``; the runner hands the harness its own
environment and the spawn-env builder's (runtime/harnesses/process_manager.py). None of the
plugin's variables is on that list, so a host with ``OMNIGENT_AGY_CLI_PATH`` reported agy-cli
ready and every turn failed ``agy_not_installed``; ``OMNIGENT_AGY_CLI_ENABLED``
alone left a runner started without omnigent's zygote with no spawn-env builder, so without
the session's model.

:func:`forward_to_runners` lists the plugin's variables in the passthrough of the process it
runs in, so the runners the host spawns carry them: the harness then reads what the host read.
The names are what the host has set when omnigent loads the plugin (every ``OMNIGENT_AGY_*``
and the few others the plugin reads, :data:`ALSO_READ`); the operator's own names stay first.
"""

from __future__ import annotations

import logging
import os
from collections.abc import MutableMapping
from typing import Final

from omnigent_agy import TMUX_TMPDIR_ENV, XDG_STATE_ENV

__all__ = ["ALSO_READ", "PASSTHROUGH_ENV", "PREFIX", "forward_to_runners", "plugin_variables"]

_logger = logging.getLogger(__name__)

#: omnigent's list of extra variables a host passes to its runners (comma-separated names).
PASSTHROUGH_ENV: Final = "OMNIGENT_RUNNER_ENV_PASSTHROUGH"
#: Every variable of the plugin's own starts so (``OMNIGENT_AGY_CLI_PATH``, ``_STATE_DIR``, ...).
PREFIX: Final = "OMNIGENT_AGY_"
#: Variables of others that the plugin reads and omnigent does not pass on: where the state
#: folders are (statedir.default_state_base) and where tmux keeps agy's socket.
ALSO_READ: Final = (XDG_STATE_ENV, TMUX_TMPDIR_ENV)


def plugin_variables(environ: MutableMapping[str, str]) -> list[str]:
    """The names of the plugin's settings set in ``environ``, sorted."""
    return sorted(name for name in environ if name.startswith(PREFIX) or name in ALSO_READ)


def forward_to_runners(environ: MutableMapping[str, str] | None = None) -> list[str]:
    """Add :func:`plugin_variables` to ``environ``'s passthrough list; the names added."""
    environ = os.environ if environ is None else environ
    listed = [name.strip() for name in environ.get(PASSTHROUGH_ENV, "").split(",")]
    listed = [name for name in listed if name]
    added = [name for name in plugin_variables(environ) if name not in listed]
    if added:
        environ[PASSTHROUGH_ENV] = ",".join([*listed, *added])
        _logger.info("omnigent-agy: omnigent's runners get %s", ", ".join(added))
    return added
