"""What the probe saw, sorted by where the plugin reads it, and `facts.FIELDS` checked on it.

Every answer, frame and step the probe wants checked is added here under its `facts.Seen`;
`field_findings` then gives one line per place: PASS when every field the plugin reads is
there, FAIL naming each missing field with the module that reads it, INFO when only fields the
plugin can do without are absent, SKIP when the probe never saw that place (and why).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Final

from omnigent_agy.probe.facts import FIELDS, FactVerdict, Finding, Seen, WireField, fields_of
from omnigent_agy.probe.shapes import Gap, field_gaps
from omnigent_agy.reading.steps import StepStatus, StepType, obj, step_status, step_type

__all__ = ["Observations"]

_BY_STEP: Final[Mapping[tuple[str, str], Seen]] = {
    (StepType.USER_INPUT, StepStatus.DONE): Seen.USER_INPUT,
    (StepType.RUN_COMMAND, StepStatus.WAITING): Seen.COMMAND_WAITING,
    (StepType.ASK_QUESTION, StepStatus.WAITING): Seen.QUESTION_WAITING,
}
_MAX_SHOWN: Final = 3


class Observations:
    """Documents by `Seen`, each with a label saying which one it is (``frame 4``)."""

    def __init__(self) -> None:
        self._seen: dict[Seen, list[tuple[str, object]]] = defaultdict(list)
        self._why_not: dict[Seen, str] = {}

    def add(self, seen: Seen, label: str, document: object) -> None:
        self._seen[seen].append((label, document))

    def add_step(self, label: str, step: object) -> None:
        """A step: checked as a step, and as its type and status where the table has rows
        (a planner step only through `add_answer`: one that calls a tool has no text)."""
        self.add(Seen.STEP, label, step)
        kind = _BY_STEP.get((str(step_type(obj(step))), str(step_status(obj(step)))))
        if kind is not None:
            self.add(kind, label, step)

    def add_answer(self, label: str, states: list[dict[str, object]]) -> None:
        """The states of a planner step that answered in text: the last one GENERATING (its
        text has begun by then) and the DONE one."""
        generating = [s for s in states if step_status(s) == StepStatus.GENERATING]
        if generating:
            self.add(Seen.PLANNER_GENERATING, f"{label}, last GENERATING", generating[-1])
        for state in states:
            if step_status(state) == StepStatus.DONE:
                self.add(Seen.PLANNER_DONE, f"{label}, DONE", state)

    def add_frame(self, label: str, frame: object) -> None:
        self.add(Seen.FRAME, label, frame)
        update = obj(obj(frame).get("update"))
        if obj(obj(update.get("mainTrajectoryUpdate")).get("stepsUpdate")).get("steps"):
            self.add(Seen.FRAME_STEPS, label, frame)

    def not_seen(self, seen: Seen, why: str) -> None:
        """Why the probe did not look at `seen` (e.g. the person declined that turn)."""
        self._why_not.setdefault(seen, why)

    def count(self, seen: Seen) -> int:
        return len(self._seen.get(seen, ()))

    def field_findings(self) -> list[Finding]:
        """One finding per place of `facts.FIELDS`, in the table's order."""
        places = dict.fromkeys(row.seen for row in FIELDS)
        return [self._finding(seen, fields_of(seen)) for seen in places]

    def _finding(self, seen: Seen, rows: tuple[WireField, ...]) -> Finding:
        section = rows[0].section
        fact = f"fields: {seen.value}"
        required = [row.path for row in rows if not row.optional]
        expected = ", ".join(required) or "(optional fields only)"
        documents = self._seen.get(seen, [])
        if not documents:
            why = self._why_not.get(seen, "the probe saw none")
            return Finding(fact, FactVerdict.SKIP, expected, why, section)
        gaps = field_gaps(rows, documents)
        missing = [gap for gap in gaps if not gap.field.optional]
        absent = sorted({gap.field.path for gap in gaps if gap.field.optional})
        count = f"{len(documents)} seen"
        if missing:
            return Finding(
                fact, FactVerdict.FAIL, expected, f"{count}; {_describe(missing)}", section
            )
        if absent:
            seen_text = f"{count}; all there; absent but optional: {', '.join(absent)}"
            return Finding(fact, FactVerdict.PASS, expected, seen_text, section)
        return Finding(fact, FactVerdict.PASS, expected, f"{count}; all there", section)


def _describe(missing: list[Gap]) -> str:
    by_path: dict[str, list[Gap]] = defaultdict(list)
    for gap in missing:
        by_path[gap.field.path].append(gap)
    parts = []
    for path, gaps in by_path.items():
        where = ", ".join(f"{g.where} at {g.location}" for g in gaps[:_MAX_SHOWN])
        more = f" and {len(gaps) - _MAX_SHOWN} more" if len(gaps) > _MAX_SHOWN else ""
        parts.append(f"MISSING {path} (read by {gaps[0].field.read_by}): {where}{more}")
    return "; ".join(parts)
