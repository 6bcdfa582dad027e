"""What of the pane's input reaches the tmux client that shows agy (omnigent_agy.agy.own_pty)."""

from __future__ import annotations

import pytest

from omnigent_agy.agy.own_pty import AnswerFilter

TMUX_DA2 = b"\x1b[>84;0;0c"  # omnigent's tmux answering the client's `ESC [ > c`
BROWSER_DA2 = b"\x1b[>0;276;0c"  # xterm.js answering the same question, later
TMUX_VERSION = b"\x1bP>|tmux 3.3a\x1b\\"


def test_each_kind_of_answer_reaches_the_client_once() -> None:
    answers = AnswerFilter()
    assert answers.feed(TMUX_DA2 + TMUX_VERSION) == TMUX_DA2 + TMUX_VERSION
    assert answers.feed(BROWSER_DA2) == b""
    assert answers.feed(b"ls" + BROWSER_DA2 + b"\r") == b"ls\r"
    assert answers.feed(b"\x1bP>|xterm.js(5.5)\x1b\\") == b""
    # Another kind, answered for the first time, passes.
    assert answers.feed(b"\x1b[?1;2c") == b"\x1b[?1;2c"
    assert answers.feed(b"\x1b]11;rgb:0000/0000/0000\x07") == b"\x1b]11;rgb:0000/0000/0000\x07"
    assert answers.feed(b"\x1b]11;rgb:ffff/ffff/ffff\x1b\\") == b""


def test_an_answer_cut_by_a_read_is_put_together() -> None:
    answers = AnswerFilter()
    answers.feed(TMUX_DA2)
    assert answers.feed(b"x\x1b[>0;27") == b"x"
    assert answers.holding
    assert answers.feed(b"6;0cy") == b"y"
    assert answers.feed(b"\x1bP>|xterm") == b""
    assert answers.feed(b".js\x1b") == b""
    assert answers.feed(b"\\") == TMUX_VERSION.replace(b"tmux 3.3a", b"xterm.js")


@pytest.mark.parametrize(
    "keys",
    [
        b"\x1b",  # Escape
        b"\x1b[A",  # an arrow
        b"\x1bP",  # Alt+Shift+P
        b"\x1b]",  # Alt+]
        b"\x1b[<0;10;5M",  # a mouse click
        b"\x1b[200~pasted\x1b[201~",  # a paste
        b"\x1b[15~",  # F5
    ],
)
def test_keys_pass_as_typed(keys: bytes) -> None:
    answers = AnswerFilter()
    passed = answers.feed(keys) + answers.flush()
    assert passed == keys
