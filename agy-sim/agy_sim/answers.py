"""Checking and recording the answers HandleCascadeUserInteraction delivers (docs/wire.md §6).

Validation happens before anything changes, so a rejected answer leaves the gate open.
The simulator is deliberately stricter than agy is known to be: option ids must be among
the offered ones, a single-select question takes at most one, and an answer must say
something (an option, a write-in or ``skipped``); violations answer ``invalid_argument``
so a client that sends them is caught here rather than silently accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from agy_sim.cascade import GateRejectedError
from agy_sim.steps_factory import Step, record_interaction
from agy_sim.turn_api import Answer, Question, QuestionOutcome

PERMISSION_SCOPES: Final = frozenset(
    {
        "PERMISSION_SCOPE_UNSPECIFIED",
        "PERMISSION_SCOPE_ONCE",
        "PERMISSION_SCOPE_CONVERSATION",
        "PERMISSION_SCOPE_WORKSPACE",
        "PERMISSION_SCOPE_GLOBAL",
        "PERMISSION_SCOPE_PROJECT",
    }
)


def _identity(interaction: dict[str, Any]) -> dict[str, Any]:
    echo: dict[str, Any] = {"trajectoryId": interaction["trajectoryId"]}
    index = int(interaction.get("stepIndex") or 0)
    if index:
        echo["stepIndex"] = index
    return echo


#: Scopes that let an allowed command run again without asking (see `lasting_allow`).
LASTING_SCOPES: Final = PERMISSION_SCOPES - {
    "PERMISSION_SCOPE_UNSPECIFIED",
    "PERMISSION_SCOPE_ONCE",
}


def lasting_allow(interaction: dict[str, Any]) -> bool:
    """Whether a permission answer allows the command beyond this one step (docs/wire.md §6 knows
    the scopes only from the schema [S]; the simulator guesses that agy then does not ask
    again for the same command in this conversation)."""
    answer = interaction.get("permission") or {}
    return answer.get("allow") is True and answer.get("scope") in LASTING_SCOPES


def apply_permission(step: Step, interaction: dict[str, Any]) -> bool:
    """Record a permission answer; returns whether the command may run."""
    answer = interaction.get("permission")
    if not isinstance(answer, dict):
        raise GateRejectedError("permission must be an object", not_registered=False)
    allow = answer.get("allow", False)
    scope = answer.get("scope")
    if not isinstance(allow, bool):
        raise GateRejectedError("permission.allow must be a boolean", not_registered=False)
    if scope is not None and scope not in PERMISSION_SCOPES:
        raise GateRejectedError(f"invalid permission scope {scope!r}", not_registered=False)
    resource = step["requestedInteraction"]["permission"]["resource"]
    grant: dict[str, Any] = {"resource": dict(resource)}
    echoed: dict[str, Any] = {}
    if allow:  # protojson omits false
        grant["allow"] = True
        echoed["allow"] = True
    if scope:
        echoed["scope"] = scope
    step.setdefault("permissions", {}).setdefault("permissionGrants", []).append(grant)
    record_interaction(step, response={**_identity(interaction), "permission": echoed})
    return bool(allow)


def _resolve(index: int, question: Question, response: dict[str, Any]) -> Answer:
    def reject(why: str) -> GateRejectedError:
        return GateRejectedError(f"step {index}: {question.text!r}: {why}", not_registered=False)

    ids = response.get("selectedOptionIds") or []
    write_in = response.get("writeInResponse") or ""
    skipped = bool(response.get("skipped", False))
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise reject("selectedOptionIds must be a list of option id strings")
    offered = {str(n): text for n, text in enumerate(question.options, 1)}
    unknown = [i for i in ids if i not in offered]
    if unknown:
        raise reject(f"unknown option id(s) {unknown}; offered {sorted(offered)}")
    if len(ids) > 1 and not question.multi:
        raise reject("several options chosen for a single-select question")
    if not isinstance(write_in, str):
        raise reject("writeInResponse must be a string")
    if not (ids or write_in or skipped):
        raise reject("no option, write-in or skip given")
    return Answer(question.text, tuple(offered[i] for i in ids), write_in, skipped)


def validate_question_answer(
    index: int, questions: Sequence[Question], interaction: dict[str, Any]
) -> QuestionOutcome:
    """The answer to an ASK_QUESTION step, checked against what was offered."""
    answer = interaction.get("askQuestion")
    if not isinstance(answer, dict):
        raise GateRejectedError("askQuestion must be an object", not_registered=False)
    if answer.get("cancelled"):
        return QuestionOutcome((), cancelled=True)
    responses = answer.get("responses")
    if not isinstance(responses, list) or not all(isinstance(r, dict) for r in responses):
        raise GateRejectedError("askQuestion.responses must be a list", not_registered=False)
    if len(responses) != len(questions):
        raise GateRejectedError(
            f"step {index}: {len(responses)} response(s) for {len(questions)} question(s)",
            not_registered=False,
        )
    by_text = {q.text: n for n, q in enumerate(questions)}
    answers: dict[int, Answer] = {}
    for position, response in enumerate(responses):
        # Matched by the question's text, else by position (agy echoes the text back).
        slot = by_text.get(str(response.get("question", "")), position)
        if slot in answers:
            raise GateRejectedError(
                f"step {index}: two responses for {questions[slot].text!r}", not_registered=False
            )
        answers[slot] = _resolve(index, questions[slot], response)
    return QuestionOutcome(tuple(answers[n] for n in range(len(questions))))


def apply_question(step: Step, interaction: dict[str, Any], outcome: QuestionOutcome) -> None:
    """Write the chosen options into the step and echo the answer (ask_question_done.json)."""
    echoed: dict[str, Any] = {}
    if outcome.cancelled:
        echoed["cancelled"] = True
    else:
        responses = []
        for answer, wire_question in zip(
            outcome.answers, step["askQuestion"]["questions"], strict=True
        ):
            texts = [o["text"] for o in wire_question["options"]]
            ids = [str(texts.index(t) + 1) for t in answer.selected]
            response: dict[str, Any] = {"question": answer.question}
            if ids:
                response["selectedOptionIds"] = ids
                wire_question["selectedOptionIds"] = ids
            if answer.write_in:
                response["writeInResponse"] = answer.write_in
                wire_question["writeInResponse"] = answer.write_in
            if answer.skipped:
                response["skipped"] = True
                wire_question["skipped"] = True
            responses.append(response)
        echoed["responses"] = responses
    record_interaction(step, response={**_identity(interaction), "askQuestion": echoed})
