"""What the probe checks: the fields the plugin reads from agy's answers, and the verdicts.

`FIELDS` is the one list of every field of agy's answers the plugin reads, where the probe
sees it (`Seen`: a method's answer, a stream frame, a step of some type and status), the
docs/wire.md section that describes it and the module that reads it. The probe checks each
row against what the person's agy answered; tests/probe/test_facts.py holds the list to the
code in both directions: every key the wire-reading modules read is a row here or in
`ELSEWHERE` with the reason, and every key a row names is read by one of them. A field the
plugin reads but can do without (it has a fallback, or protojson leaves a zero value out,
docs/wire.md §3) is ``optional``: its absence is reported, never a failure.

A path is dotted keys; ``*`` is every value of a map, ``[]`` every item of a list, and
``a|b`` means either path will do (the plugin reads the second when the first is absent).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

__all__ = [
    "ELSEWHERE",
    "FIELDS",
    "FactVerdict",
    "Finding",
    "Seen",
    "WireField",
    "fields_of",
]


class FactVerdict(StrEnum):
    """A fact's outcome. INFO reports what agy showed about a fact nobody confirmed yet."""

    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"
    SKIP = "SKIP"
    INFO = "INFO"


@dataclass(frozen=True, slots=True)
class Finding:
    """One line of the probe's table: a fact, what was expected and what agy showed."""

    fact: str
    verdict: FactVerdict
    expected: str
    seen: str
    section: str
    """Where docs/wire.md describes the fact (``§3``); empty for the probe's own steps."""


class Seen(StrEnum):
    """Where the probe sees a field: which answer, frame or step."""

    MODELS = "GetAvailableModels"
    LISTING = "GetAllCascadeTrajectories after a turn"
    LISTING_WAITING = "GetAllCascadeTrajectories while a gate is open"
    START = "StartCascade"
    FORCE_STOP = "ForceStopCascadeTree"
    STEPS = "GetCascadeTrajectorySteps"
    ERROR = "an error answer (unknown conversation)"
    FRAME = "every stream frame"
    FRAME_STEPS = "a stream frame with steps"
    STEP = "every step"
    USER_INPUT = "USER_INPUT"
    PLANNER_GENERATING = "PLANNER_RESPONSE GENERATING"
    PLANNER_DONE = "PLANNER_RESPONSE DONE"
    COMMAND_WAITING = "RUN_COMMAND WAITING"
    COMMAND_ALLOWED = "RUN_COMMAND allowed, settled"
    COMMAND_DENIED = "RUN_COMMAND denied, settled"
    QUESTION_WAITING = "ASK_QUESTION WAITING"
    QUESTION_ANSWERED = "ASK_QUESTION answered, settled"
    QUOTA = "RetrieveUserQuotaSummary"
    USER_STATUS = "GetUserStatus"
    GENERATOR = "GetCascadeTrajectoryGeneratorMetadata after a turn"


@dataclass(frozen=True, slots=True)
class WireField:
    """One field of agy's answers that the plugin reads."""

    seen: Seen
    path: str
    section: str
    read_by: str
    optional: bool = False


def _rows(seen: Seen, section: str, read_by: str, *paths: str) -> tuple[WireField, ...]:
    """Rows of one place; a path starting with ``?`` is optional."""
    return tuple(
        WireField(seen, path.removeprefix("?"), section, read_by, optional=path.startswith("?"))
        for path in paths
    )


_SUMMARY = "trajectorySummaries.*."
_STEP_INFO = "metadata.sourceTrajectoryStepInfo."
_USAGE = "metadata.modelUsage."
_PERMISSION = "requestedInteraction.permission."
_QUESTIONS = "requestedInteraction.askQuestion.questions[]."

