"""A workspace in a hidden folder, and a dot-free link to it (docs/wire.md §9).

Users of agy up to 1.2.14 report that agy ignores a workspace whose path has ``/.`` in it
(logging ``… is hidden: ignore uri``) and works in its own scratch folder, and that a symbolic
link to the same folder whose own path has no dot is accepted. The plugin relies on both: it
starts agy in such a link for a hidden workspace (agy/workspace.py), and reads that log line to
say when agy ignored a workspace anyway. Whether the newer agys still ignore hidden folders,
and whether they take the link, nobody has reported (§10): this check shows it.

Two agys start at once, the plugin's way, each in a folder of the probe's own scratch folder:
one in ``.hidden-workspace/project`` as spelled, one in a dot-free link to that folder. For
each the probe reads agy's log for the line and asks which workspace agy's conversation has
(``GetConversationMetadata``'s ``workspaceUris``). No turn is spent; no path is shown (the
findings say "the folder as given", "agy's scratch folder").
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from omnigent_agy.errors import AgyError, DiscoveryError, ProbeError, RpcError
from omnigent_agy.probe.facts import FactVerdict, Finding
from omnigent_agy.probe.scratch import ProbeAgy, Started
from omnigent_agy.rpc.client import RetryPolicy, RpcClient

__all__ = ["IGNORED_LINE", "WorkspaceSeen", "check_hidden_workspace", "judge_hidden", "judge_link"]

#: The end of agy's log line for a workspace it ignored (§9).
IGNORED_LINE: Final = "is hidden: ignore uri"
_SECTION: Final = "§9"
_HIDDEN_FACT: Final = "hidden folder: agy ignores it"
_LINK_FACT: Final = "hidden folder: a dot-free link"


@dataclass(frozen=True, slots=True)
class WorkspaceSeen:
    """What one agy did with the folder it was started in."""

    logged_ignored: bool
    workspace: str
    """Where its conversation works, in words: no path (the findings are shared)."""


async def check_hidden_workspace(agys: ProbeAgy) -> list[Finding]:
    """Start agy in a hidden folder and in a dot-free link to it; what each did (§9)."""
    root = agys.scratch.root
    hidden = root / ".hidden-workspace" / "project"
    hidden.mkdir(mode=0o700, parents=True)
    (hidden / "README.md").write_text("# a hidden workspace of the probe\n", encoding="utf-8")
    link = root / "hidden-link"
    link.symlink_to(hidden, target_is_directory=True)
    places = {"hidden": hidden, "hidden-link": link}
    seen = await asyncio.gather(
        *(_look(agys, name, folder, hidden) for name, folder in places.items()),
        return_exceptions=True,
    )
    return [judge_hidden(seen[0]), judge_link(seen[1])]


async def _look(agys: ProbeAgy, name: str, folder: Path, target: Path) -> WorkspaceSeen:
    state = agys.scratch.state(name)
    agys.seed(state, folder)
    started = await agys.start(name, workspace=folder)
    try:
        log = started.agy.log_file.read_text(encoding="utf-8", errors="replace")
        try:
            uris = await _workspace_uris(started)
        except RpcError:  # other checks say what is wrong with the methods; the log remains
            uris = []
    finally:
        await agys.stop(started)
    return WorkspaceSeen(IGNORED_LINE in log, _where(uris, folder, target, state.gemini_dir))


async def _workspace_uris(started: Started) -> list[str]:
    """The workspaces agy reports for the conversation its TUI opened."""
    agy = started.agy
    async with RpcClient(
        port=agy.port,
        csrf_token=agy.csrf_token,
        certificate=started.pin.certificate,
        retry=RetryPolicy(attempts=1),
    ) as client:
        listing = await client.get_all_cascade_trajectories()
        summaries = listing.get("trajectorySummaries")
        if isinstance(summaries, dict) and summaries:
            conversation = str(next(iter(summaries)))
        else:  # no conversation opened on its own: one started over RPC has the same folder
            conversation = await client.start_cascade()
        metadata = await client.get_conversation_metadata(conversation)
    found = (
        metadata.get("metadata", {}).get("workspaceUris") if isinstance(metadata, dict) else None
    )
    return [str(uri) for uri in found] if isinstance(found, list) else []


def _where(uris: list[str], folder: Path, target: Path, gemini_dir: Path) -> str:
    paths = [Path(unquote(urlparse(uri).path)) for uri in uris if uri.startswith("file:")]
    if not paths:
        return "no workspace reported"
    first = paths[0]
    if first == folder:
        return "the folder as given"
    if first == target.resolve() or first.resolve() == target.resolve():
        return "the folder the link names"
    if first.is_relative_to(gemini_dir) or "scratch" in first.parts:
        return "agy's scratch folder"
    return "another folder"


def _failed(result: object) -> str | None:
    if isinstance(result, DiscoveryError | ProbeError | AgyError | OSError):
        return f"agy did not start there: {result}"
    if isinstance(result, BaseException):
        raise result
    return None


def judge_hidden(result: WorkspaceSeen | BaseException) -> Finding:
    """The finding for the agy started in the hidden folder as spelled."""
    expected = f"`… {IGNORED_LINE}` logged, agy working elsewhere (as reported up to 1.2.14)"
    if (broken := _failed(result)) is not None:
        return Finding(_HIDDEN_FACT, FactVerdict.INFO, expected, broken, _SECTION)
    assert isinstance(result, WorkspaceSeen)
    logged = "logged" if result.logged_ignored else "no such line"
    seen = f"{logged}; its conversation works in {result.workspace}"
    # The line is how the plugin tells a workspace agy ignored; an agy that took the hidden
    # folder has fixed the bug (INFO), one that ignores it without the line is not caught.
    if result.logged_ignored:
        verdict = FactVerdict.PASS
    elif result.workspace == "the folder as given":
        verdict, seen = FactVerdict.INFO, seen + ": this agy takes hidden folders"
    elif result.workspace == "no workspace reported":
        verdict = FactVerdict.INFO  # nothing to tell by
    else:
        verdict = FactVerdict.FAIL
    return Finding(_HIDDEN_FACT, verdict, expected, seen, _SECTION)


def judge_link(result: WorkspaceSeen | BaseException) -> Finding:
    """The finding for the agy started in the dot-free link to it."""
    expected = "accepted: no such line, the conversation works in the folder as given"
    if (broken := _failed(result)) is not None:
        return Finding(_LINK_FACT, FactVerdict.FAIL, expected, broken, _SECTION)
    assert isinstance(result, WorkspaceSeen)
    logged = f"`{IGNORED_LINE}` logged" if result.logged_ignored else "no such line"
    seen = f"{logged}; its conversation works in {result.workspace}"
    taken = not result.logged_ignored and result.workspace in (
        "the folder as given",
        "the folder the link names",
        "no workspace reported",  # then the log line is all there is to go by
    )
    return Finding(
        _LINK_FACT, FactVerdict.PASS if taken else FactVerdict.FAIL, expected, seen, _SECTION
    )
