"""The spawn-env builder omnigent calls before it starts an agy-cli harness process.

The runner calls ``build_spawn_env(spec, cwd=…, workdir=…)`` (runner/app.py, the
``spawn_env_builders()`` branch) and merges the result over its own environment; then it
overwrites ``HARNESS_AGY_CLI_MODEL`` with the session's ``/model`` override, if any.
Without a builder the harness would get no model and no spec settings at all.
"""

from __future__ import annotations

import json
from pathlib import Path

# Each read by the executor, set here. The conventional name: the process manager respawns a
# harness on a model change only when the spawn env's HARNESS_<ID>_MODEL differs
# (runtime/harnesses/process_manager.py).
MODEL_ENV_KEY = "HARNESS_AGY_CLI_MODEL"
# Read by the executor: the agent's default effort when a turn carries none, and the
# session workspace (also the process cwd; explicit so a changed cwd cannot mislead).
EFFORT_ENV_KEY = "HARNESS_AGY_CLI_REASONING_EFFORT"
CWD_ENV_KEY = "HARNESS_AGY_CLI_CWD"
AGENT_ENV_KEY = "HARNESS_AGY_CLI_AGENT_NAME"
# The agent's choice of the person's MCP servers (docs/configuration.md): `spec.llm.extra`,
# which omnigent fills from an agent folder's `llm:` block (its keys other than `model`) or a
# single-file YAML's `executor.extra` (it drops unknown executor keys, and keeps `extra` only
# when the agent names a model).
MCP_SERVERS_ENV_KEY = "HARNESS_AGY_CLI_MCP_SERVERS"


def _text(value: object) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def build_spawn_env(
    spec: object, *, cwd: Path | None = None, workdir: Path | None = None
) -> dict[str, str]:
    """Map the agent spec to ``HARNESS_AGY_CLI_*`` variables.

    ``spec`` is omnigent's ``AgentSpec``; it is read by attribute so that a spec shape
    change degrades to "no model" rather than a failed spawn. ``workdir`` (the agent
    bundle's directory) has no use for agy and is accepted for the builder signature.
    """
    del workdir
    env: dict[str, str] = {}
    executor = getattr(spec, "executor", None)
    if (model := _text(getattr(executor, "model", None))) is not None:
        # A name for the catalog to resolve per turn (enum, display name, slug or alias).
        env[MODEL_ENV_KEY] = model
    if (effort := _text(getattr(executor, "reasoning_effort", None))) is not None:
        env[EFFORT_ENV_KEY] = effort
    if (name := _text(getattr(spec, "name", None))) is not None:
        env[AGENT_ENV_KEY] = name
    extra = getattr(getattr(spec, "llm", None), "extra", None)
    if isinstance(extra, dict) and extra.get("mcp_servers") is not None:
        # Checked by the harness (a bad value fails the turn with a code naming the key).
        env[MCP_SERVERS_ENV_KEY] = json.dumps(extra["mcp_servers"])
    if cwd is not None:
        env[CWD_ENV_KEY] = str(cwd)
    return env
