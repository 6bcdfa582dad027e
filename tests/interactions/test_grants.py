"""What "for this conversation" covers (omnigent_agy/interactions/grants.py)."""

from __future__ import annotations

from omnigent_agy.interactions.grants import ConversationGrants
from omnigent_agy.reading.events import InteractionRequested
from omnigent_agy.reading.steps import InteractionKind, RequestedInteraction, StepKey


def command(
    target: str, pattern: str | None = None, action: str = "command"
) -> InteractionRequested:
    wanted = RequestedInteraction(
        InteractionKind.PERMISSION,
        {},
        action=action,
        target=target,
        suggested_persist_pattern=pattern,
    )
    return InteractionRequested(StepKey("c", "t", 3), "call", "RUN_COMMAND", wanted)


def test_an_answer_covers_what_agy_said_it_would() -> None:
    grants = ConversationGrants()
    assert not grants.covers(command("npm test"))
    grants.grant(command("npm test", "npm test"))
    assert grants.covers(command("npm test"))
    assert not grants.covers(command("npm test && rm -rf /"))
    assert not grants.covers(command("npm test", action="edit"))
    grants.grant(command("git status", "git *"))
    assert grants.covers(command("git log -n 1"))
    assert not grants.covers(command("rm -rf git"))


def test_a_request_without_a_target_is_never_covered() -> None:
    grants = ConversationGrants()
    grants.grant(command(""))
    assert not grants.covers(command(""))


def test_answers_are_kept_as_json_and_read_back() -> None:
    saved: list[str] = []
    grants = ConversationGrants(on_grant=lambda g: saved.append(g.as_json()))
    grants.grant(command("git status", "git *"))
    grants.grant(command("git status", "git *"))  # the same answer again: nothing new to keep
    grants.grant(command("npm test", "npm test"))
    assert len(saved) == 2
    again = ConversationGrants.from_json(saved[-1])
    assert again.covers(command("git log"))
    assert again.covers(command("npm test"))
    assert not again.covers(command("rm -rf /"))


def test_unreadable_kept_answers_allow_nothing() -> None:
    for text in ("", "{", '{"a": 1}', '[["command"]]', '[["command", ""]]', "[[1, 2]]"):
        grants = ConversationGrants.from_json(text)
        assert not grants.covers(command("anything"))
        assert grants.as_json() == "[]"
