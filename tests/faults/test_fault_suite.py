"""The seeded fault suite: exactly once and nothing lost, whatever agy's wire does.

Trials run in chunks, each chunk one conversation of the real harness app on its own agy-sim
process (launched by the executor as agy would be); the chunks run side by side (most of a
trial is waiting for agy), each trial is one turn under a random mix
of stream drops (clean trailer, EOF, truncated or oversized envelope), stalls, 5xx bursts,
garbage bodies, agy's language server moving to a new port (before the turn, while it
streams, while a card waits, while an approved command runs) and the harness being replaced by
a new one that re-attaches and reads on from the durable cursor. `faultmix.check` states what
each trial must satisfy.

Repeat a run: ``OMNIGENT_AGY_FAULT_SEED=<seed> scripts/test -e faults``. The seed
of every run is in the failure message and in .artifacts/faults/suite.json, with the counts
(trials, faults planned, faults fired by agy-sim, failures; chunk c uses seed + c).
``OMNIGENT_AGY_FAULT_TRIALS`` sets the number of trials (default 200, split over the chunks).
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
import os
import random
import stat
import time
import traceback
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import REPO_ROOT
from faultmix import (
    SLOW_DISK,
    HarnessConversation,
    Tally,
    check,
    draw_trial,
    environment,
    play,
    token_leaks,
)

from omnigent_agy.agy.terminal import TerminalHost

pytestmark = [pytest.mark.tmux, pytest.mark.fault_suite]

CHUNKS = 4
TRIALS = int(os.environ.get("OMNIGENT_AGY_FAULT_TRIALS", "200"))
SEED = int(os.environ.get("OMNIGENT_AGY_FAULT_SEED") or random.SystemRandom().randrange(2**32))
ARTIFACTS = REPO_ROOT / ".artifacts" / "faults"


@pytest.fixture
def conversations(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[list[HarnessConversation]]:
    """CHUNKS conversations, each with its own agy-sim and fault control file; one tmux
    server and state directory for all (as one runner would have)."""
    # CHUNKS agys of one person run at once: the sweep's default cap would stop the least
    # recently used one between its turns (then relaunched by its next turn, as it should
    # be, but with another chunk's fault control file in its environment).
    env = environment(tmp_path, tmp_path / "unused.json", OMNIGENT_AGY_CLI_MAX_KEPT=str(2 * CHUNKS))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    SLOW_DISK.install(monkeypatch)
    monkeypatch.delenv("HARNESS_AGY_CLI_MODEL", raising=False)
    talks: list[HarnessConversation] = []
    try:
        for chunk in range(CHUNKS):
            faults = tmp_path / f"faults-{chunk}.json"
            faults.write_text(json.dumps({"restart": 0, "faults": []}))
            # agy inherits the environment it is launched with: each its own control file.
            monkeypatch.setenv("AGY_SIM_FAULTS", str(faults))
            talk = HarnessConversation({**env, "AGY_SIM_FAULTS": str(faults)}, faults)
            talks.append(talk)
            talk.open().turn(f"hello before the faults, {chunk}").finish()
        yield talks
    finally:
        for talk in talks:
            with contextlib.suppress(Exception):
                talk.close()
        if talks:
            talks[0].kill_agy()
        talks.clear()
        # The sockets the replaced harnesses left behind (see the test's filterwarnings) are
        # reclaimed here, under this test's filters, not in whichever test runs next.
        gc.collect()


def run_chunk(conversation: HarnessConversation, seed: int, count: int) -> Tally:
    """`count` seeded trials on one conversation; failures are collected, not raised."""
    rng = random.Random(seed)
    tally = Tally()
    fired_before = conversation.fault_counts()
    try:
        for number in range(count):
            trial = draw_trial(rng, number)
            tally.trials += 1
            tally.planned.update(trial.labels)
            started = time.monotonic()
            try:
                if trial.respawn_before:
                    conversation.respawn()
                conversation.set_faults(trial.rules)
                conversation.slow_disk(trial.slow_disk)
                played = play(conversation, trial)
                conversation.set_faults([])
                for text, turn in played:
                    check(conversation, text, turn)
            except Exception as exc:
                tally.failures.append(
                    f"seed {seed} trial {number} ({trial.scenario}, {trial.labels}): "
                    f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
                )
                conversation.set_faults([])
                if len(tally.failures) >= 3:
                    break  # enough to go on; the rest would only repeat it
            finally:
                conversation.slow_disk(0)
            spent = time.monotonic() - started
            for label in [f"scenario:{trial.scenario}", *trial.labels]:
                tally.seconds[label] += spent
    finally:
        fired = conversation.fault_counts()
        fired.subtract(fired_before)
        tally.fired.update({k: v for k, v in fired.items() if v > 0})
        tally.fired["harness_respawn"] = conversation.respawns
        tally.fired["slow_disk:renames_stalled"] = conversation.renames()
    return tally


@pytest.mark.timeout(900)
# A replaced harness leaves its event loop as a killed process would (omnigent's adapter has
# no shutdown hook that closes the executor): the garbage collector reclaims its sockets and
# warns, at some later moment of this long test.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_every_committed_step_reaches_omnigent_exactly_once(
    conversations: list[HarnessConversation], caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    caplog.set_level(logging.INFO, logger="omnigent_agy")
    counts = [TRIALS // CHUNKS + (1 if c < TRIALS % CHUNKS else 0) for c in range(CHUNKS)]
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    # Written first, so that a run cut short (pytest's timeout) still names its seed.
    (ARTIFACTS / "suite.json").write_text(json.dumps({"seed": SEED, "running": True}) + "\n")
    with ThreadPoolExecutor(max_workers=CHUNKS) as pool:
        tallies = list(
            pool.map(run_chunk, conversations, [SEED + c for c in range(CHUNKS)], counts)
        )
    total = Tally()
    for tally in tallies:
        total.add(tally)
    report = {"seed": SEED, "chunks": CHUNKS, **total.as_json()}
    (ARTIFACTS / "suite.json").write_text(json.dumps(report, indent=2) + "\n")
    assert not total.failures, (
        f"{len(total.failures)} of {total.trials} trials failed (repeat the run with "
        f"OMNIGENT_AGY_FAULT_SEED={SEED}):\n" + "\n".join(total.failures)
    )
    assert total.trials == TRIALS
    assert sum(total.fired.values()) > 0, "no fault fired: the suite tested nothing"
    assert_secrets_kept(conversations, caplog.text, tmp_path)


def assert_secrets_kept(conversations: list[HarnessConversation], logs: str, root: Path) -> None:
    """Every captured output of the run is grepped for every agy's CSRF token; the state
    directories and the tmux socket are private."""
    tokens = [talk.record().csrf_token for talk in conversations]
    assert len(set(tokens)) == len(tokens), "two agy processes got the same CSRF token"
    assert all(len(token) >= 32 for token in tokens)
    private = [Path(talk.record().log_file).parent for talk in conversations]
    texts = {"the harness's logs": logs}
    texts.update({f"events of {t.conversation_id}": "\n".join(t.seen) for t in conversations})
    socket_name = conversations[0].env["OMNIGENT_AGY_TMUX_SOCKET"]
    for token in tokens:
        leaks = token_leaks(token, texts=texts, root=root, private=private, tmux_socket=socket_name)
        assert not leaks, f"a CSRF token shows in {leaks}"
    for state in private:
        assert stat.S_IMODE(state.stat().st_mode) == 0o700, state
    tmux_socket = TerminalHost(socket_name=socket_name).socket_path
    assert stat.S_IMODE(tmux_socket.stat().st_mode) & 0o077 == 0, oct(tmux_socket.stat().st_mode)
    assert stat.S_IMODE(tmux_socket.parent.stat().st_mode) & 0o077 == 0
