"""Errors raised by omnigent-agy.

The tree (every error the package raises derives from ``AgyError``)::

    AgyError
"""

from __future__ import annotations


class AgyError(Exception):
    """Root of every error omnigent-agy raises."""