FIELDS: tuple[WireField, ...] = (
    *_rows(
        Seen.MODELS,
        "§3",
        "models/catalog.py",
        "response.models.*.model|models.*.model",
        "response.models.*.displayName|models.*.displayName",
        "?response.models.*.recommended",
        "?response.models.*.supportsThinking",
        "?response.models.*.disabled",
        "?response.models.*.maxTokens",
        "?response.defaultAgentModelId",
    ),
    *_rows(
        Seen.GENERATOR,
        "§3, §9",
        "reading/context.py",
        "?generatorMetadata[].chatModel.chatStartMetadata.contextWindowMetadata"
        ".estimatedTokensUsed",
    ),
    *_rows(
        Seen.LISTING,
        "§3",
        "reading/reader.py, rotation.py, agy/sweep.py, session/binding.py",
        f"{_SUMMARY}trajectoryId",
        f"{_SUMMARY}status",
        f"{_SUMMARY}stepCount",
        f"{_SUMMARY}lastUserInputTime",
        f"{_SUMMARY}lastModifiedTime",
        f"?{_SUMMARY}createdTime",
        # The first turn's USER_INPUT is step 0, which protojson leaves out.
        f"?{_SUMMARY}lastUserInputStepIndex",
        f"{_SUMMARY}trajectoryMetadata.rootConversationId",
    ),
    *_rows(
        Seen.LISTING_WAITING,
        "§3, §6",
        "interactions/delivery.py, agy/sweep.py",
        f"{_SUMMARY}waitingSteps[].stepIndex",
    ),
    *_rows(Seen.START, "§3", "rpc/client.py", "cascadeId"),
    *_rows(Seen.FORCE_STOP, "§3", "rpc/client.py", "?stoppedConversationIds"),
    *_rows(Seen.STEPS, "§3", "rpc/client.py", "steps"),
    *_rows(Seen.ERROR, "§1, §2", "rpc/error_boundary.py, rpc/wire.py", "?code", "message"),
    *_rows(Seen.FRAME, "§3, §4", "reading/reader.py", "update.conversationId", "update.status"),
    *_rows(
        Seen.FRAME_STEPS,
        "§3, §4",
        "reading/reader.py",
        "update.mainTrajectoryUpdate.stepsUpdate.indices",
        "update.mainTrajectoryUpdate.stepsUpdate.steps",
        "?update.mainTrajectoryUpdate.stepsUpdate.totalLength",
    ),
    *_rows(
        Seen.STEP,
        "§5",
        "reading/steps.py",
        "type",
        "status",
        f"{_STEP_INFO}trajectoryId",
        f"?{_STEP_INFO}cascadeId",
        # Left out when 0 and on every USER_INPUT: the reader supplies the index (§5).
        f"?{_STEP_INFO}stepIndex",
        "?metadata.executionId",
    ),
    *_rows(
        Seen.USER_INPUT,
        "§3, §5",
        "session/agy_session.py, reading/mapper.py",
        # How a turn's send is known to have arrived (§3, "a turn's send is not repeatable").
        "userInput.userResponse",
        "?userInput.items[].text",
        "userInput.userConfig.plannerConfig.planModel"
        "|userInput.userConfig.plannerConfig.requestedModel.model",
        "?metadata.source",
    ),
    *_rows(
        Seen.PLANNER_GENERATING,
        "§4",
        "reading/mapper.py",
        "plannerResponse.modifiedResponse",
        "?plannerResponse.thinking",
        "?metadata.generatorModel",
    ),
    *_rows(
        Seen.PLANNER_DONE,
        "§4, §5",
        "reading/mapper.py, reading/steps.py",
        "plannerResponse.modifiedResponse|plannerResponse.response",
        f"{_USAGE}inputTokens",
        f"{_USAGE}outputTokens",
        f"?{_USAGE}model",
        f"?{_USAGE}thinkingOutputTokens",
        f"?{_USAGE}responseOutputTokens",
        f"?{_USAGE}cacheReadTokens",
        "?plannerResponse.messageId",
    ),
    *_rows(
        Seen.COMMAND_WAITING,
        "§5, §6",
        "reading/steps.py, reading/mapper.py, interactions/gates.py",
        f"{_PERMISSION}resource.action",
        f"{_PERMISSION}resource.target",
        f"?{_PERMISSION}actionDescription",
        f"?{_PERMISSION}suggestedPersistPattern",
        f"?{_PERMISSION}persistSuggestionType",
        "runCommand.commandLine|runCommand.proposedCommandLine",
        "?runCommand.cwd",
        "?metadata.toolSummary",
        "?metadata.toolAction",
    ),
    *_rows(
        Seen.COMMAND_ALLOWED,
        "§5, §6",
        "reading/steps.py",
        "runCommand.combinedOutput.full|runCommand.combinedOutput.truncated",
        # Exit code 0 is left out (§3).
        "?runCommand.exitCode",
        # Echoed answer: a permission echo without `allow: true` reads as a refusal.
        "?completedInteractions[].response.permission.allow",
        "?metadata.toolCall.id",
    ),
    *_rows(
        Seen.COMMAND_DENIED,
        "§6",
        "reading/steps.py",
        "runCommand.userRejected|completedInteractions[].response.permission",
    ),
    *_rows(
        Seen.QUESTION_WAITING,
        "§5, §6",
        "reading/steps.py, interactions/gates.py",
        f"{_QUESTIONS}question",
        f"{_QUESTIONS}options[].id",
        f"{_QUESTIONS}options[].text",
        f"?{_QUESTIONS}isMultiSelect",
        "?askQuestion.questions",
    ),
    *_rows(
        Seen.QUESTION_ANSWERED,
        "§6",
        "reading/steps.py",
        "?completedInteractions[].response.askQuestion.responses[].question",
        "?completedInteractions[].response.askQuestion.responses[].skipped",
        "?completedInteractions[].response.askQuestion.cancelled",
    ),
)

