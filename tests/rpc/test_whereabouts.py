"""`Whereabouts`, the one owner of where the conversation is (agy's port and the bound cascade),
and the agy record that follows it (`AgyProcess.follow`): bind, move, a `/clear`'s rotation,
callbacks, threads. No process, no tmux: the record is a real state folder."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from omnigent_agy.agy.process import AgyProcess
from omnigent_agy.agy.statedir import AgyRecord, SessionStateDir
from omnigent_agy.errors import LaunchError
from omnigent_agy.rpc.endpoint import AgyEndpoint
from omnigent_agy.rpc.pinning import Pin
from omnigent_agy.rpc.whereabouts import Whereabouts

PID = 4242


def where_at(port: int = 1000, *, locate_to: int | None = None, **kw: object) -> Whereabouts:
    async def locate() -> Pin | int:
        assert locate_to is not None
        return locate_to

    endpoint = AgyEndpoint(port=port, csrf_token="t0k", locate=locate)
    return Whereabouts(endpoint, **kw)  # type: ignore[arg-type]


def test_bind_sets_the_cascade_and_tells_every_callback() -> None:
    where = where_at()
    told: list[tuple[str, bool]] = []
    where.on_bind(lambda cascade, tui: told.append((cascade, tui)))
    assert (where.cascade_id, where.follows_tui) == (None, False)
    where.bind("c-1", follows_tui=True)
    where.bind("c-2")
    assert (where.cascade_id, where.follows_tui) == ("c-2", False)
    assert told == [("c-1", True), ("c-2", False)]


def test_a_clear_rotates_only_the_tuis_conversation_it_left() -> None:
    where = where_at(cascade_id="c-1", follows_tui=True)
    told: list[tuple[str, bool]] = []
    where.on_bind(lambda cascade, tui: told.append((cascade, tui)))
    assert not where.rotate("c-0", "c-2")  # not the conversation bound now
    assert where.rotate("c-1", "c-2")
    assert not where.rotate("c-1", "c-3")  # a second reader's stale look
    assert (where.cascade_id, told) == ("c-2", [("c-2", True)])
    rpc_started = where_at(cascade_id="r-1", follows_tui=False)
    assert not rpc_started.rotate("r-1", "r-2")  # a cascade started over RPC never moves
    assert rpc_started.cascade_id == "r-1"


def test_a_move_is_the_endpoints_and_reaches_the_callbacks() -> None:
    where = where_at(1000, locate_to=2000, cascade_id="c-1")
    moved: list[int] = []
    where.on_move(moved.append)
    assert asyncio.run(where.endpoint.relocate(1000)) == 2000
    assert (where.port, moved) == (2000, [2000])
    assert where.cascade_id == "c-1"  # a move keeps the conversation


def test_rotations_from_many_threads_end_with_one_winner_told_last() -> None:
    where = where_at(cascade_id="c-0", follows_tui=True)
    told: list[str] = []
    where.on_bind(lambda cascade, tui: told.append(cascade))
    start = threading.Barrier(8)

    def rotate(n: int) -> None:
        start.wait()
        where.rotate("c-0", f"c-{n + 1}")

    threads = [threading.Thread(target=rotate, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(told) == 1
    assert told[-1] == where.cascade_id


# --- the record follows ------------------------------------------------------------------


@pytest.fixture
def agy(tmp_path: Path) -> AgyProcess:
    state = SessionStateDir.open("conv", base=tmp_path / "state")
    state.write_record(
        AgyRecord(
            pid=PID,
            pid_create_time=0.0,
            port=1000,
            csrf_token="t0k",
            tmux_socket="s",
            tmux_session="agy-conv",
            log_file=str(tmp_path / "agy.log"),
            cascade_id="c-1",
            follows_tui=True,
        )
    )
    return AgyProcess(
        PID,
        1000,
        "t0k",
        tmp_path / "agy.log",
        None,
        state,
        "c-1",
        True,  # type: ignore[arg-type]
    )


def record(agy: AgyProcess) -> AgyRecord:
    stored = agy.state_dir.read_record()
    assert stored is not None
    return stored


def test_a_followed_agy_reads_port_and_cascade_from_the_whereabouts(agy: AgyProcess) -> None:
    where = where_at(1000, locate_to=2000, cascade_id=agy.cascade_id, follows_tui=True)
    agy.follow(where)
    where.rotate("c-1", "c-2")
    asyncio.run(where.endpoint.relocate(1000))
    assert (agy.port, agy.cascade_id, agy.follows_tui) == (2000, "c-2", True)
    assert agy.found_port == 1000  # where the launch found it, nothing more
    stored = record(agy)
    assert (stored.port, stored.cascade_id, stored.follows_tui) == (2000, "c-2", True)


def test_bind_cascade_goes_through_the_whereabouts_once_followed(agy: AgyProcess) -> None:
    agy.bind_cascade("c-0")  # before a session follows it: straight into the record
    assert (record(agy).cascade_id, agy.cascade_id, agy.follows_tui) == ("c-0", "c-0", False)
    where = where_at(1000, cascade_id=agy.cascade_id)
    agy.follow(where)
    agy.bind_cascade("c-5", follows_tui=True)
    assert (where.cascade_id, where.follows_tui) == ("c-5", True)
    assert (record(agy).cascade_id, record(agy).follows_tui) == ("c-5", True)


def test_a_move_is_not_written_into_a_stopped_or_anothers_record(agy: AgyProcess) -> None:
    where = where_at(1000, locate_to=2000, cascade_id="c-1")
    agy.follow(where)
    agy.state_dir.write_record(record(agy).as_stopped("idle", 1.0))
    asyncio.run(where.endpoint.relocate(1000))
    assert record(agy).port is None  # the stop mark stays
    agy.state_dir.clear_record()
    with pytest.raises(LaunchError):
        agy.bind_cascade("c-9")
