"""A sub-agent's card says which sub-agent asks (omnigent_harness_agy/cards.py, prompts.py)."""

from __future__ import annotations

from dataclasses import replace

from test_omnigent_prompts import CARD, COLOR, SURVEY, Host, card_text, picked, run

from omnigent_agy.interactions.prompts import QuestionForm


def test_a_sub_agents_permission_card_names_the_sub_agent() -> None:
    host = Host()
    run(host.prompts().ask_permission(replace(CARD, asked_by="Researcher")))
    _, body, _ = card_text(host.elicited[0])
    assert body.startswith("Antigravity CLI's sub-agent “Researcher” wants to run “git log -n 1”")


def test_a_sub_agents_question_says_who_asks() -> None:
    host = Host(result=picked("Blue"))
    run(host.prompts().ask_questions(QuestionForm("c", (COLOR,), asked_by="Researcher")))
    _, body, _ = card_text(host.elicited[0])
    assert body == "Antigravity CLI's sub-agent “Researcher” asks: Which color?"


def test_a_sub_agents_form_says_who_needs_input() -> None:
    host = Host(result=picked(None))
    run(host.prompts().ask_questions(replace(SURVEY, asked_by="Researcher")))
    assert host.elicited[0].message == "Antigravity CLI's sub-agent “Researcher” needs your input"
