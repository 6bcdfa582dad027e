"""A deterministic operation counter for cost tests: Python lines run inside the package.

Wall-clock time is noisy on a shared 2-core machine and tests never assert it; the number of
lines the package executes for one unit of work is exact and repeatable, so "the work per new
delta does not grow with the conversation" can be asserted as an equality.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import omnigent_agy

PACKAGE = str(Path(omnigent_agy.__file__).resolve().parent)


def count_package_lines(work: Callable[[], object]) -> int:
    """Lines executed inside `omnigent_agy` while `work()` runs."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: object) -> Any:  # sys.TraceFunction
        nonlocal count
        if not frame.f_code.co_filename.startswith(PACKAGE):
            return None
        if event == "line":
            count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        work()
    finally:
        sys.settrace(previous)
    return count
