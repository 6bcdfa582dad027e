"""Entry point of the ``omnigent.community.harness`` group."""

from __future__ import annotations

from omnigent.harness_plugins import HarnessContribution

CONTRIBUTION_NAME = "omnigent-agy"


def get_contribution() -> HarnessContribution:
    """Return omnigent-agy's harness contribution.

    Until the harness lands this is an empty, valid contribution: omnigent loads it
    without error and offers nothing new.
    """
    return HarnessContribution(name=CONTRIBUTION_NAME)
