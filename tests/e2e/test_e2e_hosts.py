"""How hosts offer the harness: agy named only in the config, and the plugin switched off."""

from __future__ import annotations

import shutil

import pytest
from omnigent.community.harness.agy.rest import RestError
from omnigent.community.harness.agy.stack import HARNESS_ID, LocalStack
from stack import AGENT, Conversation

pytestmark = [pytest.mark.e2e, pytest.mark.tmux]


def test_agy_named_only_in_the_config_serves_a_conversation(stack: LocalStack) -> None:
    host = stack.add_host("command-only", agy_on_path=False)
    assert shutil.which("agy", path=host.env["PATH"]) is None
    # No waiting for readiness: the host reports its harnesses as it comes online.
    with Conversation(stack, host=host, wait_ready=False) as conversation:
        assert conversation.say("hello from a host without agy on PATH")["type"] == (
            "response.completed"
        )
        assert "Hello from the agy simulator" in conversation.assistant_texts()[-1]


def test_the_plugin_disabled_takes_the_harness_away(stack_restarted_disabled: LocalStack) -> None:
    stack = stack_restarted_disabled
    assert HARNESS_ID not in {h.get("id") for h in stack.client.harnesses()}
    host = stack.main
    assert host.host_id is not None
    with pytest.raises(RestError) as refused:
        stack.client.create_session(AGENT, host.host_id, str(stack.workspace))
    assert refused.value.status in (400, 409, 412, 422)
    assert "agy-cli" in refused.value.body
