"""Whether the person trusts a workspace, and where their answers are kept (docs/decisions.md §11).

agy reads a trusted workspace's own ``.agents/mcp_config.json`` and starts the servers it
names (docs/wire.md §9): trusting a cloned repository lets it run commands of its choosing.
So the plugin puts a workspace into agy's ``trustedWorkspaces`` only when the person trusts it,
by the first of:

1. **their own agy**: the exact path is in ``trustedWorkspaces`` of their
   ``antigravity-cli/settings.json`` (the gemini dir every conversation's is seeded from);
2. **the operator**: ``harness.agy-cli.trusted_workspaces`` (and
   ``OMNIGENT_AGY_TRUSTED_WORKSPACES``) lists it, exactly or as ``<folder>/**``;
3. **their answer**: "Yes, I trust this folder" on the card, remembered in
   ``trusted-workspaces.json`` in the state base (:class:`TrustStore`) until
   ``omnigent-agy trust --forget PATH`` — and only for what the folder held when they said
   yes: the answer keeps a digest of the files that make agy run commands
   (`workspace_runs`), and different contents (a ``git pull`` adding a server or a hook) are
   asked about again, naming what changed. An answer kept without a digest (by an earlier
   version) is asked about again too.

Otherwise the session asks on a card before any agy starts. Paths are compared as agy compares
them — exactly: a trusted parent covers no child — after resolving links on both sides (the
trust is in a folder's content; the dot-free link of a hidden workspace is the plugin's own).
"""

from __future__ import annotations

import contextlib
import enum
import fcntl
import json
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from omnigent_agy.agy.gemini_home import SETTINGS_FILE
from omnigent_agy.agy.statedir import write_private_file
from omnigent_agy.agy.workspace_runs import WorkspaceRuns, changes, workspace_runs
from omnigent_agy.errors import TrustFileError

__all__ = [
    "STORE_FILE",
    "TrustSource",
    "TrustStore",
    "TrustedBy",
    "WorkspacePattern",
    "WorkspaceTrust",
    "operator_patterns",
    "person_trusted",
    "same_folder",
    "why_asked_again",
]

STORE_FILE: Final = "trusted-workspaces.json"
_LOCK_FILE: Final = "trusted-workspaces.lock"
_SUBTREE: Final = "/**"


class TrustSource(enum.StrEnum):
    AGY_SETTINGS = "your agy settings"
    OPERATOR = "the operator's list"
    ANSWER = "your answer"


@dataclass(frozen=True, slots=True)
class TrustedBy:
    """Why a workspace is trusted: the source and what in it says so."""

    source: TrustSource
    detail: str

    def describe(self) -> str:
        return f"{self.source.value} ({self.detail})"


