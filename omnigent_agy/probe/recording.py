"""The probe's recording: what the person's agy answered, redacted, in the fixtures' format.

Written to one folder (docs/probe.md says how to share it), laid out like
``fixtures/recorded_steps/sim/`` so the simulator's conformance checks and the mapper's tests
read it as they read the project's own captures (fixtures/recorded_steps/README.md):

- ``<turn>.poll.json``: ``{"steps": [{"idx", "step"}…]}``, every state of each step a poll saw;
- ``<turn>.stream.json``: the StreamAgentStateUpdates frames of the turn, in order;
- ``calls.json``: every call the probe made, in order, with agy's answer or error;
- ``log.txt``: the lines of agy's log the probe read;
- ``probe.json``: agy's version, the first lines of ``agy changelog``, the findings, and what
  was redacted;
- ``README.md``: the table as the probe printed it.

Everything goes through the run's `redact.Redactor` as it is recorded; a secret learnt later
(the CSRF token once agy started, the person's e-mail and name from the account answer) is
then hidden in what was recorded before, when it is written; `write` then looks at what it
wrote once more (`redact.leaks`) and removes the whole folder if anything slipped through.
"""

from __future__ import annotations

import json
import platform
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from omnigent_agy.errors import RecordingLeakError, RpcError
from omnigent_agy.probe.facts import Finding
from omnigent_agy.probe.held_values import account_values
from omnigent_agy.probe.redact import Redactor, account_shape, leaks
from omnigent_agy.reading.steps import obj, step_status

__all__ = ["ACCOUNT_METHODS", "FORMAT", "Recorder", "RecordingLeakError"]

FORMAT: Final = 1
# Answers about the person's account: only their shape is kept.
ACCOUNT_METHODS: Final = frozenset({"GetUserStatus"})


@dataclass(slots=True)
class _RecordedTurn:
    frames: list[object] = field(default_factory=list)
    polled: dict[tuple[int, str], object] = field(default_factory=dict)


class Recorder:
    """Collects one probe run's answers, redacted as they come."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._calls: list[dict[str, Any]] = []
        self._turns: dict[str, _RecordedTurn] = {}
        self._log: list[str] = []
        self._printed: dict[str, list[str]] = {}

    @property
    def redactor(self) -> Redactor:
        return self._redactor

    def add_secret(self, secret: str) -> None:
        """From now on (in what was recorded before too, when it is written, and in
        `write`'s last look) `secret` is replaced in any of its forms."""
        if secret and secret not in self._redactor.secrets:
            self._redactor = replace(self._redactor, secrets=(*self._redactor.secrets, secret))

    def answers(self) -> list[tuple[str, object]]:
        """(method, answer) of every call agy answered, as recorded (redacted)."""
        return [(c["method"], c["answer"]) for c in self._calls if "answer" in c]

    def call(
        self,
        method: str,
        request: Mapping[str, Any],
        *,
        answer: Mapping[str, Any] | None = None,
        error: RpcError | None = None,
    ) -> None:
        entry: dict[str, Any] = {"method": method, "request": self._redactor.value(request)}
        if answer is not None:
            shown: object = answer
            if method in ACCOUNT_METHODS:
                # Its e-mail and the person's names may come back anywhere else too.
                for value in account_values(answer):
                    self.add_secret(value)
                shown = account_shape(answer)
            entry["answer"] = self._redactor.value(shown)
        if error is not None:
            entry["error"] = {
                "code": error.connect_code.value,
                "message": self._redactor.text(error.message),
                "httpStatus": error.http_status,
            }
        self._calls.append(entry)

    def frame(self, turn: str, frame: Mapping[str, Any]) -> None:
        self._turns.setdefault(turn, _RecordedTurn()).frames.append(self._redactor.value(frame))

    def poll(self, turn: str, offset: int, steps: Sequence[object]) -> None:
        """A poll's steps: each step's latest state per status is kept."""
        polled = self._turns.setdefault(turn, _RecordedTurn()).polled
        for index, step in enumerate(steps, offset):
            polled[index, str(step_status(obj(step)))] = self._redactor.value(step)

    def log_lines(self, lines: Iterable[str]) -> None:
        self._log += [self._redactor.text(line) for line in lines]

    def printed(self, command: str, lines: Iterable[str]) -> None:
        """What an agy command printed (``agy changelog``'s first lines), for probe.json."""
        self._printed[command] = [self._redactor.text(line) for line in lines]

    def write(
        self,
        folder: Path,
        *,
        agy_version: str,
        findings: Sequence[Finding],
        table: str,
        private_paths: Iterable[Path],
    ) -> Path:
        """Write the recording into `folder` (created; must not exist or be empty); raises
        RecordingLeakError (and removes it) when the last look finds anything private."""
        folder.mkdir(parents=True, exist_ok=True)
        if any(folder.iterdir()):
            raise FileExistsError(f"{folder} is not empty; choose a new folder for the recording")
        try:
            self._write_files(folder, agy_version, findings, table)
            found = leaks(folder, secrets=self._redactor.secrets, paths=private_paths)
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        if found:
            shutil.rmtree(folder, ignore_errors=True)
            raise RecordingLeakError("; ".join(found))
        return folder

    def _write_files(
        self, folder: Path, agy_version: str, findings: Sequence[Finding], table: str
    ) -> None:
        hide = self._redactor.hide_all
        for name, turn in self._turns.items():
            if turn.polled:
                entries = [
                    {"idx": idx, "step": hide(step)}
                    for (idx, _), step in sorted(turn.polled.items(), key=lambda item: item[0][0])
                ]
                _dump(folder / f"{name}.poll.json", {"steps": entries})
            if turn.frames:
                _dump(folder / f"{name}.stream.json", hide(turn.frames))
        _dump(folder / "calls.json", hide(self._calls))
        log = "".join(f"{self._redactor.hide(line)}\n" for line in self._log)
        (folder / "log.txt").write_text(log, "utf-8")
        header = {
            "format": FORMAT,
            "agyVersion": self._redactor.text(agy_version),
            "agyPrinted": self._printed,
            "recordedAt": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "system": f"{platform.system()} {platform.machine()}",
            "redacted": "CSRF token, account, your sign-in's tokens, e-mail and Google Cloud "
            "project (in any case or encoding), e-mail addresses, OAuth tokens, every path "
            "outside the probe's scratch workspace (shown as /home/user/project)",
            "findings": [
                {**asdict(finding), "verdict": finding.verdict.value, "fact": finding.fact}
                for finding in findings
            ],
        }
        _dump(folder / "probe.json", self._redactor.value(header))
        (folder / "README.md").write_text(_readme(self._redactor.text(table)), "utf-8")


def _dump(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def _readme(table: str) -> str:
    return (
        "# A recording of `omnigent-agy probe`\n\n"
        "What one agy answered to the probe of omnigent-agy (docs/probe.md), redacted: no CSRF\n"
        "token, no account, no e-mail address or OAuth token, no path outside the probe's\n"
        "scratch workspace (shown as `/home/user/project`). The `*.poll.json` and\n"
        "`*.stream.json` files have the format of `fixtures/recorded_steps/sim/`.\n\n"
        f"```\n{table}\n```\n"
        f"\nRecorded with Python {sys.version_info.major}.{sys.version_info.minor}.\n"
    )
