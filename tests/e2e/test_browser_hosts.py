"""A host without agy, where a person picks the agent in the web UI: omnigent's new-session
page is the one place a person chooses the host and the agent, so that is where they must see
that "Antigravity CLI" cannot run there, and why (docs/host.md, "Readiness")."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect
from stack import extra_host
from test_browser import AGENT_ENTRY, Screen, browser, screen, shots  # noqa: F401 - fixtures
from waiting import wait_until

from agy_sim.stack.homes import HARNESS_ID, HostHome
from agy_sim.stack.local_stack import LocalStack

pytestmark = [pytest.mark.e2e, pytest.mark.tmux, pytest.mark.browser]


def nothing(host: HostHome) -> None:
    """No agy for this host: not on its PATH, not in its config, not where agy installs."""
    del host


@pytest.mark.timeout(600)  # the stack's start, a host's, the browser's
def test_a_host_without_agy_says_why_where_the_agent_is_picked(
    screen: Screen,  # noqa: F811 - the fixture
    stack: LocalStack,
) -> None:
    with extra_host(stack, "no-agy", prepare=nothing) as host:

        def reported() -> object:
            for listed in stack.client.hosts():
                configured = listed.get("configured_harnesses") or {}
                if listed["host_id"] == host.host_id and HARNESS_ID in configured:
                    return configured[HARNESS_ID]
            return None

        readiness = wait_until(reported, until=lambda r: r is not None, timeout=60, what="it")
        assert readiness is not True, "a host without agy must not say agy-cli is ready"
        page = screen.page
        page.goto(stack.url)
        page.get_by_test_id("new-chat-landing-host-chip").click()
        page.get_by_test_id("new-chat-landing-host-menu").get_by_text(
            re.compile("omnigent-agy-no-agy")
        ).first.click()
        screen.shot("host-picked")
        page.get_by_test_id("new-chat-landing-agent-select").click()
        page.get_by_test_id("new-chat-landing-custom-agents").hover()
        entry = page.get_by_role("menuitem", name=AGENT_ENTRY)
        expect(entry).to_be_visible()
        # Greyed out and not selectable on this host, with a warning sign beside it.
        expect(entry).to_have_attribute("aria-disabled", "true")
        sign = entry.locator('[data-testid^="new-chat-landing-agent-warning-"]')
        expect(sign).to_be_visible()
        expect(sign).to_have_attribute("aria-label", re.compile("binary missing|needs setup"))
        screen.shot("picker")
        # Why, in the words the page shows when the pointer rests on the entry (a tooltip: omnigent
        # 0.19's web has no other place for a disabled agent's reason; docs/in-omnigent.md).
        # The pointer travels to it as a hand does: a jump would leave the sub-menu's path
        # and close it.
        box = entry.bounding_box()
        assert box is not None
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, steps=20)
        why = page.locator('[data-testid^="new-chat-landing-agent-tooltip-"]')
        expect(why).to_be_visible(timeout=10_000)
        expect(why).to_contain_text(
            re.compile(r"Antigravity-CLI isn.t configured on omnigent-agy-no-agy")
        )
        screen.shot("why")
        # Picking it anyway changes nothing: the composer keeps the agent it had.
        entry.click(force=True)
        expect(page.get_by_test_id("new-chat-landing-agent-select")).not_to_contain_text(
            "Antigravity"
        )
