"""agy's dialogs on agy-sim's screen: a command's permission, a question, the trust dialog.

Drawn and answered as recorded screens of agy 1.2.1 show them (docs/simulator.md, "The
screen"): a numbered menu answers on the digit alone (no Enter), ``↑``/``↓`` and Enter pick
the highlighted row, Esc interrupts (a permission) or skips (a question). A question shows
one question at a time and ends with a ``Write-in...`` row. The trust dialog, unnumbered in
agy, gets numbers here: ``1`` or ``2`` and Enter answer it from a plain terminal.

agy-sim's own additions, for a person at a plain terminal: a line typed into a dialog and
entered (``/allow``, ``/deny``, ``/answer 2``, ``1``, ``yes``…) answers it like the TUI's
commands; a multi-select question (no recording shows agy's) toggles rows with their digits
or Space and submits with Enter (**guess**).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final

from agy_sim.screen import BACKSPACE, DOWN, ENTER, ESCAPE, PROMPT, RULE, UP, Key

TRUST_YES: Final = "Yes, I trust this folder"
TRUST_NO: Final = "No, exit"
WRITE_IN: Final = "Write-in..."

#: What a dialog asks of the TUI once a key settled it: ("answer", interaction) with the
#: wire's ``permission`` / ``askQuestion`` body, ("interrupt", None), ("trust", bool) or
#: ("typed", text) for a line typed into it.
Outcome = tuple[str, Any]


@dataclass(slots=True)
class Dialog:
    """One open dialog: its rows, the highlighted option, and how keys answer it."""

    kind: str  # permission | question | trust
    header: list[str]
    options: list[str]
    hint: str
    step_index: int | None = None
    selected: int = 0
    typed: str = ""
    multi: bool = False
    chosen: set[int] = field(default_factory=set)
    # question dialogs: one page per question, answers gathered as they are given
    pages: list[dict[str, Any]] = field(default_factory=list)
    page: int = 0
    responses: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    choices: list[dict[str, Any]] = field(default_factory=list)  # permission: per option
    writing: bool = False  # a question's write-in row was chosen: typed text answers

    def lines(self, width: int) -> list[str]:
        rule = RULE * max(8, width - 1)
        rows = [self.title, rule, ""] if self.title else []
        rows += self.header
        for number, option in enumerate(self.options, start=1):
            caret = PROMPT if number - 1 == self.selected else " "
            mark = ("[x] " if number - 1 in self.chosen else "[ ] ") if self.multi else ""
            label = f"{number}. {mark}{option}"
            rows.append(f"{caret} {label}")
        if self.writing:
            rows += ["", f"    {PROMPT} {self.typed}"]
        rows += ["", f"  {self.hint}"]
        return rows

    def key(self, key: Key) -> Outcome | None:
        """Apply one key; the outcome once the dialog is settled, else None."""
        typing = bool(self.typed or self.writing)
        if not isinstance(key, str) or (typing and key not in (ENTER, ESCAPE)):
            self._type(key)
            return None
        if key in (UP, DOWN):
            step = -1 if key == UP else 1
            self.selected = min(len(self.options) - 1, max(0, self.selected + step))
            return None
        if key == ENTER:
            return self._enter()
        if key == ESCAPE:
            return self._escape()
        if key == " " and self.multi:
            self.chosen ^= {self.selected}
        elif key.isdigit() and self.kind != "trust" and 1 <= int(key) <= len(self.options):
            self.selected = int(key) - 1
            return self._choose(self.selected, enter=False)
        else:
            self._type(key)  # agy-sim's typed answers (``/allow``, ``yes``…)
        return None

    def _type(self, key: Key) -> None:
        if not isinstance(key, str):
            self.typed += key.text.replace("\n", " ")
        elif key == BACKSPACE:
            self.typed = self.typed[:-1]
        elif len(key) == 1:
            self.typed += key

    def _enter(self) -> Outcome | None:
        typed, self.typed = self.typed, ""
        if self.writing:
            self.writing = False
            return self._answer_page({"writeInResponse": typed})
        if typed:
            return ("typed", typed)
        return self._choose(self.selected, enter=True)

    def _choose(self, index: int, *, enter: bool) -> Outcome | None:
        if self.kind == "trust":
            return ("trust", index == 0)
        if self.kind == "permission":
            return ("answer", {"permission": self.choices[index]})
        if self.options[index] == WRITE_IN:
            self.writing = True
            return None
        if self.multi and not enter:
            self.chosen ^= {index}
            return None
        ids = sorted(self.chosen or {index}) if self.multi else [index]
        return self._answer_page({"selectedOptionIds": [str(i + 1) for i in ids]})

    def _escape(self) -> Outcome | None:
        if self.kind == "question":
            return self._answer_page({"skipped": True})
        if self.kind == "permission":
            return ("interrupt", None)
        return None

    def _answer_page(self, response: dict[str, Any]) -> Outcome | None:
        question = self.pages[self.page]
        self.responses.append({"question": question["question"], **response})
        if self.page + 1 < len(self.pages):
            self.page += 1
            self._show_page()
            return None
        return ("answer", {"askQuestion": {"responses": self.responses}})

    def _show_page(self) -> None:
        question = self.pages[self.page]
        total = len(self.pages)
        self.header = [f"Question {self.page + 1}/{total}: {question['question']}", ""]
        self.options = [o.get("text", "") for o in question.get("options", [])] + [WRITE_IN]
        self.multi = bool(question.get("isMultiSelect"))
        self.chosen, self.selected = set(), 0
        back = " · ← Back" if self.page else ""
        action = "space Toggle · enter Submit" if self.multi else "enter Select"
        self.hint = f"↑/↓ Navigate{back} · {action} · esc Skip"


def permission_dialog(step: dict[str, Any], index: int) -> Dialog:
    """agy's "Run this command?" menu for a WAITING step's permission request."""
    request = step.get("requestedInteraction", {}).get("permission", {})
    command = str(request.get("resource", {}).get("target", ""))
    pattern = str(request.get("suggestedPersistPattern", ""))
    options = ["Yes, run command"]
    choices: list[dict[str, Any]] = [{"allow": True}]
    if request.get("persistSuggestionType") == "PERSIST_SUGGESTION_TYPE_SUGGESTED" and pattern:
        session = (
            f"Yes, and always allow in this conversation for commands that start with '{pattern}'"
        )
        persist = (
            f"Yes, and always allow for commands that start with '{pattern}' "
            "(Persist to settings.json)"
        )
        options += [session, persist]
        choices.append({"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"})
        # Persisted to settings.json by agy; agy-sim grants it as a global scope (**guess**).
        choices.append({"allow": True, "scope": "PERMISSION_SCOPE_GLOBAL"})
    options.append("No, cancel")
    choices.append({"allow": False})
    return Dialog(
        kind="permission",
        title="Command",
        header=["Requesting permission for:", f"   {command}", "", "Run this command?"],
        options=options,
        hint="↑/↓ Navigate · tab Amend · ctrl+g edit/expand command",
        step_index=index,
        choices=choices,
    )


def question_dialog(step: dict[str, Any], index: int) -> Dialog:
    """agy's question form for a WAITING step's ``askQuestion``: one question at a time."""
    questions = step.get("requestedInteraction", {}).get("askQuestion", {}).get("questions", [])
    dialog = Dialog(
        kind="question",
        title="Question",
        header=[],
        options=[],
        hint="",
        step_index=index,
        pages=[q for q in questions if isinstance(q, dict)] or [{"question": "?"}],
    )
    dialog._show_page()
    return dialog


def trust_dialog(workspace: str) -> Dialog:
    """The workspace trust dialog agy opens in a folder it does not trust (docs/wire.md §9)."""
    return Dialog(
        kind="trust",
        header=[
            f"Accessing workspace: {workspace}",  # one line, as docs/wire.md §9 quotes it
            "",
            "Do you trust the contents of this project?",
            "",
            "Antigravity CLI requires permission to read, edit, and execute files here.",
            "",
        ],
        options=[TRUST_YES, TRUST_NO],
        hint="↑/↓ Navigate · enter Confirm",
    )


def typed_interaction(text: str) -> dict[str, Any]:
    """The wire ``interaction`` (without its step identity) a typed answer stands for.

    ``/allow``, ``/allow-conversation``, ``/deny``; ``/answer PART[; PART…]`` with one part
    per question: option numbers (``1`` or ``1,3``), ``skip``, or write-in text (docs/wire.md §6).
    """
    command, _, rest = text.strip().partition(" ")
    if command == "/allow":
        return {"permission": {"allow": True}}
    if command == "/allow-conversation":
        return {"permission": {"allow": True, "scope": "PERMISSION_SCOPE_CONVERSATION"}}
    if command == "/deny":
        return {"permission": {"allow": False}}
    parts = [part.strip() for part in rest.split(";")]
    if command != "/answer" or not all(parts):
        raise ValueError("usage: /answer 1[,2] or /answer <text>, one part per question, ';'")
    responses: list[dict[str, Any]] = []
    for part in parts:
        if re.fullmatch(r"\d+(\s*,\s*\d+)*", part):
            responses.append({"selectedOptionIds": re.findall(r"\d+", part)})
        elif part.casefold() == "skip":
            responses.append({"skipped": True})
        else:
            responses.append({"writeInResponse": part})
    return {"askQuestion": {"responses": responses}}


def dialog_for(step: dict[str, Any], index: int) -> Dialog | None:
    """The dialog a WAITING step opens, or None for an interaction agy-sim does not draw."""
    requested = step.get("requestedInteraction", {})
    if "permission" in requested:
        return permission_dialog(step, index)
    if "askQuestion" in requested:
        return question_dialog(step, index)
    return None


WaitingStep = Callable[[], tuple[int, dict[str, Any]] | None]
