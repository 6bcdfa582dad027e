"""agy-sim's fault plan: what can go wrong between a client and agy, on demand.

The reliability tests need an agy that misbehaves in controlled ways while it runs. A
``FaultPlan`` is a list of ``FaultRule`` values plus a restart generation; it comes from
``--sim-fault`` specs given at start and from a JSON control file (``--sim-faults PATH``)
that a test may rewrite at any time: ``FaultSource.current()`` re-reads it on every request.

Control file (every key optional)::

    {"restart": 1, "restart_pause": 8.0,
     "faults": [
       {"kind": "drop_stream", "method": "StreamAgentStateUpdates", "after_frames": 2},
       {"kind": "stall_stream", "after_frames": 0, "times": 1},
       {"kind": "http_error", "method": "Heartbeat", "status": 503, "times": 2},
       {"kind": "garbage", "method": "GetAllCascadeTrajectories"},
       {"kind": "delay", "seconds": 1.5},
       {"kind": "rename_field", "method": "StreamAgentStateUpdates",
        "field": "modifiedResponse", "to": "modifiedText"}]}

``method`` is a method name or ``"*"`` (default). ``times`` bounds how many requests a rule
fires on (absent: every request); a rule's count is keyed by its value, so rewriting the
file with the same rule keeps counting and a new ``"id"`` re-arms it. Raising ``restart``
asks the process to restart its server on a new port (process.py watches it);
``restart_pause`` seconds pass between the old port closing and the new one answering (a
language server slow to come back, as under load).

The control file may also be a *folder* of them: each agy-sim then follows its own file in it,
named after its ``--gemini_dir`` (``control_file_for``). Many agys launched with one
environment (a host's, for all its conversations, each with a gemini dir of its own) are so
controlled one by one; a missing file is no fault.

``fault_injector.FaultInjector`` is the ASGI middleware that applies the plan around the
connect app.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from agy_sim.errors import SimError

_log = logging.getLogger(__name__)

ANY_METHOD: Final = "*"


class FaultConfigError(SimError):
    """A fault spec or control file that cannot be understood."""


class FaultKind(StrEnum):
    """What a rule does to a matching request."""

    DROP_STREAM = "drop_stream"  # end the response after K data frames, without the trailer
    STALL_STREAM = "stall_stream"  # stop sending after K data frames, keep the stream open
    HTTP_ERROR = "http_error"  # answer an HTTP error status instead of the method
    GARBAGE = "garbage"  # answer 200 with bytes no decoder accepts
    DELAY = "delay"  # wait before handing the request on
    # Not agy's behaviour: a hostile or broken server whose error text repeats the request's
    # headers (the CSRF token among them), so tests can prove no error text carries it.
    ECHO_HEADERS = "echo_headers"
    # An agy of another shape (what `omnigent-agy probe` must notice, `reshape`): a key of the
    # answers renamed or left out, and an agy that checks no CSRF token.
    RENAME_FIELD = "rename_field"  # every key `field` of the answer's JSON becomes `to`
    DROP_FIELD = "drop_field"  # every key `field` of the answer's JSON is left out
    NO_CSRF = "no_csrf"  # the CSRF header is not checked


class DropMode(StrEnum):
    """How a dropped stream ends.

    hypercorn's ASGI interface cannot send RST_STREAM: an app that stops without ending
    the body leaves the HTTP/2 stream open (that is what ``stall_stream`` models). So a
    drop ends the stream cleanly but without connect's end-of-stream envelope (docs/wire.md §2)
    (``eof``), in the middle of an envelope (``truncate``), with a proper end-of-stream
    envelope as if agy had finished (``trailer``), or with an envelope header promising more
    than any client accepts (``oversize``).
    """

    EOF = "eof"
    TRUNCATE = "truncate"
    TRAILER = "trailer"
    OVERSIZE = "oversize"


@dataclass(frozen=True, slots=True)
class FaultRule:
    """One fault: ``kind`` applied to requests for ``method`` (or every method)."""

    kind: FaultKind
    method: str = ANY_METHOD
    after_frames: int = 0
    mode: DropMode = DropMode.EOF
    status: int = 503
    times: int | None = None
    seconds: float = 0.0
    pad: int = 0
    text: bool = False
    field: str = ""
    to: str = ""
    id: str = ""

    def matches(self, method: str) -> bool:
        return self.method in (ANY_METHOD, method)


@dataclass(frozen=True, slots=True)
class FaultPlan:
    """The faults in force, and the restart generation the process should be at."""

    rules: tuple[FaultRule, ...] = ()
    restart: int = 0
    restart_pause: float = 0.0


NO_FAULTS: Final = FaultPlan()

_INT_KEYS: Final = frozenset({"after_frames", "status", "times", "pad"})
_KNOWN_KEYS: Final = frozenset(
    {"kind", "method", "mode", "seconds", "id", "text", "field", "to"} | _INT_KEYS
)


def parse_rule(raw: Mapping[str, object]) -> FaultRule:
    """One rule from its JSON object (control file) or its spec (command line)."""
    unknown = set(raw) - _KNOWN_KEYS
    if unknown:
        raise FaultConfigError(
            f"unknown fault keys {sorted(unknown)}; known: {sorted(_KNOWN_KEYS)}"
        )
    try:
        kind = FaultKind(str(raw["kind"]))
        mode = DropMode(str(raw.get("mode", DropMode.EOF)))
    except (KeyError, ValueError) as exc:
        raise FaultConfigError(f"bad fault kind or mode in {dict(raw)}: {exc}") from exc
    ints = {key: _as_int(raw[key], key) for key in _INT_KEYS if key in raw}
    seconds = _as_float(raw.get("seconds", 0.0), "seconds")
    if any(value < 0 for value in ints.values()) or seconds < 0:
        raise FaultConfigError(f"negative value in fault {dict(raw)}")
    status = ints.get("status", 503)
    if not 400 <= status <= 599:
        raise FaultConfigError(f"http_error status must be 4xx or 5xx, not {status}")
    field, to = str(raw.get("field", "")), str(raw.get("to", ""))
    if kind in (FaultKind.RENAME_FIELD, FaultKind.DROP_FIELD) and not field:
        raise FaultConfigError(f"{kind} needs the field to change: {dict(raw)}")
    if kind is FaultKind.RENAME_FIELD and not to:
        raise FaultConfigError(f"rename_field needs the new name (to=…): {dict(raw)}")
    return FaultRule(
        kind=kind,
        method=str(raw.get("method", ANY_METHOD)),
        after_frames=ints.get("after_frames", 0),
        mode=mode,
        status=status,
        times=ints.get("times"),
        seconds=seconds,
        pad=ints.get("pad", 0),
        text=str(raw.get("text", "")).lower() in ("1", "true", "yes"),
        field=field,
        to=to,
        id=str(raw.get("id", "")),
    )


def control_file_for(folder: Path, gemini_dir: Path) -> Path:
    """The control file in `folder` that the agy-sim running with `gemini_dir` follows."""
    digest = hashlib.sha256(str(gemini_dir.absolute()).encode()).hexdigest()[:16]
    return folder / f"{digest}.json"


def parse_spec(spec: str) -> FaultRule:
    """A rule from the command line: ``kind[:key=value,...]``, e.g. ``delay:seconds=2``."""
    kind, _, rest = spec.strip().partition(":")
    raw: dict[str, object] = {"kind": kind.strip()}
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise FaultConfigError(f"fault spec {spec!r}: expected key=value, got {item!r}")
        raw[key.strip()] = value.strip()
    return parse_rule(raw)


def parse_plan(raw: object) -> FaultPlan:
    """A plan from the control file's JSON value."""
    if not isinstance(raw, dict):
        raise FaultConfigError("the fault control file must hold a JSON object")
    faults = raw.get("faults", [])
    if not isinstance(faults, list) or not all(isinstance(item, dict) for item in faults):
        raise FaultConfigError('"faults" must be a list of objects')
    pause = _as_float(raw.get("restart_pause", 0.0), "restart_pause")
    if pause < 0:
        raise FaultConfigError(f"restart_pause must not be negative, not {pause}")
    return FaultPlan(
        rules=tuple(parse_rule(item) for item in faults),
        restart=_as_int(raw.get("restart", 0), "restart"),
        restart_pause=pause,
    )


