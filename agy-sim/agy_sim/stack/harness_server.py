"""The harness app served on loopback by uvicorn, talked to as omnigent's runner does.

`HarnessServer` serves one conversation's app (`create_app()`: omnigent's ExecutorAdapter around
`AgyExecutor`) on 127.0.0.1; `StreamedTurn` streams one turn's SSE events (`POST
/v1/sessions/{id}/events`) on a thread so a caller can read them live and answer a card
(`approval`) or press Stop (`interrupt`) while the turn still runs. The demo and the tests use it.
`HarnessSurface` is what the runner says to a harness, whatever carries it: a harness served
elsewhere (a process of its own on a Unix socket, as omnigent's runner starts it) gets the same
calls by giving its own HTTP transport.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI

ALLOW = "POLICY_ACTION_ALLOW"
#: omnigent's own tools the runner answers without a person: the harness's rename of its session
#: (agy's title for the conversation) is taken as omnigent takes it.
RUNNER_ANSWERS = {"sys_session_rename": json.dumps({"renamed": True})}


class TurnEndedError(RuntimeError):
    """The turn's stream closed before the awaited event."""


class HarnessSurface:
    """The runner's side of one conversation's harness: turns, answers to cards, verdicts.

    Subclasses say where the harness listens (`base_url`; `http` for another transport, such as
    the Unix socket of a harness process).
    """

    conversation_id: str
    base_url: str = "http://127.0.0.1"

    def __init__(
        self,
        conversation_id: str,
        *,
        policy: Callable[[dict[str, Any]], str] = lambda event: ALLOW,
    ) -> None:
        """`policy` plays the runner's part for policy evaluations: it gets the
        `policy_evaluation.requested` event and returns the verdict's action (omnigent answers
        ALLOW when no policy objects, which is the default here)."""
        self._policy = policy
        self.conversation_id = conversation_id

    @property
    def events_url(self) -> str:
        return f"{self.base_url}/v1/sessions/{self.conversation_id}/events"

    def http(self, timeout: float) -> httpx.Client:
        """A client for one exchange with the harness (closed by the caller)."""
        return httpx.Client(timeout=timeout)

    def post(self, body: dict[str, Any]) -> httpx.Response:
        with self.http(30) as client:
            return client.post(self.events_url, json=body)

    @contextlib.contextmanager
    def stream(self, body: dict[str, Any]) -> Iterator[httpx.Response]:
        """A turn's SSE stream (the request open while the caller reads)."""
        with self.http(120) as client, client.stream("POST", self.events_url, json=body) as reply:
            yield reply

    def answer_runner_tool(self, event: dict[str, Any]) -> bool:
        """Answer a call of one of omnigent's own tools the runner runs by itself (its
        `tool_result`); False when the call is not one of them (the caller plays it)."""
        item = event.get("item") or {}
        answer = RUNNER_ANSWERS.get(str(item.get("name")))
        if item.get("type") != "function_call" or item.get("status") != "action_required":
            return False
        if answer is None:
            return False
        self.post({"type": "tool_result", "call_id": item.get("call_id"), "output": answer})
        return True

    def answer_policy(self, event: dict[str, Any]) -> None:
        """Post the verdict for a policy evaluation, as omnigent's runner does."""
        verdict = {
            "type": "policy_verdict",
            "evaluation_id": event.get("evaluation_id"),
            "action": self._policy(event),
        }
        self.post(verdict)

    def press(self, card: dict[str, Any], prefix: str) -> str:
        """Answer a card as a person in the web UI would, and return the label pressed.

        The button is the first whose label starts with `prefix` (case-insensitive): one of a
        choice card's buttons, or an option of a question form's first question (any further
        questions get their first option). LookupError when no label matches.
        """
        params = card["params"]
        schema = (params.get("requestedSchema") or {}).get("properties", {}).get("answer", {})
        choices: list[str] = list(schema.get("enum") or [])
        questions = (params.get("ask_user_question") or {}).get("questions") or []
        offered = choices or ([o["label"] for o in questions[0]["options"]] if questions else [])
        # An empty choice is the terminal REPL's (docs/in-omnigent.md): the web shows no button.
        label = next((x for x in offered if x and x.lower().startswith(prefix.lower())), None)
        if label is None:
            raise LookupError(f"no button starting with {prefix!r} among {offered}")
        content: dict[str, Any]
        if choices:
            content = {"answer": label}
        else:
            picks = [label] + [q["options"][0]["label"] for q in questions[1:]]
            content = {
                str(i): [pick] if q.get("multiSelect") else pick
                for i, (q, pick) in enumerate(zip(questions, picks, strict=True))
            }
        reply = self.post(
            {
                "type": "approval",
                "elicitation_id": card["elicitation_id"],
                "action": "accept",
                "content": content,
            }
        )
        if reply.status_code >= 300:
            raise RuntimeError(f"the harness refused the answer: {reply.status_code} {reply.text}")
        return label

    def turn(self, text: str, **extra: Any) -> StreamedTurn:
        """Start a turn in the background; its SSE events arrive in `StreamedTurn.events`."""
        body = {"type": "message", "role": "user", "content": text, "model": "agy", **extra}
        turn = StreamedTurn(self)
        turn.start(body)
        return turn


