"""Pure shape checks: is a field of `facts.FIELDS` where the plugin reads it?

A path is dotted keys; ``*`` stands for every value of a map and ``[]`` for every item of a
list, each of which must have the rest of the path (an empty or absent map or list cannot
show the field, so it counts as missing); ``a|b``: either path will do. `gaps` names each
place a path breaks, with the real keys and positions, so a report can say exactly where.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from omnigent_agy.probe.facts import WireField

__all__ = ["Gap", "field_gaps", "gaps", "present"]


def _split(path: str) -> list[str]:
    """``a.b[].c`` → ``["a", "b", "[]", "c"]``."""
    parts: list[str] = []
    for part in path.split("."):
        key = part.rstrip("[]")
        if key:
            parts.append(key)
        parts.extend(["[]"] * ((len(part) - len(key)) // 2))
    return parts


def _walk(value: object, parts: Sequence[str], where: str) -> list[str]:
    if not parts:
        return []
    head, rest = parts[0], parts[1:]
    children: list[tuple[object, str]]
    if head == "[]":
        items = value if isinstance(value, list) else []
        children = [(item, f"{where}[{i}]") for i, item in enumerate(items)]
        missing = f"{where}[]"
    elif not isinstance(value, Mapping):
        return [_join(where, head)]
    elif head == "*":
        children = [(item, _join(where, str(key))) for key, item in value.items()]
        missing = _join(where, "*")
    else:
        children = [(value[head], _join(where, head))] if head in value else []
        missing = _join(where, head)
    if not children:
        return [missing]
    return [gap for child, at in children for gap in _walk(child, rest, at)]


def _join(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


def gaps(document: object, path: str) -> list[str]:
    """Where `path` breaks in `document` (empty: it is there). With alternatives, the first
    alternative's gaps when none of them is whole."""
    found: list[str] | None = None
    for alternative in path.split("|"):
        missing = _walk(document, _split(alternative), "")
        if not missing:
            return []
        found = missing if found is None else found
    return found or []


def present(document: object, path: str) -> bool:
    return not gaps(document, path)


@dataclass(frozen=True, slots=True)
class Gap:
    """A field of `facts.FIELDS` missing in one answer, frame or step the probe saw."""

    field: WireField
    where: str
    """Which document: e.g. ``frame 3`` or ``step 5``."""
    location: str
    """The path in it up to the key that is not there."""


def field_gaps(rows: Iterable[WireField], documents: Sequence[tuple[str, object]]) -> list[Gap]:
    """Every row checked against every document it applies to."""
    return [
        Gap(row, label, location)
        for row in rows
        for label, document in documents
        for location in gaps(document, row.path)
    ]
