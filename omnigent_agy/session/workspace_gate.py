"""Before any agy starts: the folder agy can work in, and the person's trust in it.

- **Hidden folders** (docs/wire.md §9): agy drops a workspace whose path contains ``/.`` and
  silently works in its own scratch folder, so a hidden workspace is given to agy as a private
  dot-free link (`agy.workspace`); what the person sees — cards, tool rows — names their own
  path (:func:`person_view`, and the bridge's ``person_paths``).
- **Trust is the person's** (docs/decisions.md §11): a trusted workspace's own
  ``.agents/mcp_config.json`` makes agy start the repository's commands (§9), so agy starts
  only in a workspace the person's own agy already trusts, the operator lists, or the person
  trusts on agy's own dialog, shown as a card (:func:`admit`) and remembered
  (`agy.trust_store.TrustStore`). "No, exit" ends the turn and starts nothing. The card names what
  would run (its MCP servers and hooks, `agy.workspace_runs`), and the person's yes covers
  only that: different contents are asked about again, naming what changed.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import replace
from pathlib import Path

from omnigent_agy.agy.statedir import SessionStateDir
from omnigent_agy.agy.trust_store import TrustedBy, TrustSource, WorkspaceTrust, why_asked_again
from omnigent_agy.agy.workspace import AgyWorkspace, prepare_workspace
from omnigent_agy.agy.workspace_runs import WorkspaceRuns, workspace_runs
from omnigent_agy.errors import PromptUnavailableError, WorkspaceNotTrustedError
from omnigent_agy.interactions.prompts import HostPrompts, TrustAnswer, TrustCard
from omnigent_agy.reading.events import ToolCallFinished, ToolCallStarted
from omnigent_agy.session.home import AgyHome

__all__ = ["WorkspaceGate", "admit", "person_view"]

_logger = logging.getLogger(__name__)


class WorkspaceGate:
    """The workspace of one conversation as agy gets it, and whether agy may start there."""

    def __init__(
        self,
        workspace: Path,
        trust: WorkspaceTrust,
        *,
        state: SessionStateDir,
        home: AgyHome,
        env: Mapping[str, str],
        seeded: bool,
    ) -> None:
        self._trust = trust
        self._state = state
        self._home = home
        self._env = env
        self._seeded = seeded
        self._answered: dict[Path, WorkspaceRuns] = {}
        self.workspace = AgyWorkspace(workspace, workspace)
        """The person's workspace and the path agy is given for it (after `prepare`)."""

    def prepare(self) -> AgyWorkspace:
        """The path agy is given: the workspace, or its link made (or repaired) now;
        WorkspaceHiddenError when a hidden one cannot be linked safely."""
        env = {**os.environ, **self._env}
        person, state = self.workspace.person, self._state
        self.workspace = prepare_workspace(person, state.key, state.path, env)
        return self.workspace

    @property
    def decides(self) -> bool:
        """Whether the plugin decides trust at all: only when it seeds agy's folder (else agy's
        own dialog asks in its terminal)."""
        return self._seeded

    def runs(self) -> WorkspaceRuns:
        """What trusting the workspace lets agy run, read now."""
        return workspace_runs(self.workspace.person)

    def trusted_by(self, runs: WorkspaceRuns | None = None) -> TrustedBy | None:
        """Who trusts the workspace holding ``runs`` (read now when not given), or None;
        TrustFileError when the remembered answers cannot be read."""
        person = self.workspace.person
        now = runs if runs is not None else workspace_runs(person)
        answered = self._answered.get(person)
        if answered is not None and answered.digest == now.digest:
            return TrustedBy(TrustSource.ANSWER, "on the card in this conversation")
        return self._trust.trusted_by(person, now)

    def asked_again(self, runs: WorkspaceRuns) -> str | None:
        """Why the person, who trusted the workspace before, is asked again; None if never."""
        person = self.workspace.person
        answered = self._answered.get(person)
        if answered is not None:
            return why_asked_again(answered.record(), runs)
        earlier = self._trust.earlier_answer(person)
        return None if earlier is None else why_asked_again(earlier, runs)

    def answered_yes(self, runs: WorkspaceRuns, *, conversation_id: str) -> None:
        """The person chose "Yes, I trust this folder" on a card showing ``runs``: remembered,
        for those contents, for the next turns and, with a store, for every later
        conversation on this folder."""
        person = self.workspace.person
        self._answered[person] = runs
        if self._trust.store is not None:
            by = f"the card in conversation {conversation_id}"
            self._trust.store.remember(person, by=by, runs=runs)

    def require_trust(self) -> None:
        """Raise WorkspaceNotTrustedError unless the workspace is trusted; then the seed puts
        agy's spelling of it into ``trustedWorkspaces``. Called right before a launch."""
        if not self._seeded:
            return
        runs = self.runs()
        trusted = self.trusted_by(runs)
        if trusted is None:
            why = (
                "nobody trusts {} yet"
                if self.asked_again(runs) is None
                else ("what {} makes agy run changed since it was trusted")
            )
            raise WorkspaceNotTrustedError(
                why.format(self.workspace.person) + ", so agy was not started there",
                workspace=self.workspace.person,
            )
        _logger.info("workspace %s trusted by %s", self.workspace.person, trusted.describe())
        self._home.trusted = self.workspace.agy


async def admit(
    gate: WorkspaceGate,
    prompts: HostPrompts,
    *,
    conversation_id: str,
    stop_agy: Callable[[], Awaitable[None]],
) -> None:
    """Link a hidden workspace; unless the workspace is trusted, ask the person on agy's own
    dialog before any agy starts. "No, exit" (or a closed card) raises
    WorkspaceNotTrustedError, after stopping an agy already running there (``stop_agy``)."""
    where = await asyncio.to_thread(gate.prepare)
    if not gate.decides:
        return
    runs = await asyncio.to_thread(gate.runs)
    if await asyncio.to_thread(gate.trusted_by, runs) is not None:
        return
    again = await asyncio.to_thread(gate.asked_again, runs)
    card = TrustCard(str(where.person), runs.lines(), again)
    try:
        answer = await prompts.ask_trust(card)
    except PromptUnavailableError as exc:
        raise WorkspaceNotTrustedError(
            f"nobody trusts {where.person} yet, and the question cannot be asked here ({exc})",
            workspace=where.person,
        ) from None
    if answer is TrustAnswer.TRUST:
        _logger.info("the person trusted workspace %s on the card", where.person)
        await asyncio.to_thread(gate.answered_yes, runs, conversation_id=conversation_id)
        return
    # agy's "No, exit": an agy already here (trusted before, since revoked) goes too.
    await stop_agy()
    why = "the card was closed without an answer" if answer is None else "you answered No, exit"
    raise WorkspaceNotTrustedError(
        f"agy did not start in {where.person}: {why}", workspace=where.person
    )


def person_view[E](event: E, workspace: AgyWorkspace) -> E:
    """A tool event with the person's paths where agy wrote the link's (a tool row's arguments,
    title and output); any other event as it is."""
    if not workspace.linked:
        return event
    mine = workspace.for_person
    if isinstance(event, ToolCallStarted):
        return replace(
            event,
            arguments=workspace.value_for_person(event.arguments),
            title=None if event.title is None else mine(event.title),
            description=None if event.description is None else mine(event.description),
        )
    if isinstance(event, ToolCallFinished):
        return replace(
            event,
            output=mine(event.output),
            error=None if event.error is None else mine(event.error),
            arguments=workspace.value_for_person(event.arguments),
        )
    return event
