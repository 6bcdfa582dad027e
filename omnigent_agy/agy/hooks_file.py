"""The commands of an agy ``hooks.json``, read tolerantly (docs/wire.md §9).

agy ≥ 1.4 runs the hooks of a trusted workspace's ``.agents/hooks.json`` as commands at its
events (``SessionStart``, ``PreInvocation``, ``PreToolUse``, ``PostToolUse``,
``PostInvocation``, ``Stop``). The file's shape is not published. The plugin's **guess**
(the one agy-sim models, docs/simulator.md)::

    {"hooks": {"PreToolUse": [{"matcher": "run_command",
                               "hooks": [{"type": "command", "command": "./check.sh"}]}]}}

Because it is a guess, this reader does not insist on it: every object with a ``command``
anywhere in the file is a hook, its event the nearest enclosing key that names one (else the
outermost key it sits under), its matcher the nearest enclosing ``matcher``. A ``command``
may be a string (run by a shell) or a list of words. Whatever is left once those are taken
(keys it does not know, a command of another type) is returned as the file's text that could
not be read, so a card shows it rather than leaving it out.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Final

__all__ = ["EVENTS", "Hook", "HooksReading", "read_hooks"]

EVENTS: Final = (
    "SessionStart",
    "PreInvocation",
    "PreToolUse",
    "PostToolUse",
    "PostInvocation",
    "Stop",
)
# Keys a hook or its group may carry that say nothing about what runs (besides `command`).
_QUIET_KEYS: Final = frozenset({"type", "timeout", "matcher", "name", "description", "enabled"})
_NESTING_KEYS: Final = frozenset({"hooks", *EVENTS})


@dataclass(frozen=True, slots=True)
class Hook:
    """One hook: the command line agy would run, the event, and its matcher if any."""

    event: str
    command: str
    matcher: str | None = None


@dataclass(frozen=True, slots=True)
class HooksReading:
    """What a ``hooks.json`` names: the hooks read, and the text of whatever could not be."""

    hooks: tuple[Hook, ...]
    unreadable: tuple[str, ...] = ()


def _command_line(raw: object) -> str | None:
    if isinstance(raw, str):
        return raw
    if isinstance(raw, list) and raw and all(isinstance(word, str) for word in raw):
        return shlex.join(raw)
    return None


@dataclass(slots=True)
class _Walk:
    hooks: list[Hook]
    unreadable: list[str]

    def node(
        self, value: object, *, event: str | None, key: str | None, matcher: str | None
    ) -> None:
        if isinstance(value, list):
            for item in value:
                self.node(item, event=event, key=key, matcher=matcher)
        elif isinstance(value, dict):
            self.object(value, event=event, key=key, matcher=matcher)
        elif value not in (None, "", True, False) and key not in _QUIET_KEYS:
            self.unreadable.append(json.dumps({key or "?": value}, ensure_ascii=False))

    def object(
        self, value: dict[str, object], *, event: str | None, key: str | None, matcher: str | None
    ) -> None:
        found = value.get("matcher")
        matcher = found if isinstance(found, str) else matcher
        rest = dict(value)
        if "command" in value:
            raw = rest.pop("command")
            line = _command_line(raw)
            where = event or key or "an unnamed event"
            if line is None:
                text = json.dumps(value, ensure_ascii=False)
                self.unreadable.append(f"a hook at {where} whose command is not text: {text}")
                if isinstance(raw, dict | list):
                    # Commands nested inside it are listed too, as any other would be (the
                    # rest of it is in the text just shown).
                    _Walk(self.hooks, []).node(raw, event=event, key=key, matcher=matcher)
            else:
                self.hooks.append(Hook(where, line, matcher))
        for name, inner in rest.items():
            if name in _QUIET_KEYS and not isinstance(inner, dict | list):
                continue
            if name in EVENTS:
                self.node(inner, event=name, key=name, matcher=None)
            elif name in _NESTING_KEYS:
                self.node(inner, event=event, key=key, matcher=matcher)
            elif isinstance(inner, dict | list):
                # An unknown key that holds more: perhaps an event agy added; read on.
                self.node(inner, event=event, key=event or key or name, matcher=matcher)
            else:
                self.node(inner, event=event, key=name, matcher=matcher)


def read_hooks(text: str) -> HooksReading:
    """The hooks of a ``hooks.json``'s text; ValueError when it is not JSON at all."""
    document = json.loads(text)
    walk = _Walk([], [])
    walk.node(document, event=None, key=None, matcher=None)
    return HooksReading(tuple(walk.hooks), tuple(walk.unreadable))
