"""Megabyte-sized text through a turn, on the harness's real surface with agy-sim.

A 1 MiB message, a 1 MiB answer streamed in 64 growth frames (each re-sending the step whole,
docs/wire.md §4), a command printing 1 MiB, a 1 MiB file (agy views it in part) with a name as long
as Linux allows (255 bytes), a question with a 1 MiB option (docs/simulator.md, the `large_*`
scenarios). Each
arrives complete and exactly once, or — a tool's output beyond the plugin's 64 KiB cap — cut
with a note that names the limit and says what to do; the turn completes and the next one runs.
One conversation (one agy-sim) serves the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultmix import PLANNER, USER_INPUT, HarnessConversation, answer, conversation_on_sim

from agy_sim.scenarios import LARGE_DEFAULT, large_text
from agy_sim.stack.harness_server import StreamedTurn
from omnigent_agy.reading.mapper import DEFAULT_OUTPUT_CAP

pytestmark = pytest.mark.tmux

MIB = LARGE_DEFAULT
DONE = "CORTEX_STEP_STATUS_DONE"
TURN_SECONDS = 120


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessConversation]:
    with conversation_on_sim(tmp_path_factory.mktemp("large")) as conversation:
        yield conversation


def _play(talk: HarnessConversation, text: str, pick: str | None = None) -> StreamedTurn:
    """One turn to its end, every card answered (`pick`: the option to press)."""
    harness = talk.harness
    assert harness is not None
    turn = harness.turn(text)
    while (event := turn.next(TURN_SECONDS)) is not None:
        if event.get("type") == "response.elicitation_request":
            if pick is None:
                answer(harness, event)
            else:
                harness.press(event, pick)
    assert turn.kinds()[-1] == "response.completed", turn.kinds()[-3:]
    return turn


def _ours(talk: HarnessConversation, text: str) -> list[dict[str, Any]]:
    steps = talk.steps()
    starts = [
        i
        for i, s in enumerate(steps)
        if s.get("type") == USER_INPUT and s.get("userInput", {}).get("userResponse") == text
    ]
    assert len(starts) == 1, f"the message reached agy {len(starts)} times, not once"
    return steps[starts[0] :]


def _answers(steps: list[dict[str, Any]]) -> list[str]:
    return [
        str(s.get("plannerResponse", {}).get("response") or "")
        for s in steps
        if s.get("type") == PLANNER and s.get("status") == DONE
    ]


def _exactly_once(talk: HarnessConversation, turn: StreamedTurn, text: str) -> list[dict[str, Any]]:
    """The turn's deltas are agy's committed answers, whole, each once; its steps returned."""
    ours = _ours(talk, text)
    want = "\n\n".join(a for a in _answers(ours) if a)
    assert len(turn.text()) == len(want), f"{len(turn.text())} characters shown of {len(want)}"
    assert turn.text() == want, "the text shown is not agy's text"
    call_ids = [str(i["call_id"]) for i in turn.items("function_call_output")]
    assert len(call_ids) == len(set(call_ids)), f"an output was published twice: {call_ids}"
    return ours


def test_a_megabyte_message(talk: HarnessConversation) -> None:
    # No whitespace: agy-sim's plain answer echoes the message and streams it word by word.
    text = "-".join(f"{n:07d}" for n in range(MIB // 8))[:MIB]
    turn = _play(talk, text)
    ours = _exactly_once(talk, turn, text)
    assert ours[0]["userInput"]["userResponse"] == text
    assert text in turn.text(), "the answer does not quote the whole message"


def test_a_megabyte_answer_in_many_frames(talk: HarnessConversation) -> None:
    text = "write a large answer, please"
    turn = _play(talk, text)
    _exactly_once(talk, turn, text)
    assert turn.text() == large_text(MIB)
    deltas = turn.kinds().count("response.output_text.delta")
    assert deltas >= 32, f"the answer came in {deltas} deltas, not as a stream"


def _tool_output(turn: StreamedTurn) -> str:
    outputs = turn.items("function_call_output")
    assert len(outputs) == 1, outputs
    return str(outputs[0]["output"])


def _check_capped(output: str, full: str) -> None:
    """The cap's first 64 KiB of `full`, then a note naming the limit and what to do."""
    kept, _, note = output.partition("\n[output truncated: ")
    assert full.startswith(kept), "what was kept is not the start of the output"
    assert len(kept.encode()) == DEFAULT_OUTPUT_CAP
    assert f"of {len(full.encode()):,} bytes shown" in note, note
    assert "at most 64 KiB" in note, note
    assert "Ask agy about the part you need" in note, note


def test_a_megabyte_command_output(talk: HarnessConversation) -> None:
    text = "print a large output"
    turn = _play(talk, text)
    ours = _exactly_once(talk, turn, text)
    command = next(s for s in ours if s.get("type") == "CORTEX_STEP_TYPE_RUN_COMMAND")
    full = command["runCommand"]["combinedOutput"]["full"]
    assert full == large_text(MIB), "agy-sim did not print the large text"
    _check_capped(_tool_output(turn), full)


def test_a_megabyte_file_with_the_longest_name(talk: HarnessConversation) -> None:
    workspace = Path(talk.env["HARNESS_AGY_CLI_CWD"])
    name = "n" * 251 + ".txt"  # NAME_MAX: 255 bytes
    content = large_text(MIB)
    (workspace / name).write_text(content)
    listing = _play(talk, "list the files")
    _exactly_once(talk, listing, "list the files")
    assert name in _tool_output(listing), "the long name is not listed whole"
    text = f"read {name}"
    viewed = _play(talk, text)
    ours = _exactly_once(talk, viewed, text)
    step = next(s for s in ours if s.get("type") == "CORTEX_STEP_TYPE_VIEW_FILE")
    # agy views a file in line ranges; agy-sim's view holds its first 20,000 characters.
    seen = step["viewFile"]["content"]
    assert content.startswith(seen)
    assert seen
    assert _tool_output(viewed) == seen, "the file's content did not arrive whole"


def test_a_megabyte_question_option(talk: HarnessConversation) -> None:
    text = "ask me a large question"
    turn = _play(talk, text, pick="line_0000001")
    ours = _exactly_once(talk, turn, text)
    cards = [e for e in turn.events if e.get("type") == "response.elicitation_request"]
    assert len(cards) == 1, "the card was shown more than once"
    asked = next(s for s in ours if s.get("type") == "CORTEX_STEP_TYPE_ASK_QUESTION")
    option = asked["askQuestion"]["questions"][0]["options"][0]["text"]
    assert len(option) == MIB
    assert option in str(cards[0]["params"]), "the card does not offer the whole option"
    assert asked["askQuestion"]["questions"][0].get("selectedOptionIds") == ["1"]
    assert option in turn.text(), "agy's reply does not name the chosen option whole"


def test_the_next_turn_runs(talk: HarnessConversation) -> None:
    text = "hello after the large turns"
    turn = _play(talk, text)
    _exactly_once(talk, turn, text)
