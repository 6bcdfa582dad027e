"""An omnigent-agy plugin for bench_floor.py only: a turn without agy.

Its ``agy_run_turn`` takes every turn from the built-in one (the hook is first-result): no agy
starts, nothing is read or mapped; it hands omnigent the long answer bench_scale.py's agy-sim
streams (120 parts naming the conversation, one every so many seconds: the number in the file
``null_agy.delay`` beside this module) and ends the turn. What is left between that hand and
the client is omnigent's own delivery, which the plugin's timing log
(``OMNIGENT_AGY_TIMING_LOG``) and the client's arrivals measure.

bench_floor.py copies this file into a folder of its own with a ``.dist-info`` naming it in
the ``omnigent_agy`` entry-point group, and puts that folder on the host's ``PYTHONPATH``, so
the harness processes the host starts load it as any installed plugin. Never installed.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pluggy
from omnigent.inner.executor import TextChunk, TurnComplete

from agy_sim.scenarios import long_answer_parts

hookimpl = pluggy.HookimplMarker("omnigent_agy")

PARTS = 120
_TAG = re.compile(r"long answer \[(c\d+)\]")  # bench_scale.prompt; a hello names its tag too


@hookimpl
def agy_run_turn(executor: object, call: object) -> AsyncIterator[object]:
    del executor
    messages = getattr(call, "messages", [])
    text = json.dumps(messages[-1] if messages else {})
    return _answer(text)


async def _answer(text: str) -> AsyncIterator[object]:
    # A file, not a variable: omnigent's host passes its runners only some of its environment.
    delay = float(Path(__file__).with_name("null_agy.delay").read_text(encoding="utf-8"))
    tag = _TAG.search(text)
    if tag is None:  # the hello that starts each conversation's harness
        yield TextChunk(text="Hello.")
        yield TurnComplete(response="Hello.")
        return
    parts = long_answer_parts(f"[{tag.group(1)}]", PARTS)
    for part in parts:
        await asyncio.sleep(delay)
        yield TextChunk(text=part)
    yield TurnComplete(response="".join(parts))
