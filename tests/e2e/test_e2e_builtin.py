"""omnigent's own Antigravity harness (``antigravity-native``) against agy-sim, on the real stack.

No plugin code runs here: the host finds agy-sim as ``agy`` on its PATH (signed in), reports
the built-in harness ready, and the server's ``antigravity-native-ui`` agent starts agy in a
runner-owned tmux pane, types each turn into agy's composer and reads the conversation over
agy's language server; a permission is a card answered over RPC plus agy's menu keys.
docs/simulator.md, "omnigent's built-in harness against agy-sim", keeps what it does and
does not handle.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from omnigent.harnesses.antigravity_native import bridge as builtin
from waiting import wait_until

from agy_sim.stack.local_stack import LocalStack
from agy_sim.stack.rest import EventStream, Json, card_questions

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]
BUILTIN_AGENT = "antigravity-native-ui"


def pane(stack: LocalStack, session_id: str) -> str:
    """agy-sim's screen in the built-in's pane, as its own code captures it."""
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:32]
    bridge = Path(stack.main.env["HOME"]) / ".omnigent" / "antigravity-native" / digest
    target = json.loads((bridge / "tmux.json").read_text(encoding="utf-8"))
    shown = subprocess.run(
        ["tmux", "-S", target["socket_path"], "capture-pane", "-p", "-t", target["tmux_target"]],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    return shown.stdout


def agy_idle(stack: LocalStack, session_id: str) -> str:
    """agy-sim's screen once it shows the idle footer in the built-in's pane.

    The built-in gives agy 30 s from the first message to draw its composer
    (``bridge._TMUX_READY_TIMEOUT_S``) and fails the turn after; the tests are about what
    follows, so they wait for agy to be ready, as a person would see it in the Terminal view.
    """

    def shown() -> str:
        try:
            return pane(stack, session_id)
        except (OSError, ValueError, KeyError, subprocess.SubprocessError):
            return ""  # the runner has not advertised the pane yet

    return wait_until(
        lambda: (screen := shown()) and builtin._AGY_IDLE_MARKER in screen and screen,
        timeout=120,
        what="agy-sim's idle footer in the built-in's pane",
    )


def messages(stack: LocalStack, session_id: str, role: str) -> list[str]:
    return [
        part.get("text", "")
        for item in stack.client.items(session_id)
        if item.get("type") == "message" and item.get("role") == role
        for part in item.get("content") or []
    ]


def until_answer(events: EventStream, text: str) -> list[Json]:
    """The stream's events up to the assistant message containing ``text``."""
    seen: list[Json] = []

    def answered(event: Json) -> bool:
        seen.append(event)
        item = event.get("item") or {}
        content = json.dumps(item.get("content") or [])
        return event.get("type") == "response.output_item.done" and text in content

    events.until(answered, f"the answer saying {text!r}", timeout=120)
    return seen


@pytest.mark.timeout(600)  # agy's start and three turns (and the stack's, when first)
def test_the_built_in_delivers_turns_to_agy_sim_and_answers_its_card(stack: LocalStack) -> None:
    client = stack.client
    host_id = stack.wait_ready(stack.main)
    ready = next(h for h in client.hosts() if h["host_id"] == host_id)
    assert (ready.get("configured_harnesses") or {}).get("antigravity-native") is True
    session = client.create_session(BUILTIN_AGENT, host_id, str(stack.workspace))
    with client.stream(session) as events:
        agy_idle(stack, session)
        client.send(session, "hello from the web")
        until_answer(events, "You said: hello from the web")
        screen = agy_idle(stack, session)
        assert builtin._agy_input_region(screen).strip() == ">"

        client.send(session, "please run: ls")
        card: Any = events.of_type("response.elicitation_request", timeout=120)
        assert card["params"]["phase"] == "agy_permission"
        assert card["params"]["command"] == "ls"
        assert "Run this command?" in pane(stack, session)
        client.post(
            f"/v1/sessions/{session}/elicitations/{card['elicitation_id']}/resolve",
            {"action": "accept", "content": {}},
        )
        streamed = until_answer(events, "`ls` finished with exit code 0")
        # The built-in reads agy's stream: the answer arrives as deltas.
        assert any(e.get("type") == "response.output_text.delta" for e in streamed)
        # After answering over RPC the built-in types its menu digit and Enter (to close a
        # menu older agys left open); agy-sim closed it with the answer, as current agys do
        # by omnigent's own account, so the digit is the next message (docs/simulator.md).
        until_answer(events, "You said: 1")
    outputs = [
        item.get("output", "")
        for item in client.items(session)
        if item.get("type") == "function_call_output"
    ]
    assert "(agy-sim) simulated output of: ls\n" in outputs
    assert messages(stack, session, "user") == ["hello from the web", "please run: ls", "1"]


@pytest.mark.timeout(600)  # agy's start and three turns (and the stack's, when first)
def test_the_built_in_on_deny_and_a_multi_select_question(stack: LocalStack) -> None:
    """What a card's answer does with the built-in (docs/simulator.md's table). A first turn
    makes the reader adopt agy's cascade before any card (see the streamed-answer row). The
    write-in row is not here: whether the Escape typed after its answer stops the resumed turn
    is a race."""
    client = stack.client
    host_id = stack.wait_ready(stack.main)
    session = client.create_session(BUILTIN_AGENT, host_id, str(stack.workspace))
    with client.stream(session) as events:
        agy_idle(stack, session)
        client.send(session, "hello")
        until_answer(events, "You said: hello")

        client.send(session, "please run: ls")
        card: Any = events.of_type("response.elicitation_request", timeout=120)
        client.post(
            f"/v1/sessions/{session}/elicitations/{card['elicitation_id']}/resolve",
            {"action": "decline"},
        )
        until_answer(events, "Understood, I did not run `ls`")  # deny: the turn goes on
        until_answer(events, "You said: 4")  # "4. No, cancel", typed after the RPC answer

        client.send(session, "multi: which checks?")
        card = events.of_type("response.elicitation_request", timeout=120)
        (question,) = card_questions(card["params"])
        # agy's step says isMultiSelect; the built-in reads the flag only from the tool
        # call's arguments, which agy's stream leaves out: the card offers one choice. What
        # then reaches agy varies (docs/simulator.md), so the test stops at the card.
        assert card["params"]["ask_question"]["questions"][0]["isMultiSelect"] is True
        assert question["multiSelect"] is False
    users = messages(stack, session, "user")
    assert users == [
        "hello",
        "please run: ls",
        "4",
        "multi: which checks?",
    ]
