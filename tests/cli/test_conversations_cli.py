"""`omnigent-agy conversations`: the list, and the refusals of `open` that start nothing.

Opening one for real, on omnigent's server with the harness going on with it, is
tests/e2e/test_e2e_conversations.py."""

from __future__ import annotations

import contextlib
import json
import socket
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from agy_store import A, B, row, store

from omnigent_agy import cli
from omnigent_agy.agy.gemini_home import GEMINI_HOME_ENV
from omnigent_agy.agy.statedir import STATE_DIR_ENV, SessionStateDir


@pytest.fixture
def person(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    gemini = tmp_path / "gemini"
    monkeypatch.setenv(GEMINI_HOME_ENV, str(gemini))
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "state"))
    monkeypatch.setenv("OMNIGENT_CONFIG_HOME", str(tmp_path / "config"))
    workspace = tmp_path / "project"
    workspace.mkdir()
    uris = json.dumps([workspace.as_uri()])
    store(gemini, [row(A, uris=uris), row(B, modified="2026-12-01T08:00:00Z", uris=uris)])
    (gemini / "antigravity-cli" / "brain" / A).mkdir(parents=True)
    return tmp_path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_the_list_newest_first(person: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["conversations"]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert out.index(B) < out.index(A)
    assert "2026-12-01 08:00Z" in out
    assert "Fix the build" in out
    assert str(person / "project") in out
    assert "omnigent-agy conversations open ID" in out


def test_no_agy_folder_says_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(GEMINI_HOME_ENV, str(tmp_path / "nothing"))
    assert cli.main(["conversations"]) == cli.EXIT_OK
    assert "conversation_summaries.db does not exist" in capsys.readouterr().out


def test_a_bad_list_is_coded(person: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (person / "gemini" / "antigravity-cli" / "conversation_summaries.db").write_text("junk" * 30)
    assert cli.main(["conversations"]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "[agy_conversations_unreadable]" in err
    assert "run `agy` once" in err


def test_a_list_agy_is_writing_is_said_to_be_in_use_not_to_move(
    person: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = person / "gemini" / "antigravity-cli" / "conversation_summaries.db"
    # agy in the middle of writing its list: a lock no reader gets past (SQLite's own
    # busy wait runs out, as it does against agy).
    with contextlib.closing(sqlite3.connect(path)) as agy:
        agy.execute("BEGIN EXCLUSIVE")
        assert cli.main(["conversations"]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "[agy_conversations_unreadable]" in err
    assert "is in use: agy is probably running" in err
    assert "close agy" in err
    assert "move the file aside" not in err
    assert cli.main(["conversations"]) == cli.EXIT_OK  # once agy lets go, it reads


def test_an_unknown_id_is_coded(person: Path, capsys: pytest.CaptureFixture[str]) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    assert cli.main(["conversations", "open", "ffffffff", "--server", server]) == 1
    err = capsys.readouterr().err
    assert "[agy_conversation_unknown]" in err
    assert "`omnigent-agy conversations` lists" in err


def test_a_server_that_is_down_opens_nothing(
    person: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = f"http://127.0.0.1:{free_port()}"
    assert cli.main(["conversations", "open", A[:8], "--server", server]) == 1
    err = capsys.readouterr().err
    assert "[agy_omnigent_unreachable]" in err
    assert f"omnigent's server at {server} does not answer" in err
    assert "omnigent start" in err
    assert not (person / "state").exists() or not any((person / "state").iterdir())


def test_a_missing_workspace_asks_for_one(person: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (person / "project").rmdir()
    assert cli.main(["conversations", "open", A, "--server", "http://127.0.0.1:9"]) == 1
    assert "--workspace FOLDER" in capsys.readouterr().err


class FakeServer(ThreadingHTTPServer):
    """omnigent's server for the calls `open` makes, answering events with `events_status`:
    only to see what `open` does when the server refuses a call half-way (a real server on a
    stack is tests/e2e/test_e2e_conversations.py)."""

    def __init__(self, events_status: int) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.events_status = events_status
        self.calls: list[tuple[str, str, object]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: FakeServer

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _handle(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length)) if length else None
        self.server.calls.append((self.command, self.path, body))
        answers: dict[tuple[str, str], tuple[int, object]] = {
            ("GET", "/health"): (200, {"status": "ok"}),
            ("GET", "/v1/hosts"): (200, {"hosts": [{"id": "host_1", "status": "online"}]}),
            ("GET", "/v1/agents"): (200, {"data": [{"id": "ag_1", "name": "Antigravity-CLI"}]}),
            ("POST", "/v1/sessions"): (200, {"id": "conv_opened"}),
            ("POST", "/v1/sessions/conv_opened/events"): (self.server.events_status, {}),
            ("DELETE", "/v1/sessions/conv_opened"): (200, {}),
            ("GET", "/v1/sessions/conv_opened"): (200, {"id": "conv_opened"}),
        }
        self._answer(*answers.get((self.command, self.path.split("?")[0]), (404, {})))

    do_GET = do_POST = do_DELETE = _handle  # noqa: N815 - http.server's names


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[FakeServer]:
    running = FakeServer(request.param)
    thread = threading.Thread(target=running.serve_forever, daemon=True)
    thread.start()
    try:
        yield running
    finally:
        running.shutdown()
        running.server_close()


@pytest.mark.parametrize("server", [200], indirect=True)
def test_open_makes_the_session_and_its_private_copy(
    person: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["conversations", "open", A, "--server", server.url]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"{server.url}/c/conv_opened" in out
    state = SessionStateDir.open("conv_opened", base=person / "state")
    record = state.read_record()
    assert record is not None
    assert record.cascade_id == A  # the first turn starts agy with --conversation A
    assert record.follows_tui
    assert record.stopped_at is not None
    assert record.workspace == str(person / "project")
    assert (state.gemini_dir / "antigravity-cli" / "brain" / A).is_dir()
    created = next(body for method, path, body in server.calls if path == "/v1/sessions")
    assert created == {
        "agent_id": "ag_1",
        "host_id": "host_1",
        "workspace": str(person / "project"),
        "title": "Fix the build",
    }
    (events,) = [body for method, path, body in server.calls if path.endswith("/events")]
    assert isinstance(events, list)
    (note,) = events
    assert note["type"] == "external_conversation_item"  # an item that starts no turn
    assert note["data"]["source_id"] == f"agy-conversation:{A}"
    assert note["data"]["item_data"]["agent"] == "Antigravity-CLI"
    assert "Where it stopped: Done: the build passes." in str(note["data"]["item_data"])


@pytest.mark.parametrize("server", [500], indirect=True)
def test_a_refusal_half_way_takes_the_session_back(
    person: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["conversations", "open", A, "--server", server.url]) == cli.EXIT_FAILED
    err = capsys.readouterr().err
    assert "[agy_omnigent_unreachable]" in err
    assert "refused POST /v1/sessions/conv_opened/events: HTTP 500" in err
    assert ("DELETE", "/v1/sessions/conv_opened", None) in server.calls
    assert not (person / "state" / "conv_opened").exists()


@pytest.mark.parametrize("server", [200], indirect=True)
def test_opening_it_again_finds_the_session_already_open(
    person: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["conversations", "open", A, "--server", server.url]) == cli.EXIT_OK
    capsys.readouterr()
    assert cli.main(["conversations", "open", A[:8], "--server", server.url]) == cli.EXIT_OK
    out = capsys.readouterr().out
    assert f"already open in omnigent:\n  {server.url}/c/conv_opened" in out
    assert cli.main(["conversations"]) == cli.EXIT_OK
    listed = capsys.readouterr().out
    assert "open in omnigent: conv_opened" in listed.split(A)[1]  # under A, not B
    assert sum(path == "/v1/sessions" for _, path, _ in server.calls) == 1
    # --again: another session, on a fresh copy.
    assert cli.main(["conversations", "open", A, "--again", "--server", server.url]) == 0
    assert sum(path == "/v1/sessions" for _, path, _ in server.calls) == 2
