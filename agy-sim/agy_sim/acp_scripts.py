"""Which scenario a turn runs on the ACP path: the RPC side's triggers, narrowed.

Two differences from the TUI and RPC sides, both about what ``agy acp`` is:

- ``ask_question`` and ``invoke_subagent`` are reported absent there, so a turn whose text
  would ask a question answers in prose instead, and one that would start a sub-agent does
  the work itself;
- ACP has no system-prompt field, so a client folds its instructions ahead of the person's
  first message of a session (omnigent does: "{instructions}\\n\\n{message}"). A model reads
  them as instructions and answers the request that follows; the scripted model picks its
  scenario from the first prompt's last paragraph (a leading ``user:`` dropped, the shape of
  omnigent's replayed history), so words in the instructions ("run commands", "read
  files") do not pick a scenario.
"""

from __future__ import annotations

import re
from typing import Final

from agy_sim.scenarios import list_directory
from agy_sim.triggers import choose
from agy_sim.turn_api import Script, TurnApi

#: Scenarios that need ask_question, absent on agy's ACP path.
_QUESTION_SCENARIOS: Final = frozenset(
    {"single_question", "multi_question", "several_questions", "write_in", "large_question"}
)


async def ask_in_prose(turn: TurnApi) -> None:
    """What a turn that would ask a question does where ``ask_question`` is absent."""
    await turn.say(
        "I would ask you to choose here, but this session has no question tool: tell me in "
        "your next message what you prefer.",
        thinking="**No ask_question tool**\n\nI will ask in my answer instead.",
    )


async def work_alone(turn: TurnApi) -> None:
    """What a turn that would start a sub-agent does where ``invoke_subagent`` is absent."""
    await list_directory(turn)


def acp_script(text: str) -> Script:
    """The scenario a turn's text selects on the ACP path."""
    name, script = choose(text)
    if name in _QUESTION_SCENARIOS:
        return ask_in_prose
    if name == "subagent":
        return work_alone
    return script


def last_paragraph(text: str) -> str:
    """The text after the last blank line, without a leading ``user:``."""
    paragraph = re.split(r"\n\s*\n", text.strip())[-1]
    return re.sub(r"^user:\s*", "", paragraph)


def first_prompt_script(text: str) -> Script:
    """The scenario of a session's first prompt: chosen by its last paragraph."""
    return acp_script(last_paragraph(text))
