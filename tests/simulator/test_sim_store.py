"""agy-sim keeps conversations under its gemini dir and resumes one (`--conversation <id>`).

The engine is driven through its wire handlers, as in test_sim_engine; a "restart" is a
second engine on the same store, as a second agy-sim process on the same --gemini_dir is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from pathlib import Path

from test_sim_engine import Sim

from agy_sim.options import parse_options
from agy_sim.store import FILE_NAME, ConversationStore
from agy_sim.summaries import DB_FILE, LAST_FILE, TABLE


def test_a_restarted_engine_resumes_a_stored_conversation(tmp_path: Path) -> None:
    gemini = tmp_path / "gemini"

    async def main() -> None:
        first = Sim(tmp_path, store_dir=str(gemini))
        cid = await first.start()
        await first.send(cid, "Remember the word apricot.")
        before = await first.idle(cid)
        await first.engine.aclose()
        assert (gemini / "antigravity-cli" / "brain" / cid / FILE_NAME).is_file()

        again = Sim(tmp_path, store_dir=str(gemini), resume_conversation=cid)
        try:
            assert again.engine.tui_cascade_id == cid, "agy starts on that conversation"
            assert await again.steps(cid) == before
            summary = (await again.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
            assert summary[cid]["stepCount"] == len(before)
            await again.send(cid, "Which word was it?")
            after = await again.idle(cid)
            assert after[: len(before)] == before
            inputs = [s["userInput"]["userResponse"] for s in after if "userInput" in s]
            assert inputs == ["Remember the word apricot.", "Which word was it?"]
        finally:
            await again.engine.aclose()

    asyncio.run(main())


def test_a_turn_cut_short_by_a_stop_comes_back_canceled(tmp_path: Path) -> None:
    gemini = tmp_path / "gemini"

    async def main() -> None:
        first = Sim(tmp_path, store_dir=str(gemini), long_token_interval=0.5)
        cid = await first.start()
        await first.send(cid, "a long answer please")
        planner = "CORTEX_STEP_TYPE_PLANNER_RESPONSE"
        cascade = first.engine.cascades[cid]
        await first.until(cid, lambda: any(s["type"] == planner for s in cascade.steps))
        await first.engine.aclose()
        again = Sim(tmp_path, store_dir=str(gemini), resume_conversation=cid)
        try:
            statuses = {s["status"] for s in await again.steps(cid)}
            assert "CORTEX_STEP_STATUS_GENERATING" not in statuses
            assert "CORTEX_STEP_STATUS_RUNNING" not in statuses
            assert "CORTEX_STEP_STATUS_CANCELED" in statuses
            assert again.status(cid) == "IDLE"
        finally:
            await again.engine.aclose()

    asyncio.run(main())


def test_an_unknown_conversation_starts_a_new_one(tmp_path: Path) -> None:
    async def main() -> None:
        sim = Sim(tmp_path, store_dir=str(tmp_path / "gemini"), resume_conversation="nope")
        try:
            assert sim.engine.tui_cascade_id != "nope"
            assert list(sim.engine.cascades) == [sim.engine.tui_cascade_id]
        finally:
            await sim.engine.aclose()

    asyncio.run(main())


def test_sub_agents_come_back_with_their_conversation(tmp_path: Path) -> None:
    gemini = tmp_path / "gemini"

    async def main() -> None:
        first = Sim(tmp_path, store_dir=str(gemini))
        cid = await first.start()
        await first.send(cid, "use a sub-agent to look around")
        await first.idle(cid)
        children = [c for c, v in first.engine.cascades.items() if v.parent_id == cid]
        await first.engine.aclose()
        assert children
        other = Sim(tmp_path, store_dir=str(gemini))  # an unrelated conversation, stored too
        await other.engine.aclose()
        again = Sim(tmp_path, store_dir=str(gemini), resume_conversation=cid)
        try:
            assert sorted(again.engine.cascades) == sorted([cid, *children])
        finally:
            await again.engine.aclose()

    asyncio.run(main())


def test_only_a_given_gemini_dir_keeps_conversations(tmp_path: Path) -> None:
    given = parse_options(["--gemini_dir", str(tmp_path), "--conversation", "c1"], {})
    assert given.keeps_conversations
    assert given.conversation == "c1"
    # Without --gemini_dir agy-sim reads ~/.gemini but never writes a conversation there.
    assert not parse_options([], {}).keeps_conversations


def test_a_damaged_store_entry_is_ignored(tmp_path: Path) -> None:
    store = ConversationStore(tmp_path)
    path = store.path_for("c-1")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"version": 99}))
    assert store.load("c-1") is None
    path.write_text("{not json")
    assert store.load("c-1") is None
    assert store.path_for("../../etc").parent.parent == store.root


def test_stored_conversations_are_listed_as_agy_lists_them(tmp_path: Path) -> None:
    """conversation_summaries.db and cache/last_conversations.json (docs/wire.md §9)."""
    gemini = tmp_path / "gemini"

    async def main() -> None:
        sim = Sim(tmp_path, store_dir=str(gemini))
        cid = await sim.start()
        await sim.send(cid, "Remember the word apricot.\nThanks.")
        steps = await sim.idle(cid)
        await sim.engine.aclose()
        with contextlib.closing(sqlite3.connect(gemini / DB_FILE)) as db:
            rows = db.execute(f"SELECT * FROM {TABLE}").fetchall()
            columns = [c[1] for c in db.execute(f"PRAGMA table_info({TABLE})")]
        assert columns == [
            "conversation_id",
            "title",
            "preview",
            "step_count",
            "last_modified_time",
            "status",
            "agent_name",
            "workspace_uris",
        ]
        (row,) = rows  # the one with a message; an empty one (or a sub-agent) is not listed
        assert row[:2] == (cid, "Remember the word apricot.")
        assert row[2]
        assert row[3] == len(steps)
        assert row[5] == "CASCADE_RUN_STATUS_IDLE"
        workspace = sim.engine.workspace
        assert json.loads(row[7]) == [workspace.as_uri()]
        last = json.loads((gemini / LAST_FILE).read_text())
        assert last == {str(workspace): cid}

    asyncio.run(main())


def test_a_resumed_conversation_recalls_its_earlier_messages(tmp_path: Path) -> None:
    gemini = tmp_path / "gemini"

    async def main() -> None:
        first = Sim(tmp_path, store_dir=str(gemini))
        cid = await first.start()
        await first.send(cid, "Remember the word apricot.")
        await first.idle(cid)
        await first.engine.aclose()
        again = Sim(tmp_path, store_dir=str(gemini), resume_conversation=cid)
        try:
            await again.send(cid, "What did I say before?")
            steps = await again.idle(cid)
            answer = steps[-1]["plannerResponse"]["response"]
            assert answer == "Earlier you said:\n- Remember the word apricot."
        finally:
            await again.engine.aclose()

    asyncio.run(main())


def test_what_omnigent_s_built_in_harness_keys_on(tmp_path: Path) -> None:
    """A cascade StartCascade makes has its conversations/<id>.db at once (the built-in keeps
    a cascade only then) and its summary says CORTEX_TRAJECTORY_TYPE_CASCADE (the built-in
    follows a new conversation only among those)."""
    gemini = tmp_path / "gemini"

    async def main() -> None:
        sim = Sim(tmp_path, store_dir=str(gemini))
        try:
            cid = await sim.start()
            assert (gemini / "antigravity-cli" / "conversations" / f"{cid}.db").is_file()
            summary = (await sim.call("GetAllCascadeTrajectories", {}))["trajectorySummaries"]
            assert summary[cid]["trajectoryType"] == "CORTEX_TRAJECTORY_TYPE_CASCADE"
        finally:
            await sim.engine.aclose()

    asyncio.run(main())
