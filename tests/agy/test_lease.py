"""The activity lease with several turns of one process at once (no agy, no tmux).

omnigent replaces an executor after an error and the new one runs the next turn, and a turn's
end is declared when its generator is finalised, which can be after the next turn began. The
lease must say "a turn runs" while any does, whatever order the ends come in: a sweep stops an
agy whose lease says otherwise.
"""

from __future__ import annotations

import random
import threading
from pathlib import Path

from omnigent_agy.agy.keep import TurnLease, read_activity
from omnigent_agy.agy.statedir import SessionStateDir


def test_a_turns_late_end_does_not_hide_the_next_turn(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    before, after = TurnLease(state), TurnLease(state)  # the replaced executor's, the new one's
    before.begin_turn()
    after.begin_turn()
    before.end_turn()  # its generator finalised after the next turn began
    assert read_activity(state).turn_running
    after.end_turn()
    assert not read_activity(state).turn_running


def test_an_end_without_a_begin_changes_nothing(tmp_path: Path) -> None:
    state = SessionStateDir.open("conv", base=tmp_path)
    running, stray = TurnLease(state), TurnLease(state)
    running.begin_turn()
    stray.end_turn()
    running.end_turn()
    running.end_turn()  # twice
    assert not read_activity(state).turn_running
    running.begin_turn()
    stray.end_turn()
    assert read_activity(state).turn_running


def test_a_turn_left_to_agy_is_inherited_once_by_the_next(tmp_path: Path) -> None:
    """A turn whose host went away is left to agy (`end_turn(left=True)`): the lease says no
    turn runs (a sweep may stop agy for idleness, as after a crash), and the next turn, in
    this process or another, inherits it; the one after that does not."""
    state = SessionStateDir.open("conv", base=tmp_path)
    left, nxt, later = TurnLease(state), TurnLease(state), TurnLease(state)
    assert not left.begin_turn()
    left.end_turn(left=True)
    assert not read_activity(state).turn_running
    assert nxt.begin_turn()
    nxt.end_turn()
    assert not later.begin_turn()
    later.end_turn()


def test_many_threads_beginning_and_ending_turns_leave_the_lease_right(tmp_path: Path) -> None:
    """Every thread's turns overlap the others'; while one runs the lease says so, and at the
    end it says none does; no write fails (one temp name per process made them collide)."""
    state = SessionStateDir.open("conv", base=tmp_path)
    errors: list[BaseException] = []
    start = threading.Barrier(8)
    seen_idle_inside: list[int] = []

    def turns(seed: int) -> None:
        rng = random.Random(seed)
        lease = TurnLease(state)
        start.wait()
        try:
            for _ in range(40):
                lease.begin_turn()
                if not read_activity(state).turn_running:
                    seen_idle_inside.append(seed)
                if rng.random() < 0.5:
                    threading.Event().wait(0.001)
                lease.end_turn()
        except BaseException as exc:  # every failure is the finding
            errors.append(exc)

    threads = [threading.Thread(target=turns, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[:3]
    assert not seen_idle_inside, "a turn ran while the lease said none did"
    assert not read_activity(state).turn_running
    assert sorted(p.name for p in state.path.iterdir()) == [
        "activity.json",
        "gemini",
        "lifecycle.lock",
    ]