def _real(path: Path | str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def same_folder(first: Path | str, second: Path | str) -> bool:
    """The two name the same folder: exactly, or once links are resolved."""
    return os.path.normpath(first) == os.path.normpath(second) or _real(first) == _real(second)


@dataclass(frozen=True, slots=True)
class WorkspacePattern:
    """An operator's entry: one absolute folder, or ``<folder>/**`` for it and all below."""

    text: str

    @classmethod
    def parse(cls, raw: object, *, key: str) -> WorkspacePattern:
        """ValueError naming ``key`` for anything but an absolute path (``~`` allowed)."""
        if not isinstance(raw, str) or not raw.strip():
            raise ValueError(f"{key} must be an absolute folder path, not {raw!r}")
        text = raw.strip()
        folder = text.removesuffix(_SUBTREE)
        if "*" in folder or not os.path.isabs(os.path.expanduser(folder)):
            raise ValueError(
                f"{key} {raw!r} must be an absolute folder path, or one ending in /** for the "
                "folder and every folder under it"
            )
        return cls(text)

    @property
    def subtree(self) -> bool:
        return self.text.endswith(_SUBTREE)

    @property
    def folder(self) -> str:
        return os.path.expanduser(self.text.removesuffix(_SUBTREE)) or "/"

    def covers(self, workspace: Path) -> bool:
        if same_folder(self.folder, workspace):
            return True
        if not self.subtree:
            return False
        # Below the folder as it really is: a link inside it to a folder elsewhere is not.
        return Path(_real(workspace)).is_relative_to(_real(self.folder))


def person_trusted(gemini_home: Path, workspace: Path) -> str | None:
    """The entry of the person's own agy settings that trusts ``workspace``, if any.

    A settings file that cannot be read trusts nothing here; seeding reports it (it is the
    base of the private settings, ``agy_settings_invalid``).
    """
    try:
        settings = json.loads((gemini_home / SETTINGS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    listed = settings.get("trustedWorkspaces") if isinstance(settings, dict) else None
    for entry in listed if isinstance(listed, list) else []:
        if isinstance(entry, str) and entry and same_folder(entry, workspace):
            return entry
    return None


class TrustStore:
    """The folders the person trusted on a card: ``<state base>/trusted-workspaces.json``.

    ``{"workspaces": {"/real/path": {"trusted_at": ISO time, "by": "…", "digest": "…",
    "covers": [[kind, name, command], …]}}}`` (`WorkspaceRuns.record`), mode 0600, written
    atomically under a lock (several harness processes share it). A file that cannot be read
    is an error naming it, never overwritten: nothing the person decided is lost.
    """

    def __init__(self, base: Path) -> None:
        self.base = base.expanduser()
        self.path = self.base / STORE_FILE

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every remembered folder with when and how it was trusted."""
        document = self._read()
        return {key: dict(value) for key, value in document["workspaces"].items()}

    def remember(self, workspace: Path, *, by: str, runs: WorkspaceRuns) -> None:
        """Trust ``workspace`` for what it holds now (``runs``: what the person was shown)."""
        key = _real(workspace)
        with self._locked():
            document = self._read()
            document["workspaces"][key] = {
                "trusted_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "by": by,
                **runs.record(),
            }
            write_private_file(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")

    def forget(self, workspace: Path) -> list[str]:
        """Forget every remembered entry naming ``workspace``; the entries forgotten."""
        with self._locked():
            document = self._read()
            gone = [key for key in document["workspaces"] if same_folder(key, workspace)]
            if gone:
                for key in gone:
                    del document["workspaces"][key]
                write_private_file(self.path, json.dumps(document, indent=2, sort_keys=True) + "\n")
        return gone

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self._check_base()
        fd = os.open(self.base / _LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _check_base(self) -> None:
        # The answers decide what agy may run: no other user may write next to them.
        self.base.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(self.base)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
            raise TrustFileError(
                f"{self.base} must be a directory of yours that no other user can write to",
                path=self.base,
            )

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return {"workspaces": {}}
        except OSError as exc:
            message = f"cannot open {self.path}: {exc.strerror}"
            raise TrustFileError(message, path=self.path) from exc
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if info.st_uid != os.getuid() or info.st_mode & 0o022:
                raise TrustFileError(
                    f"{self.path} is not yours alone (owner uid {info.st_uid}, mode "
                    f"{stat.S_IMODE(info.st_mode):04o}): it cannot say which folders you trust",
                    path=self.path,
                )
            data = handle.read()
        try:
            document = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise TrustFileError(
                f"{self.path} is not valid JSON ({type(exc).__name__})", path=self.path
            ) from None
        workspaces = document.get("workspaces") if isinstance(document, dict) else None
        if not isinstance(workspaces, dict) or not all(
            isinstance(value, dict) for value in workspaces.values()
        ):
            raise TrustFileError(
                f"{self.path} is not a JSON object with a 'workspaces' object", path=self.path
            )
        return {**document, "workspaces": workspaces}


@dataclass(frozen=True, slots=True)
class WorkspaceTrust:
    """Where one session's trust in a workspace comes from (the module doc's sources); the
    default trusts nothing, so every workspace is asked about."""

    gemini_home: Path | None = None
    operator: tuple[WorkspacePattern, ...] = ()
    store: TrustStore | None = None

    def trusted_by(self, workspace: Path, runs: WorkspaceRuns | None = None) -> TrustedBy | None:
        """Who trusts ``workspace``, first source first, or None. A remembered answer counts
        only while the folder holds what it covered (``runs``: read now when not given).

        TrustFileError when the remembered answers must be read and cannot be.
        """
        if self.gemini_home is not None:
            entry = person_trusted(self.gemini_home, workspace)
            if entry is not None:
                where = self.gemini_home / SETTINGS_FILE
                return TrustedBy(TrustSource.AGY_SETTINGS, f"{where}: {entry}")
        for pattern in self.operator:
            if pattern.covers(workspace):
                return TrustedBy(TrustSource.OPERATOR, pattern.text)
        answer = self.earlier_answer(workspace)
        if answer is not None and self.store is not None:
            now = runs if runs is not None else workspace_runs(workspace)
            if answer.get("digest") == now.digest:
                when = answer.get("trusted_at", "earlier")
                return TrustedBy(TrustSource.ANSWER, f"{self.store.path}: trusted {when}")
        return None

    def earlier_answer(self, workspace: Path) -> dict[str, Any] | None:
        """The person's remembered yes for ``workspace``, whatever it covered, or None."""
        if self.store is None:
            return None
        for key, answer in self.store.entries().items():
            if same_folder(key, workspace):
                return answer
        return None


def operator_patterns(values: object, *, key: str) -> tuple[WorkspacePattern, ...]:
    """Parse a list of operator entries (ValueError naming ``key[i]``)."""
    if not isinstance(values, list | tuple):
        # ValueError, not TypeError: every caller reports it as a configuration error.
        raise ValueError(f"{key} must be a list of absolute folder paths")  # noqa: TRY004
    return tuple(
        WorkspacePattern.parse(value, key=f"{key}[{index}]") for index, value in enumerate(values)
    )


def why_asked_again(answer: Mapping[str, Any], now: WorkspaceRuns) -> str:
    """Why a folder with a remembered yes (``answer``) is asked about again, holding ``now``."""
    when = answer.get("trusted_at", "earlier")
    covers = answer.get("covers")
    if not isinstance(answer.get("digest"), str) or not isinstance(covers, list):
        return (
            f"Asked again: your yes for this folder ({when}) was kept without a record of what "
            "it would let agy run, so the plugin cannot tell whether that changed since"
        )
    changed = changes(covers, now)
    if not changed:
        return (
            f"Asked again: the files that make agy run commands here changed since you trusted "
            f"this folder ({when}), though no command listed below differs"
        )
    return (
        f"Asked again: what this folder makes agy run changed since you trusted it ({when}): "
        + "; ".join(changed)
    )
