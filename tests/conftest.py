"""Shared fixtures for the omnigent-agy test suite."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"
SHARED = REPO_ROOT.parent / "shared"
SHARED_RECORDED = SHARED / "agy-wire" / "recorded"


@pytest.fixture
def shared_recorded() -> Path:
    """The recorded real agy steps beside the checkout; skips where they are absent."""
    if not SHARED_RECORDED.is_dir():
        pytest.skip(f"{SHARED_RECORDED} is absent (it exists beside the checkout and in CI only)")
    return SHARED_RECORDED
