"""What one `omnigent host` of the local stack runs with (`HostHome`) and the agy it runs
(`Agy`: a real one, or agy-sim behind an `agy` script): the environment and folders a host is
given, omnigent's model catalog and a signed-in ``~/.gemini`` in a private HOME, and where its
tmux server's socket is."""

from __future__ import annotations

import json
import secrets
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import libtmux

from .processes import BIN, socket_candidates

HARNESS_ID = "agy-cli"


@dataclass(frozen=True, slots=True)
class Agy:
    """The agy the stack's harness starts: a real one, or agy-sim behind an `agy` script."""

    path: Path
    simulator: bool
    description: str


def write_simulator(folder: Path, flags: Mapping[str, str]) -> Agy:
    """An executable `agy` in `folder` that runs agy-sim with `flags` in its environment.

    The script stands where a person's agy would (on PATH, or named by
    ``harness.agy-cli.command``); the flags travel in it because the harness passes agy only
    agy's own arguments.
    """
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "agy"
    assignments = " ".join(f"{key}={value}" for key, value in sorted(flags.items()))
    script.write_text(f'#!/bin/sh\n{assignments} exec "{BIN / "agy-sim"}" "$@"\n')
    script.chmod(0o755)
    return Agy(script, simulator=True, description="agy-sim, the bundled agy simulator")


def clean_environment(base: Mapping[str, str]) -> dict[str, str]:
    """`base` without any omnigent, harness or simulator settings of the caller's, nor the
    caller's XDG_STATE_HOME (each host keeps the plugin's state in its own HOME)."""
    prefixes = ("OMNIGENT_", "HARNESS_", "AGY_SIM_")
    return {
        key: value
        for key, value in base.items()
        if not key.startswith(prefixes) and key != "XDG_STATE_HOME"
    }


def write_model_catalog(cache: Path, catalogs: Mapping[str, Mapping[str, object]]) -> None:
    """omnigent's cached copy of its model catalog, one file per provider, fresh now (the
    cache's own format: omnigent 0.19's ``_write_disk_catalog``)."""
    folder = cache / "omnigent" / "model-catalog"
    for provider, catalog in catalogs.items():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        source = (
            "https://github.com/mlflow/mlflow/releases/download/model-catalog%2Flatest/"
            f"{provider}.json"
        )
        entry = {
            "cache_schema_version": 1,
            "catalog_schema_version": catalog["schema_version"],
            "source_url": source,
            "fetched_at": time.time(),
            "catalog": catalog,
        }
        (folder / f"{provider}.json").write_text(json.dumps(entry, sort_keys=True))


@dataclass
class HostHome:
    """What one `omnigent host` runs with: its HOME (or config/data dirs) and its agy."""

    name: str
    root: Path
    env: dict[str, str]
    tmux_socket: str
    process: subprocess.Popen[bytes] | None = None
    host_id: str | None = None

    @property
    def config_file(self) -> Path:
        return Path(self.env["OMNIGENT_CONFIG_HOME"]) / "config.yaml"

    @property
    def state_dir(self) -> Path:
        """The plugin's per-conversation records where the host's environment puts them
        (the plugin's statedir.default_state_base: OMNIGENT_AGY_STATE_DIR, else under HOME;
        the stack clears XDG_STATE_HOME)."""
        override = self.env.get("OMNIGENT_AGY_STATE_DIR", "").strip()
        if override:
            # `~` is the host's HOME, as the plugin expands it in the host.
            return Path(self.env["HOME"] + override[1:] if override[:1] == "~" else override)
        return Path(self.env["HOME"]) / ".local" / "state" / "omnigent-agy"

    @property
    def log(self) -> Path:
        return self.root / f"{self.name}.log"


def simulated_sign_in(gemini_dir: Path) -> None:
    """The person's ~/.gemini in a private HOME, signed in as agy-sim sees it: what a real agy
    writes at sign-in (docs/wire.md §1b), with a random token of its own. The plugin seeds each
    conversation's private gemini dir from it, as it does from a real person's."""
    files = {
        Path("antigravity-cli") / "antigravity-oauth-token": {
            "token": {"access_token": secrets.token_urlsafe(24), "refresh_token": "simulated"}
        },
        Path("antigravity-cli") / "cache" / "onboarding.json": {
            "onboardingComplete": True,
            "consumerOnboardingComplete": True,
            "enterpriseOnboardingComplete": True,
        },
    }
    for relative, value in files.items():
        path = gemini_dir / relative
        if path.exists():
            continue
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(json.dumps(value), encoding="utf-8")
        path.chmod(0o600)


def tmux_socket_path(host: HostHome) -> Path | None:
    """The socket of the tmux server `host`'s agys run in, once one is running."""
    for path in socket_candidates(host.tmux_socket, host.env):
        if path.exists() and libtmux.Server(socket_path=path).is_alive():
            return path
    return None
