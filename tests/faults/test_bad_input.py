"""Bad input through the harness's real surface: malformed answers from the UI, odd text.

Each gets a clear error saying what to do, or a safe rendering; never a crash, a hang or a lost
turn. One conversation (one agy-sim) serves the whole module.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultmix import USER_INPUT, HarnessConversation, answer, conversation_on_sim

pytestmark = pytest.mark.tmux


@pytest.fixture(scope="module")
def talk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HarnessConversation]:
    with conversation_on_sim(tmp_path_factory.mktemp("bad-input")) as conversation:
        yield conversation


def _post_answer(talk: HarnessConversation, card: dict[str, Any], content: object) -> int:
    assert talk.harness is not None
    reply = talk.harness.post(
        {
            "type": "approval",
            "elicitation_id": card["elicitation_id"],
            "action": "accept",
            "content": content,
        }
    )
    return reply.status_code


@pytest.mark.parametrize(
    "content",
    [{"answer": 7}, {"answer": ["Red", "Blue"]}, {"answer": ""}, {"answer": "   "}, {}, None],
    ids=["wrong-type", "two-options", "empty", "blank", "no-answer", "no-content"],
)
@pytest.mark.parametrize("text", ["ask me a question", "run: echo malformed"])
def test_a_malformed_answer_asks_again_and_the_turn_goes_on(
    talk: HarnessConversation, text: str, content: object
) -> None:
    harness = talk.harness
    assert harness is not None
    turn = harness.turn(f"{text} ({json.dumps(content)})")
    card = turn.until("response.elicitation_request")
    status = _post_answer(talk, card, content)
    if status < 300:  # taken: the card is asked again, with why
        card = turn.until(
            "response.elicitation_request",
            lambda e: e["elicitation_id"] != card["elicitation_id"],
            timeout=20,
        )
        message = json.dumps(card["params"]).lower()
        if content == {"answer": ""}:
            # The terminal REPL's accept (its first, empty, choice): the same asked as a field
            # to type the answer in (docs/in-omnigent.md, "The terminal REPL").
            assert "1 = " in message, message
            field = next(iter(card["params"]["requestedSchema"]["properties"]))
            assert _post_answer(talk, card, {field: "1"}) < 300  # as the REPL sends it
        else:
            assert "choose one of" in message or "valid" in message, message
            answer(harness, card)
    else:  # refused by omnigent's own validation: the card still waits
        assert status == 422
        answer(harness, card)
    turn.until("response.completed", timeout=30)
    assert "response.cancelled" not in turn.kinds()


@pytest.mark.parametrize(
    "text",
    [
        "nul \x00 inside",
        "escape \x1b[2J and bell \x07",
        "right-to-left \u202e override",
    ],
    ids=["nul", "escapes", "bidi"],
)
def test_odd_text_in_a_turn_is_sent_and_answered(talk: HarnessConversation, text: str) -> None:
    harness = talk.harness
    assert harness is not None
    turn = harness.turn(text)
    turn.finish(60)
    assert turn.kinds()[-1] == "response.completed", turn.kinds()
    said = [s for s in talk.steps() if s.get("type") == USER_INPUT]
    assert said, "the message never reached agy"
    assert said[-1]["userInput"]["userResponse"].startswith(text.split(maxsplit=1)[0])


def test_a_file_name_that_is_not_utf8_is_rendered_safely(talk: HarnessConversation) -> None:
    workspace = Path(talk.env["HARNESS_AGY_CLI_CWD"])
    (workspace / b"caf\xe9-\xff.txt".decode("utf-8", "surrogateescape")).write_bytes(b"x\x00y")
    harness = talk.harness
    assert harness is not None
    turn = harness.turn("list the files")
    turn.finish(60)
    assert turn.kinds()[-1] == "response.completed", turn.kinds()
    outputs = " ".join(item["output"] for item in turn.items("function_call_output"))
    assert "caf" in outputs
