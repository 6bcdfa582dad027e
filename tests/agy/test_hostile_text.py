"""Hostile text where the plugin hands it to tmux, a process, a shell or a file name: workspace
paths, conversation ids, model names, the person's hook commands (property tests).

The text: tmux formats (``#(…)``, ``#{…}``, ``#S``), ``$(…)``, backticks, ``;``, quotes,
newlines and other control characters, direction marks, bytes that are no UTF-8 (file names are
bytes: Python spells them with lone surrogates), names as long as the system allows and longer.
The properties: nothing runs (a marker file never appears), each text arrives whole where it was
sent (a folder entered, an argument received), nothing is written outside the plugin's folders,
and what the system cannot take ends in a coded error naming it.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
import sys
import tempfile
import unicodedata
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import count
from pathlib import Path

import psutil
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from simproc import AGY_SIM, FAST
from waiting import wait_until

from omnigent_agy.agy import terminal
from omnigent_agy.agy.gemini_home import _in_dir
from omnigent_agy.agy.launcher import AgyLaunchSpec, build_argv, launch_agy
from omnigent_agy.agy.process import session_name
from omnigent_agy.agy.statedir import SessionStateDir, state_key
from omnigent_agy.agy.terminal import TerminalHost
from omnigent_agy.agy.tmux_text import format_literal, tmux_argument
from omnigent_agy.agy.workspace import check_enterable, is_hidden, prepare_workspace, remove_link
from omnigent_agy.errors import WorkspaceUnreachableError, failure_for

MARK = "MARK"
#: Pieces that mean something to tmux, a shell or a terminal; each would create MARK if run.
HOSTILE = (
    f"#(touch {MARK})",
    "#{pane_pid}",
    "#{session_name}",
    "#S",
    "##",
    "#",
    f"$(touch {MARK})",
    f"`touch {MARK}`",
    f";touch {MARK};",
    f"&& touch {MARK}",
    f"| touch {MARK}",
    f">{MARK}",
    "'",
    '"',
    "\\",
    "\n",
    "\r",
    "\t",
    "\x1b[2J",
    "\x1b]0;title\x07",
    "\x7f",
    "\u202e",  # right-to-left override
    "\u200f",  # right-to-left mark
    "\u2028",
    "\udc80",  # a byte that is no UTF-8, as os.fsdecode spells it
    "\udcff",
    "~",
    "*",
    "?",
    "[a]",
    "%s",
    "-",
    "--x",
    " ",
    "é",
    "字",
)
PIECE = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_characters="/\x00", exclude_categories=("Cs",)), max_size=6),
)


def _fits(name: str) -> bool:
    return name not in ("", ".", "..") and len(os.fsencode(name)) <= 255


NAMES = st.lists(PIECE, min_size=1, max_size=6).map("".join).filter(_fits)
ARGUMENTS = st.lists(PIECE, min_size=0, max_size=6).map("".join)
#: Text with no file-name limits: conversation ids, model names.
TEXT = st.one_of(ARGUMENTS, st.text(max_size=300))

PURE = settings(max_examples=300, deadline=None, database=None)
ON_DISK = settings(
    max_examples=100,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
REAL_TMUX = settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def marks_under(root: Path) -> list[Path]:
    return [path for path in root.rglob("*") if MARK in path.name and not path.is_dir()]


# -- conversation ids: tmux session names and state folders ----------------------------------


@PURE
@given(TEXT.filter(bool), TEXT.filter(bool))
def test_a_conversation_id_gives_a_tmux_safe_name_and_one_folder_of_its_own(
    one: str, other: str
) -> None:
    key = state_key(one)
    assert key not in ("", ".", "..")
    assert "/" not in key
    assert key.isascii()
    assert len(key) <= 64
    assert terminal._NAME.fullmatch(session_name(one)), "what start() takes: never refused"
    if one != other:
        assert state_key(other) != key, "two conversations never share a folder"


@ON_DISK
@given(TEXT.filter(bool))
def test_a_conversation_folder_stays_inside_the_state_base(conversation_id: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        base = Path(scratch) / "state"
        state = SessionStateDir.open(conversation_id, base=base)
        assert state.path.parent == base
        assert [p.name for p in Path(scratch).iterdir()] == ["state"]


# -- model names and conversation ids on agy's command line ----------------------------------


@PURE
@given(model=TEXT.filter(bool), conversation=TEXT.filter(bool))
def test_agy_gets_a_model_name_and_a_conversation_id_as_one_argument_each(
    model: str, conversation: str
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        state = SessionStateDir.open("conv", base=Path(scratch))
        spec = AgyLaunchSpec(("agy",), Path(scratch), state, model=model)
        argv = build_argv(spec, csrf_token="t0k", conversation=conversation)
    at = argv.index("--conversation")
    assert argv[at + 1] == conversation
    assert argv[at + 2 : at + 4] == ["--model", model]
    assert len(argv) == at + 4, "nothing else was split off them"


# -- tmux formats ----------------------------------------------------------------------------


@dataclass
class Tmux:
    host: TerminalHost
    root: Path
    names: Iterator[int]


@pytest.fixture(scope="module")
def tmux() -> Iterator[Tmux]:
    """One private tmux server for the module, started in a scratch folder (a format job
    would run there), with one idle session for `display-message`."""
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        before = Path.cwd()
        os.chdir(root)
        host = TerminalHost(socket_name=f"omnigent-agy-test-{uuid.uuid4().hex[:10]}")
        try:
            host.server.new_session(session_name="idle", window_command="cat")
            yield Tmux(host, root, count())
        finally:
            for name in host.names():
                terminal = host.find(name)
                if terminal is not None:
                    terminal.stop(timeout=2)
            host.kill_server()
            os.chdir(before)


@pytest.mark.tmux
@settings(max_examples=150, deadline=None, database=None)
@given(text=st.lists(PIECE, max_size=6).map("".join))
def test_tmux_reads_a_literal_back_as_the_very_text(tmux: Tmux, text: str) -> None:
    """What the plugin hands tmux where it expands formats comes back unchanged, and runs
    nothing (`display-message -p` expands its argument as a start directory is)."""
    # What this check can compare: tmux prints UTF-8, a line, control characters as they are.
    text = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    text = "".join(c for c in text if unicodedata.category(c) != "Cc")
    # display-message passes its result through strftime too (a start directory does not):
    # '%%' is its '%'.
    literal = tmux_argument(format_literal(text).replace("%", "%%"))
    shown = tmux.host.server.cmd("display-message", "-p", "-t", "=idle:", "--", literal)
    assert shown.stdout == [text] if text else shown.stdout in ([], [""])
    assert marks_under(tmux.root) == []


# -- workspace folders: entered as data ------------------------------------------------------

PROGRAM = (
    "import os, sys\n"
    "with open(sys.argv[1], 'wb') as out:\n"
    "    out.write(os.getcwdb() + b''.join(b'\\0' + os.fsencode(a) for a in sys.argv[2:]))\n"
)


@pytest.mark.tmux
@REAL_TMUX
@given(name=NAMES, arguments=st.lists(TEXT.filter(lambda t: "\x00" not in t), max_size=3))
def test_a_hostile_folder_is_entered_and_hostile_arguments_arrive_whole(
    tmux: Tmux, name: str, arguments: list[str]
) -> None:
    example = tmux.root / f"example-{next(tmux.names)}"
    workspace = example / "work" / name
    workspace.mkdir(parents=True)
    private = example / "private"
    private.mkdir(mode=0o700)
    seen = example / "seen"
    terminal = tmux.host.start(
        f"ex{uuid.uuid4().hex[:8]}",
        [sys.executable, "-c", PROGRAM, str(seen), *arguments],
        cwd=workspace,
        private_dir=private,
    )
    wait_until(seen.exists, timeout=10, what="the program to say where it ran")
    wait_until(lambda: not terminal.is_alive(), timeout=10, what="the program to end")
    cwd, *received = seen.read_bytes().split(b"\0")
    assert cwd == os.fsencode(workspace)
    assert received == [os.fsencode(a) for a in arguments]
    assert list(private.iterdir()) == [], "the launch file (agy's token) is gone"
    assert marks_under(tmux.root) == []
    assert {p.name for p in example.iterdir()} == {"work", "private", "seen"}
    terminal.stop(timeout=2)


# -- names the system cannot take ------------------------------------------------------------


def _longer_than_a_path(name: str) -> str:
    return "/".join([name] * (4200 // (len(os.fsencode(name)) + 1) + 1))


UNTAKEABLE = st.one_of(
    NAMES.map(lambda n: n + "\x00" + n),  # a NUL byte
    NAMES.map(lambda n: (n * 256)[:256]),  # a name over 255 bytes
    NAMES.map(_longer_than_a_path),  # a path over 4096 bytes
)


@ON_DISK
@given(name=UNTAKEABLE)
def test_a_folder_the_system_cannot_take_is_refused_with_its_code(name: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / name
        with pytest.raises(WorkspaceUnreachableError) as refused:
            check_enterable(folder)
    assert str(refused.value).startswith("agy was not started: could not enter the folder ")
    assert repr(str(folder)) in str(refused.value), "named, escaped"
    failure = failure_for(refused.value)
    assert failure.code == "agy_workspace_unreachable"
    assert "ls -ld" in failure.remediation


# -- hidden folders: the link ----------------------------------------------------------------


@ON_DISK
@given(name=NAMES)
def test_a_hidden_folder_of_any_name_gets_a_private_link_to_it(name: str) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        hidden = root / ".hidden" / name
        hidden.mkdir(parents=True)
        runtime = root / "run"
        runtime.mkdir(mode=0o700)
        state = root / "state"
        state.mkdir(mode=0o700)
        link = prepare_workspace(hidden, "conv", state, {"XDG_RUNTIME_DIR": str(runtime)}).agy
        assert link.is_relative_to(runtime), "nothing outside the plugin's folders"
        assert not is_hidden(link)
        assert os.readlink(link) == str(hidden)
        assert {p.name for p in root.iterdir()} == {".hidden", "run", "state"}
        assert remove_link(state), "and it goes again, whatever its name"
        assert not link.is_symlink()


# -- the person's hook commands, run by agy through a shell ----------------------------------


@ON_DISK
@given(name=NAMES, words=st.lists(TEXT.filter(lambda t: "\x00" not in t), min_size=1, max_size=3))
def test_a_hook_command_runs_in_its_folder_whatever_the_folders_name(
    name: str, words: list[str]
) -> None:
    """agy runs a hook's command through a shell; the seed has it change into the person's
    config folder first: the folder's name is quoted, the command is the person's own."""
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / name
        folder.mkdir()
        out = Path(scratch) / "out"
        command = f"{shlex.join(['printf', '%s|', *words])} > {shlex.quote(str(out))}"
        walked = _in_dir({"type": "command", "command": command}, folder)["command"]
        subprocess.run(["/bin/sh", "-c", walked], check=True, cwd=scratch)
        assert out.read_bytes() == b"".join(os.fsencode(w) + b"|" for w in words)
        assert marks_under(Path(scratch)) == []


# -- the whole launch: agy-sim in a hostile folder -------------------------------------------


@pytest.mark.tmux
@settings(
    max_examples=8,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
# A name that is no UTF-8 (the byte 0x80): agy-sim once wrote it strictly as UTF-8 on its
# screen and exited; a real agy takes any bytes as a folder name.
@example(name="\udc80", hidden=False).via("a name that is no UTF-8")
@example(name="\udc80", hidden=True).via("a name that is no UTF-8")
@given(name=NAMES, hidden=st.booleans())
def test_agy_starts_in_a_hostile_folder_and_answers(tmux: Tmux, name: str, hidden: bool) -> None:
    """The launcher's whole path, agy-sim as agy: the folder (or, hidden, its link) entered,
    agy's record written, agy answering, nothing run and nothing left after the stop."""
    example = tmux.root / f"launch-{next(tmux.names)}"
    workspace = example / (".hidden" if hidden else "work") / name
    workspace.mkdir(parents=True)
    runtime = example / "run"
    runtime.mkdir(mode=0o700)
    state = SessionStateDir.open(f"conv-{uuid.uuid4().hex[:8]}", base=example / "state")
    where = prepare_workspace(workspace, state.key, state.path, {"XDG_RUNTIME_DIR": str(runtime)})
    spec = AgyLaunchSpec(
        (str(AGY_SIM), *FAST), workspace, state, cwd=where.agy if where.linked else None
    )

    async def launched() -> None:
        agy = await launch_agy(tmux.host, spec, conversation_id=state.key)
        try:
            process = psutil.Process(agy.pid)
            assert Path(process.cwd()) == workspace
            assert _environ(agy.pid)[b"PWD"] == os.fsencode(where.agy)
            async with agy.client() as client:
                await client.heartbeat()
            record = state.read_record()
            assert record is not None
            assert record.workspace == str(workspace)
        finally:
            await agy.stop()

    asyncio.run(launched())
    assert marks_under(tmux.root) == []
    assert not where.linked or not where.agy.is_symlink(), "the link went with agy"


def _environ(pid: int) -> dict[bytes, bytes]:
    """A process's environment as its bytes (psutil reads it as text, with newlines
    translated: a ``\r`` comes back as ``\n``)."""
    block = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.partition(b"=")[::2] for entry in block.split(b"\0") if entry)
