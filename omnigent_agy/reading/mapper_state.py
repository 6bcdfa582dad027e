"""MapperState: everything the step mapper remembers about one cascade.

`mapper.map_step` reads and updates it (its underscored fields are the mapper's bookkeeping,
for no one else); a reader seeds it from its durable cursor (`mark_committed`, `commit_below`)
and saves it (`export_progress`, `restore_progress`), so a restarted reader publishes nothing
twice. Pure data: no I/O, clock, thread or global, like the mapper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omnigent_agy.reading.gate_retries import GateRetries
from omnigent_agy.reading.indexset import IndexSet
from omnigent_agy.reading.steps import StepKey

__all__ = ["DEFAULT_OUTPUT_CAP", "MapperState", "StreamedText"]

DEFAULT_OUTPUT_CAP = 64 * 1024


@dataclass(slots=True)
class StreamedText:
    """What has been emitted so far for a PLANNER_RESPONSE that has not settled."""

    text: str = ""
    reasoning: str = ""


@dataclass(slots=True, eq=False)
class MapperState:
    """Everything the mapper remembers about one cascade, passed explicitly to `map_step`.

    `model_names` maps Model enum names to display names (from the catalog); `parent_call_id`
    marks the state of a sub-agent's child cascade: its events come wrapped in `SubAgentEvent`.
    """

    cascade_id: str
    model_names: Mapping[str, str] = field(default_factory=dict)
    parent_call_id: str | None = None
    output_cap: int = DEFAULT_OUTPUT_CAP
    model: str | None = None
    _committed: dict[str, IndexSet] = field(default_factory=dict, init=False, repr=False)
    _streams: dict[StepKey, StreamedText] = field(default_factory=dict, init=False, repr=False)
    _open_tools: dict[StepKey, str] = field(default_factory=dict, init=False, repr=False)
    _waiting: dict[StepKey, str] = field(default_factory=dict, init=False, repr=False)
    _children: set[str] = field(default_factory=set, init=False, repr=False)
    _unknown_types: set[str] = field(default_factory=set, init=False, repr=False)
    _retries: GateRetries = field(default_factory=GateRetries, init=False, repr=False)
    _last_key: StepKey | None = field(default=None, init=False, repr=False)
    # The stream of the step that grew last, beside its key: a growing answer's next frame
    # finds it without hashing its key (a StepKey's hash is a call into Python).
    _stream_key: StepKey | None = field(default=None, init=False, repr=False)
    _stream: StreamedText | None = field(default=None, init=False, repr=False)

    def is_committed(self, key: StepKey) -> bool:
        indices = self._committed.get(key.trajectory_id)
        return indices is not None and indices.has(key.step_index)

    def mark_committed(self, key: StepKey) -> None:
        """Record `key` as published (also how a reader seeds the state from its durable cursor)."""
        committed = self._committed.get(key.trajectory_id)
        if committed is None:
            committed = self._committed[key.trajectory_id] = IndexSet()
        committed.add(key.step_index)
        self._streams.pop(key, None)
        self._stream_key = self._stream = None
        self._open_tools.pop(key, None)
        self._waiting.pop(key, None)

    def commit_below(self, trajectory_id: str, end: int) -> None:
        """Record every step of `trajectory_id` below `end` as published, without seeing them
        (the history a reader attaching to a long conversation skips)."""
        committed = self._committed.get(trajectory_id)
        if committed is None:
            committed = self._committed[trajectory_id] = IndexSet()
        committed.add_below(end)

    @property
    def committed_count(self) -> int:
        return sum(len(indices) for indices in self._committed.values())

    def first_uncommitted(self, trajectory_id: str) -> int:
        """The lowest step index of `trajectory_id` not committed yet (where a catch-up starts)."""
        committed = self._committed.get(trajectory_id)
        return 0 if committed is None else committed.watermark

    def export_progress(self) -> dict[str, Any]:
        """What a restarted reader needs to go on without publishing anything twice.

        Committed steps, the text already streamed for steps still generating, and the tool
        calls already started. Open interactions and running sub-agents are deliberately left
        out: a new process has no card on screen for them, so they are announced again.
        """
        return {
            "committed": {t: s.to_json() for t, s in self._committed.items()},
            "streams": [
                {
                    "trajectory_id": k.trajectory_id,
                    "step_index": k.step_index,
                    "text": s.text,
                    "reasoning": s.reasoning,
                }
                for k, s in self._streams.items()
            ],
            "open_tools": [
                {"trajectory_id": k.trajectory_id, "step_index": k.step_index, "name": name}
                for k, name in self._open_tools.items()
            ],
            # Children are left out like open interactions: a child still running when a
            # process died is announced again, so the new process follows it (and its gates).
            "children": [],
            "model": self.model,
            "gate_retries": self._retries.export(),
        }

    def restore_progress(self, data: Mapping[str, Any]) -> None:
        """Load `export_progress` output; raises ValueError (and changes nothing) when malformed."""
        try:
            committed = {str(t): IndexSet.from_json(s) for t, s in data["committed"].items()}
            streams = {
                StepKey(
                    self.cascade_id, str(e["trajectory_id"]), int(e["step_index"])
                ): StreamedText(str(e["text"]), str(e["reasoning"]))
                for e in data["streams"]
            }
            open_tools = {
                StepKey(self.cascade_id, str(e["trajectory_id"]), int(e["step_index"])): str(
                    e["name"]
                )
                for e in data["open_tools"]
            }
            children = {str(c) for c in data["children"]}
            model = data.get("model")
            retries = GateRetries.restore(data.get("gate_retries"), self.cascade_id)
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"malformed mapper progress: {exc!r}") from exc
        self._committed = committed
        self._streams = streams
        self._stream_key = self._stream = None
        self._open_tools = open_tools
        self._children = children
        self._retries = retries
        self.model = model if isinstance(model, str) else None

    @property
    def open_count(self) -> int:
        """Steps with progress held in memory: streaming, running tools, open interactions."""
        return len(self._streams) + len(self._open_tools) + len(self._waiting) + len(self._retries)
