"""Checks around the turns: `/clear` typed in agy's terminal, and a conversation resumed from a
copy with ``--conversation`` (docs/wire.md §7, §9).

`/clear` costs no turn: the probe types it into its agy's TUI (as a person attached to the
tmux session would) and looks for the new root conversation the plugin's reader would
follow (`reading.rotation`). Resuming stops the probe's agy, copies its private folder (as
omnigent-agy would copy a person's conversation to resume it) and starts agy on the copy with
``--conversation <id>``: the history must come back.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from typing import Final

from omnigent_agy.agy.launcher import CONVERSATION_FLAG
from omnigent_agy.errors import AgyError, DiscoveryError, ProbeError, RpcError
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.scratch import ProbeAgy, Started
from omnigent_agy.reading.rotation import RotationWatch
from omnigent_agy.rpc.client import RetryPolicy, RpcClient

__all__ = ["check_clear", "check_resume"]

_CLEAR_DEADLINE: Final = 20.0
_LOOK_EVERY: Final = 0.5


async def check_clear(client: RpcClient, started: Started, following: str) -> list[Finding]:
    """`/clear` in the TUI makes a new root conversation (§7), which the plugin follows; the
    old one stays readable."""
    fact, section = "/clear: a new conversation", "§7"
    expected = "a new root conversation in GetAllCascadeTrajectories within 20 s"
    watch = RotationWatch()
    try:
        await watch.look(client, following)  # the first look only learns what exists
        await asyncio.to_thread(started.agy.terminal.send_text, "/clear")
        fresh = None
        stop_at = time.monotonic() + _CLEAR_DEADLINE
        while fresh is None and time.monotonic() < stop_at:
            await asyncio.sleep(_LOOK_EVERY)
            fresh = await watch.look(client, following)
    except (RpcError, AgyError) as exc:
        return [Finding(fact, FactVerdict.FAIL, expected, str(exc), section)]
    if fresh is None:
        seen = "none: the plugin would keep sending to the conversation left behind"
        return [Finding(fact, FactVerdict.FAIL, expected, seen, section)]
    findings = [Finding(fact, FactVerdict.PASS, expected, f"{fresh[:8]}…", section)]
    expected = "the old conversation still answers GetConversationMetadata"
    try:
        await client.get_conversation_metadata(following)
        findings.append(
            Finding("/clear: the old one stays", FactVerdict.PASS, expected, "200", section)
        )
    except RpcError as exc:
        findings.append(
            Finding("/clear: the old one stays", FactVerdict.INFO, expected, str(exc), section)
        )
    return findings


async def check_resume(
    agys: ProbeAgy, started: Started, cascade_id: str, steps_before: int
) -> tuple[list[Finding], Started | None]:
    """Stop agy, copy its private folder, start agy on the copy with ``--conversation``:
    the conversation and its steps come back (§7, §9)."""
    fact, section = "resume: --conversation on a copy", "§7, §9"
    expected = f"agy starts on conversation {cascade_id[:8]}… with its {steps_before} steps"
    await agys.stop(started)
    copy = agys.scratch.state("probe-copy")
    shutil.copytree(started.state.gemini_dir, copy.gemini_dir, symlinks=True, dirs_exist_ok=True)
    try:
        resumed = await agys.start("probe-copy", extra_flags=(CONVERSATION_FLAG, cascade_id))
    except (DiscoveryError, ProbeError, AgyError) as exc:
        seen = f"agy did not start: {exc}"
        return [Finding(fact, FactVerdict.FAIL, expected, seen, section)], None
    agy = resumed.agy
    async with RpcClient(
        port=agy.port,
        csrf_token=agy.csrf_token,
        certificate=resumed.pin.certificate,
        retry=RetryPolicy(attempts=1),
    ) as client:
        try:
            await client.get_conversation_metadata(cascade_id)
            steps = await client.get_cascade_trajectory_steps(cascade_id)
        except RpcError as exc:
            seen = f"agy started, but not on the conversation: {exc}"
            return [Finding(fact, FactVerdict.FAIL, expected, seen, section)], resumed
    ok = len(steps) >= steps_before
    seen = f"{len(steps)} steps back"
    return [
        Finding(fact, FactVerdict.PASS if ok else FactVerdict.FAIL, expected, seen, section)
    ], resumed
