"""A conversation's agy home: its private gemini dir seeded, checked, and omnigent's tools
relayed into it (docs/wire.md §1b).

`AgyHome` is what `AgyBinding` calls around a launch or re-attach: seed everything before a
launch (then the pre-flight checks the folder as agy will see it), refresh what can change at
a re-attach or when a turn brings new instructions or tools, and keep the relay's socket
listening for the MCP server agy starts from the folder's ``mcp_config.json``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from omnigent_agy.agy.gemini_home import GeminiSeed, seed_gemini_dir, sync_sign_in
from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.doctor.gemini_checks import check_gemini_dir, first_failure
from omnigent_agy.errors import Failure
from omnigent_agy.relay.channel import (
    RELAY_SERVER,
    RelayChannel,
    ToolRunner,
    relay_entry,
    relay_socket_path,
    tool_names,
)

__all__ = ["AgyHome"]

_log = logging.getLogger(__name__)


class AgyHome:
    """Seeding and relay of one conversation; ``seed`` None leaves the folder as it is."""

    def __init__(
        self,
        state: SessionStateDir,
        workspace: Path,
        seed: GeminiSeed | None,
        *,
        relay: bool,
        env: Mapping[str, str],
    ) -> None:
        self._state = state
        self._workspace = workspace
        self._seed = seed
        self._env = env
        self._instructions: str | None = None
        self.trusted: Path | None = None
        """The path agy starts in, once the workspace is trusted (session/workspace_gate.py):
        seeded into ``trustedWorkspaces`` exactly as spelled (docs/wire.md §9)."""
        self._seeded: tuple[str | None, tuple[str, ...]] | None = None
        self.relay: RelayChannel | None = None
        if relay and seed is not None:
            self.relay = RelayChannel(
                relay_socket_path(state.path), state.path / "relay-tools.json"
            )

    def next_turn(self, instructions: str | None, tools: Sequence[Mapping[str, Any]]) -> None:
        """What this turn brings: the agent's prompt (agy's GEMINI.md) and omnigent's tools."""
        self._instructions = instructions or None
        if self.relay is not None:
            self.relay.set_tools(tools)

    def open_turn(self, runner: ToolRunner | None) -> None:
        if self.relay is not None and runner is not None:
            self.relay.open_turn(runner)

    def close_turn(self) -> None:
        if self.relay is not None:
            self.relay.close_turn()

    async def start(self) -> None:
        if self.relay is not None:
            await self.relay.start()

    def _inputs(self) -> tuple[str | None, tuple[str, ...]]:
        tools = tuple(tool_names(self.relay.tools)) if self.relay is not None else ()
        return self._instructions, tools

    @property
    def stale(self) -> bool:
        """The running agy's folder lacks this turn's instructions or tools."""
        return self._seed is not None and self._seeded != self._inputs()

    def seed(self, *, fresh: bool) -> None:
        """Seed (``fresh``: before a launch) or refresh the folder (docs/wire.md §1b)."""
        if self._seed is None:
            return
        extra = dict(self._seed.extra_mcp_servers)
        if self.relay is not None:
            names = tool_names(self.relay.tools)
            extra[RELAY_SERVER] = relay_entry(self.relay.socket_path, self.relay.tools_file, names)
        seed = replace(
            self._seed,
            extra_mcp_servers=extra,
            instructions=self._instructions,
            trusted_workspace=self.trusted,
        )
        seed_gemini_dir(self._state.gemini_dir, seed, fresh=fresh)
        self._seeded = self._inputs()

    def sync_sign_in(self) -> bool:
        """The person's sign-in as it is now into the folder; True when it changed (renewed,
        revoked, another account)."""
        return self._seed is not None and sync_sign_in(self._state.gemini_dir, self._seed.source)

    def check(self) -> Failure | None:
        """The folder as the agy started with it will see it: signed in, trusted, valid
        (an unseeded folder, as the plugin left it before docs/wire.md §1b, fails here)."""
        env = {**os.environ, **self._env}
        workspace = self.trusted or self._workspace  # the path agy is started in
        return first_failure(check_gemini_dir(self._state.gemini_dir, workspace, env))

    async def aclose(self) -> None:
        if self.relay is not None:
            await self.relay.aclose()
