"""One tool call across agy's retries of a timed-out gate (docs/wire.md §6).

A WAITING step that nobody answers in time goes to ERROR, and agy asks again with a fresh
WAITING step of the same tool at a higher step index. Each of those steps is, by its identity,
a tool call of its own: mapped one by one they showed the person one command as four calls,
three of them "completed" with no output. What the person is asked about is one call, so:

- a tool step that ends in ERROR while its gate was open is *parked* instead of finished: its
  call stays open in the transcript;
- the next tool step of the same type and trajectory with the same arguments is that call
  again: it takes over the parked call's id, announces nothing new, and its result finishes
  the call;
- a parked call that no retry takes over is finished as timed out when agy gives up (an
  ERROR_MESSAGE step) or a new turn starts (USER_INPUT).

Pure state, owned by `MapperState`; `export`/`restore` carry it across reader restarts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from omnigent_agy.reading.steps import JsonObject, StepKey

__all__ = ["TIMED_OUT", "GateRetries", "ParkedCall"]

TIMED_OUT = "agy stopped waiting for an answer (its gate timed out)"

type _RetryKey = tuple[str, str, str]  # trajectory, step type, arguments as JSON


@dataclass(frozen=True, slots=True)
class ParkedCall:
    """A call whose gate timed out, waiting for agy to ask again."""

    call_id: str
    name: str
    key: StepKey  # the timed-out step


def _retry_key(key: StepKey, kind: str, arguments: JsonObject) -> _RetryKey:
    return (key.trajectory_id, kind, json.dumps(arguments, sort_keys=True, default=str))


@dataclass(slots=True)
class GateRetries:
    _parked: dict[_RetryKey, ParkedCall] = field(default_factory=dict)
    _call_ids: dict[StepKey, str] = field(default_factory=dict)

    def call_id(self, key: StepKey) -> str:
        """The call a tool step belongs to: its own, unless it took over a parked one."""
        return self._call_ids.get(key, key.item_id)

    def park(self, key: StepKey, kind: str, arguments: JsonObject, name: str) -> None:
        self._parked[_retry_key(key, kind, arguments)] = ParkedCall(self.call_id(key), name, key)
        self._call_ids.pop(key, None)

    def take_over(self, key: StepKey, kind: str, arguments: JsonObject) -> ParkedCall | None:
        """The parked call that step `key` asks again for, now its own; None if none."""
        parked = self._parked.pop(_retry_key(key, kind, arguments), None)
        if parked is not None:
            self._call_ids[key] = parked.call_id
        return parked

    def give_up(self, trajectory_id: str) -> list[ParkedCall]:
        """Every parked call of `trajectory_id`, unparked: agy will not ask again."""
        gone = [k for k in self._parked if k[0] == trajectory_id]
        return [self._parked.pop(k) for k in gone]

    def settled(self, key: StepKey) -> None:
        self._call_ids.pop(key, None)

    def __len__(self) -> int:
        return len(self._parked) + len(self._call_ids)

    # -- across restarts -----------------------------------------------------------------

    def export(self) -> dict[str, Any]:
        return {
            "parked": [
                {"retry": list(retry), "call_id": p.call_id, "name": p.name, **_key_json(p.key)}
                for retry, p in self._parked.items()
            ],
            "call_ids": [{"call_id": c, **_key_json(k)} for k, c in self._call_ids.items()],
        }

    @classmethod
    def restore(cls, data: Mapping[str, Any] | None, cascade_id: str) -> GateRetries:
        """From `export` output (absent in progress saved before retries were tracked)."""
        if data is None:
            return cls()
        parked = {}
        for entry in data["parked"]:
            trajectory, kind, arguments = (str(part) for part in entry["retry"])
            call = ParkedCall(str(entry["call_id"]), str(entry["name"]), _key(entry, cascade_id))
            parked[(trajectory, kind, arguments)] = call
        call_ids = {_key(e, cascade_id): str(e["call_id"]) for e in data["call_ids"]}
        return cls(parked, call_ids)


def _key_json(key: StepKey) -> dict[str, Any]:
    return {"trajectory_id": key.trajectory_id, "step_index": key.step_index}


def _key(entry: Mapping[str, Any], cascade_id: str) -> StepKey:
    return StepKey(cascade_id, str(entry["trajectory_id"]), int(entry["step_index"]))
