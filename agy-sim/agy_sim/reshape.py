"""An agy of another shape: answers with a key renamed or left out, a token never checked.

Real agys change between versions (docs/wire.md: "assume no field is present"). The fault
kinds ``rename_field``, ``drop_field`` and ``no_csrf`` (``faults``) make agy-sim such an agy
for one method or all, while it runs, so `omnigent-agy probe` can be shown to name what
changed. ``fault_injector.FaultInjector`` puts what the rules in force ask for into the
request's ASGI scope; ``connect_app.ConnectApp`` applies it to every answer it writes (a unary
answer, each stream message) before encoding, and skips its CSRF check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from agy_sim.faults import FaultKind, FaultRule

__all__ = ["NO_CSRF_SCOPE", "RESHAPE_SCOPE", "SAME", "Reshape", "reshape_of"]

RESHAPE_SCOPE: Final = "agy_sim.reshape"
NO_CSRF_SCOPE: Final = "agy_sim.no_csrf"


@dataclass(frozen=True, slots=True)
class Reshape:
    """Keys to rename (old → new) and keys to leave out, wherever they are in an answer."""

    renames: Mapping[str, str]
    drops: frozenset[str]

    def __call__(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {
                self.renames.get(key, key): self(item)
                for key, item in value.items()
                if key not in self.drops
            }
        if isinstance(value, list):
            return [self(item) for item in value]
        return value


SAME: Final = Reshape({}, frozenset())
"""Answers as they are."""


def reshape_of(rules: Iterable[FaultRule]) -> Reshape | None:
    """What the ``rename_field`` and ``drop_field`` rules among `rules` ask for, or None."""
    renames = {r.field: r.to for r in rules if r.kind is FaultKind.RENAME_FIELD}
    drops = frozenset(r.field for r in rules if r.kind is FaultKind.DROP_FIELD)
    return Reshape(renames, drops) if renames or drops else None
