"""A workspace inside a hidden folder, on the real stack (docs/wire.md §9): agy would drop
`…/.worktrees/feature` and silently work in its scratch folder; the plugin gives it a private
dot-free link instead, so agy's command runs and its file lands in that folder, the card and the
tool row name the person's own path, and the link goes when the conversation's agy stops.
Trust is asked about, and given, for the person's folder; agy trusts the link it sees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from omnigent.community.harness.agy.trust_card import YES_TRUST
from stack import Conversation
from test_e2e_trust import hostile, started, state_of

from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]

TURN = 120.0


def test_a_hidden_worktree_is_worked_in_through_a_private_link(stack: LocalStack) -> None:
    worktree = hostile(stack.root / "repo" / ".worktrees" / "feature")
    with Conversation(stack, workspace=worktree) as talk:
        talk.send("Please run: touch made-by-agy.txt")
        trust = talk.card(timeout=TURN)
        assert f"Accessing workspace: {worktree} — " in trust["params"]["message"]
        talk.answer(trust, YES_TRUST)
        card = talk.card(timeout=TURN)
        # The person's own path on the card, never the link's.
        assert card["params"]["message"] == (
            f"Antigravity CLI wants to run “touch made-by-agy.txt” in {worktree}"
        )
        talk.answer(card, "Allow once")
        assert talk.turn_end(timeout=TURN)["type"] == "response.completed"
        # agy's command ran in the person's folder, not in a scratch folder of agy's own.
        assert (worktree / "made-by-agy.txt").is_file()
        started(worktree)  # and the trusted worktree's server started
        calls = [i for i in talk.items() if i["type"] == "function_call"]
        assert json.loads(calls[-1]["arguments"]).get("cwd") == str(worktree)
        state = state_of(stack, talk)
        link = Path((state.path / "workspace-link").read_text())
        assert "/." not in str(link)
        assert link.is_symlink()
        assert os.readlink(link) == str(worktree)
        trusted = json.loads((state.gemini_dir / "antigravity-cli/settings.json").read_text())
        assert trusted["trustedWorkspaces"] == [str(link)]  # the path agy is started in
        log = state.log_file.read_text()
        assert "is hidden: ignore uri" not in log
        assert not (state.gemini_dir / "antigravity-cli" / "scratch" / "made-by-agy.txt").exists()
    stack.run(stack.main, ["omnigent-agy", "stop", state.key])
    assert not link.is_symlink(), "the link outlived the conversation's agy"
    assert (worktree / "made-by-agy.txt").is_file()
