"""``omnigent-agy demo``: agy-sim's demo, loaded by name only when it is installed."""

from __future__ import annotations

import argparse
import importlib
import sys

from omnigent_agy.cli.common import EXIT_FAILED, Subparsers, add_described

DEMO_DESCRIPTION = """\
Start omnigent's own server and host on this machine (127.0.0.1 only, in a private folder
removed afterwards) with omnigent-agy enabled and its agent registered, as the README's install
steps do. agy is yours when it is installed and signed in, else the simulator agy-sim.

Without options it then plays a short scripted conversation through omnigent's API, as the web
UI sends it, and prints what the web UI shows: agy's thinking and answer as they stream, its tool
calls and their output, the cards it asks with their buttons and the one pressed, the tokens
each turn used, and the Stop button. With --interactive it prints the web UI's address to open
in a browser instead, and keeps omnigent and agy running until Ctrl-C.

The demo is agy-sim's, which the plugin does not ship: scripts/demo in omnigent-agy's checkout
installs it (or: pip install 'CHECKOUT[demo]' CHECKOUT/agy-sim)."""
DEMO_PACKAGE = "agy_sim"
DEMO_MODULE = f"{DEMO_PACKAGE}.stack.demo"
DEMO_MISSING = (
    "omnigent-agy demo: the demo comes with agy-sim, which is not installed here; run"
    " scripts/demo in omnigent-agy's checkout (it installs both), or"
    " pip install 'CHECKOUT[demo]' CHECKOUT/agy-sim"
)


def _demo(args: argparse.Namespace) -> int:
    # The demo and the simulator are tooling apart from the plugin (agy-sim/), loaded by name
    # only for this command: no layer of the plugin imports them (tests/test_layers.py).
    try:
        demo = importlib.import_module(DEMO_MODULE)
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] != DEMO_PACKAGE:
            raise  # agy-sim is there but something it needs is not: that error says what
        print(DEMO_MISSING, file=sys.stderr)
        return EXIT_FAILED
    return int(demo.run(interactive=args.interactive, simulator=args.simulator))


def add_demo(subparsers: Subparsers) -> None:
    parser = add_described(
        subparsers,
        "demo",
        summary="omnigent with agy in it on this machine: a scripted conversation, or the web UI",
        description=DEMO_DESCRIPTION,
    )
    parser.add_argument(
        "--interactive",
        action="store_true",
        help="print the web UI's address and keep running until Ctrl-C, instead of the script",
    )
    parser.add_argument("--simulator", action="store_true", help="use agy-sim even if agy exists")
    parser.set_defaults(handler=_demo)
