"""What an engine is made with: its behaviour and where its ids come from.

``EngineSettings`` is what the process maps its flags onto (timeouts, pacing, the TUI's
model, where conversations are kept); ``IdSource`` hands out the ids of cascades, executions
and tool calls, seedable so that captured fixtures come out the same every time.
"""

from __future__ import annotations

import random
import secrets
import string
import uuid
from dataclasses import dataclass

from agy_sim.catalog import DEFAULT_MODEL_ENUM, DEFAULT_MODELS, CatalogModel
from agy_sim.turn_api import ScenarioKnobs
from agy_sim.versions import DEFAULT, SUBAGENT_GATES, Version, at_least

__all__ = ["EngineSettings", "IdSource"]


@dataclass(frozen=True, slots=True)
class EngineSettings:
    """Behaviour of the simulated agy (the process maps its flags onto these)."""

    waiting_timeout: float = 300.0  # WAITING → ERROR, then a fresh WAITING step (§6)
    waiting_retries: int = 3  # fresh WAITING steps before the turn gives up
    token_interval: float = 0.03  # pause between streamed chunks
    long_answer_chunks: int = 120
    long_token_interval: float = 0.1
    slow_command_seconds: float = 30.0
    default_model: str = DEFAULT_MODEL_ENUM  # the TUI's model: enum, key or display name
    models: tuple[CatalogModel, ...] = DEFAULT_MODELS
    gemini_dir: str = ""  # shown in the echoed userConfig's skill paths
    store_dir: str = ""  # keep conversations on disk under this gemini dir ("" = memory only)
    resume_conversation: str = ""  # `--conversation <id>`: start on this stored conversation
    debug_rpc: bool = False  # also register SimulatorSnapshot (not an agy method)
    history_steps: int = 0  # finished steps the TUI's cascade starts with (history.py)
    frame_log: str = ""  # append a line per stream frame sent here (frame_log.py; "" = none)
    sim_version: Version = DEFAULT  # the agy it runs as (versions.py)

    def at_least(self, feature: Version) -> bool:
        """Whether the agy this runs as has ``feature`` (a first version of ``versions``)."""
        return at_least(self.sim_version, feature)

    @property
    def subagents_ask(self) -> bool:
        """A sub-agent runs the task it was given, gates and all, in its own cascade (agy
        1.5.15+); before, it only surveys the workspace (scenarios.subagent)."""
        return self.at_least(SUBAGENT_GATES)

    @property
    def knobs(self) -> ScenarioKnobs:
        return ScenarioKnobs(
            self.long_answer_chunks, self.long_token_interval, self.slow_command_seconds
        )


class IdSource:
    """Ids for cascades, executions and tool calls; seedable for reproducible fixtures."""

    def __init__(self, seed: int | None = None) -> None:
        # Only for reproducible fixtures; never security-relevant.
        self._rng = random.Random(seed) if seed is not None else None  # noqa: S311

    def uuid(self) -> str:
        if self._rng is None:
            return str(uuid.uuid4())
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def short(self) -> str:
        alphabet = string.ascii_lowercase + string.digits
        pick = self._rng.choice if self._rng is not None else secrets.choice
        return "".join(pick(alphabet) for _ in range(8))
