"""A set of step indices kept as a watermark plus a few stragglers.

Every step of a trajectory eventually settles, and steps mostly settle in order, so the
committed indices of a trajectory are almost always ``0 .. n-1`` with at most a handful of
holes (a step parked on an interaction while later ones are written). Storing that as
``watermark`` (every index below it is in the set) plus the few indices above it keeps
``add``/``in`` O(1) and makes the durable cursor a few bytes however long the conversation
grows (docs/decisions.md §6).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


class IndexSet:
    """Non-negative ints; ``watermark`` is the lowest index not in the set."""

    __slots__ = ("_above", "watermark")

    def __init__(self, watermark: int = 0, above: Iterable[int] = ()) -> None:
        self.watermark = watermark
        self._above: set[int] = set()
        for index in above:
            self.add(index)

    def add(self, index: int) -> None:
        if index < self.watermark:
            return
        if index != self.watermark:
            self._above.add(index)
            return
        self.watermark += 1
        while self.watermark in self._above:
            self._above.discard(self.watermark)
            self.watermark += 1

    def add_below(self, end: int) -> None:
        """Add every index below `end` at once (O(stragglers), not O(end))."""
        if end <= self.watermark:
            return
        self.watermark = end
        self._above = {index for index in self._above if index >= end}
        while self.watermark in self._above:
            self._above.discard(self.watermark)
            self.watermark += 1

    def has(self, index: int) -> bool:
        """`index in self`, as a plain method: the mapper asks once per frame, and `in` on a
        Python class goes through a slower slot call."""
        return 0 <= index < self.watermark or index in self._above

    def __contains__(self, index: object) -> bool:
        return isinstance(index, int) and self.has(index)

    def __len__(self) -> int:
        return self.watermark + len(self._above)

    def __repr__(self) -> str:
        return f"IndexSet(watermark={self.watermark}, above={sorted(self._above)})"

    def to_json(self) -> dict[str, Any]:
        return {"watermark": self.watermark, "above": sorted(self._above)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> IndexSet:
        """Parse `to_json` output; raises ValueError on anything else."""
        watermark = data.get("watermark")
        above = data.get("above", [])
        if not isinstance(watermark, int) or watermark < 0 or not isinstance(above, list):
            raise ValueError("an index set needs an int 'watermark' >= 0 and a list 'above'")
        if not all(isinstance(i, int) and i >= 0 for i in above):
            raise ValueError("an index set's 'above' holds non-negative ints only")
        return cls(watermark, above)
