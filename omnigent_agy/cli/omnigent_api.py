"""The few calls of omnigent's REST API that ``omnigent-agy conversations open`` makes.

The web UI's own calls (omnigent 0.19's bundle): ``GET /health``, ``GET /v1/hosts``, ``GET
/v1/agents``, ``POST /v1/sessions`` to open a session, ``POST /v1/sessions/{id}/events`` with
``external_conversation_item`` events to add items that start no turn (the way omnigent's own
transcript bridges add what a person did in a terminal), ``DELETE /v1/sessions/{id}`` to take
back a session whose opening failed; the web shows a session at ``<server>/c/<id>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import httpx

from omnigent_agy.errors import OmnigentApiError

__all__ = ["DEFAULT_SERVER", "OmnigentApi", "OmnigentApiError"]

#: Where `omnigent server` (and `omnigent start`'s local server) listens by default.
DEFAULT_SERVER: Final = "http://127.0.0.1:6767"
_BATCH: Final = 100  # omnigent takes at most 100 events per POST


class OmnigentApi:
    """A synchronous client of one omnigent server (no credentials: a local server)."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout

    def _call(self, method: str, path: str, body: object = None) -> Any:
        try:
            reply = httpx.request(
                method, f"{self.url}{path}", json=body, timeout=self._timeout, trust_env=False
            )
        except httpx.HTTPError as exc:
            raise OmnigentApiError(
                f"omnigent's server at {self.url} does not answer ({type(exc).__name__})",
                down=True,
            ) from exc
        if reply.status_code >= 300:
            raise OmnigentApiError(
                f"omnigent's server refused {method} {path}: HTTP {reply.status_code} "
                f"{reply.text[:300]}"
            )
        return reply.json() if reply.content else None

    def check(self) -> None:
        """Raise OmnigentApiError(down=True) unless the server answers /health."""
        self._call("GET", "/health")

    def hosts(self) -> list[dict[str, Any]]:
        listed = self._call("GET", "/v1/hosts")
        hosts = listed.get("hosts", listed.get("data", [])) if isinstance(listed, dict) else listed
        return [h for h in hosts if isinstance(h, dict)] if isinstance(hosts, list) else []

    def agent_id(self, name: str) -> str:
        """The id of the agent called ``name``: the person's own agents first."""
        for query in ("/v1/agents?scope=user&limit=50", "/v1/agents?limit=1000"):
            listed = self._call("GET", query)
            for agent in listed.get("data", []) if isinstance(listed, dict) else []:
                if isinstance(agent, dict) and agent.get("name") == name:
                    return str(agent["id"])
        raise OmnigentApiError(
            f"omnigent's server has no agent {name!r}: register it with "
            '`omnigent agent add "$(omnigent-agy agent-path)"`'
        )

    def create_session(self, *, agent_id: str, host_id: str, workspace: str, title: str) -> str:
        body = {"agent_id": agent_id, "host_id": host_id, "workspace": workspace}
        if title:
            body["title"] = title[:200]
        created = self._call("POST", "/v1/sessions", body)
        return str(created["id"])

    def add_items(self, session_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Append ``items`` (``{item_type, item_data, source_id}``) without starting a turn;
        a ``source_id`` makes a repeated call add nothing twice."""
        events = [{"type": "external_conversation_item", "data": dict(item)} for item in items]
        for start in range(0, len(events), _BATCH):
            self._call("POST", f"/v1/sessions/{session_id}/events", events[start : start + _BATCH])

    def has_session(self, session_id: str) -> bool:
        """Whether the server still has that session (a deleted one answers 404)."""
        try:
            self._call("GET", f"/v1/sessions/{session_id}")
        except OmnigentApiError as exc:
            if exc.down:
                raise
            return False
        return True

    def delete_session(self, session_id: str) -> None:
        self._call("DELETE", f"/v1/sessions/{session_id}")

    def session_url(self, session_id: str) -> str:
        return f"{self.url}/c/{session_id}"
