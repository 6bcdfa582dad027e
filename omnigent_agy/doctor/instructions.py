"""The workspace's instructions file: agy reads AGENTS.md or GEMINI.md, never CLAUDE.md.

A project set up for Claude Code often has only ``CLAUDE.md``; under agy those instructions
silently do nothing. The doctor warns about it (``omnigent_agy.doctor.checkup``) and offers
``--fix-instructions``, which calls :func:`write_agents_md`: an ``AGENTS.md`` carrying
CLAUDE.md's content under a note saying where it came from. It never overwrites a file: the
new file is created exclusively, so even a race with the user loses nothing.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path

from omnigent_agy.doctor.checks import DoctorLine, Status

__all__ = [
    "AGY_INSTRUCTION_FILES",
    "CLAUDE_FILE",
    "FIX_COMMAND",
    "Instructions",
    "InstructionsState",
    "check_instructions_file",
    "inspect_instructions",
    "write_agents_md",
]

AGY_INSTRUCTION_FILES = ("AGENTS.md", "GEMINI.md")
CLAUDE_FILE = "CLAUDE.md"
FIX_COMMAND = "omnigent-agy doctor --fix-instructions"


class Instructions(enum.Enum):
    NO_WORKSPACE = enum.auto()  # the workspace is not a directory
    FOR_AGY = enum.auto()  # AGENTS.md or GEMINI.md: agy reads it
    ONLY_CLAUDE = enum.auto()  # CLAUDE.md alone: agy ignores it
    NONE = enum.auto()  # no instructions at all (fine)


@dataclass(frozen=True, slots=True)
class InstructionsState:
    found: Instructions
    files: tuple[str, ...] = ()  # the agy instruction files present


def inspect_instructions(workspace: Path) -> InstructionsState:
    """Which instruction files ``workspace`` holds, as agy would see them."""
    if not workspace.is_dir():
        return InstructionsState(Instructions.NO_WORKSPACE)
    present = tuple(name for name in AGY_INSTRUCTION_FILES if (workspace / name).is_file())
    if present:
        return InstructionsState(Instructions.FOR_AGY, present)
    if (workspace / CLAUDE_FILE).is_file():
        return InstructionsState(Instructions.ONLY_CLAUDE)
    return InstructionsState(Instructions.NONE)


def write_agents_md(workspace: Path) -> Path:
    """Create ``workspace/AGENTS.md`` from ``CLAUDE.md``; FileExistsError if it exists."""
    content = (workspace / CLAUDE_FILE).read_text(encoding="utf-8", errors="replace")
    target = workspace / AGY_INSTRUCTION_FILES[0]
    header = (
        f"<!-- Created by `{FIX_COMMAND}` from {CLAUDE_FILE}: agy reads AGENTS.md, not "
        f"{CLAUDE_FILE}. Keep the two in step when you edit either. -->\n\n"
    )
    # Mode "x" creates or fails: an AGENTS.md (or a symlink) that appeared meanwhile stays.
    with target.open("x", encoding="utf-8") as stream:
        stream.write(header + content)
    return target


# One return per situation reads better than a shared exit.
def check_instructions_file(  # noqa: PLR0911
    workspace: Path, *, fix: bool = False
) -> DoctorLine:
    """agy reads AGENTS.md / GEMINI.md: warn when only CLAUDE.md exists; ``fix`` creates one."""
    name = "instructions file"
    state = inspect_instructions(workspace)
    if state.found is Instructions.NO_WORKSPACE:
        return DoctorLine(
            name,
            Status.WARN,
            f"workspace {workspace} is not a directory",
            "Pass the project directory: `omnigent-agy doctor --workspace DIR`",
        )
    if state.found is Instructions.FOR_AGY:
        return DoctorLine(name, Status.OK, f"{' and '.join(state.files)} in {workspace}")
    if state.found is Instructions.NONE:
        return DoctorLine(
            name, Status.OK, f"none in {workspace} (optional: agy reads AGENTS.md or GEMINI.md)"
        )
    if not fix:
        return DoctorLine(
            name,
            Status.WARN,
            f"only {CLAUDE_FILE} in {workspace}: agy reads AGENTS.md or GEMINI.md, "
            f"not {CLAUDE_FILE}",
            f"Run `{FIX_COMMAND}` to create AGENTS.md with {CLAUDE_FILE}'s content",
        )
    try:
        created = write_agents_md(workspace)
    except FileExistsError:  # created meanwhile: it is the user's, leave it
        return DoctorLine(name, Status.OK, f"AGENTS.md appeared in {workspace}; left as it is")
    except OSError as exc:
        return DoctorLine(
            name,
            Status.FAIL,
            f"cannot create AGENTS.md in {workspace}: {exc}",
            f"Copy {CLAUDE_FILE} to AGENTS.md by hand",
        )
    return DoctorLine(name, Status.OK, f"created {created} from {CLAUDE_FILE}")
