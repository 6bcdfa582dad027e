"""What bench_scale.py checks of each conversation, and how it times agy's frames to the
client's events.

A conversation tagged ``cNN`` asked for a long answer naming ``cNN`` in every part, then a
gated ``echo done-cNN``. Its turn is right when the text deltas of its first answer add up to
exactly that answer (nothing lost, nothing twice), no event or item of it names another
conversation's tag (nothing crossed), and omnigent keeps one item with that answer and one
call of its own command.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "Delta",
    "MismatchError",
    "check_conversation",
    "frame_lines",
    "handed_lines",
    "latencies",
    "reached",
    "streamed",
]

Json = dict[str, Any]
_TAG = re.compile(r"answer for (c\d+)\.|done-(c\d+)")
DELTA = "response.output_text.delta"


class MismatchError(AssertionError):
    """A conversation's events or items are not what it asked for."""


def frame_lines(path: Path) -> dict[int, list[tuple[int, int]]]:
    """agy-sim's frame log by pid: (ns, the longest answer in the frame), in order."""
    frames: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        frame = json.loads(line)
        longest = max((length for _, length in frame["answers"]), default=-1)
        frames[int(frame["pid"])].append((int(frame["ns"]), longest))
    return frames


def _answer_deltas(events: Sequence[Json], answer: str) -> list[tuple[int, int]]:
    """(index in events, answer length after it) of the deltas of the first answer."""
    found, length = [], 0
    for index, event in enumerate(events):
        if event.get("type") != DELTA or length >= len(answer):
            continue
        length += len(str(event.get("delta", "")))
        found.append((index, length))
    return found


def streamed(events: Sequence[Json], answer: str) -> str:
    """The text the deltas of the first answer add up to (`answer` says how long it is)."""
    return "".join(
        str(events[index].get("delta", "")) for index, _ in _answer_deltas(events, answer)
    )


def handed_lines(path: Path) -> dict[str, list[tuple[int, int]]]:
    """The plugin's timing log (omnigent_harness_agy/timing.py) by session: (ns, chars)."""
    handed: dict[str, list[tuple[int, int]]] = defaultdict(list)
    if path.exists():  # none before the first answer chunk
        for line in path.read_text(encoding="utf-8").splitlines():
            chunk = json.loads(line)
            handed[str(chunk["session"])].append((int(chunk["ns"]), int(chunk["chars"])))
    return handed


def reached(chunks: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """(ns, the answer's length so far) after each of a turn's (ns, chars) chunks, in order."""
    marks, total = [], 0
    for ns, chars in chunks:
        total += chars
        marks.append((ns, total))
    return marks


def _first_reaching(marks: Sequence[tuple[int, int]], length: int, what: str) -> int:
    """The time of the first (ns, length so far) mark whose length reached `length`."""
    for ns, reached in marks:
        if reached >= length:
            return ns
    raise MismatchError(f"no {what} had {length} characters of the answer")


@dataclass(frozen=True)
class Delta:
    """One delta of the answer: agy's frame, the plugin's hand to omnigent, the client (ns)."""

    frame: int
    handed: int
    arrived: int

    @property
    def total_ms(self) -> float:
        return (self.arrived - self.frame) / 1e6

    @property
    def plugin_ms(self) -> float:
        return (self.handed - self.frame) / 1e6

    @property
    def omnigent_ms(self) -> float:
        return (self.arrived - self.handed) / 1e6


def latencies(
    events: Sequence[Json],
    arrivals: Sequence[int],
    frames: Sequence[tuple[int, int]],
    handed: Sequence[tuple[int, int]],
    answer: str,
) -> list[Delta]:
    """Per delta of the answer: the first frame of agy whose answer was as long, the first
    moment the plugin had handed omnigent as much of it (`handed`: that turn's chunks, in
    order), and the delta's arrival at the client."""
    so_far = reached(handed)
    return [
        Delta(
            _first_reaching(frames, length, "frame of agy"),
            _first_reaching(so_far, length, "chunk the plugin handed omnigent"),
            arrivals[index],
        )
        for index, length in _answer_deltas(events, answer)
    ]


def _tags(value: object) -> set[str]:
    return {a or b for a, b in _TAG.findall(json.dumps(value))}


def _texts(item: Json) -> list[str]:
    texts: list[str] = []

    def walk(value: object) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                if key == "text" and isinstance(inner, str):
                    texts.append(inner)
                else:
                    walk(inner)
        elif isinstance(value, list):
            for inner in value:
                walk(inner)

    walk(item)
    return texts


def check_conversation(
    tag: str, events: Sequence[Json], items: Sequence[Json], answer: str
) -> None:
    """Raise MismatchError unless the conversation got exactly its own answer and command."""
    text = streamed(events, answer)
    if text != answer:
        raise MismatchError(f"{tag}: the deltas add up to {len(text)} characters, not the answer")
    strangers = (_tags(events) | _tags(items)) - {tag}
    if strangers:
        raise MismatchError(f"{tag}: its events or items name {sorted(strangers)}")
    answers = [text for item in items for text in _texts(item) if "long simulated answer" in text]
    if answers != [answer]:
        raise MismatchError(f"{tag}: {len(answers)} answer items, or not the answer")
    # The title the session takes from agy after its first turn is a call too (21.7).
    calls = [
        item
        for item in items
        if item.get("type") == "function_call" and item.get("name") != "sys_session_rename"
    ]
    if len(calls) != 1 or f"done-{tag}" not in json.dumps(calls[0]):
        raise MismatchError(f"{tag}: {len(calls)} command calls, or not its own")