def _as_int(value: object, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise FaultConfigError(f"{key} must be an integer, not {value!r}")
    try:
        return int(value)
    except ValueError as exc:
        raise FaultConfigError(f"{key} must be an integer, not {value!r}") from exc


def _as_float(value: object, key: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise FaultConfigError(f"{key} must be a number, not {value!r}")
    try:
        return float(value)
    except ValueError as exc:
        raise FaultConfigError(f"{key} must be a number, not {value!r}") from exc


@dataclass(slots=True)
class FaultSource:
    """Start-up rules plus the control file, re-read each time it is asked.

    A file that is missing means no file faults. A file that cannot be parsed (for
    instance caught half-written) keeps the last good plan and is logged once per text.
    """

    static_rules: tuple[FaultRule, ...] = ()
    control_file: Path | None = None
    _last_good: FaultPlan = NO_FAULTS
    _reported: str = ""

    def current(self) -> FaultPlan:
        file_plan = self._read_file()
        return FaultPlan(
            rules=self.static_rules + file_plan.rules,
            restart=file_plan.restart,
            restart_pause=file_plan.restart_pause,
        )

    def _read_file(self) -> FaultPlan:
        if self.control_file is None:
            return NO_FAULTS
        try:
            text = self.control_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            self._last_good = NO_FAULTS
            return NO_FAULTS
        except OSError as exc:
            _log.warning("fault control file unreadable, keeping last plan: %s", exc)
            return self._last_good
        try:
            self._last_good = parse_plan(json.loads(text)) if text.strip() else NO_FAULTS
        except (ValueError, FaultConfigError) as exc:
            if text != self._reported:
                self._reported = text
                _log.warning("fault control file not understood, keeping last plan: %s", exc)
        return self._last_good