class HarnessServer(HarnessSurface):
    """uvicorn serving one harness app on 127.0.0.1 in a thread (loopback only)."""

    def __init__(
        self,
        app: FastAPI,
        conversation_id: str,
        *,
        policy: Callable[[dict[str, Any]], str] = lambda event: ALLOW,
    ) -> None:
        super().__init__(conversation_id, policy=policy)
        app.state.conversation_id = conversation_id
        self._sock = socket.socket()
        self._sock.bind(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{self.port}"
        # A turn still streaming when the server leaves (a card waiting, say) is cancelled after a
        # moment, as when a harness process goes away: uvicorn alone would wait for it forever.
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=2
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name="harness-uvicorn", daemon=True)

    def _serve(self) -> None:
        asyncio.run(self._server.serve(sockets=[self._sock]))

    def __enter__(self) -> HarnessServer:
        self._thread.start()
        deadline = time.monotonic() + 20
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the harness app did not start")
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(30)
        self._sock.close()


@dataclass
class StreamedTurn:
    """One streamed turn: the SSE events as they arrive, and waits on them."""

    server: HarnessSurface
    events: list[dict[str, Any]] = field(default_factory=list)
    _queue: queue.SimpleQueue[dict[str, Any] | None] = field(default_factory=queue.SimpleQueue)
    _thread: threading.Thread | None = None
    _reply: httpx.Response | None = None
    status_code: int | None = None
    broken: str | None = None
    """Why the stream broke before the harness closed it (the harness process died, say):
    omnigent's runner then fails the turn as `connection_error`."""

    def start(self, body: dict[str, Any]) -> None:
        self._thread = threading.Thread(target=self._stream, args=(body,), daemon=True)
        self._thread.start()

    def hang_up(self) -> None:
        """Close the turn's stream from this side, as omnigent's runner does when it goes away
        (it closes its client before it stops the harness process)."""
        reply = self._reply
        if reply is None:
            return
        # Shut the socket down under the reading thread: closing the response from here may
        # wait for that thread, and leave the connection open meanwhile.
        stream = reply.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        else:
            reply.close()

    def _stream(self, body: dict[str, Any]) -> None:
        try:
            with self.server.stream(body) as reply:
                self._reply = reply
                self.status_code = reply.status_code
                for line in reply.iter_lines():
                    if not line.startswith("data:"):
                        continue
                    try:
                        event = json.loads(line[5:].strip())
                    except ValueError:
                        continue
                    if event.get("type") == "policy_evaluation.requested":
                        self.server.answer_policy(event)
                    elif event.get("type") == "response.output_item.done":
                        self.server.answer_runner_tool(event)
                    self._queue.put(event)
        except (httpx.TransportError, httpx.StreamError) as exc:  # StreamError: hung up here
            self.broken = f"{type(exc).__name__}: {exc}"
        finally:
            self._reply = None
            self._queue.put(None)

    def next(self, timeout: float) -> dict[str, Any] | None:
        """The next event within `timeout` seconds; None once the turn's stream has ended.

        Raises TimeoutError when nothing arrives in time."""
        try:
            event = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no event within {timeout}s") from None
        if event is None:
            self._queue.put(None)  # every later call sees the end too
            return None
        self.events.append(event)
        return event

    def until(
        self,
        kind: str,
        where: Callable[[dict[str, Any]], bool] = lambda e: True,
        timeout: float = 60,
    ) -> dict[str, Any]:
        """The first event of type `kind` (matching `where`).

        Raises TurnEndedError when the turn ends first, TimeoutError after `timeout` seconds."""
        for seen in self.events:
            if seen.get("type") == kind and where(seen):
                return seen
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no {kind} within {timeout}s; saw {self.kinds()}")
            try:
                event = self.next(remaining)
            except TimeoutError:
                continue  # the deadline check above words the failure
            if event is None:
                raise TurnEndedError(f"the turn ended without {kind}; saw {self.kinds()}")
            if event.get("type") == kind and where(event):
                return event

    def finish(self, timeout: float = 60) -> list[dict[str, Any]]:
        """Every event, once the stream has closed (TimeoutError after `timeout` seconds)."""
        deadline = time.monotonic() + timeout
        while self.next(max(0.0, deadline - time.monotonic())) is not None:
            pass
        return self.events

    def kinds(self) -> list[str]:
        return [str(e.get("type")) for e in self.events]

    def text(self) -> str:
        return "".join(
            str(e.get("delta", ""))
            for e in self.events
            if e.get("type") == "response.output_text.delta"
        )

    def items(self, item_type: str) -> list[dict[str, Any]]:
        return [
            e["item"]
            for e in self.events
            if e.get("type") == "response.output_item.done" and e["item"].get("type") == item_type
        ]
