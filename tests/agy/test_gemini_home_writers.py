"""Seeding one private gemini dir from several writers at once.

Two seeders of one folder happen: the host's readiness and `omnigent-agy doctor` both seed the
doctor's folder, a harness process replacing a killed one seeds the conversation's while the
old one's turn still does. Each writes the person's files whole (write_private_file) and links
their skills and plugins folders; no seeder may fail on another's link, and the links must
never be missing for agy, which reads them at any time.
"""

from __future__ import annotations

import threading
from pathlib import Path

from agy.test_private_writes import run_threads
from gemini_home import make_person_gemini

from omnigent_agy.agy.gemini_home import GeminiSeed, seed_gemini_dir

THREADS = 8
SEEDS = 40


class LinkWatcher(threading.Thread):
    """Checks over and over that the skills link, once made, is there and leads to one of the
    person's skills folders."""

    def __init__(self, link: Path, reals: set[Path]) -> None:
        super().__init__(daemon=True)
        self.link, self.reals = link, reals
        self.done = threading.Event()
        self.seen = 0
        self.bad: str | None = None

    def run(self) -> None:
        while not self.done.is_set() and self.bad is None:
            try:
                led_to = self.link.resolve(strict=True) if self.link.is_symlink() else None
            except FileNotFoundError:
                led_to = None
            if led_to is None:
                if self.seen:
                    self.bad = "the skills link was missing"
                continue
            if led_to not in self.reals:
                self.bad = f"the skills link led to {led_to}"
            self.seen += 1


def test_seeders_of_one_folder_at_once_all_succeed_and_the_links_stay(tmp_path: Path) -> None:
    """Every seeder at once, round after round; the person's skills folder moves between two
    places every round (a dotfiles checkout switched), so each round links anew."""
    people = [
        make_person_gemini(tmp_path / f"person-{n}" / ".gemini", skills=("review",))
        for n in range(2)
    ]
    target = tmp_path / "state" / "gemini"
    reals = {(person.path / "skills").resolve() for person in people}
    watcher = LinkWatcher(target / "skills", reals)
    watcher.start()
    rounds = [threading.Barrier(THREADS) for _ in range(SEEDS)]

    def seed_often(index: int) -> None:
        try:
            for number, barrier in enumerate(rounds):
                barrier.wait()
                source = people[number % 2].path
                fresh = (index + number) % 2 == 0
                seed_gemini_dir(target, GeminiSeed(source=source), fresh=fresh)
        except BaseException:
            for barrier in rounds:
                barrier.abort()  # the others stop instead of waiting for this seeder
            raise

    errors = run_threads(THREADS, seed_often)
    watcher.done.set()
    watcher.join()
    failed = [e for e in errors if not isinstance(e, threading.BrokenBarrierError)]
    assert not failed, [f"{type(e).__name__}: {e}" for e in failed[:3]]
    assert watcher.bad is None, watcher.bad
    assert watcher.seen > 0
    assert (target / "skills").resolve() == (people[(SEEDS - 1) % 2].path / "skills").resolve()
    left = [p.name for p in (target / "skills").parent.iterdir() if p.name.startswith(".skills")]
    assert left == []
