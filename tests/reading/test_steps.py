"""Unit tests for the step parsing helpers (`steps`) and the tool-step readers (`tool_steps`)."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from omnigent_agy.reading.steps import (
    InteractionKind,
    ModelUsage,
    StepKey,
    StepStatus,
    StepType,
    ToolOutcome,
    cap_output,
    describe_call,
    describe_result,
    int64,
    is_settled,
    obj,
    parse_model_usage,
    parse_step_status,
    parse_step_type,
    payload_key,
    requested_interaction,
    step_error_text,
    step_key,
    step_payload,
    tool_name,
    uri_path,
)

RUN = "CORTEX_STEP_TYPE_RUN_COMMAND"
DONE = "CORTEX_STEP_STATUS_DONE"


@pytest.mark.parametrize(
    ("type_name", "expected"),
    [
        ("CORTEX_STEP_TYPE_RUN_COMMAND", "runCommand"),
        ("CORTEX_STEP_TYPE_PLANNER_RESPONSE", "plannerResponse"),
        ("CORTEX_STEP_TYPE_MCP_TOOL", "mcpTool"),
        ("CORTEX_STEP_TYPE_FIND", "find"),
        ("CORTEX_STEP_TYPE_INVOKE_SUBAGENT", "invokeSubagent"),
        ("CORTEX_STEP_TYPE_HOLOGRAM_RENDER", "hologramRender"),
        ("CORTEX_STEP_TYPE_", ""),
        ("", ""),
    ],
)
def test_payload_key_is_lower_camel_of_the_type_suffix(type_name: str, expected: str) -> None:
    assert payload_key(type_name) == expected


def test_tool_name_is_the_snake_suffix() -> None:
    assert tool_name("CORTEX_STEP_TYPE_LIST_DIRECTORY") == "list_directory"
    assert tool_name("") == "unknown"


def test_step_types_and_statuses_are_open_sets() -> None:
    assert parse_step_type(RUN) is StepType.RUN_COMMAND
    assert parse_step_type("CORTEX_STEP_TYPE_NEW_THING") == "CORTEX_STEP_TYPE_NEW_THING"
    assert parse_step_type(7) == ""
    assert parse_step_status(DONE) is StepStatus.DONE
    assert parse_step_status("CORTEX_STEP_STATUS_HALTED") == "CORTEX_STEP_STATUS_HALTED"
    assert parse_step_status(None) == ""


@pytest.mark.parametrize(
    ("status", "settled"),
    [
        ("CORTEX_STEP_STATUS_DONE", True),
        ("CORTEX_STEP_STATUS_ERROR", True),
        ("CORTEX_STEP_STATUS_CANCELED", True),
        ("CORTEX_STEP_STATUS_INTERRUPTED", True),
        ("CORTEX_STEP_STATUS_CLEARED", True),
        ("CORTEX_STEP_STATUS_INVALID", True),
        ("CORTEX_STEP_STATUS_GENERATING", False),
        ("CORTEX_STEP_STATUS_WAITING", False),
        ("CORTEX_STEP_STATUS_RUNNING", False),
        ("CORTEX_STEP_STATUS_PENDING", False),
        ("CORTEX_STEP_STATUS_QUEUED", False),
        ("CORTEX_STEP_STATUS_CANCELLED", False),  # two Ls is not agy's spelling
        ("", False),
        (None, False),
        (3, False),
    ],
)
def test_is_settled(status: object, settled: bool) -> None:
    assert is_settled(status) is settled


def _info(**fields: object) -> dict[str, object]:
    return {"metadata": {"sourceTrajectoryStepInfo": fields}}


def test_step_key_reads_source_trajectory_step_info() -> None:
    step = _info(trajectoryId="t", cascadeId="c", stepIndex=12)
    assert step_key(step) == StepKey("c", "t", 12)
    assert step_key(step).item_id == "agy:t:12"


def test_missing_step_index_means_zero_and_the_absolute_index_wins() -> None:
    user_input = _info(trajectoryId="t", cascadeId="c")  # USER_INPUT omits stepIndex (§5)
    assert step_key(user_input).step_index == 0
    assert step_key(user_input, absolute_index=7).step_index == 7
    assert step_key(_info(trajectoryId="t", stepIndex="4")).step_index == 4


def test_step_key_reuses_the_previous_key_only_for_the_same_step() -> None:
    previous = StepKey("c", "t", 12)
    assert step_key(_info(trajectoryId="t", cascadeId="c", stepIndex=12), previous=previous) is (
        previous
    )
    others = [
        (_info(trajectoryId="u", cascadeId="c", stepIndex=12), None),
        (_info(trajectoryId="t", cascadeId="d", stepIndex=12), None),
        (_info(trajectoryId="t", cascadeId="c", stepIndex=13), None),
        (_info(trajectoryId="t", cascadeId="c", stepIndex=12), 13),  # the absolute index wins
    ]
    for step, index in others:
        key = step_key(step, absolute_index=index, previous=previous)
        assert key != previous
        assert key == step_key(step, absolute_index=index)


def test_step_key_falls_back_to_the_given_cascade_and_survives_garbage() -> None:
    assert step_key({}, cascade_id="c") == StepKey("c", "", 0)
    assert step_key({"metadata": "nope"}, cascade_id="c") == StepKey("c", "", 0)
    assert step_key(_info(trajectoryId=5, stepIndex=[1]), cascade_id="c") == StepKey("c", "", 0)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("17161", 17161),
        (" 42 ", 42),
        (5, 5),
        ("-3", -3),
        (True, None),
        ("1e3", None),
        ("", None),
        (None, None),
        (1.5, None),
        ("9" * 40, None),
        ({}, None),
    ],
)
def test_int64_accepts_wire_strings_and_ints_only(raw: object, expected: int | None) -> None:
    assert int64(raw) == expected


def test_model_usage_parses_int64_strings_and_ignores_garbage() -> None:
    usage = parse_model_usage(
        {
            "model": "MODEL_PLACEHOLDER_M20",
            "inputTokens": "17161",
            "outputTokens": "65",
            "thinkingOutputTokens": "44",
            "responseOutputTokens": "21",
            "cacheReadTokens": "bad",
            "apiProvider": "API_PROVIDER_GOOGLE_GEMINI",
        }
    )
    assert usage == ModelUsage("MODEL_PLACEHOLDER_M20", 17161, 65, 44, 21, 0)
    assert parse_model_usage(None) is None
    assert parse_model_usage({"inputTokens": "-5"}) == ModelUsage()


def test_model_usage_sums_and_keeps_the_model_only_while_it_agrees() -> None:
    a = ModelUsage("M1", 10, 5, 2, 3, 1)
    assert a + a == ModelUsage("M1", 20, 10, 4, 6, 2)
    assert (a + ModelUsage("M2", 1, 1, 0, 1, 0)).model is None


def test_requested_permission() -> None:
    step = {
        "requestedInteraction": {
            "permission": {
                "resource": {"action": "command", "target": "pwd"},
                "persistSuggestionType": "PERSIST_SUGGESTION_TYPE_SUGGESTED",
                "suggestedPersistPattern": "pwd",
                "actionDescription": "Running pwd command",
            }
        }
    }
    wanted = requested_interaction(step)
    assert wanted is not None
    assert wanted.kind is InteractionKind.PERMISSION
    assert (wanted.action, wanted.target) == ("command", "pwd")
    assert wanted.suggested_persist_pattern == "pwd"
    assert wanted.action_description == "Running pwd command"
    assert wanted.raw is step["requestedInteraction"]


def test_requested_questions_keep_option_ids_and_multi_select() -> None:
    step = {
        "requestedInteraction": {
            "askQuestion": {
                "questions": [
                    {"question": "Q1", "options": [{"id": "1", "text": "a"}, {"text": "b"}]},
                    {"question": "Q2", "isMultiSelect": True, "options": "garbage"},
                    "not a question",
                ]
            }
        }
    }
    wanted = requested_interaction(step)
    assert wanted is not None
    assert wanted.kind is InteractionKind.ASK_QUESTION
    first, second, third = wanted.questions
    assert [(o.id, o.text) for o in first.options] == [("1", "a"), ("2", "b")]
    assert not first.multi_select
    assert second.multi_select
    assert second.options == ()
    assert third.text == ""


def test_requested_elicitation_unknown_and_absent() -> None:
    elicit = requested_interaction(
        {"requestedInteraction": {"elicitation": {"serverName": "s", "message": "m"}}}
    )
    assert elicit is not None
    assert elicit.kind is InteractionKind.ELICITATION
    assert (elicit.elicitation_server, elicit.elicitation_message) == ("s", "m")
    unknown = requested_interaction({"requestedInteraction": {"hologram": {}}})
    assert unknown is not None
    assert unknown.kind is InteractionKind.UNKNOWN
    assert requested_interaction({}) is None
    assert requested_interaction({"requestedInteraction": []}) is None


def test_error_text_prefers_the_user_message() -> None:
    step = {
        "errorMessage": {
            "error": {"userErrorMessage": "Readable.", "shortError": "short", "fullError": "long"}
        }
    }
    assert step_error_text(step) == ("Readable.", "short")
    assert step_error_text({"error": {"shortError": "canceled"}}) == ("canceled", None)
    assert step_error_text({"errorMessage": {"error": {}}, "error": {"fullError": "x"}}) == (
        "x",
        None,
    )
    assert step_error_text({}) == (None, None)


def test_obj_keeps_any_mapping_and_empties_the_rest() -> None:
    proxy = MappingProxyType({"a": 1})
    assert obj(proxy) is proxy
    assert obj({"a": 1}) == {"a": 1}
    assert obj([("a", 1)]) == {}
    assert obj("a") == {}


def test_step_payload_tolerates_non_objects() -> None:
    assert step_payload({"type": RUN, "runCommand": {"cwd": "/"}}) == {"cwd": "/"}
    assert step_payload({"type": RUN, "runCommand": "x"}) == {}
    assert step_payload({"type": None}) == {}


def test_uri_path() -> None:
    assert uri_path("file:///home/user/project/a%20b.txt") == "/home/user/project/a b.txt"
    assert uri_path("/already/a/path") == "/already/a/path"
    assert uri_path(None) is None


@pytest.mark.parametrize("limit", [0, 1, 5, 6, 7, 64])
def test_cap_output_never_splits_a_character(limit: int) -> None:
    output = "ab€" * 20  # € is three bytes in UTF-8
    capped, truncated = cap_output(output, limit)
    assert len(capped.encode()) <= limit
    assert output.startswith(capped)
    assert truncated


def test_cap_output_leaves_short_output_alone() -> None:
    assert cap_output("hello", 64) == ("hello", False)
    assert cap_output("x" * 64, 64) == ("x" * 64, False)


def _command(**run: object) -> dict[str, object]:
    return {"type": RUN, "status": DONE, "runCommand": run}


def test_command_result_normalises_pty_line_ends() -> None:
    result = describe_result(
        _command(exitCode=0, combinedOutput={"full": "a\r\nb\r\n"}), RUN, DONE, cap=100
    )
    assert (result.outcome, result.output, result.exit_code) == (ToolOutcome.SUCCESS, "a\nb\n", 0)
    assert not result.truncated


@pytest.mark.parametrize(
    ("combined", "output", "truncated"),
    [
        ({"full": "all", "truncated": "ll"}, "all", False),
        ({"truncated": "…tail"}, "…tail", True),
        ({"full": "head", "truncated": True}, "head", True),
        ({}, "", False),
        ("garbage", "", False),
    ],
)
def test_command_result_honours_combined_output_truncated(
    combined: object, output: str, truncated: bool
) -> None:
    result = describe_result(_command(combinedOutput=combined), RUN, DONE, cap=100)
    assert (result.output, result.truncated) == (output, truncated)
    assert result.exit_code is None  # absent is unknown, not 0


def test_call_arguments_come_from_the_payload_not_tool_call() -> None:
    step = _command(commandLine="ls", cwd="/home/user/project")
    step["metadata"] = {"toolCall": {"id": "x", "argumentsJson": '{"CommandLine": "rm -rf /"}'}}
    call = describe_call(step, RUN)
    assert call.name == "run_command"
    assert call.arguments == {"command_line": "ls", "cwd": "/home/user/project"}
