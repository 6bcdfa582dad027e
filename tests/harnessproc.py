"""The real harness app for one conversation, served on loopback, with the environment
omnigent's runner gives it (pointed at agy-sim, see simproc.harness_env).

agy-sim runs as agy 1.5.16 unless a test asks for another version: the fixture
``sim_version`` (conftest.py) names it, and ``both_versions`` runs a test as each agy the
plugin is tested with (1.5.16 and 1.2.14, agy_sim.versions) — the gate, sub-agent and resume
cases, where agys of those lines differ most. Only the marked tests run twice.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from omnigent.community.harness.agy.app import create_app
from simproc import harness_env

from agy_sim.stack.harness_server import HarnessServer
from agy_sim.versions import DEFAULT_VERSION, OLDER
from omnigent_agy.agy.terminal import TerminalHost

SIM_VERSIONS = (DEFAULT_VERSION, OLDER)
#: Run the test as each agy version of ``SIM_VERSIONS`` (overrides the ``sim_version`` fixture).
both_versions = pytest.mark.parametrize("sim_version", SIM_VERSIONS)


@contextlib.contextmanager
def runner_env(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim_version: str = DEFAULT_VERSION
) -> Iterator[dict[str, str]]:
    """Set the runner's variables, agy-sim running as agy ``sim_version``; the tmux server and
    every agy in it are gone afterwards."""
    socket_name = f"agy-harness-{uuid.uuid4().hex[:10]}"
    values = {
        **harness_env(tmp_path, socket_name),
        "AGY_SIM_DEBUG_RPC": "1",
        "AGY_SIM_VERSION": sim_version,
    }
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
    try:
        yield values
    finally:
        TerminalHost(socket_name=socket_name).kill_server()


@contextlib.contextmanager
def harness_server() -> Iterator[HarnessServer]:
    """The real harness app (`create_app()`) for a new conversation, served on loopback."""
    with HarnessServer(create_app(), f"conv_{uuid.uuid4().hex[:12]}") as server:
        yield server