FIELDS += (
    *_rows(
        Seen.QUOTA,
        "§9",
        "models/quota.py",
        "response.groups[].displayName",
        "response.groups[].buckets[].window",
        # A share of 0 is left out (§3): nothing left.
        "?response.groups[].buckets[].remainingFraction",
        "response.groups[].buckets[].resetTime",
    ),
    *_rows(
        Seen.USER_STATUS,
        "§9",
        "models/quota.py",
        "userStatus.planStatus.planInfo.planName|userStatus.planStatus.planInfo.teamsTier",
    ),
)

# Keys the plugin reads or sends that no row of FIELDS checks, and why.
_SENT = "sent in requests, checked by agy taking the call: "
_NO_TURN_SHOWS = "no probe turn makes agy write it: "
ELSEWHERE: Final[Mapping[str, str]] = {
    # The reader's own durable cursor (its JSON, not agy's), read in the wire-reading
    # modules that also export and restore it.
    "ended": "the reader's durable cursor: whether the turn in it ended",
    "usage": "the reader's durable cursor: the turn's usage so far",
    "gate_retries": "the reader's durable cursor: the mapper's gate retries",
    # Requests the probe sends the plugin's way; agy taking them is the check.
    "cascadeConfig": _SENT + "SendUserCascadeMessage (§3)",
    "deliveryStrategy": "steering a running turn (§3): the probe steers none",
    "initialStepsPageBounds": _SENT + "a stream opened at a cursor (§4, reported as seen)",
    "startIndex": _SENT + "initialStepsPageBounds",
    "endIndexExclusive": "the plugin never sends it (the stream's bounds are open-ended)",
    "stepOffset": _SENT + "GetCascadeTrajectorySteps from an offset (§3)",
    "stepIndices": "the plugin never sends it (CancelCascadeSteps stops the whole cascade)",
    "subscriberId": "the plugin never sends it",
    "excludeSubtrajectories": "the plugin never sends it",
    "selectedOptionIds": "a chosen option: the probe answers its question by skipping it",
    "writeInResponse": "a written answer: the probe answers its question by skipping it",
    "contentJson": "MCP elicitation answers (§6, a guess): no probe turn raises one",
    # Read from steps no probe turn makes agy write (a turn each would cost more model calls
    # and need files, servers or sub-agents in the scratch workspace).
    "workspaceUris": "GetConversationMetadata's folders (§9): checked by the probe's own "
    "hidden-folder launch (probe/hidden.py), which starts agys of its own, not by a turn",
    "parentConversationId": _NO_TURN_SHOWS + "a sub-agent's cascade (§7)",
    "errorMessage": _NO_TURN_SHOWS + "an ERROR_MESSAGE step (§5)",
    "userErrorMessage": _NO_TURN_SHOWS + "an ERROR_MESSAGE step (§5)",
    "shortError": _NO_TURN_SHOWS + "an error step (§5); seen in the interrupt's step if any",
    "fullError": _NO_TURN_SHOWS + "an ERROR_MESSAGE step (§5)",
    "isBenign": _NO_TURN_SHOWS + "an ERROR_MESSAGE step (§5)",
    "error": _NO_TURN_SHOWS + "an error step (§5); error answers are Seen.ERROR",
    "elicitation": _NO_TURN_SHOWS + "an MCP elicitation (§6)",
    "serverName": _NO_TURN_SHOWS + "an MCP tool or elicitation (§5, §6)",
    "requestedSchemaJson": _NO_TURN_SHOWS + "an MCP elicitation (§6)",
    "is_multi_select": "the ask tool's own argument spelling, in a poll's toolCalls (§5)",
    "typeName": _NO_TURN_SHOWS + "INVOKE_SUBAGENT (§5)",
    "role": _NO_TURN_SHOWS + "INVOKE_SUBAGENT (§5)",
    "subagents": _NO_TURN_SHOWS + "INVOKE_SUBAGENT (§5)",
    "results": _NO_TURN_SHOWS + "INVOKE_SUBAGENT or LIST_DIRECTORY (§5)",
    "absolutePathUri": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "startLine": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "endLine": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "content": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "numLines": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "numBytes": _NO_TURN_SHOWS + "VIEW_FILE (§5)",
    "directoryPathUri": _NO_TURN_SHOWS + "LIST_DIRECTORY (§5)",
    "name": _NO_TURN_SHOWS + "LIST_DIRECTORY, MCP_TOOL or GENERIC (§5)",
    "isDir": _NO_TURN_SHOWS + "LIST_DIRECTORY (§5)",
    "actionSpec": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "actionResult": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "edit": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "diff": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "unifiedDiff": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "lines": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "description": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "path": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "file": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "absoluteUri": _NO_TURN_SHOWS + "CODE_ACTION (§5)",
    "query": _NO_TURN_SHOWS + "GREP_SEARCH (§5, a guess)",
    "searchPathUri": _NO_TURN_SHOWS + "GREP_SEARCH (§5, a guess)",
    "cwdUri": _NO_TURN_SHOWS + "GREP_SEARCH (§5, a guess)",
    "pattern": _NO_TURN_SHOWS + "FIND (§5, a guess)",
    "searchDirectory": _NO_TURN_SHOWS + "FIND (§5, a guess)",
    "argumentsJson": _NO_TURN_SHOWS + "MCP_TOOL (§5)",
    "resultString": _NO_TURN_SHOWS + "MCP_TOOL (§5)",
    "args": _NO_TURN_SHOWS + "GENERIC (§5)",
    "result": _NO_TURN_SHOWS + "GENERIC (§5)",
    "stepRenderInfo": _NO_TURN_SHOWS + "GENERIC (§5)",
    "markdown": _NO_TURN_SHOWS + "GENERIC (§5)",
    "details": "an error's details: only the stream's end envelope carries them (§2)",
    # Not agy's: the reader's own cursor file.
    "turn": "the reader's own cursor, not agy's",
}


def fields_of(seen: Seen) -> tuple[WireField, ...]:
    """The rows the probe checks where it saw `seen`."""
    return tuple(row for row in FIELDS if row.seen is seen)
