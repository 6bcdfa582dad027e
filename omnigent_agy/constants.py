"""Constants every layer reads: the harness's identity, the tmux server, the version.

Each is defined here once (tests/test_constants.py); the package's face
(``omnigent_agy/__init__.py``) hands them on, and every layer imports them from here.
"""

from __future__ import annotations

from typing import Final

__version__ = "0.1.0.dev0"

# Each defined here once; every layer may read them.
HARNESS_ID = "agy-cli"
"""omnigent's name for the harness (``harness.agy-cli`` in its config, the web's picker)."""
HARNESS_ALIASES = ("antigravity-cli",)
HARNESS_LABEL = "Antigravity CLI"
TMUX_SOCKET = "omnigent-agy"
"""The tmux server (``tmux -L``) agy runs in, unless ``harness.agy-cli.tmux_socket`` names one."""
TMUX_SOCKET_ENV = "OMNIGENT_AGY_TMUX_SOCKET"
"""Names the tmux server instead (wins over ``harness.agy-cli.tmux_socket``)."""
TMUX_TMPDIR_ENV = "TMUX_TMPDIR"
"""tmux's variable for the folder of its servers' sockets (else /tmp)."""
KEY = f"harness.{HARNESS_ID}"
"""The plugin's section of omnigent's config (``~/.omnigent/config.yaml``)."""
ENV_PATH = "OMNIGENT_AGY_CLI_PATH"
"""Names the agy executable (the name omnigent derives for a harness binary override,
``OMNIGENT_<ID>_PATH``); wins over ``harness.agy-cli.command``."""
INSTALL_HINT = "curl -fsSL https://antigravity.google/cli/install.sh | bash"
"""How a person installs the Antigravity CLI."""
MIN_AGY_VERSION: Final[tuple[int, int, int]] = (1, 2, 2)
"""agy learned --csrf_token in 1.2.2 (docs/wire.md §1); an older agy answers its port to anyone."""
