"""omnigent's REST API as its web UI calls it: the demo's and the e2e tests' only way in.

The calls are the web bundle's (``server/static/web-ui/assets``): ``POST /v1/sessions``
to open a conversation, ``POST /v1/sessions/{id}/events`` with ``{"type": "message"}`` to
send and ``{"type": "interrupt"}`` for the Stop button, ``GET /v1/sessions/{id}/stream``
(server-sent events, live tail only) to watch, ``POST …/elicitations/{eid}/resolve`` to answer
a card and ``PATCH /v1/sessions/{id}`` for the model and effort pickers.
"""

from __future__ import annotations

import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Self

import httpx

Json = dict[str, Any]
#: The stream's end marker (``data: [DONE]``) as `EventStream` hands it out.
STREAM_END: Json = {"type": "stream.end"}


class RestError(RuntimeError):
    """omnigent answered a call with an error status; `status` and `body` say which."""

    def __init__(self, method: str, path: str, status: int, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body}")
        self.status = status
        self.body = body


class OmnigentClient:
    """A thin synchronous client of one omnigent server on loopback."""

    def __init__(self, url: str, *, timeout: float = 30.0) -> None:
        self.url = url
        self._timeout = timeout

    def request(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        reply = httpx.request(
            method, f"{self.url}{path}", json=body, timeout=self._timeout, follow_redirects=False
        )
        if reply.status_code >= 300:
            raise RestError(method, path, reply.status_code, reply.text)
        return reply.json() if reply.content else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: Mapping[str, Any]) -> Any:
        return self.request("POST", path, body)

    # -- what the web UI reads -----------------------------------------------------------

    def health(self) -> bool:
        return httpx.get(f"{self.url}/health", timeout=5).status_code == 200

    def hosts(self) -> list[Json]:
        return list(self.get("/v1/hosts")["hosts"])

    def harnesses(self) -> list[Json]:
        listed = self.get("/v1/harnesses")
        return list(listed if isinstance(listed, list) else listed.get("data", []))

    def agents(self) -> list[Json]:
        """The person's own agents (``omnigent agent add``), then the server's."""
        mine = self.get("/v1/agents?scope=user&limit=50")["data"]
        return [*mine, *self.get("/v1/agents?limit=1000")["data"]]

    def agent_id(self, name: str) -> str:
        found = [a for a in self.agents() if a.get("name") == name]
        if not found:
            raise LookupError(f"no agent named {name!r} on the server")
        return str(found[0]["id"])

    def session(self, session_id: str) -> Json:
        result: Json = self.get(f"/v1/sessions/{session_id}")
        return result

    def items(self, session_id: str) -> list[Json]:
        """Every item of the conversation, oldest first (the web UI's paging)."""
        found: list[Json] = []
        after: str | None = None
        while True:
            query = "limit=500&order=asc" + (f"&after={after}" if after else "")
            page = self.get(f"/v1/sessions/{session_id}/items?{query}")
            found.extend(page["data"])
            if not page.get("has_more") or page.get("last_id") is None:
                return found
            after = str(page["last_id"])

    # -- what the web UI does ------------------------------------------------------------

    def create_session(self, agent: str, host_id: str, workspace: str, **extra: Any) -> str:
        body = {"agent_id": self.agent_id(agent), "host_id": host_id, "workspace": workspace}
        created = self.post("/v1/sessions", {**body, **extra})
        return str(created["id"])

    def send(self, session_id: str, text: str) -> Json:
        content = [{"type": "input_text", "text": text}]
        body = {"type": "message", "data": {"role": "user", "content": content}}
        result: Json = self.post(f"/v1/sessions/{session_id}/events", body)
        return result

    def interrupt(self, session_id: str) -> None:
        """The composer's Stop button."""
        self.post(f"/v1/sessions/{session_id}/events", {"type": "interrupt", "data": {}})

    def resolve(self, session_id: str, elicitation_id: str, content: Mapping[str, Any]) -> None:
        """Answer a card as the chat view does: accept with the chosen content."""
        self.post(
            f"/v1/sessions/{session_id}/elicitations/{elicitation_id}/resolve",
            {"action": "accept", "content": dict(content)},
        )

    def update(self, session_id: str, **fields: Any) -> Json:
        """The pickers' PATCH (``model_override``, ``reasoning_effort``)."""
        result: Json = self.request("PATCH", f"/v1/sessions/{session_id}", fields)
        return result

    def stream(self, session_id: str) -> EventStream:
        return EventStream(f"{self.url}/v1/sessions/{session_id}/stream")


def card_choices(params: Mapping[str, Any]) -> list[str]:
    """The buttons of a choice card (an approval), empty for other cards; as the web shows
    them, without an empty value (the one a terminal client's accept sends)."""
    schema = (params.get("requestedSchema") or {}).get("properties", {}).get("answer", {})
    return [choice for choice in schema.get("enum") or [] if isinstance(choice, str) and choice]


def card_questions(params: Mapping[str, Any]) -> list[Json]:
    """The questions of a question form, empty for other cards."""
    return list((params.get("ask_user_question") or {}).get("questions") or [])


