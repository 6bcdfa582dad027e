"""Reading whether agy took its workspace: its log line and its ``workspaceUris`` (§9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from omnigent_agy.agy.workspace import AgyWorkspace
from omnigent_agy.session.workspace_check import (
    hidden_line,
    ignored_workspace,
    reported_folders,
)

LINK = Path("/run/user/1/omnigent-agy-1/workspaces/k/feature")
PERSON = Path("/home/me/repo/.worktrees/feature")
SCRATCH = Path("/home/me/.gemini/antigravity-cli/scratch")
WHERE = AgyWorkspace(PERSON, LINK)
LINE = f"failed to add project resource folder {LINK.as_uri()}: {LINK} is hidden: ignore uri"


def test_the_line_is_read_without_glogs_header(tmp_path: Path) -> None:
    log = tmp_path / "agy.log"
    log.write_text(
        "I1202 05:12:00.123456  4242 server.go:12] Language server version: 1.5.16\n"
        f"W1202 05:12:00.223456  4242 server.go:99] {LINE}\n"
        "I1202 05:12:01.000000  4242 server.go:123] Language server listening on random port\n"
    )
    assert hidden_line(log) == LINE
    assert hidden_line(tmp_path / "missing.log") is None


def test_reported_folders_are_the_local_file_uris() -> None:
    metadata = {
        "metadata": {
            "workspaceUris": [
                "file:///home/me/a%20b",
                "https://example.com/x",
                "file://otherhost/x",
                7,
            ]
        }
    }
    assert reported_folders(metadata) == [Path("/home/me/a b")]
    assert reported_folders({}) == []
    assert reported_folders({"metadata": {"workspaceUris": "file:///x"}}) == []


@pytest.mark.parametrize(
    ("line", "reported", "ignored"),
    [
        pytest.param(None, [], False, id="nothing said: taken"),
        pytest.param(None, [LINK], False, id="the link reported: taken"),
        pytest.param(None, [SCRATCH, LINK], False, id="the link among others: taken"),
        pytest.param(None, [LINK.parent], False, id="a folder above it: taken"),
        pytest.param(None, [LINK / "sub"], True, id="a folder inside it alone"),
        pytest.param(LINE, [], True, id="the log line alone"),
        pytest.param(None, [SCRATCH], True, id="another folder alone"),
        pytest.param(LINE, [SCRATCH], True, id="both"),
        pytest.param(
            "failed to add project resource folder file:///x: /x/.y is hidden: ignore uri",
            [LINK],
            False,
            id="another folder's line",
        ),
    ],
)
def test_ignored_when_agy_says_so(line: str | None, reported: list[Path], ignored: bool) -> None:
    error = ignored_workspace(WHERE, log_line=line, reported=reported)
    assert (error is not None) is ignored
    if error is not None:
        said = str(error)
        assert str(PERSON) in said
        assert str(LINK) in said
        assert (str(reported[0]) if reported else "scratch folder") in said
        assert error.code == "agy_workspace_ignored"
        assert "no folder starting with a dot" in error.remediation
