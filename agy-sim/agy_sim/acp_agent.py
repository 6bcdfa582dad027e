"""``agy-sim acp``: the Agent Client Protocol on stdio, as ``agy acp`` speaks it.

What is reported of ``agy acp`` (since 1.4.12) and modelled here: ``agentInfo.name``
"Antigravity ACP Server"; a config option ``thought_level``; no ``mode`` (so no
``session/set_mode``); ``session/new`` takes no tool allow-list; ``ask_question`` and
``invoke_subagent`` are absent on that path (``acp_scripts``). The rest follows the ACP
specification (protocol version 1): ``initialize``, ``authenticate``, ``session/new``,
``session/prompt`` with streamed ``session/update``s, ``session/request_permission``,
``session/cancel`` and ``session/set_config_option`` (``acp_config``: the model and the
thought level). A turn's usage comes in the prompt's ``usage`` (an unstable part of the
specification) and a ``usage_update``.

Each session runs on an engine of its own (the same ``SimEngine``, scenarios and triggers as
the RPC side, so one script drives both), working in the session's ``cwd``.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Final

from agy_sim.acp_session import AcpSession
from agy_sim.acp_wire import AUTH_REQUIRED, INVALID_PARAMS, Json, RpcError
from agy_sim.engine import SimEngine
from agy_sim.engine_config import EngineSettings
from agy_sim.gemini import GeminiDir
from agy_sim.quota import QuotaAccount

_log = logging.getLogger("agy-sim.acp")

AGENT_NAME: Final = "Antigravity ACP Server"
PROTOCOL_VERSION: Final = 1
LOGIN_METHOD: Final = "agy-login"
LOGIN_HINT: Final = "Authentication required: sign in from a terminal with `agy acp --login`."


class AcpAgent:
    """The agent side of one ACP connection: its sessions and the methods it answers."""

    def __init__(
        self, settings: EngineSettings, *, version: str, gemini_dir: Path, quota: str
    ) -> None:
        self._settings = settings
        self._version = version
        self._gemini_dir = gemini_dir
        self._quota = quota
        self._sessions: dict[str, AcpSession] = {}
        self._notify: Any = None
        self._ask: Any = None
        self.initialized = False

    def bind(self, notify: Any, ask: Any) -> None:
        """The connection's ``notify(method, params)`` and ``request(method, params)``."""
        self._notify, self._ask = notify, ask

    def requests(self) -> dict[str, Any]:
        return {
            "initialize": self.initialize,
            "authenticate": self.authenticate,
            "session/new": self.new_session,
            "session/prompt": self.prompt,
            "session/set_config_option": self.set_config_option,
        }

    def notifications(self) -> dict[str, Any]:
        return {"session/cancel": self.cancel}

    def _signed_in(self, cwd: Path) -> GeminiDir:
        return GeminiDir.read(self._gemini_dir, cwd, os.environ)

    # -- methods --------------------------------------------------------------------------
    async def initialize(self, params: Json) -> Json:
        self.initialized = True
        asked = params.get("protocolVersion")
        _log.info("initialize: client protocol %r, %r", asked, params.get("clientInfo"))
        result: Json = {
            "protocolVersion": PROTOCOL_VERSION,
            "agentCapabilities": {
                "loadSession": False,
                "promptCapabilities": {"image": False, "audio": False, "embeddedContext": True},
                "mcpCapabilities": {"http": False, "sse": False},
            },
            "agentInfo": {"name": AGENT_NAME, "version": self._version},
            "authMethods": [],
        }
        if not self._signed_in(Path.cwd()).signed_in:
            result["authMethods"] = [
                {"id": LOGIN_METHOD, "name": "Sign in with Google", "description": LOGIN_HINT}
            ]
        return result

    async def authenticate(self, params: Json) -> Json:
        # Signing in is interactive (`agy acp --login`), never over the protocol (a guess).
        if not self._signed_in(Path.cwd()).signed_in:
            raise RpcError(AUTH_REQUIRED, LOGIN_HINT)
        return {}

    async def new_session(self, params: Json) -> Json:
        cwd = params.get("cwd")
        if not isinstance(cwd, str) or not os.path.isabs(cwd):
            raise RpcError(INVALID_PARAMS, "cwd must be an absolute path")
        if not Path(cwd).is_dir():
            raise RpcError(INVALID_PARAMS, f"cwd {cwd!r} is not a folder")
        gemini = self._signed_in(Path(cwd))
        if not gemini.signed_in:
            raise RpcError(AUTH_REQUIRED, LOGIN_HINT)
        if params.get("mcpServers"):
            # What agy does with a session's MCP servers is not reported; agy-sim runs none.
            names = [s.get("name") for s in params["mcpServers"] if isinstance(s, dict)]
            _log.info("session/new: MCP servers not started: %s", names)
        engine = SimEngine(self._settings, workspace=cwd)
        engine.quota = QuotaAccount(self._quota)
        engine.rules = gemini.rules
        cascade = engine.cascades[engine.tui_cascade_id]
        session = AcpSession(
            cascade.cascade_id, engine, cascade, notify=self._notify, ask=self._ask
        )
        self._sessions[session.session_id] = session
        _log.info("session/new %s in %s", session.session_id, cwd)
        return {"sessionId": session.session_id, "configOptions": session.config.to_wire()}

    def _session(self, params: Json) -> AcpSession:
        session = self._sessions.get(str(params.get("sessionId", "")))
        if session is None:
            raise RpcError(INVALID_PARAMS, f"Session not found: {params.get('sessionId')!r}")
        return session

    async def prompt(self, params: Json) -> Json:
        return await self._session(params).prompt(params.get("prompt"))

    async def set_config_option(self, params: Json) -> Json:
        session = self._session(params)
        session.config.set(params.get("configId"), params.get("value"))
        _log.info("session %s now on %s", session.session_id, session.config.model.display_name)
        return {"configOptions": session.config.to_wire()}

    async def cancel(self, params: Json) -> None:
        session = self._sessions.get(str(params.get("sessionId", "")))
        if session is not None:
            await session.cancel()

    async def aclose(self) -> None:
        """Stop every session's turn (its prompt answers ``cancelled``) and its engine."""
        for session in self._sessions.values():
            await session.cancel()
            await session.engine.aclose()
