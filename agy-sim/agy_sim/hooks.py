"""agy's hooks: commands from ``hooks.json`` run at agy's events (docs/wire.md §9, agy ≥ 1.4).

Reported: agy runs hooks from the ``hooks.json`` of its customization roots — the person's
``config/hooks.json`` under the gemini dir and, in a trusted workspace, the workspace's own
``.agents/hooks.json`` — at ``SessionStart``, ``PreInvocation``, ``PreToolUse``,
``PostToolUse``, ``PostInvocation`` and ``Stop``, synchronously, as commands; a ``PreToolUse``
hook answers ``{decision, reason, overwrite, permission_overrides}`` and a bare ``{}`` denies.

**Guesses** (docs/simulator.md), none recorded from a real agy:

- the file's shape: ``{"hooks": {"<Event>": [{"matcher": "<tool>", "hooks": [{"type":
  "command", "command": "<shell command>", "timeout": <seconds>}]}]}}``; ``matcher`` (a tool
  name, ``*`` or absent for every tool) only for the tool events;
- a command runs through ``sh -c``, in the workspace (the person's hooks in their config dir,
  whose commands assume it as cwd, §1), with the event as JSON on its stdin
  (``hook_event_name``, ``cwd``, ``session_id``, and ``tool_name``/``tool_input`` for the tool
  events) and the agent's environment (`child_env`);
- a ``PreToolUse`` decision ``allow`` (or ``approve``) lets the tool through; anything else —
  ``deny``, ``block``, a bare ``{}``, output that is not JSON, a failing or timed-out hook —
  denies it, with the hook's ``reason``;
- the files are read when agy starts (a workspace's when it becomes trusted), as its MCP
  servers are.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

__all__ = [
    "EVENTS",
    "HookDecision",
    "Hooks",
    "around_invocation",
    "read_hooks_file",
]

_log = logging.getLogger("agy_sim.hooks")

EVENTS: Final = (
    "SessionStart",
    "PreInvocation",
    "PreToolUse",
    "PostToolUse",
    "PostInvocation",
    "Stop",
)
WORKSPACE_HOOKS: Final = Path(".agents") / "hooks.json"
PERSON_HOOKS: Final = Path("config") / "hooks.json"
_DEFAULT_TIMEOUT: Final = 60.0
_ALLOW: Final = frozenset({"allow", "approve"})


@dataclass(frozen=True, slots=True)
class _Hook:
    event: str
    command: str
    cwd: Path
    matcher: str | None
    timeout: float


@dataclass(frozen=True, slots=True)
class HookDecision:
    """What the ``PreToolUse`` hooks decided: allowed, or denied with a reason."""

    allowed: bool
    reason: str = ""


def read_hooks_file(path: Path, cwd: Path) -> list[_Hook]:
    """The hooks of one ``hooks.json`` (the shape guessed above); [] without a readable one."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    events = document.get("hooks") if isinstance(document, dict) else None
    hooks: list[_Hook] = []
    for event, groups in (events if isinstance(events, dict) else {}).items():
        if event not in EVENTS or not isinstance(groups, list):
            continue
        for group in groups:
            if not isinstance(group, dict) or not isinstance(group.get("hooks"), list):
                continue
            matcher = group.get("matcher")
            for hook in group["hooks"]:
                command = hook.get("command") if isinstance(hook, dict) else None
                if not isinstance(command, str) or hook.get("type", "command") != "command":
                    continue
                timeout = hook.get("timeout")
                seconds = float(timeout) if isinstance(timeout, int | float) else _DEFAULT_TIMEOUT
                where = matcher if isinstance(matcher, str) and matcher != "*" else None
                hooks.append(_Hook(event, command, cwd, where, seconds))
    return hooks


class Hooks:
    """The hooks agy runs: the person's, and a trusted workspace's once `trust` is called."""

    def __init__(self, gemini_dir: Path, workspace: Path, *, enabled: bool) -> None:
        self._gemini_dir = gemini_dir
        self._workspace = workspace
        self._enabled = enabled
        self._hooks = (
            read_hooks_file(gemini_dir / PERSON_HOOKS, gemini_dir / "config") if enabled else []
        )
        self.env: Mapping[str, str] = {}
        self.session_id = ""

    async def start(self, env: Mapping[str, str], *, session_id: str) -> None:
        """agy is up: the ``SessionStart`` hooks run, with the agent's environment."""
        self.env, self.session_id = env, session_id
        await self.fire("SessionStart")

    def trust(self) -> None:
        """The workspace is trusted: its own hooks run from now on."""
        if self._enabled:
            found = read_hooks_file(self._workspace / WORKSPACE_HOOKS, self._workspace)
            self._hooks += found
            _log.info("workspace hooks: %d read from %s", len(found), WORKSPACE_HOOKS)

    async def fire(
        self, event: str, *, tool: str | None = None, tool_input: object = None
    ) -> list[tuple[int | None, str]]:
        """Run the hooks of ``event`` (for ``tool``) in turn; each one's exit status (None:
        timed out or not started) and stdout."""
        results = []
        for hook in self._hooks:
            if hook.event != event or (tool is not None and hook.matcher not in (None, tool)):
                continue
            payload: dict[str, Any] = {
                "hook_event_name": event,
                "cwd": str(self._workspace),
                "session_id": self.session_id,
            }
            if tool is not None:
                payload.update(tool_name=tool, tool_input=tool_input)
            results.append(await self._run(hook, payload))
        return results

    async def pre_tool_use(self, tool: str, tool_input: object) -> HookDecision:
        """Whether the ``PreToolUse`` hooks let ``tool`` run (every one of them must allow)."""
        for status, out in await self.fire("PreToolUse", tool=tool, tool_input=tool_input):
            try:
                answer = json.loads(out) if status == 0 else None
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                return HookDecision(False, f"a PreToolUse hook failed (exit {status})")
            if answer.get("decision") not in _ALLOW:
                return HookDecision(False, str(answer.get("reason") or "denied by a hook"))
        return HookDecision(True)

    async def _run(self, hook: _Hook, payload: dict[str, Any]) -> tuple[int | None, str]:
        env = {**os.environ, **self.env}
        try:
            process = await asyncio.create_subprocess_exec(
                "/bin/sh",
                "-c",
                hook.command,
                cwd=hook.cwd,
                env=env,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            _log.warning("hook %s could not start: %s", hook.event, exc.strerror)
            return None, ""
        try:
            out, _ = await asyncio.wait_for(
                process.communicate(json.dumps(payload).encode()), hook.timeout
            )
        except TimeoutError:
            process.kill()
            await process.wait()
            _log.warning("hook %s timed out after %ss", hook.event, hook.timeout)
            return None, ""
        _log.info("hook %s ran (exit %s): %s", hook.event, process.returncode, hook.command)
        return process.returncode, out.decode("utf-8", errors="replace")


async def around_invocation[T](
    hooks: Hooks | None, script: Callable[[T], Awaitable[None]], turn: T
) -> None:
    """A turn's scenario (the text after a carried block picks it, as a model answers it)
    between agy 1.4+'s invocation hooks: ``PreInvocation``, then ``PostInvocation``, ``Stop``."""
    if hooks is not None:
        await hooks.fire("PreInvocation")
    await script(turn)
    if hooks is not None:
        await hooks.fire("PostInvocation")
        await hooks.fire("Stop")
