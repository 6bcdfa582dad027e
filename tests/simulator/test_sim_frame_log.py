"""agy-sim's frame log (``--sim-frame-log``, for benchmarks/bench_scale.py) and the scenario
the scale benchmark runs: a long answer naming its conversation, then a gated command."""

from __future__ import annotations

import json
from pathlib import Path

from test_sim_engine import Sim, Subscriber, run_sim

from agy_sim.options import parse_options
from agy_sim.scenarios import long_answer_parts
from agy_sim.triggers import choose

TEXT = "Give me a long answer [c07], then run: echo done-c07"


def test_the_scale_prompt_picks_the_long_answer_then_the_command() -> None:
    assert choose(TEXT)[0] == "long_answer_then_command"
    assert choose("Give me a long answer about HTTP/2.")[0] == "long_answer"
    assert choose("run: echo hi")[0] == "approval_command"
    assert long_answer_parts(TEXT, 2) == [
        "Part 1 of a long simulated answer for c07. ",
        "Part 2 of a long simulated answer for c07. ",
    ]
    assert long_answer_parts("a long answer", 1) == ["Part 1 of a long simulated answer. "]


def test_each_frame_sent_is_logged_with_its_answer_lengths(tmp_path: Path) -> None:
    log = tmp_path / "frames.jsonl"
    workspace = tmp_path / "project"
    workspace.mkdir()
    parts = long_answer_parts(TEXT, 5)

    async def body(sim: Sim) -> None:
        cid = await sim.start()
        sub = Subscriber(sim, cid)
        await sim.send(cid, TEXT)
        index, _ = await sim.waiting(cid)  # the long answer is done; the command's gate waits
        await sim.answer(cid, index, permission={"allow": True})
        await sim.idle(cid)
        await sub.until(lambda frames: any(f["update"].get("fullyIdle") for f in frames))
        sub.task.cancel()
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert len(lines) == len(sub.frames)
        assert {line["cascade"] for line in lines} == {cid}
        assert [line["ns"] for line in lines] == sorted(line["ns"] for line in lines)
        lengths = [length for line in lines for _, length in line["answers"]]
        # The long answer grows part by part to its whole length.
        assert sum(map(len, parts)) in lengths
        assert len(parts[0]) in lengths

    run_sim(
        workspace,
        body,
        frame_log=str(log),
        long_answer_chunks=5,
        long_token_interval=0.001,
    )


def test_the_flag_and_the_variable_name_the_log(tmp_path: Path) -> None:
    flag = parse_options(["--sim-frame-log", str(tmp_path / "a")], {}, cwd=tmp_path)
    assert flag.frame_log == tmp_path / "a"
    variable = parse_options([], {"AGY_SIM_FRAME_LOG": str(tmp_path / "b")}, cwd=tmp_path)
    assert variable.frame_log == tmp_path / "b"
    assert parse_options([], {}, cwd=tmp_path).frame_log is None