def choose(params: Mapping[str, Any], picks: list[str | list[str]]) -> Json:
    """The resolve content for a card: `picks[0]` names a choice card's button (by the start
    of its label, case-insensitive); for a question form one pick per question: a label, a
    list of labels (multi-select) or any other text, which the form takes as the person's
    own answer. The keys are the ones the web UI sends (``answer``; a question's ``id``, or
    its text when the id is empty)."""

    def label(offered: list[str], wanted: str) -> str:
        for choice in offered:
            if choice.lower().startswith(wanted.lower()):
                return choice
        return wanted

    choices = card_choices(params)
    if choices:
        wanted = picks[0]
        if not isinstance(wanted, str) or label(choices, wanted) not in choices:
            raise LookupError(f"no button starting with {wanted!r} among {choices}")
        return {"answer": label(choices, wanted)}
    questions = card_questions(params)
    if len(picks) != len(questions):
        raise LookupError(f"{len(questions)} questions, {len(picks)} answers given")
    content: Json = {}
    for question, pick in zip(questions, picks, strict=True):
        offered = [str(option["label"]) for option in question.get("options") or []]
        key = str(question.get("id") or question.get("question"))
        if isinstance(pick, list):
            content[key] = [label(offered, one) for one in pick]
        else:
            content[key] = label(offered, pick)
    return content


class EventStream:
    """The session's server-sent events, read on a thread so a caller can wait with a
    deadline (and answer a card or press Stop meanwhile)."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._queue: queue.Queue[tuple[int, Json]] = queue.Queue()
        self._open = threading.Event()
        self._closing = threading.Event()
        self._response: httpx.Response | None = None
        self._thread = threading.Thread(target=self._read, name="omnigent-sse", daemon=True)
        self.seen: list[Json] = []
        #: When each event of ``seen`` arrived (``time.monotonic_ns()``, the machine's clock).
        self.seen_ns: list[int] = []

    def __enter__(self) -> Self:
        self._thread.start()
        if not self._open.wait(30):
            raise TimeoutError(f"the event stream {self._url} did not open")
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._closing.set()
        if self._response is not None:
            # The reader thread is blocked in recv(); closing the response from here would not
            # wake it (the server only sends heartbeats now and then), shutting the socket does.
            stream = self._response.extensions.get("network_stream")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if isinstance(sock, socket.socket):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(10)

    def _read(self) -> None:
        headers = {"Accept": "text/event-stream"}
        timeout = httpx.Timeout(30.0, read=None)
        try:
            with httpx.stream("GET", self._url, headers=headers, timeout=timeout) as response:
                self._response = response
                self._open.set()
                for event in _parse_sse(response.iter_lines()):
                    self._queue.put((time.monotonic_ns(), event))
        except (httpx.HTTPError, RuntimeError) as exc:
            if not self._closing.is_set():
                error = {"type": "stream.error", "error": str(exc)}
                self._queue.put((time.monotonic_ns(), error))
        finally:
            self._open.set()
            self._queue.put((time.monotonic_ns(), STREAM_END))

    def next(self, timeout: float) -> Json:
        """The next event; TimeoutError when none arrives within `timeout` seconds."""
        try:
            arrived, event = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout:.0f} s") from None
        self.seen.append(event)
        self.seen_ns.append(arrived)
        return event

    def drain(self) -> list[Json]:
        """Every event that has arrived and not been read yet, without waiting."""
        drained: list[Json] = []
        while True:
            try:
                arrived, event = self._queue.get_nowait()
            except queue.Empty:
                return drained
            self.seen.append(event)
            self.seen_ns.append(arrived)
            drained.append(event)

    def until(self, predicate: Callable[[Json], bool], what: str, timeout: float = 60.0) -> Json:
        """Read events until one matches `predicate`; that event. A TimeoutError names the
        last events read (what a failure said among them)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            event = self._queue_next(left) if left > 0 else None
            if event is None:
                kinds = [_brief(e) for e in self.seen[-15:]]
                raise TimeoutError(f"no {what} within {timeout:.0f} s; last events: {kinds}")
            if event is STREAM_END:
                raise TimeoutError(f"the stream ended before {what}")
            if predicate(event):
                return event

    def _queue_next(self, timeout: float) -> Json | None:
        try:
            return self.next(timeout)
        except TimeoutError:
            return None

    def of_type(self, *kinds: str, timeout: float = 60.0) -> Json:
        return self.until(lambda e: e.get("type") in kinds, " or ".join(kinds), timeout)


def _brief(event: Json) -> str:
    """An event's type, with what a failure said (clipped): enough to read a timeout by."""
    kind = str(event.get("type"))
    if kind.endswith(("failed", "error")):
        said = (event.get("response") or {}).get("error") or event.get("error") or event
        return f"{kind} {json.dumps(said)[:600]}"
    return kind


def _parse_sse(lines: Iterator[str]) -> Iterator[Json]:
    """JSON events from SSE lines (``data:`` lines joined until a blank line)."""
    data: list[str] = []
    for line in lines:
        if line.startswith("data:"):
            data.append(line[5:].lstrip())
        elif not line and data:
            text, data = "\n".join(data), []
            if text == "[DONE]":
                return
            with contextlib.suppress(json.JSONDecodeError):
                yield json.loads(text)
